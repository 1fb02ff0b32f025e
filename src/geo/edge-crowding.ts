import { overlappingIntervalPairs } from "./interval-pairs.js";
import type { Position } from "./types.js";

/**
 * The most pairs of monotone chains (runs of edges heading into one quadrant) overlapping along
 * the longitude axis that OGC validity is checked for, when the ring fast paths could not settle a
 * polygon (docs/api.md §5.4). JTS's IsValidOp finds self-intersections with a sweep along x
 * (SimpleMCSweepLineIntersector) that visits every such pair: ~60 ns each on the reference
 * machine, so this bounds that sweep to about 0.6 s. A circle is 4 chains however many positions
 * it has; a 16,000-position zig-zag star, whose every edge is a chain, has ~37 million pairs (a
 * request that held the event loop for seconds, minutes at 100,000 positions).
 */
export const MAX_CROWDED_EDGE_PAIRS = 10_000_000;

/**
 * How many pairs of the rings' monotone chains overlap along x (touching extents count): the
 * pairs JTS's x sweep visits. A chain is a run of edges heading into one quadrant, as JTS builds
 * them (MonotoneChainIndexer), repeated positions dropped, so a straight or gently curving run
 * of thousands of positions is one chain, as it is to JTS. O(n log n): each chain, taken in order
 * of its western end, overlaps the chains that started before it and have not ended before it.
 */
export function xOverlappingEdgePairs(rings: readonly (readonly Position[])[]): number {
  const west: number[] = [];
  const east: number[] = [];
  for (const ring of rings) {
    let quadrant = -1;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 1; i < ring.length; i++) {
      const [ax, ay] = ring[i - 1];
      const [bx, by] = ring[i];
      const dx = bx - ax;
      const dy = by - ay;
      if (dx === 0 && dy === 0) continue;
      const heading = dx >= 0 ? (dy >= 0 ? 0 : 3) : dy >= 0 ? 1 : 2;
      if (heading !== quadrant && quadrant !== -1) {
        west.push(min);
        east.push(max);
        min = Number.POSITIVE_INFINITY;
        max = Number.NEGATIVE_INFINITY;
      }
      quadrant = heading;
      min = Math.min(min, ax, bx);
      max = Math.max(max, ax, bx);
    }
    if (quadrant !== -1) {
      west.push(min);
      east.push(max);
    }
  }
  return overlappingIntervalPairs(west, east);
}
