import {
  type CompactJWSHeaderParameters,
  type CryptoKey,
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
  type LocalJWKSet,
} from "jose";
import { Backoff } from "./backoff.js";
import { SigningKeysUnavailableError } from "./errors.js";
import { fetchJwks } from "./jwks-fetch.js";

// Defaults, documented in docs/api.md §2.8. They are constants rather than configuration: the
// service's configuration (src/config.ts) has no knobs for them; tests pass RemoteKeysOptions.
/** The longest one JWKS fetch may take, connecting and reading included. */
const FETCH_TIMEOUT_MS = 5_000;
/** After a successful fetch, an unknown `kid` triggers no new fetch for this long (forged kids cannot flood the issuer). */
const REFETCH_COOLDOWN_MS = 30_000;
/** Keys older than this are refreshed in the background, so removed keys eventually stop verifying. */
const MAX_AGE_MS = 600_000;
/** After a failed fetch, no fetch for 1 s, doubling with each further failure up to 60 s. */
const BACKOFF_INITIAL_MS = 1_000;
const BACKOFF_MAX_MS = 60_000;

export interface RemoteKeysOptions {
  /** Abort a JWKS fetch after this long; a hanging identity provider must not hang every request. */
  timeoutMs?: number;
  /** Minimum time between refetches triggered by an unknown `kid`, so forged kids cannot flood the issuer. */
  cooldownMs?: number;
  /** Refetch even known keys after this long, so removed keys eventually stop verifying. */
  cacheMaxAgeMs?: number;
  /** No fetch for this long after a failed one; doubled after each further failure. */
  backoffInitialMs?: number;
  /** The cap of that doubling. */
  backoffMaxMs?: number;
  /** Milliseconds since the epoch, for the cooldown, backoff and age above (tests inject one). */
  clock?: () => number;
  /** Told the outcome of every JWKS fetch (for /metrics). */
  onFetch?: (outcome: "ok" | "error") => void;
}

/**
 * Signing keys from a JWKS URL (docs/api.md §2.8). jose's createRemoteJWKSet starts its cooldown
 * only after a successful fetch, so while the key server failed every unknown `kid` fetched
 * again and waited for the timeout; here jose only looks keys up (createLocalJWKSet) and this
 * module decides when to fetch:
 *
 * - at most one fetch is in flight; every verification that needs it waits for that one;
 * - after a success, an unknown `kid` fetches again only once the cooldown has passed, and is
 *   `unknown signing key` until then or when the new key set does not list it either;
 * - after a failure, no fetch until the backoff has passed; meanwhile a verification that needs
 *   a fetch (no keys yet, or an unknown `kid`) fails at once with SigningKeysUnavailableError;
 * - keys already fetched keep verifying whatever the key server does: when they are older than
 *   the maximum age they are refreshed in the background, and kept if that fails.
 */
export function remoteKeys(jwksUrl: string, options: RemoteKeysOptions = {}): JWTVerifyGetKey {
  const keySet = new RemoteKeySet(new URL(jwksUrl), options);
  return (header, token) => keySet.getKey(header, token);
}

/** Signing keys held in process, for the development identity provider and tests. */
export function localKeys(jwks: JSONWebKeySet): JWTVerifyGetKey {
  return createLocalJWKSet(jwks);
}

type FetchOutcome = { keys: LocalJWKSet } | { error: unknown };

class RemoteKeySet {
  private readonly timeoutMs: number;
  private readonly cooldownMs: number;
  private readonly maxAgeMs: number;
  private readonly backoff: Backoff;
  private readonly clock: () => number;
  private readonly onFetch: ((outcome: "ok" | "error") => void) | undefined;

  /** The last key set fetched successfully; kept through failures. */
  private keys: LocalJWKSet | undefined;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  /** Earliest start of the next fetch: the cooldown after a success, the backoff after a failure. */
  private nextFetchAt = Number.NEGATIVE_INFINITY;
  /** Why the last fetch failed; undefined when it succeeded (or none happened yet). */
  private failure: { error: unknown } | undefined;
  private inFlight: Promise<FetchOutcome> | undefined;

  constructor(
    private readonly url: URL,
    options: RemoteKeysOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? FETCH_TIMEOUT_MS;
    this.cooldownMs = options.cooldownMs ?? REFETCH_COOLDOWN_MS;
    this.maxAgeMs = options.cacheMaxAgeMs ?? MAX_AGE_MS;
    this.backoff = new Backoff(options.backoffInitialMs ?? BACKOFF_INITIAL_MS, options.backoffMaxMs ?? BACKOFF_MAX_MS);
    this.clock = options.clock ?? Date.now;
    this.onFetch = options.onFetch;
  }

  async getKey(header: CompactJWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> {
    const keys = this.keys;
    if (keys === undefined) return (await this.fetchShared())(header, token);
    const now = this.clock();
    if (now - this.fetchedAt >= this.maxAgeMs && this.mayStartFetch(now)) {
      // Not awaited: until the refresh answers, and for as long as the key server fails, the
      // keys held keep verifying, so an outage never delays tokens signed by a known key.
      void this.startFetch();
    }
    try {
      return await keys(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      // An unknown kid: perhaps the issuer published a new key since the last fetch.
      if (this.inFlight === undefined && this.clock() < this.nextFetchAt) {
        if (this.failure !== undefined) throw this.unavailable(this.failure.error);
        throw error;
      }
      // Looked up once in the key set fetched; still unknown there → `unknown signing key`.
      return (await this.fetchShared())(header, token);
    }
  }

  private mayStartFetch(now: number): boolean {
    return this.inFlight === undefined && now >= this.nextFetchAt;
  }

  /** The keys from the fetch in flight, or from a new one if the backoff allows it. */
  private async fetchShared(): Promise<LocalJWKSet> {
    let attempt = this.inFlight;
    if (attempt === undefined) {
      // Reached either before any fetch succeeded or once a fetch is allowed: only a failure's
      // backoff can hold one back here.
      if (!this.mayStartFetch(this.clock())) throw this.unavailable(this.failure?.error);
      attempt = this.startFetch();
    }
    const outcome = await attempt;
    if ("error" in outcome) throw this.unavailable(outcome.error);
    return outcome.keys;
  }

  private startFetch(): Promise<FetchOutcome> {
    const attempt = this.fetchOnce().finally(() => {
      this.inFlight = undefined;
    });
    this.inFlight = attempt;
    return attempt;
  }

  /** Never rejects: the outcome says what happened, and the state is updated before it resolves. */
  private async fetchOnce(): Promise<FetchOutcome> {
    try {
      const keys = createLocalJWKSet(await fetchJwks(this.url, this.timeoutMs));
      const now = this.clock();
      this.keys = keys;
      this.fetchedAt = now;
      this.nextFetchAt = now + this.cooldownMs;
      this.failure = undefined;
      this.backoff.succeed();
      this.onFetch?.("ok");
      return { keys };
    } catch (error) {
      this.failure = { error };
      this.nextFetchAt = this.clock() + this.backoff.fail();
      this.onFetch?.("error");
      return { error };
    }
  }

  /** Carries when a fetch will next be tried, for the client's Retry-After. */
  private unavailable(cause: unknown): SigningKeysUnavailableError {
    const waitMs = Math.max(0, this.nextFetchAt - this.clock());
    return new SigningKeysUnavailableError({ cause, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) });
  }
}
