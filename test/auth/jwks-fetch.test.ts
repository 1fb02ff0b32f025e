/** One JWKS fetch, bounded in time and size, against a real HTTP server on 127.0.0.1. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchJwks, JwksFetchError } from "../../src/auth/jwks-fetch.js";
import { generateTestKey, jwksOf } from "../support/jwt.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler;
const paths: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    paths.push(req.url ?? "");
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function answer(status: number, body: string, headers: Record<string, string> = {}): Handler {
  return (_req, res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(body);
  };
}

async function failure(url: string, timeoutMs = 1_000): Promise<JwksFetchError> {
  const error = await fetchJwks(new URL(url), timeoutMs).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(JwksFetchError);
  return error as JwksFetchError;
}

describe("fetchJwks", () => {
  it("returns the key set of a 200 answer", async () => {
    const jwks = jwksOf(await generateTestKey("ES256"));
    handler = (req, res) => {
      expect(req.headers.accept).toContain("application/jwk-set+json");
      answer(200, JSON.stringify(jwks))(req, res);
    };
    await expect(fetchJwks(new URL(`${base}/jwks`), 1_000)).resolves.toEqual(jwks);
  });

  it.each([
    [500, "the JWKS endpoint answered HTTP 500"],
    [404, "the JWKS endpoint answered HTTP 404"],
    [204, "the JWKS endpoint answered HTTP 204"],
  ])("refuses HTTP %i", async (status, message) => {
    handler = answer(status, status === 204 ? "" : '{"keys":[]}');
    expect((await failure(`${base}/jwks`)).message).toBe(message);
  });

  it("does not follow a redirect", async () => {
    handler = (req, res) => {
      if (req.url === "/moved") res.writeHead(302, { location: "/elsewhere" }).end();
      else answer(200, '{"keys":[]}')(req, res);
    };
    paths.length = 0;
    expect((await failure(`${base}/moved`)).message).toBe("the JWKS endpoint answered HTTP 302");
    expect(paths).toEqual(["/moved"]);
  });

  it.each([
    ["HTML", "<html>maintenance</html>", "the JWKS response is not JSON"],
    ["empty", "", "the JWKS response is not JSON"],
    ["an array", "[]", "the JWKS response is not a JSON Web Key Set"],
    ["null", "null", "the JWKS response is not a JSON Web Key Set"],
    ["keys not an array", '{"keys":"k"}', "the JWKS response is not a JSON Web Key Set"],
    ["keys holding a number", '{"keys":[1]}', "the JWKS response is not a JSON Web Key Set"],
  ])("refuses a body that is %s", async (_name, body, message) => {
    handler = answer(200, body);
    expect((await failure(`${base}/jwks`)).message).toBe(message);
  });

  it("refuses a body over 1 MiB, declared or streamed", async () => {
    const big = JSON.stringify({ keys: [{ kty: "EC", pad: "x".repeat(1024 * 1024) }] });
    handler = answer(200, big, { "content-length": String(Buffer.byteLength(big)) });
    expect((await failure(`${base}/jwks`)).message).toBe("the JWKS response exceeds 1048576 bytes");
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      for (let offset = 0; offset < big.length; offset += 64 * 1024) res.write(big.slice(offset, offset + 64 * 1024));
      res.end();
    };
    expect((await failure(`${base}/jwks`)).message).toBe("the JWKS response exceeds 1048576 bytes");
  });

  it("gives up after the timeout when no answer comes", async () => {
    handler = () => undefined;
    const start = performance.now();
    expect((await failure(`${base}/jwks`, 100)).message).toBe("the JWKS endpoint did not answer within 100 ms");
    expect(performance.now() - start).toBeLessThan(600);
  });

  it("gives up after the timeout when the body never ends", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"keys":[');
    };
    const start = performance.now();
    expect((await failure(`${base}/jwks`, 100)).message).toBe("the JWKS endpoint did not answer within 100 ms");
    expect(performance.now() - start).toBeLessThan(600);
  });

  it("says the endpoint could not be reached, without its address", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const error = await failure(`http://127.0.0.1:${port}/jwks`);
    expect(error.message).toBe("the JWKS endpoint could not be reached");
    expect(error.message).not.toContain(String(port));
  });
});
