import type { Position } from "./types.js";

/**
 * The boxes of rings' monotone chains, as parallel arrays: a chain is a run of edges heading into
 * one quadrant, as JTS builds them (MonotoneChainIndexer), repeated positions dropped. A straight
 * or gently curving run of thousands of positions is one chain, as it is to JTS, and JTS's sweeps
 * compare chains, not edges: these boxes are what its work is counted in (edge-crowding.ts,
 * overlay-plan.ts).
 */
export interface ChainBoxes {
  readonly minX: number[];
  readonly maxX: number[];
  readonly minY: number[];
  readonly maxY: number[];
  /** Which input each chain belongs to (the `input` given to addChainBoxes). */
  readonly input: number[];
  /** The ring each chain runs along, and the indexes of its first and last positions there. */
  readonly ring: (readonly Position[])[];
  readonly start: number[];
  readonly end: number[];
}

export function emptyChainBoxes(): ChainBoxes {
  return { minX: [], maxX: [], minY: [], maxY: [], input: [], ring: [], start: [], end: [] };
}

/** Appends the chains of `rings` to `into`, labelled `input`. */
export function addChainBoxes(into: ChainBoxes, rings: readonly (readonly Position[])[], input = 0): ChainBoxes {
  for (const ring of rings) {
    let quadrant = -1;
    let start = 0;
    let minX = Number.POSITIVE_INFINITY;
    let maxX = Number.NEGATIVE_INFINITY;
    let minY = Number.POSITIVE_INFINITY;
    let maxY = Number.NEGATIVE_INFINITY;
    for (let i = 1; i < ring.length; i++) {
      // Indexed, not destructured: this runs for every edge of every overlay's inputs.
      const ax = ring[i - 1][0];
      const ay = ring[i - 1][1];
      const bx = ring[i][0];
      const by = ring[i][1];
      const dx = bx - ax;
      const dy = by - ay;
      if (dx === 0 && dy === 0) continue;
      const heading = dx >= 0 ? (dy >= 0 ? 0 : 3) : dy >= 0 ? 1 : 2;
      if (heading !== quadrant && quadrant !== -1) {
        push(into, [minX, maxX, minY, maxY], input, ring, start, i - 1);
        start = i - 1;
        minX = minY = Number.POSITIVE_INFINITY;
        maxX = maxY = Number.NEGATIVE_INFINITY;
      }
      quadrant = heading;
      if (ax < minX) minX = ax;
      if (bx < minX) minX = bx;
      if (ax > maxX) maxX = ax;
      if (bx > maxX) maxX = bx;
      if (ay < minY) minY = ay;
      if (by < minY) minY = by;
      if (ay > maxY) maxY = ay;
      if (by > maxY) maxY = by;
    }
    if (quadrant !== -1) push(into, [minX, maxX, minY, maxY], input, ring, start, ring.length - 1);
  }
  return into;
}

function push(
  into: ChainBoxes,
  [minX, maxX, minY, maxY]: [number, number, number, number],
  input: number,
  ring: readonly Position[],
  start: number,
  end: number,
): void {
  into.minX.push(minX);
  into.maxX.push(maxX);
  into.minY.push(minY);
  into.maxY.push(maxY);
  into.input.push(input);
  into.ring.push(ring);
  into.start.push(start);
  into.end.push(end);
}
