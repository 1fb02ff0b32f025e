import type { Principal } from "./principal.js";

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
    this.entries.delete(token);
    if (entry.issuer !== issuer || !this.stillValid(entry.principal, nowSeconds)) return undefined;
    this.entries.set(token, entry);
    return entry.principal;
  }

  set(token: string, issuer: string, principal: Principal): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(token);
    this.entries.set(token, { principal, issuer });
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
