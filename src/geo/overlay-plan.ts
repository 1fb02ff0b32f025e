import { overlappingIntervalPairs } from "./interval-pairs.js";
import { addChainBoxes, type ChainBoxes, emptyChainBoxes } from "./monotone-chains.js";
import { type OverlayOperation, OverlayTooIntricateError } from "./overlay-errors.js";
import { countBelow } from "./sorted-count.js";
import type { PolygonCoordinates, Position } from "./types.js";

/*
 * What an overlay will cost is counted before any engine runs (docs/api.md §8.5), in O(n log n),
 * in the units the engines spend. Each engine sweeps one way, and its cost follows how crowded the
 * inputs are along its sweep:
 *
 * - JTS (and polyclip-ts) sweep along x over monotone chains (monotone-chains.ts): every pair of
 *   chains overlapping along x is compared (~60 ns each), every pair of edges of different inputs
 *   whose boxes meet may be a node of the overlay's graph (35–500 µs each), and each pair of parts
 *   costs 200–600 µs;
 * - Clipper2 sweeps along y in scan-beams, one between each two successive vertex latitudes: every
 *   edge is visited in every beam it spans (~125 ns each), each run of edges joins the active list
 *   by walking the runs already in it (~15 ns per pair of runs overlapping along y), and it spends
 *   ~2.5 µs per meeting edge pair.
 *
 * Either may be run with x and y swapped, which is exact and leaves every area as it was, so each
 * runs along whichever axis is leaner for it (a comb with teeth running east–west is crowded along
 * x, one with teeth running north–south along y).
 */

/** Costs along each axis: the sweep along x as given, and along y (the inputs transposed). */
interface AxisCosts {
  alongX: number;
  alongY: number;
}

/** What counting found for one overlay (all its inputs together). */
export interface OverlayPlan {
  /** Pairs of monotone chains overlapping along each axis: what a chain sweep compares. */
  chainPairs: AxisCosts;
  /** Edges times the distinct vertex coordinates strictly inside their extent, per axis: a scan-beam sweep's visits. */
  beamVisits: AxisCosts;
  /** Pairs of edges of different inputs whose boxes meet. */
  edgePairs: number;
  positions: number;
  /** Parts of the inputs multiplied together (intersection) or summed (union). */
  partPairs: number;
  /** Holes times positions: what placing each hole in its shell costs JTS (holes × shell size). */
  holeWork: number;
}

/**
 * A chain sweep (JTS, polyclip-ts) may run within all of these: ~0.5 s at most. A polygon with
 * 10,000 holes took JTS 8 s to place them (~17 ns per hole and shell position).
 */
export const CHAIN_SWEEP_LIMITS = {
  chainPairs: 2_000_000,
  edgePairs: 500,
  partPairs: 250,
  positions: 100_000,
  holeWork: 20_000_000,
} as const;
/**
 * A scan-beam sweep (Clipper2) may run within both: ~1 s at most. Its work along an axis is the
 * chain pairs overlapping along it plus 8 × the beam visits (their costs' ratio).
 */
export const BEAM_SWEEP_LIMITS = { work: 60_000_000, edgePairs: 400_000 } as const;

/** Clipper2's work along an axis, in chain-pair units (BEAM_SWEEP_LIMITS). */
export function beamWork(plan: OverlayPlan, axis: keyof AxisCosts): number {
  return plan.chainPairs[axis] + 8 * plan.beamVisits[axis];
}
/**
 * Whether Clipper2 (which sweeps along y) runs on the inputs transposed, sweeping along x: only
 * when that clearly pays (half the work) or is the only way within its limit, since transposing
 * copies every position (for two ordinary fields, about as long as the overlay's own setup).
 */
function beamsTransposed(plan: OverlayPlan): boolean {
  const [alongX, alongY] = [beamWork(plan, "alongX"), beamWork(plan, "alongY")];
  return 2 * alongX < alongY || (alongY > BEAM_SWEEP_LIMITS.work && alongX < alongY);
}

/** Clipper2's work on the inputs in the orientation it runs in (beamsTransposed). */
export function beamSweepWork(plan: OverlayPlan): number {
  return beamWork(plan, beamsTransposed(plan) ? "alongX" : "alongY");
}

/**
 * Past these, counting itself stops and no engine is tried (OverlayTooIntricateError): chain pairs
 * overlapping along the leaner axis (the count of meeting edges sweeps them, ~0.3 s), and chain
 * pairs of different inputs whose boxes meet (each bisected by the count, ~0.3 s).
 */
const COUNT_LIMITS = { chainPairs: 40_000_000, meetingChainPairs: 2_000_000 } as const;

/**
 * How an engine sweeps, for choosing its orientation and deciding whether it may run: "chains"
 * along x (JTS, polyclip-ts), "beams" along y (Clipper2).
 */
export type SweepKind = "chains" | "beams";

/**
 * Whether an engine of this kind may overlay the inputs, and if so, transposed or not: null when
 * the plan is past its limits along both axes.
 */
export function orientationFor(kind: SweepKind, plan: OverlayPlan): { transposed: boolean } | null {
  if (kind === "beams") {
    if (plan.edgePairs > BEAM_SWEEP_LIMITS.edgePairs) return null;
    const transposed = beamsTransposed(plan);
    return beamWork(plan, transposed ? "alongX" : "alongY") <= BEAM_SWEEP_LIMITS.work ? { transposed } : null;
  }
  const limits = CHAIN_SWEEP_LIMITS;
  if (
    plan.edgePairs > limits.edgePairs ||
    plan.partPairs > limits.partPairs ||
    plan.positions > limits.positions ||
    plan.holeWork > limits.holeWork
  ) {
    return null;
  }
  const { alongX, alongY } = plan.chainPairs;
  // Transposed only when it clearly pays or is the only way within the limit, so that ordinary
  // inputs keep the engines' usual orientation.
  const transposed =
    (alongX > 10_000 && 2 * alongY < alongX) || (alongX > limits.chainPairs && alongY <= limits.chainPairs);
  return (transposed ? alongY : alongX) <= limits.chainPairs ? { transposed } : null;
}

/**
 * Counts an overlay of `inputs` (two for an intersection, any number for a union); throws
 * OverlayTooIntricateError when counting itself would pass COUNT_LIMITS or no engine could run
 * (the edge pairs past BEAM_SWEEP_LIMITS).
 */
export function planOverlay(operation: OverlayOperation, inputs: PolygonCoordinates[][]): OverlayPlan {
  const refuse = (reason: string): never => {
    throw new OverlayTooIntricateError(operation, reason);
  };
  const chains = emptyChainBoxes();
  let positions = 0;
  let holes = 0;
  inputs.forEach((polygons, input) => {
    for (const rings of polygons) {
      addChainBoxes(chains, rings, input);
      for (const ring of rings) positions += ring.length;
      holes += rings.length - 1;
    }
  });
  const chainPairs = {
    alongX: overlappingIntervalPairs(chains.minX, chains.maxX),
    alongY: overlappingIntervalPairs(chains.minY, chains.maxY),
  };
  const leaner = Math.min(chainPairs.alongX, chainPairs.alongY);
  if (leaner > COUNT_LIMITS.chainPairs) {
    refuse(
      `${leaner.toLocaleString("en-US")} pairs of edge runs (monotone chains) overlap along either axis, ` +
        `more than ${COUNT_LIMITS.chainPairs.toLocaleString("en-US")}`,
    );
  }
  const edgePairs = meetingEdgePairs(chains, chainPairs.alongY < chainPairs.alongX, refuse);
  if (edgePairs > BEAM_SWEEP_LIMITS.edgePairs) {
    refuse(`more than ${BEAM_SWEEP_LIMITS.edgePairs.toLocaleString("en-US")} pairs of edges of different inputs meet`);
  }
  const parts = inputs.map((polygons) => polygons.length);
  const plan: OverlayPlan = {
    chainPairs,
    beamVisits: { alongX: beamVisits(inputs, chains, positions, 0), alongY: beamVisits(inputs, chains, positions, 1) },
    edgePairs,
    positions,
    partPairs: operation === "intersection" ? parts.reduce((p, n) => p * n, 1) : parts.reduce((s, n) => s + n, 0),
    holeWork: holes * positions,
  };
  if (orientationFor("beams", plan) === null && orientationFor("chains", plan) === null) {
    const leanest = Math.min(beamWork(plan, "alongX"), beamWork(plan, "alongY"));
    refuse(
      `a scan-beam sweep would do ${leanest.toLocaleString("en-US")} units of work, ` +
        `more than ${BEAM_SWEEP_LIMITS.work.toLocaleString("en-US")}`,
    );
  }
  return plan;
}

/**
 * Σ over edges of the distinct vertex coordinates (along `axis`) strictly inside the edge's extent:
 * the edge visits a scan-beam sweep along that axis makes. O(n log n), with the sorted coordinates
 * searched once per monotone chain, not once per edge: a chain's edges are monotone along the
 * axis, so their open extents are disjoint and together make the chain's open extent less its
 * inner vertices' coordinates, each of which is itself a coordinate counted there.
 */
function beamVisits(inputs: PolygonCoordinates[][], chains: ChainBoxes, positions: number, axis: 0 | 1): number {
  const values = new Float64Array(positions);
  let n = 0;
  for (const polygons of inputs) {
    for (const rings of polygons) {
      for (const ring of rings) for (let i = 0; i < ring.length; i++) values[n++] = ring[i][axis];
    }
  }
  values.sort();
  let distinct = 0;
  for (let i = 0; i < n; i++) if (i === 0 || values[i] !== values[distinct - 1]) values[distinct++] = values[i];
  const levels = values.subarray(0, distinct);
  const [lows, highs] = axis === 0 ? [chains.minX, chains.maxX] : [chains.minY, chains.maxY];
  let visits = 0;
  for (let c = 0; c < lows.length; c++) {
    const low = lows[c];
    const high = highs[c];
    if (low === high) continue;
    visits += countBelow(levels, high) - countBelow(levels, low, true);
    const ring = chains.ring[c];
    for (let i = chains.start[c] + 1; i < chains.end[c]; i++) {
      const value = ring[i][axis];
      if (value !== ring[i - 1][axis] && value > low && value < high) visits--;
    }
  }
  return visits;
}

/**
 * Pairs of edges from different inputs whose boxes meet (touching counts), found as JTS finds
 * them: a sweep along the leaner axis gives the pairs of chains from different inputs whose boxes
 * meet, and each such pair is bisected while the halves' boxes meet
 * (MonotoneChain.computeOverlaps). Stops once past BEAM_SWEEP_LIMITS.edgePairs.
 */
function meetingEdgePairs(chains: ChainBoxes, alongY: boolean, refuse: (reason: string) => never): number {
  const [lo, hi, crossLo, crossHi] = alongY
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
        if (++chainPairs > COUNT_LIMITS.meetingChainPairs) {
          refuse(
            `more than ${COUNT_LIMITS.meetingChainPairs.toLocaleString("en-US")} pairs of edge runs (monotone chains) of different inputs meet`,
          );
        }
        const ring = chains.ring;
        edgePairs += meetingEdges(ring[i], chains.start[i], chains.end[i], ring[j], chains.start[j], chains.end[j]);
        if (edgePairs > BEAM_SWEEP_LIMITS.edgePairs) return edgePairs;
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
  // A monotone run's box is the box of its two ends (indexed, not destructured: this is the hot loop).
  const ax = a[s0][0];
  const ay = a[s0][1];
  const bx = a[e0][0];
  const by = a[e0][1];
  const cx = b[s1][0];
  const cy = b[s1][1];
  const dx = b[e1][0];
  const dy = b[e1][1];
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
 * What all the overlays of one create request's sources with the sources they are checked against
 * may cost together (docs/api.md §8.5): positions handed to overlays (each pair's box, clipping and
 * count are linear in them, ~40 ns each), and meeting edge pairs and scan-beam work (what the
 * first engine, Clipper2, spends). Each pair stays within the limits above; without these, a source over a stack
 * of a thousand intricate or very large ones, or a batch of such sources, would cost a thousand of
 * them. About 2 s in all.
 */
export const SUBJECT_LIMITS = { positions: 40_000_000, edgePairs: 800_000, beamWork: 120_000_000 } as const;

/** One create request's overlays so far (src/ledger/conflict.ts), against SUBJECT_LIMITS (or others, for tests). */
export class OverlayAllowance {
  #positions = 0;
  #edgePairs = 0;
  #beamWork = 0;
  /** Why the allowance ran out, once it has. */
  #refusal: string | null = null;

  constructor(private readonly limits: { positions: number; edgePairs: number; beamWork: number } = SUBJECT_LIMITS) {}

  /** The same limits, nothing spent. */
  renewed(): OverlayAllowance {
    return new OverlayAllowance(this.limits);
  }

  /** Whether a limit was passed: every overlay charged to it from then on is refused before any work. */
  get exhausted(): boolean {
    return this.#refusal !== null;
  }

  /** Throws OverlayTooIntricateError, with the reason it ran out, once the allowance has run out. */
  refuseIfExhausted(): void {
    if (this.#refusal !== null) this.refuse(this.#refusal);
  }

  /** Before an overlay: its inputs' positions; throws OverlayTooIntricateError once past a limit. */
  spendPositions(positions: number): void {
    this.refuseIfExhausted();
    this.#positions += positions;
    if (this.#positions > this.limits.positions) {
      this.refuse(this.came(`${this.#positions.toLocaleString("en-US")} positions`, this.limits.positions));
    }
  }

  /** After counting: the overlay's meeting edge pairs and scan-beam work; throws once past a limit. */
  spendPlan(plan: OverlayPlan): void {
    this.#edgePairs += plan.edgePairs;
    if (this.#edgePairs > this.limits.edgePairs) {
      this.refuse(this.came(`${this.#edgePairs.toLocaleString("en-US")} meeting edge pairs`, this.limits.edgePairs));
    }
    // Clipper2's work, when it may run: past its limits a fallback runs, within limits of its own.
    if (orientationFor("beams", plan) !== null) this.#beamWork += beamSweepWork(plan);
    if (this.#beamWork > this.limits.beamWork) {
      this.refuse(this.came(`${this.#beamWork.toLocaleString("en-US")} units of scan-beam work`, this.limits.beamWork));
    }
  }

  private came(spent: string, limit: number): string {
    return `this source's overlays together came to ${spent}, more than ${limit.toLocaleString("en-US")}`;
  }

  private refuse(reason: string): never {
    this.#refusal = reason;
    throw new OverlayTooIntricateError("intersection", reason);
  }
}
