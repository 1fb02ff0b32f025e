import { boxesIntersect } from "../geo/bbox.js";
import {
  DEFAULT_ENGINES,
  intersectionAreaM2,
  type OverlayAllowance,
  type OverlayEngine,
  OverlayFailedError,
} from "../geo/overlap.js";
import { conflictAllowances } from "../geo/overlay-allowances.js";
import type { ConflictMeasure } from "../model/history.js";
import type { ConflictPolicy, SpatialSubject } from "../model/spatial.js";

/** docs/api.md §8: an overlap counts from 1% of the smaller source's area. */
export const MIN_OVERLAP_FRACTION = 0.01;

/** `[start_at, end_at)` periods overlap: half-open, so one ending when the other starts does not. */
export function periodsOverlap(a: SpatialSubject, b: SpatialSubject): boolean {
  return a.startAt < b.endAt && b.startAt < a.endAt;
}

/** They share an attribute type, or either has none (an untyped claim may cover any attribute). */
export function attributesCompatible(a: SpatialSubject, b: SpatialSubject): boolean {
  if (a.attributeType.length === 0 || b.attributeType.length === 0) return true;
  return a.attributeType.some((type) => b.attributeType.includes(type));
}

/** The overlap's area; `allowance` is what the overlays of `a`'s source may still cost (§8.5). */
export type OverlapArea = (a: SpatialSubject, b: SpatialSubject, allowance: OverlayAllowance) => number;

/**
 * The planar overlap's geodesic area (intersectionAreaM2) of two subjects, with `engines`. Once
 * the allowance has run out it refuses before reading either geometry: a large stored one costs
 * its reading and parsing (megabytes of JSON for a jurisdiction), which the refusal spares.
 */
export function overlapAreaOf(
  a: SpatialSubject,
  b: SpatialSubject,
  allowance: OverlayAllowance,
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
): number {
  allowance.refuseIfExhausted();
  return intersectionAreaM2(a.geometry, b.geometry, engines, allowance);
}

const defaultOverlapArea: OverlapArea = (a, b, allowance) => overlapAreaOf(a, b, allowance);

/**
 * The conflict decision of docs/api.md §8 for two sources, made on their exact geometry. The cheap
 * tests (period, attribute types, bounding boxes) run first so the overlay runs only for real
 * candidates.
 *
 * When every overlay engine fails on a pair whose boxes, periods and attribute types already
 * coincide, or the pair, or the overlays of `a`'s create request together, are past the overlay
 * limits and no engine is tried (OverlayTooIntricateError, an OverlayFailedError), the pair is
 * taken as conflicting: for a ledger that must not sell an acre twice, a flag to review is the
 * safe error, and an exception here would fail the whole create.
 */
export function sourcesConflict(
  a: SpatialSubject,
  b: SpatialSubject,
  overlapArea: OverlapArea = defaultOverlapArea,
): boolean {
  return conflictMeasure(a, b, overlapArea) !== null;
}

/**
 * The conflict of `a` with `b` as docs/api.md §14 explains it, from `a`'s side, or null when they
 * do not conflict (§8). When every overlay engine fails on a pair that is otherwise a candidate,
 * the pair conflicts (see above) and its overlap is taken as the smaller source's whole area: an
 * upper bound, so the explanation never understates a double claim.
 */
export function conflictMeasure(
  a: SpatialSubject,
  b: SpatialSubject,
  overlapArea: OverlapArea = defaultOverlapArea,
): ConflictMeasure | null {
  if (!periodsOverlap(a, b) || !attributesCompatible(a, b) || !boxesIntersect(a.bbox, b.bbox)) return null;
  const smaller = Math.min(a.areaM2, b.areaM2);
  if (!(smaller > 0)) return null;
  let overlap: number;
  let upperBound = false;
  try {
    overlap = overlapArea(a, b, conflictAllowances.of(a.geometry));
  } catch (error) {
    if (!(error instanceof OverlayFailedError)) throw error;
    overlap = smaller;
    upperBound = true;
  }
  if (!(overlap > 0 && overlap >= MIN_OVERLAP_FRACTION * smaller)) return null;
  return {
    ...(upperBound ? { overlapAreaUpperBound: true as const } : {}),
    overlapAreaM2: overlap,
    // An overlay measured on slightly different terms than the area may exceed it by a rounding.
    overlapFraction: Math.min(1, overlap / a.areaM2),
    counterpartOverlapFraction: Math.min(1, overlap / b.areaM2),
    overlapPeriod: { startAt: Math.max(a.startAt, b.startAt), endAt: Math.min(a.endAt, b.endAt) },
    sharedAttributeTypes: a.attributeType.filter((type) => b.attributeType.includes(type)),
  };
}

/** The policy the production stores apply. */
export const conflictPolicy: ConflictPolicy = {
  conflicts: (a, b) => sourcesConflict(a, b),
  measure: (a, b) => conflictMeasure(a, b),
};
