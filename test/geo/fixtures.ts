import type { MultiPolygonGeometry, PolygonCoordinates, PolygonGeometry, Position } from "../../src/geo/types.js";
import { ring } from "../support/geometry-fixtures.js";

/** Closed counter-clockwise square ring with its lower-left corner at (x, y). */
export function squareRing(x: number, y: number, size = 1): Position[] {
  return ring(x, y, x + size, y + size);
}

/** Closed ring approximating a circle with `vertices` distinct vertices. */
export function circleRing(cx: number, cy: number, radius: number, vertices: number): Position[] {
  const positions: Position[] = [];
  for (let i = 0; i < vertices; i++) {
    const angle = (2 * Math.PI * i) / vertices;
    positions.push([cx + radius * Math.cos(angle), cy + radius * Math.sin(angle)]);
  }
  positions.push(positions[0]);
  return positions;
}

export function polygon(...rings: Position[][]): PolygonGeometry {
  return { type: "Polygon", coordinates: rings };
}

export function multiPolygon(...polygons: PolygonCoordinates[]): MultiPolygonGeometry {
  return { type: "MultiPolygon", coordinates: polygons };
}

export function square(x: number, y: number, size = 1): PolygonGeometry {
  return polygon(squareRing(x, y, size));
}

/**
 * A comb: a spine [x, x + spine] × [y, top] on the west and `teeth` + 1 teeth [x + spine, x + length]
 * × [y + 2id, y + 2id + d] running east, d = height / (2 · teeth). Every edge runs along a meridian
 * or a parallel, so its area, and the area of two combs' intersection, are exact sums of lon/lat
 * cells (combIntersectionCells). The teeth all overlap along x: JTS's sweep along x compares
 * every pair of them.
 */
export interface Comb {
  x: number;
  y: number;
  teeth: number;
  height: number;
  length: number;
  spine: number;
  /**
   * Teeth of different lengths, between 0.3 and 1 of `length` beyond the spine, every tip at its
   * own longitude: a sweep across the teeth then stops at every tip (not for combIntersectionCells).
   */
  staggered?: boolean;
}

export function combGeometry(comb: Comb): PolygonGeometry {
  const { x, y, teeth, height, length, spine, staggered = false } = comb;
  const d = height / (2 * teeth);
  const tip = (i: number) =>
    staggered ? x + spine + (length - spine) * (0.3 + (0.7 * ((i * 7_919) % teeth)) / teeth) : x + length;
  const positions: Position[] = [
    [x, y],
    [tip(0), y],
  ];
  for (let i = 0; i < teeth; i++) {
    const base = y + 2 * i * d;
    positions.push([tip(i), base + d], [x + spine, base + d], [x + spine, base + 2 * d], [tip(i + 1), base + 2 * d]);
  }
  const top = y + 2 * teeth * d + d;
  positions.push([tip(teeth), top], [x, top], [x, y]);
  return polygon(positions);
}

/**
 * The lon/lat cells that make up a ∩ b for two combs alike but for b lying `shift` (less than a
 * tooth's height) north of a: the spines' overlap, and each tooth's overlap with its twin.
 */
export function combIntersectionCells(a: Comb, shift: number): [number, number, number, number][] {
  const { x, y, teeth, height, length, spine } = a;
  const d = height / (2 * teeth);
  const cells: [number, number, number, number][] = [[x, y + shift, x + spine, y + 2 * teeth * d + d]];
  for (let i = 0; i <= teeth; i++) {
    const base = y + 2 * i * d;
    cells.push([x + spine, base + shift, x + length, base + d]);
  }
  return cells;
}

/**
 * A zig-zag `n` teeth wide across [x, x + size], its teeth between y + size·(½ ± amplitude/2),
 * closed below; across = true swaps x and y, so that two of them, one across, cross each other
 * at many points around the middle.
 */
export function zigzag(
  x: number,
  y: number,
  size: number,
  n: number,
  amplitude: number,
  across = false,
): PolygonGeometry {
  const positions: Position[] = [];
  for (let i = 0; i <= n; i++) {
    positions.push([(i / n) * size, size * (0.5 + (i % 2 === 1 ? amplitude : -amplitude) / 2)]);
  }
  positions.push([size, 0], [0, 0], positions[0]);
  return polygon(positions.map(([u, v]) => (across ? [x + v, y + u] : [x + u, y + v])));
}

/**
 * A star-shaped, hence simple, counter-clockwise ring of `vertices` around a centre, each radius
 * drawn in [inner · radius, radius].
 */
export function starRing(
  next: () => number,
  cx: number,
  cy: number,
  radius: number,
  vertices: number,
  inner = 0.5,
): Position[] {
  const ring: Position[] = [];
  for (let i = 0; i < vertices; i++) {
    const angle = (2 * Math.PI * i) / vertices;
    const r = radius * (inner + (1 - inner) * next());
    ring.push([cx + r * Math.cos(angle), cy + r * Math.sin(angle)]);
  }
  ring.push(ring[0]);
  return ring;
}
