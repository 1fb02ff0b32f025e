import { describe, expect, it } from "vitest";
import { PrincipalCache } from "../../src/auth/principal-cache.js";
import type { Principal } from "../../src/model/principal.js";

const ISSUER = "https://issuer.test/";
const NOW = 1_800_000_000;

function principal(subject: string, expiresAt = NOW + 3600): Principal {
  return {
    subject,
    accountId: `acct-${subject}`,
    role: "user",
    isAdmin: false,
    scopes: new Set(["read:sources"]),
    actor: subject,
    expiresAt,
  };
}

describe("PrincipalCache", () => {
  it("evicts the least recently used token, also when one token is read many times in a row", () => {
    const cache = new PrincipalCache(2, 5);
    cache.set("a", ISSUER, principal("a"));
    cache.set("b", ISSUER, principal("b"));
    // a becomes the most recent; reading it again (the common run of one client) keeps it there.
    for (let i = 0; i < 3; i++) expect(cache.get("a", ISSUER, NOW)?.subject).toBe("a");
    cache.set("c", ISSUER, principal("c"));
    expect(cache.get("b", ISSUER, NOW)).toBeUndefined();
    expect(cache.get("a", ISSUER, NOW)?.subject).toBe("a");
    expect(cache.get("c", ISSUER, NOW)?.subject).toBe("c");
    // Now c is the most recent, so a goes next.
    cache.set("d", ISSUER, principal("d"));
    expect(cache.get("a", ISSUER, NOW)).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it("drops an entry that expired (beyond the tolerance) or was verified for another issuer", () => {
    const cache = new PrincipalCache(10, 5);
    cache.set("old", ISSUER, principal("old", NOW - 5));
    cache.set("edge", ISSUER, principal("edge", NOW - 4));
    expect(cache.get("old", ISSUER, NOW)).toBeUndefined();
    expect(cache.get("edge", ISSUER, NOW)?.subject).toBe("edge");
    expect(cache.get("edge", "https://other.test/", NOW)).toBeUndefined();
    expect(cache.get("edge", ISSUER, NOW)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("keeps nothing with a size of 0", () => {
    const cache = new PrincipalCache(0, 5);
    cache.set("a", ISSUER, principal("a"));
    expect(cache.get("a", ISSUER, NOW)).toBeUndefined();
  });
});
