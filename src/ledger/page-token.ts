import { createHmac, timingSafeEqual } from "node:crypto";
import type { ResumePoint } from "../model/exact-tests.js";
import type { ListCursor } from "../model/list-query.js";
import { deriveKey } from "./keys.js";

/**
 * Page tokens (docs/api.md §12): where the next page starts, authenticated for the listing that
 * made it. A token is base64url of
 *
 *   [version 1][created_at: 8-byte big-endian integer][id: UTF-8][MAC: 16 bytes]
 *
 * or, for a page that ended empty while still skipping its offset's matches (READ_ON_TURNS), with
 * the matches still to skip after that record,
 *
 *   [version 2][created_at: 8 bytes][skip: 4-byte big-endian unsigned integer][id: UTF-8][MAC: 16 bytes]
 *
 * where the MAC is HMAC-SHA-256 (truncated to 128 bits) over the binding and the bytes before it.
 * The binding names everything a token is valid for (environment, caller, account scope, filters,
 * search area), so a token replayed with other filters, by another account, in the other
 * environment, or altered in any bit fails the check. Tokens carry no time: they do not expire.
 */

const AFTER = 1;
const AFTER_THEN_SKIP = 2;
const MAC_BYTES = 16;
const CREATED_AT_BYTES = 8;
const SKIP_BYTES = 4;
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

  /** The token of the page that starts after `cursor`, `skip` matches further on, for the listing `binding` names. */
  mint(cursor: ListCursor, binding: string, skip = 0): string {
    const id = Buffer.from(cursor.id, "utf8");
    const header = 1 + CREATED_AT_BYTES + (skip > 0 ? SKIP_BYTES : 0);
    const body = Buffer.alloc(header + id.length);
    body[0] = skip > 0 ? AFTER_THEN_SKIP : AFTER;
    body.writeBigInt64BE(BigInt(cursor.createdAt), 1);
    if (skip > 0) body.writeUInt32BE(skip, 1 + CREATED_AT_BYTES);
    id.copy(body, header);
    return Buffer.concat([body, this.mac(binding, body)]).toString("base64url");
  }

  /** Where a token's page starts, or null when it was not minted for `binding` by this key (or is not a token). */
  read(token: string, binding: string): ResumePoint | null {
    if (token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
    const bytes = Buffer.from(token, "base64url");
    // Re-encoding must give the same text: no second spelling of one token is accepted.
    if (bytes.toString("base64url") !== token || bytes.length <= MAC_BYTES) return null;
    const body = bytes.subarray(0, bytes.length - MAC_BYTES);
    const mac = bytes.subarray(bytes.length - MAC_BYTES);
    if (!timingSafeEqual(mac, this.mac(binding, body))) return null;
    const skipping = body[0] === AFTER_THEN_SKIP;
    if (body[0] !== AFTER && !skipping) return null;
    const header = 1 + CREATED_AT_BYTES + (skipping ? SKIP_BYTES : 0);
    if (body.length <= header) return null;
    const createdAt = Number(body.readBigInt64BE(1));
    const skip = skipping ? body.readUInt32BE(1 + CREATED_AT_BYTES) : 0;
    return { createdAt, id: body.subarray(header).toString("utf8"), skip };
  }
}
