/**
 * A JWKS server on 127.0.0.1 whose behaviour a test switches at will, counting the requests it
 * receives: the key server's failure modes the key set must survive (docs/api.md §2.8).
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { JSONWebKeySet } from "jose";

export type KeyServerMode =
  /** 200 with the current key set. */
  | "healthy"
  /** 500 with no body. */
  | "error"
  /** Accepts the request and never answers. */
  | "hang"
  /** 200 with a body that is not JSON. */
  | "malformed";

export interface KeyServer {
  /** `http://127.0.0.1:<port>/.well-known/jwks.json` */
  url: string;
  /** Requests received so far, whatever the mode answered. */
  readonly requests: number;
  mode: KeyServerMode;
  setKeys(jwks: JSONWebKeySet): void;
  close(): Promise<void>;
}

export async function startKeyServer(initial: JSONWebKeySet, mode: KeyServerMode = "healthy"): Promise<KeyServer> {
  let jwks = initial;
  let requests = 0;
  const hung: ServerResponse[] = [];
  const state: { mode: KeyServerMode } = { mode };
  const server = createServer((_req, res) => {
    requests += 1;
    switch (state.mode) {
      case "healthy":
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks));
        return;
      case "error":
        res.writeHead(500).end();
        return;
      case "hang":
        hung.push(res);
        return;
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" }).end("<html>maintenance</html>");
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    get requests() {
      return requests;
    },
    get mode() {
      return state.mode;
    },
    set mode(next: KeyServerMode) {
      state.mode = next;
    },
    setKeys(next) {
      jwks = next;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const res of hung) res.destroy();
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
