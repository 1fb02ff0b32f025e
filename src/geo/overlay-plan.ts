import { intersectingBoxPairs } from "./box-pairs.js";
import { overlappingIntervalPairs } from "./interval-pairs.js";
import { addChainBoxes, type ChainBoxes, emptyChainBoxes } from "./monotone-chains.js";
import { type OverlayOperation, OverlayTooIntricateError } from "./overlay-errors.js";
import { ringBox } from "./planar.js";
import type { PolygonCoordinates, Position } from "./types.js";

/*
 * What an overlay will cost is counted before any engine runs (docs/api.md §8.2), in the units
 * the engines spend: pairs of monotone chains (monotone-chains.ts) overlapping along the axis an
 * engine sweeps, pairs of edges from different inputs whose boxes meet (each may hold an
 * intersection, a node of the overlay's graph), and pairs of parts. Measured on the reference
 * machine, JTS spends ~60 ns per swept pair, 35–500 µs per meeting edge pair and 200–600 µs per
 * part pair; Clipper2 ~2 µs per meeting edge pair and ~10 µs per part.
 */

/**
 * Within all three, the whole engine chain may overlay the inputs (Clipper2 first; should it throw,
 * JTS and the others, each within ~0.5 s here). Past any, Clipper2 alone.
 */
export const ORDINARY_LIMITS = { sweptPairs: 2_000_000, edgePairs: 500, partPairs: 250 } as const;
/** Past any of them, no engine is tried (OverlayTooIntricateError): ~1 s of Clipper2. */
export const MAX_OVERLAY_EDGE_PAIRS = 400_000;
/** The counting sweep itself visits these: ~0.2 s. */
export const MAX_OVERLAY_SWEPT_PAIRS = 20_000_000;
/** Chain pairs whose boxes meet, each bisected by the count: ~0.3 s. */
export const MAX_OVERLAY_CHAIN_PAIRS = 2_000_000;

/**
 * What all the overlays of one source with the sources it is checked against may cost together
 * (docs/api.md §8.5): positions handed to overlays (each pair's box, clipping and count are linear
 * in them, ~40 ns each), and meeting edge pairs (~2.5 µs each in Clipper2). Each pair stays within
 * the limits above; without these, a source over a stack of a thousand intricate or very large
 * ones would cost a thousand of them. About 2 s in all.
 */
export const SUBJECT_LIMITS = { positions: 40_000_000, edgePairs: 800_000 } as const;

/** One source's overlays so far, against SUBJECT_LIMITS (or others, for tests). */
export class OverlayAllowance {
  #positions = 0;
  #edgePairs = 0;

  constructor(private readonly limits: { positions: number; edgePairs: number } = SUBJECT_LIMITS) {}

  /** Before an overlay: its inputs' positions; throws OverlayTooIntricateError once past the limit. */
  spendPositions(positions: number): void {
    this.#positions += positions;
    if (this.#positions > this.limits.positions) {
      this.refuse(`${this.#positions.toLocaleString("en-US")} positions`, this.limits.positions);
    }
  }

  /** After counting: the overlay's meeting edge pairs; throws OverlayTooIntricateError once past the limit. */
  spendPlan(plan: OverlayPlan): void {
    this.#edgePairs += plan.edgePairs;
    if (this.#edgePairs > this.limits.edgePairs) {
      this.refuse(`${this.#edgePairs.toLocaleString("en-US")} meeting edge pairs`, this.limits.edgePairs);
    }
  }

  private refuse(spent: string, limit: number): never {
    throw new OverlayTooIntricateError(
      "intersection",
      `this source's overlays together came to ${spent}, more than ${limit.toLocaleString("en-US")}`,
    );
  }
}

/**
 * Below this many chain pairs swept along x, the inputs are never transposed: the saving would
 * not be measurable, and keeping the engines' usual orientation keeps their results as they were.
 */
const TRANSPOSE_FROM_SWEPT_PAIRS = 10_000;

/** One overlay for an engine of the ordinary chain: its inputs, and whether to swap x and y. */
export interface OverlayJob {
  inputs: PolygonCoordinates[][];
  /**
   * Swapping x and y is exact and leaves areas unchanged, and it turns the engines' sweep along x
   * into one along y: chosen when the inputs overlap much less along y (a comb whose teeth run
   * east–west, which took JTS 4.6 s along x).
   */
  transposed: boolean;
}

/** How one operation is overlaid, and what counting found. */
export interface OverlayPlan {
  /**
   * "ordinary": each job through the engine chain (Clipper2 first, JTS and the others as its
   * fallbacks). "intricate": the whole operation through Clipper2 alone, the inputs being beyond
   * what the fallbacks could do in a few hundred milliseconds.
   */
  route: "ordinary" | "intricate";
  jobs: OverlayJob[];
  sweptPairs: number;
  edgePairs: number;
}

/** Counts one operation's jobs against the limits; throws OverlayTooIntricateError past the largest. */
class PlanCounter {
  readonly jobs: OverlayJob[] = [];
  sweptPairs = 0;
  edgePairs = 0;

  constructor(private readonly operation: OverlayOperation) {}

  add(inputs: PolygonCoordinates[][]): void {
    const chains = emptyChainBoxes();
    inputs.forEach((polygons, input) => {
      for (const rings of polygons) addChainBoxes(chains, rings, input);
    });
    const alongX = overlappingIntervalPairs(chains.minX, chains.maxX);
    const alongY = overlappingIntervalPairs(chains.minY, chains.maxY);
    const transposed = alongX >= TRANSPOSE_FROM_SWEPT_PAIRS && 2 * alongY < alongX;
    this.sweptPairs += transposed ? alongY : alongX;
    if (this.sweptPairs > MAX_OVERLAY_SWEPT_PAIRS) {
      this.refuse(
        `${this.sweptPairs.toLocaleString("en-US")} pairs of edge runs (monotone chains) overlap along the sweep, ` +
          `more than ${MAX_OVERLAY_SWEPT_PAIRS.toLocaleString("en-US")}`,
      );
    }
    this.edgePairs += meetingEdgePairs(chains, transposed, MAX_OVERLAY_EDGE_PAIRS - this.edgePairs, this);
    if (this.edgePairs > MAX_OVERLAY_EDGE_PAIRS) {
      this.refuse(
        `more than ${MAX_OVERLAY_EDGE_PAIRS.toLocaleString("en-US")} pairs of edges of different inputs meet`,
      );
    }
    this.jobs.push({ inputs, transposed });
  }

  plan(): OverlayPlan {
    const ordinary =
      this.sweptPairs <= ORDINARY_LIMITS.sweptPairs &&
      this.edgePairs <= ORDINARY_LIMITS.edgePairs &&
      this.jobs.length <= ORDINARY_LIMITS.partPairs;
    return {
      route: ordinary ? "ordinary" : "intricate",
      jobs: this.jobs,
      sweptPairs: this.sweptPairs,
      edgePairs: this.edgePairs,
    };
  }

  refuse(reason: string): never {
    throw new OverlayTooIntricateError(this.operation, reason);
  }
}

/**
 * Pairs of edges from different inputs whose boxes meet (touching counts), found as JTS finds
 * them: a sweep along the engines' axis gives the pairs of chains from different inputs whose
 * boxes meet, and each such pair is bisected while the halves' boxes meet
 * (MonotoneChain.computeOverlaps). Stops once past `limit`.
 */
function meetingEdgePairs(chains: ChainBoxes, transposed: boolean, limit: number, counter: PlanCounter): number {
  const [lo, hi, crossLo, crossHi] = transposed
    ? [chains.minY, chains.maxY, chains.minX, chains.maxX]
    : [chains.minX, chains.maxX, chains.minY, chains.maxY];
  const order = Uint32Array.from(lo.keys()).sort((i, j) => lo[i] - lo[j]);
  const active: number[] = [];
  let edgePairs = 0;
  let chainPairs = 0;
  for (const i of order) {
    for (let k = active.length - 1; k >= 0; k--) {
      const j = active[k];
      if (hi[j] < lo[i]) {
        active[k] = active[active.length - 1];
        active.pop();
      } else if (chains.input[i] !== chains.input[j] && crossLo[j] <= crossHi[i] && crossLo[i] <= crossHi[j]) {
        if (++chainPairs > MAX_OVERLAY_CHAIN_PAIRS) {
          counter.refuse(
            `more than ${MAX_OVERLAY_CHAIN_PAIRS.toLocaleString("en-US")} pairs of edge runs (monotone chains) of different inputs meet`,
          );
        }
        const ring = chains.ring;
        edgePairs += meetingEdges(ring[i], chains.start[i], chains.end[i], ring[j], chains.start[j], chains.end[j]);
        if (edgePairs > limit) return edgePairs;
      }
    }
    active.push(i);
  }
  return edgePairs;
}

/** Edge pairs of two monotone runs, ring a [s0, e0] and ring b [s1, e1], whose boxes meet. */
function meetingEdges(
  a: readonly Position[],
  s0: number,
  e0: number,
  b: readonly Position[],
  s1: number,
  e1: number,
): number {
  // A monotone run's box is the box of its two ends.
  const [ax, ay] = a[s0];
  const [bx, by] = a[e0];
  const [cx, cy] = b[s1];
  const [dx, dy] = b[e1];
  if (
    Math.max(cx, dx) < Math.min(ax, bx) ||
    Math.max(ax, bx) < Math.min(cx, dx) ||
    Math.max(cy, dy) < Math.min(ay, by) ||
    Math.max(ay, by) < Math.min(cy, dy)
  ) {
    return 0;
  }
  if (e0 - s0 === 1 && e1 - s1 === 1) return 1;
  const m0 = (s0 + e0) >> 1;
  const m1 = (s1 + e1) >> 1;
  let pairs = 0;
  if (s0 < m0) {
    if (s1 < m1) pairs += meetingEdges(a, s0, m0, b, s1, m1);
    if (m1 < e1) pairs += meetingEdges(a, s0, m0, b, m1, e1);
  }
  if (m0 < e0) {
    if (s1 < m1) pairs += meetingEdges(a, m0, e0, b, s1, m1);
    if (m1 < e1) pairs += meetingEdges(a, m0, e0, b, m1, e1);
  }
  return pairs;
}

/**
 * How to overlay a ∩ b. A MultiPolygon's parts have disjoint interiors, so a ∩ b is the union of
 * aᵢ ∩ bⱼ over the pairs of parts whose boxes meet, pieces that meet each other at most at points:
 * together they are the intersection, and their areas add up. Part by part, JTS never sees
 * thousands of parts at once (two grids of 10,000 fields took it 214 s whole), and each pair is
 * swept along its own leaner axis.
 */
export function planIntersection(a: PolygonCoordinates[], b: PolygonCoordinates[]): OverlayPlan {
  // Typed, so that refuse() (never) narrows what follows it.
  const counter: PlanCounter = new PlanCounter("intersection");
  if (a.length === 1 && b.length === 1) {
    counter.add([a, b]);
    return counter.plan();
  }
  const pairs = intersectingBoxPairs([...a, ...b].map((rings) => ringBox(rings[0])));
  if (pairs === null) counter.refuse("too many of their parts' boxes overlap");
  for (const [first, second] of pairs) {
    if (first < a.length && second >= a.length) counter.add([[a[first]], [b[second - a.length]]]);
  }
  return counter.plan();
}

/** How to overlay the union of `inputs` (each a list of polygons): one job. */
export function planUnion(inputs: PolygonCoordinates[][]): OverlayPlan {
  const counter = new PlanCounter("union");
  counter.add(inputs);
  return counter.plan();
}
