import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createRateLimiter, rateKindOf, TokenBuckets } from "../../src/http/rate-limit.js";
import type { Principal } from "../../src/model/principal.js";

function clock() {
  let ms = 0;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

const user = (accountId: string | null, subject = "s"): Principal => ({
  subject,
  accountId,
  role: accountId === null ? "admin" : null,
  isAdmin: accountId === null,
  scopes: new Set(),
  actor: subject,
  expiresAt: 0,
});

describe("TokenBuckets", () => {
  it("grants the burst at once, then refuses with the seconds until a token is back", () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 2, burst: 3 }, time.now);
    expect([buckets.take("a"), buckets.take("a"), buckets.take("a")]).toEqual([null, null, null]);
    expect(buckets.take("a")).toBe(1);
    time.advance(499);
    expect(buckets.take("a")).toBe(1);
    time.advance(1);
    // 500 ms at 2 per second refilled exactly one token.
    expect(buckets.take("a")).toBeNull();
    expect(buckets.take("a")).toBe(1);
  });

  it("keeps keys apart: one refused key leaves another untouched", () => {
    const buckets = new TokenBuckets({ perSecond: 1, burst: 1 }, clock().now);
    expect(buckets.take("a")).toBeNull();
    expect(buckets.take("a")).toBe(1);
    expect(buckets.take("b")).toBeNull();
  });

  it("never refills past the burst", () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 10, burst: 2 }, time.now);
    buckets.take("a");
    time.advance(60_000);
    expect([buckets.take("a"), buckets.take("a"), buckets.take("a")]).toEqual([null, null, 1]);
  });

  it("says how long at slow rates (rounded up to whole seconds)", () => {
    const buckets = new TokenBuckets({ perSecond: 0.1, burst: 1 }, clock().now);
    buckets.take("a");
    expect(buckets.take("a")).toBe(10);
  });

  it("holds at most maxKeys buckets, forgetting the least recently used (a forgotten bucket is full)", () => {
    const buckets = new TokenBuckets({ perSecond: 1, burst: 1 }, clock().now, 2);
    buckets.take("a");
    buckets.take("b");
    buckets.take("a");
    buckets.take("c");
    expect(buckets.size).toBe(2);
    // b was the least recently used: forgotten, so it starts full again.
    expect(buckets.take("b")).toBeNull();
  });
});

describe("createRateLimiter", () => {
  it("spends reads and writes from separate buckets per account, refusing with resource_exhausted and retry-after", () => {
    const limiter = createRateLimiter(
      { read: { perSecond: 5, burst: 2 }, write: { perSecond: 1, burst: 1 } },
      clock().now,
    );
    const a = user("acct-a");
    expect(limiter(a, "CreateSources")).toBeNull();
    const refused = limiter(a, "DeleteSource");
    expect(refused?.code).toBe(Code.ResourceExhausted);
    expect(refused?.rawMessage).toBe("too many writes for this account (1 per second, bursts of 1); retry in 1 s");
    expect(refused?.metadata.get("retry-after")).toBe("1");
    // Reads are still available, and another account is unaffected.
    expect(limiter(a, "ListSources")).toBeNull();
    expect(limiter(a, "GetSource")).toBeNull();
    expect(limiter(a, "GetSource")?.code).toBe(Code.ResourceExhausted);
    expect(limiter(user("acct-b"), "CreateSources")).toBeNull();
  });

  it("keys an admin without an account by its subject", () => {
    const limiter = createRateLimiter(
      { read: { perSecond: 1, burst: 1 }, write: { perSecond: 1, burst: 1 } },
      clock().now,
    );
    expect(limiter(user(null, "admin-1"), "ListSources")).toBeNull();
    expect(limiter(user(null, "admin-1"), "ListSources")).not.toBeNull();
    expect(limiter(user(null, "admin-2"), "ListSources")).toBeNull();
  });

  it("classifies the methods", () => {
    expect(["ListSources", "GetSource", "CreateSources", "DeleteSource"].map(rateKindOf)).toEqual([
      "read",
      "read",
      "write",
      "write",
    ]);
  });
});
