import type { PolygonCoordinates, Position, SourceGeometry } from "./types.js";

/** Treats a Polygon as a one-part MultiPolygon so callers handle both shapes with one loop. */
export function polygonsOf(g: SourceGeometry): PolygonCoordinates[] {
  return g.type === "Polygon" ? [g.coordinates] : g.coordinates;
}

/** The smallest geometry type that holds `polygons`, or null when there are none. */
export function geometryFromPolygons(polygons: PolygonCoordinates[]): SourceGeometry | null {
  if (polygons.length === 0) return null;
  if (polygons.length === 1) return { type: "Polygon", coordinates: polygons[0] };
  return { type: "MultiPolygon", coordinates: polygons };
}

/** Positions of a geometry, closing positions included (the unit of the 100,000 limit). */
export function countPositions(g: SourceGeometry): number {
  let n = 0;
  for (const rings of polygonsOf(g)) for (const ring of rings) n += ring.length;
  return n;
}

/** A geometry's first position (its first part's exterior ring's first). */
export function firstPosition(g: SourceGeometry): Position {
  return g.type === "Polygon" ? g.coordinates[0][0] : g.coordinates[0][0][0];
}
