import type { Position } from "./types.js";

/**
 * The most pairs of edges overlapping along the longitude axis that OGC validity is checked for,
 * when the ring fast paths could not settle a polygon (docs/api.md §5.4). JTS's IsValidOp finds
 * self-intersections with a sweep along x (SimpleMCSweepLineIntersector) that visits every such
 * pair: ~60 ns each on the reference machine, so this bounds that sweep to about 0.6 s. A
 * 100,000-position circle has ~250,000 such pairs; a 16,000-position zig-zag star ~37 million (a
 * request that held the event loop for seconds, minutes at 100,000 positions).
 */
export const MAX_CROWDED_EDGE_PAIRS = 10_000_000;

/**
 * How many pairs of the rings' edges overlap along x (touching extents count): an upper bound of
 * the pairs an x sweep visits. O(n log n): each edge, taken in order of its western end, overlaps
 * the edges that started before it and have not ended before it starts.
 */
export function xOverlappingEdgePairs(rings: readonly (readonly Position[])[]): number {
  let edges = 0;
  for (const ring of rings) edges += Math.max(0, ring.length - 1);
  const west = new Float64Array(edges);
  const east = new Float64Array(edges);
  let k = 0;
  for (const ring of rings) {
    for (let i = 1; i < ring.length; i++) {
      const a = ring[i - 1][0];
      const b = ring[i][0];
      west[k] = Math.min(a, b);
      east[k] = Math.max(a, b);
      k++;
    }
  }
  west.sort();
  east.sort();
  let pairs = 0;
  let ended = 0;
  for (let started = 0; started < edges; started++) {
    while (east[ended] < west[started]) ended++;
    pairs += started - ended;
  }
  return pairs;
}
