import { SegmentIndex } from "./intersects.js";
import { polygonsOf } from "./parts.js";
import type { SourceGeometry } from "./types.js";

/*
 * A large geometry's boundary, indexed (intersects.ts's SegmentIndex: whether any edge comes near
 * a box, and where a point lies, in O(log n + k) rather than a pass over every edge). A large source
 * (a jurisdiction) checked against thousands of fields inside its box then needs an overlay only
 * for the fields its boundary passes near: the others lie wholly inside or outside it
 * (docs/api.md §8.5).
 */

const indexes = new WeakMap<SourceGeometry, SegmentIndex | "seen">();

/**
 * The boundary index of a geometry used in more than one overlay (geometries are values, never
 * changed once parsed): built on its second use, so that a pair checked once, as most are, never
 * pays for it. Undefined on the first use.
 */
export function boundaryIndexOf(geometry: SourceGeometry): SegmentIndex | undefined {
  const known = indexes.get(geometry);
  if (known instanceof SegmentIndex) return known;
  if (known === undefined) {
    indexes.set(geometry, "seen");
    return undefined;
  }
  const index = new SegmentIndex(polygonsOf(geometry));
  indexes.set(geometry, index);
  return index;
}

/** The boundary index of a geometry if it has been built (boundaryIndexOf), without counting a use. */
export function builtBoundaryIndexOf(geometry: SourceGeometry): SegmentIndex | undefined {
  const known = indexes.get(geometry);
  return known instanceof SegmentIndex ? known : undefined;
}
