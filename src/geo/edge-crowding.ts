import { overlappingIntervalPairs } from "./interval-pairs.js";
import { addChainBoxes, emptyChainBoxes } from "./monotone-chains.js";
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
 * pairs JTS's x sweep visits (chains as monotone-chains.ts builds them). O(n log n).
 */
export function xOverlappingEdgePairs(rings: readonly (readonly Position[])[]): number {
  const chains = addChainBoxes(emptyChainBoxes(), rings);
  return overlappingIntervalPairs(chains.minX, chains.maxX);
}
