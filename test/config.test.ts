import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

describe("configuration (docs/api.md §1)", () => {
  it("has the documented defaults", () => {
    expect(loadConfig({})).toEqual({
      port: 8080,
      host: "127.0.0.1",
      store: "sqlite",
      sqlitePath: "data/ledger.sqlite",
      mongodbUri: null,
      mongodbDatabase: "source_ledger",
      authIssuer: null,
      authAudience: "https://source-ledger.local",
      authJwksUrl: null,
      devClientsFile: null,
      sandboxTtlMs: 3_600_000,
      sandboxMaxMb: 160,
      sandboxMaxSessions: 1000,
      logLevel: "info",
      production: false,
      devAuthAllowed: false,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5_000,
      h2IdleTimeoutMs: 60_000,
      maxConnections: 10_000,
      h2MaxStreams: 1_000,
      grpcLeanPath: true,
      // Off with the development identity provider.
      rateLimitReadsPerS: null,
      rateLimitWritesPerS: null,
      ledgerSecret: null,
    });
  });

  it("turns the rate limits on by default with a real identity provider; 0 turns one off", () => {
    expect(loadConfig({ AUTH_ISSUER: "https://idp.example/" })).toMatchObject({
      rateLimitReadsPerS: 200,
      rateLimitWritesPerS: 50,
    });
    expect(
      loadConfig({ AUTH_ISSUER: "https://idp.example/", RATE_LIMIT_READS_PER_S: "0", RATE_LIMIT_WRITES_PER_S: "7" }),
    ).toMatchObject({ rateLimitReadsPerS: null, rateLimitWritesPerS: 7 });
    expect(loadConfig({ RATE_LIMIT_READS_PER_S: "3" }).rateLimitReadsPerS).toBe(3);
  });

  it.each([
    [{ REQUEST_TIMEOUT_MS: "-1" }, "REQUEST_TIMEOUT_MS must be an integer"],
    [{ HEADERS_TIMEOUT_MS: "10" }, "HEADERS_TIMEOUT_MS must be between 100 and 600000, got 10"],
    [{ MAX_CONNECTIONS: "0" }, "MAX_CONNECTIONS must be between 1 and 1000000, got 0"],
    [{ H2_MAX_STREAMS: "x" }, "H2_MAX_STREAMS must be an integer"],
    [{ RATE_LIMIT_WRITES_PER_S: "1.5" }, "RATE_LIMIT_WRITES_PER_S must be an integer"],
  ])("refuses the limit %j", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it("reads NODE_ENV=production and DEV_AUTH=allow; refuses any other DEV_AUTH", () => {
    expect(loadConfig({ NODE_ENV: "production", DEV_AUTH: "allow" })).toMatchObject({
      production: true,
      devAuthAllowed: true,
    });
    expect(loadConfig({ NODE_ENV: "development" }).production).toBe(false);
    expect(() => loadConfig({ DEV_AUTH: "yes" })).toThrow(
      new ConfigError('DEV_AUTH must be "allow" or unset, got "yes"'),
    );
  });

  it("reads the sandbox's memory budget and session cap (SANDBOX_MAX_MB, SANDBOX_MAX_SESSIONS)", () => {
    expect(loadConfig({ SANDBOX_MAX_MB: "64", SANDBOX_MAX_SESSIONS: "50" })).toMatchObject({
      sandboxMaxMb: 64,
      sandboxMaxSessions: 50,
    });
    expect(loadConfig({ SANDBOX_MAX_MB: "1", SANDBOX_MAX_SESSIONS: "" })).toMatchObject({
      sandboxMaxMb: 1,
      sandboxMaxSessions: 1000,
    });
    expect(loadConfig({ SANDBOX_MAX_MB: "16384", SANDBOX_MAX_SESSIONS: "100000" })).toMatchObject({
      sandboxMaxMb: 16_384,
      sandboxMaxSessions: 100_000,
    });
  });

  it("derives the JWKS URL from the issuer, with or without its trailing slash", () => {
    expect(loadConfig({ AUTH_ISSUER: "https://idp.example/" }).authJwksUrl).toBe(
      "https://idp.example/.well-known/jwks.json",
    );
    expect(loadConfig({ AUTH_ISSUER: "https://idp.example" }).authJwksUrl).toBe(
      "https://idp.example/.well-known/jwks.json",
    );
    expect(
      loadConfig({ AUTH_ISSUER: "https://idp.example/", AUTH_JWKS_URL: "https://keys.example/jwks" }).authJwksUrl,
    ).toBe("https://keys.example/jwks");
  });

  it.each([
    [{ PORT: "80a" }, "PORT must be an integer"],
    [{ PORT: "70000" }, "PORT must be between 0 and 65535"],
    [{ SANDBOX_TTL_S: "0" }, "SANDBOX_TTL_S must be between 1"],
    [{ SANDBOX_MAX_MB: "0" }, "SANDBOX_MAX_MB must be between 1 and 16384, got 0"],
    [{ SANDBOX_MAX_MB: "16385" }, "SANDBOX_MAX_MB must be between 1 and 16384"],
    [{ SANDBOX_MAX_MB: "1.5" }, "SANDBOX_MAX_MB must be an integer"],
    [{ SANDBOX_MAX_SESSIONS: "0" }, "SANDBOX_MAX_SESSIONS must be between 1 and 100000, got 0"],
    [{ SANDBOX_MAX_SESSIONS: "-3" }, "SANDBOX_MAX_SESSIONS must be an integer"],
    [{ LEDGER_STORE: "postgres" }, 'LEDGER_STORE must be "sqlite" or "mongodb"'],
    [{ LEDGER_STORE: "mongodb" }, "MONGODB_URI is required"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of"],
    [{ AUTH_ISSUER: "not a url" }, "AUTH_ISSUER must be an absolute http(s) URL"],
    [{ AUTH_ISSUER: "ftp://idp.example/" }, "AUTH_ISSUER must be an http(s) URL"],
    [
      { AUTH_ISSUER: "https://idp.example/", AUTH_JWKS_URL: "jwks.json" },
      "AUTH_JWKS_URL must be an absolute http(s) URL",
    ],
  ])("refuses %j with a ConfigError naming the variable", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
