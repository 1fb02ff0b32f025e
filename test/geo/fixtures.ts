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
