import { hkdfSync } from "node:crypto";

/**
 * A key for one use of the ledger's secret (HKDF-SHA-256): page tokens and conflict references
 * never share a key, so no value made for one can stand for the other.
 */
export function deriveKey(secret: Uint8Array, purpose: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, "source-ledger", purpose, 32));
}
