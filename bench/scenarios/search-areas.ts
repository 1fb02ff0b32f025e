/**
 * The areas S10 and S11 search with (issue 11): random boxes and random 1,000-vertex polygons over
 * the seeded grid (bench/geometry.ts), drawn from a seeded generator so every run asks the same
 * questions, and every request of a run a different one (nothing is answered from a cache twice).
 *
 * A seeded ledger of N records fills the grid's first N / 1,000 rows: one 0.004°-radius circle
 * centred in each 0.01° cell of lon −100…−90, lat 30…30 + N / 100,000 (10° for 1,000,000).
 */
import type { PolygonGeometry, Position } from "../../src/geo/types.js";
import { CELL_DEG, GRID_COLUMNS, RADIUS_DEG, SEED_REGION } from "../geometry.js";

/**
 * The side of S10's boxes: 0.09° = 9 cells. A circle meets the box when its centre lies within
 * 0.004° of it, i.e. in an interval of 0.098° per axis, which holds 9 or 10 cell centres: 81–100
 * sources, never more than 100 (the issue's "returning ≤ 100 records").
 */
export const BOX_DEG = 0.09;
/** S11's polygons: 1,000 positions (999 distinct vertices and the closing one). */
export const POLYGON_POSITIONS = 1_000;
/**
 * The polygons' mean radius: a star of 0.045° ± 30% meets about as many field circles as a box
 * of S10 (reported per run).
 */
export const POLYGON_RADIUS_DEG = 0.045;

/** mulberry32: a small seeded generator, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seeded region of a ledger of `count` records: [west, south, east, north] in degrees. */
export function seededExtent(count: number): [number, number, number, number] {
  const rows = Math.ceil(count / GRID_COLUMNS);
  const { west, south } = SEED_REGION;
  return [west, south, west + GRID_COLUMNS * CELL_DEG, south + rows * CELL_DEG];
}

const round6 = (value: number) => Math.round(value * 1e6) / 1e6;
const round7 = (value: number) => Math.round(value * 1e7) / 1e7;

/**
 * The side of S10's large boxes: 1° = 100 × 100 cells, about 10,000 sources, past the store's
 * 5,000 candidates where it stops sorting the R*Tree's candidates and walks the list order
 * instead ("probing"); the answer is the first page of 100.
 */
export const LARGE_BOX_DEG = 1;

/** `count` boxes of `side` degrees, uniformly placed inside the ledger's region, as `bbox` query values. */
export function randomBoxes(ledgerCount: number, count: number, seed: number, side = BOX_DEG): string[] {
  const [west, south, east, north] = seededExtent(ledgerCount);
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const x = round6(west + random() * Math.max(0, east - west - side));
    const y = round6(south + random() * Math.max(0, north - south - side));
    return [x, y, round6(x + side), round6(y + side)].join(",");
  });
}

/**
 * A star-shaped polygon of `positions` positions around (cx, cy): the radius wobbles by ±30%
 * (a few lobes plus noise), the angle increases monotonically, so the ring is simple and
 * counter-clockwise, as a watershed or a farm's outline drawn by hand would be non-convex.
 */
export function starPolygon(
  cx: number,
  cy: number,
  random: () => number,
  radius = POLYGON_RADIUS_DEG,
  positions = POLYGON_POSITIONS,
): PolygonGeometry {
  const lobes = 3 + Math.floor(random() * 5);
  const phase = random() * 2 * Math.PI;
  const ring: Position[] = [];
  for (let i = 0; i < positions - 1; i++) {
    const angle = (2 * Math.PI * i) / (positions - 1);
    const r = radius * (1 + 0.22 * Math.sin(lobes * angle + phase) + 0.08 * (2 * random() - 1));
    ring.push([round7(cx + r * Math.cos(angle)), round7(cy + r * Math.sin(angle))]);
  }
  ring.push([ring[0][0], ring[0][1]]);
  return { type: "Polygon", coordinates: [ring] };
}

/** `count` POST /sources/search bodies, each a star polygon at a random place inside the region. */
export function randomPolygonBodies(ledgerCount: number, count: number, seed: number, limit = 100): string[] {
  const [west, south, east, north] = seededExtent(ledgerCount);
  const random = seededRandom(seed);
  const margin = POLYGON_RADIUS_DEG * 1.3 + RADIUS_DEG;
  return Array.from({ length: count }, () => {
    const cx = west + margin + random() * (east - west - 2 * margin);
    const cy = south + margin + random() * (north - south - 2 * margin);
    return JSON.stringify({ intersects: starPolygon(cx, cy, random), limit });
  });
}
