import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AppOverrides, type BuiltApp, buildApp } from "../../src/app.js";
import { type Config, loadConfig } from "../../src/config.js";
import { createOnePortServerFactory } from "../../src/http/listen.js";
import type { SourceStore } from "../../src/store/port.js";
import { type ClaimOverrides, type JwksServer, startJwksServer, TestIssuer } from "./jwt.js";

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  port: number;
  issuer: TestIssuer;
  jwks: JwksServer;
  built: BuiltApp;
  /** A valid token; by default a user of account `acct-1` with all scopes. */
  token(overrides?: ClaimOverrides): Promise<string>;
  /** A valid token of a normal user of `account`. */
  userToken(account: string, overrides?: ClaimOverrides): Promise<string>;
  /** A valid admin token (no account claim unless given). */
  adminToken(overrides?: ClaimOverrides): Promise<string>;
  /** fetch against the server with an optional bearer token and JSON body. */
  request(
    method: string,
    path: string,
    options?: { token?: string; json?: unknown; body?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  close(): Promise<void>;
}

/**
 * The real service on 127.0.0.1 (one port, HTTP/1.1 and h2c), with tokens signed by a test key
 * pair whose JWKS is served over HTTP, as an external identity provider would.
 */
export async function startTestServer(
  env: Record<string, string> = {},
  overrides: Pick<AppOverrides, "logger" | "healthWatchPollMs"> & {
    /** The production store, opened from the test's configuration (a wrapper around a real one). */
    store?: (config: Config) => Promise<SourceStore>;
  } = {},
): Promise<TestServer> {
  const issuer = await TestIssuer.create({ issuer: "https://issuer.test/" });
  const jwks = await startJwksServer(issuer.jwks);
  const dir = mkdtempSync(join(tmpdir(), "ledger-e2e-"));
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    SQLITE_PATH: join(dir, "ledger.sqlite"),
    AUTH_ISSUER: issuer.issuer,
    AUTH_JWKS_URL: jwks.url,
    LOG_LEVEL: "silent",
    // Suites send bursts from one account; the rate limits have their own tests (limits-timeouts).
    RATE_LIMIT_READS_PER_S: "0",
    RATE_LIMIT_WRITES_PER_S: "0",
    ...env,
  });
  const onePort = createOnePortServerFactory({ graceMs: 2_000 });
  const { store: openStore, ...appOverrides } = overrides;
  const store = openStore ? await openStore(config) : undefined;
  const built = await buildApp(config, {
    ...appOverrides,
    ...(store ? { store } : {}),
    serverFactory: onePort.serverFactory,
  });
  await built.app.listen({ port: 0, host: "127.0.0.1" });
  const address = built.app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  built.setListeningAddress("127.0.0.1", port);
  const baseUrl = `http://127.0.0.1:${port}`;
  const ns = issuer.namespace;
  return {
    baseUrl,
    port,
    issuer,
    jwks,
    built,
    token: (overrides = {}) => issuer.token(overrides),
    userToken: (account, overrides = {}) =>
      issuer.token({
        [`${ns}/account_id`]: account,
        sub: `client-${account}`,
        [`${ns}/client_name`]: `Client ${account}`,
        ...overrides,
      }),
    adminToken: (overrides = {}) =>
      issuer.token({
        [`${ns}/account_id`]: undefined,
        [`${ns}/role`]: "admin",
        sub: "admin@clients",
        [`${ns}/client_name`]: "Admin",
        ...overrides,
      }),
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body: string | undefined = options.body;
      if (options.json !== undefined) {
        body = JSON.stringify(options.json);
        headers["content-type"] ??= "application/json";
      }
      return fetch(`${baseUrl}${path}`, { method, headers, body });
    },
    async close() {
      await built.app.close();
      await jwks.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
