import RBush from "rbush";
import { addChainBoxes, type ChainBoxes, emptyChainBoxes } from "./monotone-chains.js";
import { polygonsOf } from "./parts.js";
import type { BoundingBox, Position, SourceGeometry } from "./types.js";

/**
 * A geometry's boundary, indexed (an R-tree over its monotone chains, bulk-loaded): whether it
 * comes near a box, and on which side of it a point lies, in O(log n + k) rather than a pass over
 * every edge. A large source (a jurisdiction) checked against thousands of fields inside its box
 * then needs an overlay only for the fields its boundary passes near: the others lie wholly
 * inside or outside it (docs/api.md §8.5).
 */
export class BoundaryIndex {
  readonly #chains: ChainBoxes;
  readonly #tree = new RBush<ChainBox>();

  constructor(geometry: SourceGeometry) {
    const chains = emptyChainBoxes();
    for (const rings of polygonsOf(geometry)) addChainBoxes(chains, rings);
    this.#chains = chains;
    this.#tree.load(
      chains.minX.map((minX, chain) => ({
        minX,
        minY: chains.minY[chain],
        maxX: chains.maxX[chain],
        maxY: chains.maxY[chain],
        chain,
      })),
    );
  }

  /**
   * Whether an edge's box meets the closed `box`: a conservative "the boundary may pass through
   * it". When false, the box lies wholly inside or wholly outside the geometry.
   */
  nearBox(box: BoundingBox): boolean {
    const chains = this.#chains;
    return this.#tree
      .search(box)
      .some(({ chain }) => edgeNearBox(chains.ring[chain], chains.start[chain], chains.end[chain], box));
  }

  /**
   * Whether `point` lies inside the geometry (even-odd over every ring: valid polygons' parts do
   * not overlap and their holes lie in their shells; a clip's zero-width bridges are crossed twice
   * or not at all). Only for a point in a box `nearBox` answered false for: then no edge's box
   * meets the point, so each edge crossing its latitude lies wholly east or west of it, and the
   * count needs no arithmetic that could round.
   */
  contains(point: Position): boolean {
    const [x, y] = point;
    const chains = this.#chains;
    let crossings = 0;
    for (const { chain } of this.#tree.search({ minX: x, minY: y, maxX: Number.POSITIVE_INFINITY, maxY: y })) {
      const ring = chains.ring[chain];
      const edge = crossingEdge(ring, chains.start[chain], chains.end[chain], y);
      if (edge >= 0 && Math.min(ring[edge][0], ring[edge + 1][0]) > x) crossings++;
    }
    return crossings % 2 === 1;
  }
}

/** A chain's box in the R-tree, and which chain it is. */
interface ChainBox {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
  chain: number;
}

/** Whether an edge of the monotone run [s, e] of `ring` has a box meeting `box`: bisected, as the run's boxes are its ends'. */
function edgeNearBox(ring: readonly Position[], s: number, e: number, box: BoundingBox): boolean {
  const ax = ring[s][0];
  const ay = ring[s][1];
  const bx = ring[e][0];
  const by = ring[e][1];
  if (
    Math.max(ax, bx) < box.minX ||
    Math.min(ax, bx) > box.maxX ||
    Math.max(ay, by) < box.minY ||
    Math.min(ay, by) > box.maxY
  ) {
    return false;
  }
  if (e - s === 1) return true;
  const m = (s + e) >> 1;
  return edgeNearBox(ring, s, m, box) || edgeNearBox(ring, m, e, box);
}

/**
 * The edge of the monotone run [s, e] that crosses latitude `y` by the half-open rule of ray
 * casting (exactly one end above `y`), or -1: along a run latitudes only rise or only fall, so
 * there is at most one, found by bisection.
 */
function crossingEdge(ring: readonly Position[], s: number, e: number, y: number): number {
  const above = (i: number) => ring[i][1] > y;
  const first = above(s);
  if (first === above(e)) return -1;
  let low = s;
  let high = e;
  // Invariant: above(low) === first, above(high) !== first.
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (above(middle) === first) low = middle;
    else high = middle;
  }
  return low;
}

const indexes = new WeakMap<SourceGeometry, BoundaryIndex | "seen">();

/**
 * The boundary index of a geometry used in more than one overlay (geometries are values, never
 * changed once parsed): built on its second use, so that a pair checked once, as most are, never
 * pays for it. Undefined on the first use.
 */
export function boundaryIndexOf(geometry: SourceGeometry): BoundaryIndex | undefined {
  const known = indexes.get(geometry);
  if (known instanceof BoundaryIndex) return known;
  if (known === undefined) {
    indexes.set(geometry, "seen");
    return undefined;
  }
  const index = new BoundaryIndex(geometry);
  indexes.set(geometry, index);
  return index;
}
