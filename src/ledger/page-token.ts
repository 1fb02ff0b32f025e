import { createHmac, timingSafeEqual } from "node:crypto";
import type { ListCursor } from "../model/list-query.js";
import { deriveKey } from "./keys.js";

/**
 * Page tokens (docs/api.md §12): where the next page starts, authenticated for the listing that
 * made it. A token is base64url of
 *
 *   [version 1][created_at: 8-byte big-endian integer][id: UTF-8][MAC: 16 bytes]
 *
 * where the MAC is HMAC-SHA-256 (truncated to 128 bits) over the binding and the bytes before it.
 * The binding names everything a token is valid for (environment, caller, account scope, filters,
 * search area), so a token replayed with other filters, by another account, in the other
 * environment, or altered in any bit fails the check. Tokens carry no time: they do not expire.
 */

const VERSION = 1;
const MAC_BYTES = 16;
const HEADER_BYTES = 1 + 8;
/** An id is at most a few dozen characters; anything much longer is not a token of ours. */
const MAX_TOKEN_CHARS = 512;

/** The key of page tokens, derived from the ledger's secret so no other use of it can collide. */
export function pageTokenKey(secret: Uint8Array): Buffer {
  return deriveKey(secret, "page tokens v1");
}

export class PageTokens {
  constructor(private readonly key: Buffer) {}

  private mac(binding: string, body: Buffer): Buffer {
    return createHmac("sha256", this.key).update(binding).update("\u0000").update(body).digest().subarray(0, MAC_BYTES);
  }

  /** The token of the page that starts after `cursor`, for the listing `binding` names. */
  mint(cursor: ListCursor, binding: string): string {
    const id = Buffer.from(cursor.id, "utf8");
    const body = Buffer.alloc(HEADER_BYTES + id.length);
    body[0] = VERSION;
    body.writeBigInt64BE(BigInt(cursor.createdAt), 1);
    id.copy(body, HEADER_BYTES);
    return Buffer.concat([body, this.mac(binding, body)]).toString("base64url");
  }

  /** The cursor a token holds, or null when it was not minted for `binding` by this key (or is not a token). */
  read(token: string, binding: string): ListCursor | null {
    if (token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
    const bytes = Buffer.from(token, "base64url");
    // Re-encoding must give the same text: no second spelling of one token is accepted.
    if (bytes.toString("base64url") !== token || bytes.length <= HEADER_BYTES + MAC_BYTES) return null;
    const body = bytes.subarray(0, bytes.length - MAC_BYTES);
    const mac = bytes.subarray(bytes.length - MAC_BYTES);
    if (!timingSafeEqual(mac, this.mac(binding, body)) || body[0] !== VERSION) return null;
    const createdAt = Number(body.readBigInt64BE(1));
    return { createdAt, id: body.subarray(HEADER_BYTES).toString("utf8") };
  }
}
