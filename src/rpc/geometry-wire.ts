import type { PolygonCoordinates, SourceGeometry } from "./types.js";

/**
 * The protobuf wire bytes of a `sourceledger.v2.Geometry` message, written straight from GeoJSON
 * coordinates. protobuf-es writes a packed `repeated double` one value at a time, allocating an
 * 8-byte array and a DataView per coordinate (a 100-position ring is 200 of each); this writes each
 * ring's coordinates with one Float64Array copy. The output is byte-for-byte what
 * `toBinary(GeometrySchema, geometryToProto(g))` writes (the tests compare them).
 *
 * Wire layout (proto/sourceledger/v2/source_ledger.proto):
 *   Geometry     { Polygon polygon = 1; MultiPolygon multi_polygon = 2; }  (oneof)
 *   MultiPolygon { repeated Polygon polygons = 1; }
 *   Polygon      { repeated LinearRing rings = 1; }
 *   LinearRing   { repeated double coordinates = 1; }  (packed)
 */

const WIRE_LEN = 2;
const tag = (fieldNo: number) => (fieldNo << 3) | WIRE_LEN;

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    size += 1;
  }
  return size;
}

/** A length-delimited field's size on the wire: tag, length, payload (all tags here are one byte). */
const fieldSize = (payload: number) => 1 + varintSize(payload) + payload;

/** Byte size of a LinearRing message (an empty ring writes no field at all). */
const ringSize = (positions: number) => (positions === 0 ? 0 : fieldSize(positions * 16));

function polygonSize(rings: PolygonCoordinates): number {
  let size = 0;
  for (const ring of rings) size += fieldSize(ringSize(ring.length));
  return size;
}

class WireWriter {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  private offset = 0;

  constructor(size: number) {
    this.bytes = new Uint8Array(size);
    this.view = new DataView(this.bytes.buffer);
  }

  get written(): number {
    return this.offset;
  }

  varint(value: number): void {
    while (value >= 0x80) {
      this.bytes[this.offset++] = (value & 0x7f) | 0x80;
      value = Math.floor(value / 128);
    }
    this.bytes[this.offset++] = value;
  }

  /** Tag and length of a length-delimited field whose payload follows. */
  header(fieldNo: number, payload: number): void {
    this.bytes[this.offset++] = tag(fieldNo);
    this.varint(payload);
  }

  polygon(rings: PolygonCoordinates): void {
    for (const ring of rings) {
      this.header(1, ringSize(ring.length));
      if (ring.length === 0) continue;
      this.header(1, ring.length * 16);
      for (const position of ring) {
        this.view.setFloat64(this.offset, position[0], true);
        this.view.setFloat64(this.offset + 8, position[1], true);
        this.offset += 16;
      }
    }
  }
}

function geometrySize(g: SourceGeometry): number {
  if (g.type === "Polygon") return fieldSize(polygonSize(g.coordinates));
  let polygons = 0;
  for (const polygon of g.coordinates) polygons += fieldSize(polygonSize(polygon));
  return fieldSize(polygons);
}

function writeGeometry(out: WireWriter, g: SourceGeometry): void {
  if (g.type === "Polygon") {
    out.header(1, polygonSize(g.coordinates));
    out.polygon(g.coordinates);
    return;
  }
  let polygons = 0;
  for (const polygon of g.coordinates) polygons += fieldSize(polygonSize(polygon));
  out.header(2, polygons);
  for (const polygon of g.coordinates) {
    out.header(1, polygonSize(polygon));
    out.polygon(polygon);
  }
}

/** `toBinary(GeometrySchema, geometryToProto(g))`, written directly. */
export function encodeGeometry(g: SourceGeometry): Uint8Array {
  const out = new WireWriter(geometrySize(g));
  writeGeometry(out, g);
  return out.bytes;
}

/**
 * A Geometry as the data of a length-delimited field in protobuf-es's unknown-field form
 * (`{ no, wireType, data }`): the length varint followed by the message bytes.
 */
export function encodeGeometryFieldData(g: SourceGeometry): Uint8Array {
  const size = geometrySize(g);
  const out = new WireWriter(varintSize(size) + size);
  out.varint(size);
  writeGeometry(out, g);
  if (out.written !== out.bytes.length)
    throw new Error(`geometry encoding wrote ${out.written} of ${out.bytes.length} bytes`);
  return out.bytes;
}
