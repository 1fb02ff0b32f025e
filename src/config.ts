/** Environment → one typed Config (docs/api.md §1). The only module that reads process.env. */

export interface Config {
  port: number;
  host: string;
  store: "sqlite" | "mongodb";
  sqlitePath: string;
  mongodbUri: string | null;
  mongodbDatabase: string;
  /** Expected `iss`; null runs the built-in development identity provider. */
  authIssuer: string | null;
  authAudience: string;
  authJwksUrl: string | null;
  devClientsFile: string | null;
  sandboxTtlMs: number;
  /** SANDBOX_MAX_MB: the memory budget of all sandbox sessions together, in MiB (docs/api.md §7). */
  sandboxMaxMb: number;
  /** SANDBOX_MAX_SESSIONS: sandbox sessions held at once, whoever opened them (docs/api.md §7). */
  sandboxMaxSessions: number;
  logLevel: string;
  /** NODE_ENV=production: the development identity provider is refused unless `devAuth` allows it. */
  production: boolean;
  /** DEV_AUTH=allow: run the development identity provider even in production or beyond loopback. */
  devAuthAllowed: boolean;
  /** Deadline for a request's headers and body, from its first byte (0 = none). */
  requestTimeoutMs: number;
  /** Deadline for a request's headers alone (HTTP/1.1). */
  headersTimeoutMs: number;
  /** How long an idle HTTP/1.1 keep-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** How long an idle HTTP/2 session stays open. */
  h2IdleTimeoutMs: number;
  /** Open connections at most (HTTP/1.1 and HTTP/2 together); past it new ones are closed at once. */
  maxConnections: number;
  /** Concurrent streams one HTTP/2 session may open. */
  h2MaxStreams: number;
  /** Unary protobuf gRPC calls on the lean path (rpc/grpc-unary.ts); false: all on Connect's adapter. */
  grpcLeanPath: boolean;
  /** Per-account requests per second; null turns that limit off. The burst is twice the rate. */
  rateLimitReadsPerS: number | null;
  rateLimitWritesPerS: number | null;
  /**
   * LEDGER_SECRET: at least 32 bytes, base64 (page tokens are keyed by it, docs/api.md §12); null
   * uses the secret the store keeps, which every process on the same store shares.
   */
  ledgerSecret: Uint8Array | null;
}

/**
 * The sandbox's bounds when the environment says nothing (docs/api.md §7): also the sandbox
 * store's own defaults. The budget is sized by S8 (bench/sandbox-flood.ts): a flood at 160 MiB
 * peaked at ~500 MB of RSS, at 256 MiB at ~680 MB (the requests' garbage comes on top of what is
 * held; docs/benchmarks.md).
 */
export const SANDBOX_DEFAULTS = { maxMb: 160, maxSessions: 1_000 } as const;

export class ConfigError extends Error {
  override name = "ConfigError";
}

const LOG_LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function url(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = text(env, name);
  if (value === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${value}"`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new ConfigError(`${name} must be an http(s) URL, got "${value}"`);
  }
  return value;
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const value = text(env, name);
  if (value === null) return fallback;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new ConfigError(`${name} must be "on" or "off", got "${value}"`);
}

function text(env: NodeJS.ProcessEnv, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw.trim() === "" ? null : raw.trim();
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const store = text(env, "LEDGER_STORE") ?? "sqlite";
  if (store !== "sqlite" && store !== "mongodb") {
    throw new ConfigError(`LEDGER_STORE must be "sqlite" or "mongodb", got "${store}"`);
  }
  const mongodbUri = text(env, "MONGODB_URI");
  if (store === "mongodb" && mongodbUri === null) {
    throw new ConfigError("MONGODB_URI is required when LEDGER_STORE=mongodb");
  }
  const authIssuer = url(env, "AUTH_ISSUER");
  const logLevel = text(env, "LOG_LEVEL") ?? "info";
  if (!LOG_LEVELS.has(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${[...LOG_LEVELS].join(", ")}, got "${logLevel}"`);
  }
  const jwksUrl = url(env, "AUTH_JWKS_URL");
  const devAuth = text(env, "DEV_AUTH");
  if (devAuth !== null && devAuth !== "allow") {
    throw new ConfigError(`DEV_AUTH must be "allow" or unset, got "${devAuth}"`);
  }
  return {
    port: integer(env, "PORT", 8080, 0, 65535),
    host: text(env, "HOST") ?? "127.0.0.1",
    store,
    sqlitePath: text(env, "SQLITE_PATH") ?? "data/ledger.sqlite",
    mongodbUri,
    mongodbDatabase: text(env, "MONGODB_DATABASE") ?? "source_ledger",
    authIssuer,
    authAudience: text(env, "AUTH_AUDIENCE") ?? "https://source-ledger.local",
    authJwksUrl: jwksUrl ?? (authIssuer === null ? null : defaultJwksUrl(authIssuer)),
    devClientsFile: text(env, "DEV_CLIENTS_FILE"),
    sandboxTtlMs: integer(env, "SANDBOX_TTL_S", 3600, 1, 365 * 24 * 3600) * 1000,
    sandboxMaxMb: integer(env, "SANDBOX_MAX_MB", SANDBOX_DEFAULTS.maxMb, 1, 16_384),
    sandboxMaxSessions: integer(env, "SANDBOX_MAX_SESSIONS", SANDBOX_DEFAULTS.maxSessions, 1, 100_000),
    logLevel,
    production: text(env, "NODE_ENV") === "production",
    devAuthAllowed: devAuth === "allow",
    requestTimeoutMs: integer(env, "REQUEST_TIMEOUT_MS", 30_000, 0, 3_600_000),
    headersTimeoutMs: integer(env, "HEADERS_TIMEOUT_MS", 10_000, 100, 600_000),
    keepAliveTimeoutMs: integer(env, "KEEP_ALIVE_TIMEOUT_MS", 5_000, 100, 600_000),
    h2IdleTimeoutMs: integer(env, "H2_IDLE_TIMEOUT_MS", 60_000, 100, 3_600_000),
    maxConnections: integer(env, "MAX_CONNECTIONS", 10_000, 1, 1_000_000),
    h2MaxStreams: integer(env, "H2_MAX_STREAMS", 1_000, 1, 100_000),
    grpcLeanPath: onOff(env, "GRPC_LEAN_PATH", true),
    // On by default with a real identity provider, off with the development one (docs/api.md §2.9);
    // 0 turns a limit off explicitly.
    rateLimitReadsPerS: rate(env, "RATE_LIMIT_READS_PER_S", authIssuer === null ? 0 : 200),
    rateLimitWritesPerS: rate(env, "RATE_LIMIT_WRITES_PER_S", authIssuer === null ? 0 : 50),
    ledgerSecret: secret(env, "LEDGER_SECRET"),
  };
}

const MIN_SECRET_BYTES = 32;

/** A secret given as base64 (or base64url) of at least MIN_SECRET_BYTES bytes; its value is never echoed. */
function secret(env: NodeJS.ProcessEnv, name: string): Uint8Array | null {
  const value = text(env, name);
  if (value === null) return null;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) throw new ConfigError(`${name} must be base64`);
  const bytes = Buffer.from(value, value.includes("-") || value.includes("_") ? "base64url" : "base64");
  if (bytes.length < MIN_SECRET_BYTES) {
    throw new ConfigError(
      `${name} must hold at least ${MIN_SECRET_BYTES} bytes (e.g. openssl rand -base64 32), got ${bytes.length}`,
    );
  }
  return new Uint8Array(bytes);
}

/** A per-second rate: a whole number, 0 meaning off (null). */
function rate(env: NodeJS.ProcessEnv, name: string, fallback: number): number | null {
  const value = integer(env, name, fallback, 0, 1_000_000);
  return value === 0 ? null : value;
}

/** `<AUTH_ISSUER>.well-known/jwks.json`, tolerating an issuer without its trailing slash. */
function defaultJwksUrl(issuer: string): string {
  return `${issuer.endsWith("/") ? issuer : `${issuer}/`}.well-known/jwks.json`;
}
