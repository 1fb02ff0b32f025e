import type { PolygonCoordinates, Position, SourceGeometry } from "../../geo/types.js";

/**
 * A source's geometry in one Float64Array: a header that gives its shape, then the longitude and
 * latitude of every position, in submission order.
 *
 *   [kind, polygons, (rings, (positions of the ring)×rings)×polygons, lon, lat, lon, lat, …]
 *
 * `kind` is 0 for a Polygon (then `polygons` is 1) and 1 for a MultiPolygon. A double holds each
 * count exactly, so the shape and the coordinates share one allocation. A position costs 16 bytes
 * here; as GeoJSON arrays it cost ~80 (a 2-element JS array and its double backing store, plus the
 * ring's slot), and every number keeps its exact bits, -0 included.
 */
export type PackedGeometry = Float64Array;

const POLYGON = 0;
const MULTI_POLYGON = 1;

function polygonsOf(geometry: SourceGeometry): PolygonCoordinates[] {
  return geometry.type === "Polygon" ? [geometry.coordinates] : geometry.coordinates;
}

export function packGeometry(geometry: SourceGeometry): PackedGeometry {
  const polygons = polygonsOf(geometry);
  let header = 2;
  let positions = 0;
  for (const rings of polygons) {
    header += 1 + rings.length;
    for (const ring of rings) positions += ring.length;
  }
  const packed = new Float64Array(header + 2 * positions);
  packed[0] = geometry.type === "Polygon" ? POLYGON : MULTI_POLYGON;
  packed[1] = polygons.length;
  let h = 2;
  let c = header;
  for (const rings of polygons) {
    packed[h++] = rings.length;
    for (const ring of rings) {
      packed[h++] = ring.length;
      for (const position of ring) {
        // Only longitude and latitude: the decoders drop altitudes before a record gets here.
        packed[c++] = position[0];
        packed[c++] = position[1];
      }
    }
  }
  return packed;
}

/** Positions held, closing positions included (what `countPositions` counts for the GeoJSON form). */
export function packedPositions(packed: PackedGeometry): number {
  return (packed.length - headerLength(packed)) / 2;
}

function headerLength(packed: PackedGeometry): number {
  let h = 2;
  for (let p = 0; p < packed[1]; p++) h += 1 + packed[h];
  return h;
}

/** The GeoJSON geometry, freshly built: the caller may change it without touching the stored one. */
export function unpackGeometry(packed: PackedGeometry): SourceGeometry {
  const polygons: PolygonCoordinates[] = new Array(packed[1]);
  let h = 2;
  let c = headerLength(packed);
  for (let p = 0; p < polygons.length; p++) {
    const rings: Position[][] = new Array(packed[h++]);
    for (let r = 0; r < rings.length; r++) {
      const ring: Position[] = new Array(packed[h++]);
      for (let i = 0; i < ring.length; i++, c += 2) ring[i] = [packed[c], packed[c + 1]];
      rings[r] = ring;
    }
    polygons[p] = rings;
  }
  return packed[0] === POLYGON
    ? { type: "Polygon", coordinates: polygons[0] }
    : { type: "MultiPolygon", coordinates: polygons };
}

/** A number as JSON.stringify writes it: shortest round-trip text, -0 as `0`, non-finite as `null`. */
const jsonNumber = (value: number): string => (Number.isFinite(value) ? String(value) : "null");

/**
 * `JSON.stringify(unpackGeometry(packed))`, character for character, written straight from the
 * doubles: a REST answer splices this text in (`SourceRecord.geometryJson`) without building the
 * nested arrays it would otherwise build only to serialise them.
 */
export function packedGeometryJson(packed: PackedGeometry): string {
  const polygons = packed[1];
  let h = 2;
  let c = headerLength(packed);
  let json = packed[0] === POLYGON ? '{"type":"Polygon","coordinates":' : '{"type":"MultiPolygon","coordinates":[';
  for (let p = 0; p < polygons; p++) {
    if (p > 0) json += ",";
    json += "[";
    const rings = packed[h++];
    for (let r = 0; r < rings; r++) {
      if (r > 0) json += ",";
      json += "[";
      const positions = packed[h++];
      for (let i = 0; i < positions; i++, c += 2) {
        if (i > 0) json += ",";
        json += `[${jsonNumber(packed[c])},${jsonNumber(packed[c + 1])}]`;
      }
      json += "]";
    }
    json += "]";
  }
  return packed[0] === POLYGON ? `${json}}` : `${json}]}`;
}
