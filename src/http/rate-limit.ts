import { Code, ConnectError } from "@connectrpc/connect";
import { scopeForMethod } from "../auth/scopes.js";
import type { Principal } from "../model/principal.js";
import { retryHint } from "../model/retry-hint.js";

/** A sustained rate and the burst above it that one account may spend at once. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

/**
 * Token buckets, one per key: each holds up to `burst` tokens and refills at `perSecond`. A
 * request takes one token or is refused with the seconds until one is back. The number of keys is
 * bounded: past `maxKeys`, the least recently used bucket is forgotten (a forgotten bucket is a
 * full one, so forgetting never refuses anybody).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly limit: RateLimit,
    private readonly now: () => number = () => performance.now(),
    private readonly maxKeys = 100_000,
  ) {}

  /** Takes a token for `key`: null when granted, else the seconds to wait (at least 1). */
  take(key: string): number | null {
    const now = this.now();
    const bucket = this.buckets.get(key);
    let tokens = this.limit.burst;
    if (bucket !== undefined) {
      tokens = Math.min(this.limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.limit.perSecond);
      // Re-inserted below: the Map's order is the least recently used first.
      this.buckets.delete(key);
    }
    const granted = tokens >= 1;
    this.buckets.set(key, { tokens: granted ? tokens - 1 : tokens, at: now });
    if (this.buckets.size > this.maxKeys) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    return granted ? null : Math.max(1, Math.ceil((1 - tokens) / this.limit.perSecond));
  }

  get size(): number {
    return this.buckets.size;
  }
}

/** Which bucket a method spends from: reads (list, get, search) and writes (create, delete) separately. */
export type RateKind = "read" | "write";

/** A method that needs only the read scope is a read (auth/scopes.ts says which, once). */
export function rateKindOf(methodName: string): RateKind {
  return scopeForMethod(methodName) === "read:sources" ? "read" : "write";
}

/** The key of a caller's buckets: its account, or for an admin without one, its subject. */
function keyOf(principal: Principal): string {
  return principal.accountId === null ? `subject:${principal.subject}` : `account:${principal.accountId}`;
}

/**
 * Per-account rate limiting after authentication (docs/api.md §2.9): null when the call may go
 * on, else the refusal, `resource_exhausted` with a `retry-after` (seconds) every adapter passes on
 * and a google.rpc.RetryInfo detail.
 */
export function createRateLimiter(limits: Readonly<Record<RateKind, RateLimit | null>>, now?: () => number) {
  const buckets: Record<RateKind, TokenBuckets | null> = {
    read: limits.read && new TokenBuckets(limits.read, now),
    write: limits.write && new TokenBuckets(limits.write, now),
  };
  return (principal: Principal, methodName: string): ConnectError | null => {
    const kind = rateKindOf(methodName);
    const limit = limits[kind];
    const wait = buckets[kind]?.take(keyOf(principal)) ?? null;
    if (wait === null || limit === null) return null;
    const { perSecond, burst } = limit;
    const retry = retryHint(wait);
    return new ConnectError(
      `too many ${kind}s for this account (${perSecond} per second, bursts of ${burst}); retry in ${wait} s`,
      Code.ResourceExhausted,
      retry.metadata,
      retry.details,
    );
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
