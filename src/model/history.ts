import type { SourceRecord } from "./records.js";

/**
 * A source's history (docs/api.md §14): every change to a production source is an event, written
 * in the same transaction as the change and never updated or removed by any API call.
 */
export type SourceEventType = "created" | "conflict_set" | "conflict_cleared" | "deleted";

/** What a conflict between two sources measures (docs/api.md §14), from one side's point of view. */
export interface ConflictMeasure {
  /** Geodesic square metres both geometries cover. */
  overlapAreaM2: number;
  /** The overlap as a fraction of this side's area. */
  overlapFraction: number;
  /** The overlap as a fraction of the counterpart's area. */
  counterpartOverlapFraction: number;
  /** Where the two `[start_at, end_at)` periods overlap (epoch milliseconds). */
  overlapPeriod: { startAt: number; endAt: number };
  /** The attribute types both claim; empty when either side claims none. */
  sharedAttributeTypes: string[];
  /**
   * Set (true) only when no overlay could measure the pair (every engine failed, or the pair is
   * past the overlay limits, docs/api.md §8.5): `overlapAreaM2` is then the smaller source's whole
   * area, an upper bound, and the fractions follow from it. Absent on a measured pair.
   */
  overlapAreaUpperBound?: true;
}

/** Who the other side of a conflict is. Adapters decide how much of it a caller may see. */
export interface Counterpart {
  id: string;
  altId: string;
  accountId: string;
}

/** One live conflict of a source, as a store keeps the pair. */
export interface SourceConflict {
  counterpart: Counterpart;
  measure: ConflictMeasure;
  /** When the pair was found (the create that made it). */
  detectedAt: number;
  /**
   * The seq of the `conflict_set` event that recorded the pair in this source's history: a
   * source's conflicts are in this order (detection order, times following commits), and a page
   * of them resumes after one.
   */
  seq: number;
}

export interface SourceEvent {
  sourceId: string;
  /** The owning account of the source the event is about. */
  accountId: string;
  /** 1, 2, 3… per source, in the order the changes happened. */
  seq: number;
  type: SourceEventType;
  /** Epoch milliseconds. */
  at: number;
  /** The actor whose request made the change (`created_by` rules, docs/api.md §2.7). */
  by: string;
  /** `created`: the record as stored then. */
  record?: SourceRecord;
  /** `conflict_set`, `conflict_cleared`: the other side. */
  counterpart?: Counterpart;
  /** `conflict_set`: the pair's measures, from this source's side. */
  measure?: ConflictMeasure;
}

/** The same measure seen from the other side. */
export function fromOtherSide(measure: ConflictMeasure): ConflictMeasure {
  return {
    ...measure,
    overlapFraction: measure.counterpartOverlapFraction,
    counterpartOverlapFraction: measure.overlapFraction,
  };
}

/** Who makes a change and when: what a store writes into the change's events. */
export interface Change {
  /** The actor (`created_by` rules, docs/api.md §2.7). */
  by: string;
  /** Epoch milliseconds. */
  at: number;
}
