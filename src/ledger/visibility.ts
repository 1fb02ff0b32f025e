import { createHmac } from "node:crypto";
import type { ConflictMeasure, Counterpart, SourceEvent, SourceEventType } from "../model/history.js";
import type { Principal } from "../model/principal.js";
import type { SourceRecord } from "../model/records.js";
import { deriveKey } from "./keys.js";

/**
 * The other side of a conflict as a caller may see it (docs/api.md §14): `id` and `altId` in the
 * caller's own account, `ref` alone in another account, and `accountId` too for admins. Nothing
 * else of another account (ids, names, geometry, actors) ever reaches a caller who is not an admin.
 */
export interface VisibleCounterpart {
  id?: string;
  altId?: string;
  accountId?: string;
  ref?: string;
}

export interface VisibleEvent {
  seq: number;
  type: SourceEventType;
  at: number;
  /** The actor; null when the change came from another account's side. */
  by: string | null;
  record?: SourceRecord;
  counterpart?: VisibleCounterpart;
  measure?: ConflictMeasure;
}

export interface VisibleConflict {
  counterpart: VisibleCounterpart;
  measure: ConflictMeasure;
  detectedAt: number;
}

/** The bytes of a conflict reference: 128 bits, base64url (22 characters). */
const REF_BYTES = 16;

/**
 * Applies the counterpart rule. A reference is an HMAC of the pair's two ids (in sorted order, so
 * both sides see the same one) under a key derived from the ledger's secret: stable for a pair,
 * different across pairs, and without the key it reveals nothing of either id.
 */
export class CounterpartView {
  private readonly key: Buffer;

  constructor(secret: Uint8Array) {
    this.key = deriveKey(secret, "conflict refs v1");
  }

  private refOf(a: string, b: string): string {
    const [first, second] = a < b ? [a, b] : [b, a];
    return createHmac("sha256", this.key)
      .update(first)
      .update("\u0000")
      .update(second)
      .digest()
      .subarray(0, REF_BYTES)
      .toString("base64url");
  }

  /** `other`, a counterpart of source `sourceId`, as `principal` may see it. */
  counterpart(principal: Principal, sourceId: string, other: Counterpart): VisibleCounterpart {
    if (principal.isAdmin) return { id: other.id, altId: other.altId, accountId: other.accountId };
    if (other.accountId === principal.accountId) return { id: other.id, altId: other.altId };
    return { ref: this.refOf(sourceId, other.id) };
  }

  /**
   * An event as the caller may see it. A conflict event's change may have come from the
   * counterpart's side (its create found the pair, its delete cleared it): when that side is
   * another account's, its actor is not shown to a caller who is not an admin.
   */
  event(principal: Principal, event: SourceEvent): VisibleEvent {
    const { counterpart } = event;
    const foreign = counterpart !== undefined && !principal.isAdmin && counterpart.accountId !== principal.accountId;
    const visible: VisibleEvent = { seq: event.seq, type: event.type, at: event.at, by: foreign ? null : event.by };
    if (event.record) visible.record = event.record;
    if (counterpart) visible.counterpart = this.counterpart(principal, event.sourceId, counterpart);
    if (event.measure) visible.measure = event.measure;
    return visible;
  }
}
