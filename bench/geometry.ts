/**
 * Field-sized, non-overlapping test geometry on a regular lon/lat grid.
 *
 * Cell k of a grid sits at column k % GRID_COLUMNS, row floor(k / GRID_COLUMNS); its circle has
 * RING_POSITIONS positions (99 distinct vertices plus the closing one), counter-clockwise, radius
 * 0.004° inside a 0.01° cell (about 45–60 ha at these latitudes), so no two cells' boxes touch.
 * Seeded ledgers use the SEED region, created sources the CREATE region: a create never finds a
 * bounding-box candidate, exactly as for a new field next to existing ones.
 */
import type { MultiPolygonGeometry, PolygonCoordinates, PolygonGeometry, Position } from "../src/geo/types.js";

export const RING_POSITIONS = 100;
export const GRID_COLUMNS = 1000;
export const CELL_DEG = 0.01;
export const RADIUS_DEG = 0.004;

export interface Region {
  west: number;
  south: number;
}

/** Seeded ledgers: lon -100…-90, lat 30… (1,000,000 cells span 10° of latitude). */
export const SEED_REGION: Region = { west: -100, south: 30 };
/** Created sources (scenario 4): lon -80…-70, disjoint from the seeded region. */
export const CREATE_REGION: Region = { west: -80, south: 30 };

const round7 = (value: number): number => Math.round(value * 1e7) / 1e7;

// Unit-circle offsets, computed once: every ring is these added to its cell's centre.
const OFFSETS: Position[] = Array.from({ length: RING_POSITIONS - 1 }, (_, i) => {
  const angle = (2 * Math.PI * i) / (RING_POSITIONS - 1);
  return [RADIUS_DEG * Math.cos(angle), RADIUS_DEG * Math.sin(angle)];
});

export function cellCentre(region: Region, k: number): Position {
  const column = k % GRID_COLUMNS;
  const row = Math.floor(k / GRID_COLUMNS);
  return [region.west + (column + 0.5) * CELL_DEG, region.south + (row + 0.5) * CELL_DEG];
}

/** A closed counter-clockwise ring of `positions` positions around (cx, cy) with radius `r` degrees. */
export function circleRing(cx: number, cy: number, r = RADIUS_DEG, positions = RING_POSITIONS): Position[] {
  const offsets =
    r === RADIUS_DEG && positions === RING_POSITIONS
      ? OFFSETS
      : Array.from({ length: positions - 1 }, (_, i): Position => {
          const angle = (2 * Math.PI * i) / (positions - 1);
          return [r * Math.cos(angle), r * Math.sin(angle)];
        });
  const ring: Position[] = offsets.map(([dx, dy]) => [round7(cx + dx), round7(cy + dy)]);
  ring.push([ring[0][0], ring[0][1]]);
  return ring;
}

/**
 * An ellipse centred on cell k + 1, 0.007° wide and 0.004° high (RING_POSITIONS positions): it
 * contains most of cell k + 1's circle and overlaps cells k and k + 2 by about 5% of their area,
 * and reaches no other cell's box, so it conflicts with exactly those three circles.
 */
export function ellipseOverThree(region: Region, k: number): PolygonGeometry {
  const [cx, cy] = cellCentre(region, k + 1);
  const ring: Position[] = [];
  for (let i = 0; i < RING_POSITIONS - 1; i++) {
    const angle = (2 * Math.PI * i) / (RING_POSITIONS - 1);
    ring.push([round7(cx + 0.007 * Math.cos(angle)), round7(cy + 0.004 * Math.sin(angle))]);
  }
  ring.push([ring[0][0], ring[0][1]]);
  return { type: "Polygon", coordinates: [ring] };
}

/** The 100-position circle of grid cell k. */
export function cellPolygon(region: Region, k: number): PolygonGeometry {
  const [cx, cy] = cellCentre(region, k);
  return { type: "Polygon", coordinates: [circleRing(cx, cy)] };
}

/**
 * Scenario 6's input: a MultiPolygon of `parts` disjoint circles of `positionsPerRing` positions
 * each (1,000 × 100 = 100,000 positions: a farm's fields as one source).
 */
export function largeMultiPolygon(parts = 1000, positionsPerRing = RING_POSITIONS): MultiPolygonGeometry {
  const polygons: PolygonCoordinates[] = [];
  const columns = Math.ceil(Math.sqrt(parts));
  for (let i = 0; i < parts; i++) {
    const cx = 10 + (i % columns) * CELL_DEG;
    const cy = 50 + Math.floor(i / columns) * CELL_DEG;
    polygons.push([circleRing(cx, cy, RADIUS_DEG, positionsPerRing)]);
  }
  return { type: "MultiPolygon", coordinates: polygons };
}
