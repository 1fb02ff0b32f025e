import type { Principal } from "../model/principal.js";

interface Entry {
  principal: Principal;
  /** The issuer the token was verified against; a changed expectation must not be bypassed. */
  issuer: string;
}

/**
 * Verified principals by exact token string, least recently used evicted first. Only successful
 * verifications go in, and an entry is honoured exactly as long as jose would still accept the
 * token: until `exp + toleranceSeconds`. A key removed from the JWKS does not revoke cached
 * tokens before their expiry; with short-lived access tokens that window is accepted.
 */
export class PrincipalCache {
  // A Map iterates in insertion order, so re-inserting on every hit makes the first key the LRU one.
  private readonly entries = new Map<string, Entry>();
  /** The key last inserted or moved to the end of `entries`. */
  private newest: string | undefined;

  constructor(
    private readonly maxEntries: number,
    private readonly toleranceSeconds: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(token: string, issuer: string, nowSeconds: number): Principal | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    if (entry.issuer !== issuer || !this.stillValid(entry.principal, nowSeconds)) {
      this.entries.delete(token);
      return undefined;
    }
    // Already the most recently used (a client's run of requests): moving it would change nothing.
    if (token !== this.newest) {
      this.entries.delete(token);
      this.entries.set(token, entry);
      this.newest = token;
    }
    return entry.principal;
  }

  set(token: string, issuer: string, principal: Principal): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(token);
    this.entries.set(token, { principal, issuer });
    this.newest = token;
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
  }

  /** Mirrors jose's check `exp <= now - tolerance` → expired. */
  private stillValid(principal: Principal, nowSeconds: number): boolean {
    return principal.expiresAt > nowSeconds - this.toleranceSeconds;
  }
}
