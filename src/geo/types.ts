/** A position as stored and returned: longitude, latitude (WGS 84 degrees). Altitudes are dropped on input. */
export type Position = [number, number];
/** Rings of one polygon: the exterior ring first, then its holes. Each ring is closed. */
export type PolygonCoordinates = Position[][];

export interface PolygonGeometry {
  type: "Polygon";
  coordinates: PolygonCoordinates;
}

export interface MultiPolygonGeometry {
  type: "MultiPolygon";
  coordinates: PolygonCoordinates[];
}

/** A source's area, in GeoJSON form, exactly as submitted (less altitudes). */
export type SourceGeometry = PolygonGeometry | MultiPolygonGeometry;

/** Axis-aligned bounding box in degrees. */
export interface BoundingBox {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/** A rule a geometry breaks, and where. */
export interface GeometryIssue {
  /**
   * Indexes into the geometry's `coordinates`: Polygon `[ring]` or `[ring, position]`;
   * MultiPolygon `[polygon]`, `[polygon, ring]` or `[polygon, ring, position]`; `[]` is the
   * whole geometry.
   */
  path: number[];
  detail: string;
}

/**
 * An area a search asks about (docs/api.md §13): a point, a box (edges included) or a Polygon or
 * MultiPolygon. A source matches when its exact geometry intersects it; touching counts.
 */
export type SearchArea = { type: "Point"; coordinates: Position } | { type: "Box"; box: BoundingBox } | SourceGeometry;
