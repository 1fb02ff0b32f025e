import Coordinate from "jsts/org/locationtech/jts/geom/Coordinate.js";
import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";
import GeometryFactory from "jsts/org/locationtech/jts/geom/GeometryFactory.js";
import type LinearRing from "jsts/org/locationtech/jts/geom/LinearRing.js";
import type Polygon from "jsts/org/locationtech/jts/geom/Polygon.js";
import type { PolygonCoordinates, Position } from "./types.js";

// Built straight from coordinate arrays: going through WKT or GeoJSON readers would cost a
// string round trip per call, several times the cost of validating a 100,000-vertex geometry.

export const jstsFactory = new GeometryFactory();

export function polygonToJsts(rings: PolygonCoordinates): Polygon {
  const [exterior, ...holes] = rings.map(ringToJsts);
  return jstsFactory.createPolygon(exterior, holes);
}

export function polygonsToJsts(polygons: PolygonCoordinates[]): Geometry {
  return jstsFactory.createMultiPolygon(polygons.map(polygonToJsts));
}

function ringToJsts(ring: Position[]): LinearRing {
  return jstsFactory.createLinearRing(ring.map(([x, y]) => new Coordinate(x, y)));
}

/** The polygonal parts of an overlay result; the points and lines a degenerate overlay may emit carry no area. */
export function polygonsFromJsts(g: Geometry): PolygonCoordinates[] {
  const polygons: PolygonCoordinates[] = [];
  collect(g, polygons);
  return polygons;
}

function collect(g: Geometry, into: PolygonCoordinates[]): void {
  if (g.isEmpty()) return;
  if (isPolygon(g)) {
    const rings = [g.getExteriorRing()];
    for (let i = 0; i < g.getNumInteriorRing(); i++) rings.push(g.getInteriorRingN(i));
    into.push(rings.map((ring) => ring.getCoordinates().map((c): Position => [c.x, c.y])));
    return;
  }
  const type = g.getGeometryType();
  if (type === "MultiPolygon" || type === "GeometryCollection") {
    for (let i = 0; i < g.getNumGeometries(); i++) collect(g.getGeometryN(i), into);
  }
}

function isPolygon(g: Geometry): g is Polygon {
  return g.getGeometryType() === "Polygon";
}
