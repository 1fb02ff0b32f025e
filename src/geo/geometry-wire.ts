import { endianness } from "node:os";
import type { Geometry, Polygon } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { Position, SourceGeometry } from "./types.js";

/**
 * The protobuf wire bytes of a `sourceledger.v2.Geometry` message. protobuf-es writes a packed
 * `repeated double` one value at a time, allocating an 8-byte array and a DataView per coordinate
 * (a 100-position ring is 200 of each); this writes each ring's coordinates straight into one
 * buffer. The output is byte-for-byte what `toBinary(GeometrySchema, g)` writes (the tests compare
 * them).
 *
 * Wire layout (proto/sourceledger/v2/source_ledger.proto):
 *   Geometry     { Polygon polygon = 1; MultiPolygon multi_polygon = 2; }  (oneof)
 *   MultiPolygon { repeated Polygon polygons = 1; }
 *   Polygon      { repeated LinearRing rings = 1; }
 *   LinearRing   { repeated double coordinates = 1; }  (packed)
 */

const WIRE_LEN = 2;
const tag = (fieldNo: number) => (fieldNo << 3) | WIRE_LEN;

/** Bytes of `value` as a protobuf varint (a non-negative integer). */
export function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    size += 1;
  }
  return size;
}

/** A length-delimited field's size on the wire: tag, length, payload (all tags here are one byte). */
export const fieldSize = (payload: number) => 1 + varintSize(payload) + payload;

/** Byte size of a LinearRing message (an empty ring writes no field at all). */
export const ringSize = (values: number) => (values === 0 ? 0 : fieldSize(values * 8));

function polygonSize(polygon: Polygon): number {
  let size = 0;
  for (const ring of polygon.rings) size += fieldSize(ringSize(ring.coordinates.length));
  return size;
}

function polygonsSize(polygons: readonly Polygon[]): number {
  let size = 0;
  for (const polygon of polygons) size += fieldSize(polygonSize(polygon));
  return size;
}

const LITTLE_ENDIAN = endianness() === "LE";

/** Writes Geometry wire bytes: varints, length-delimited headers, packed doubles. */
export class WireWriter {
  readonly bytes: Uint8Array;
  /** Made on first use: most writers (every Source's) never write a double through it. */
  #view: DataView | undefined;
  /** Where the next byte goes; after writing, how far the bytes are written. */
  offset: number;

  /** A writer of a new buffer of `size` bytes, or of `into` from `offset` on. */
  constructor(size: number, into?: Uint8Array, offset = 0) {
    this.bytes = into ?? new Uint8Array(size);
    this.offset = offset;
  }

  private get view(): DataView {
    this.#view ??= new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    return this.#view;
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

  /** `values` as packed little-endian doubles: one copy of their memory on a little-endian machine. */
  doubles(values: Float64Array): void {
    if (LITTLE_ENDIAN) {
      this.bytes.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), this.offset);
      this.offset += values.byteLength;
      return;
    }
    for (const value of values) {
      this.view.setFloat64(this.offset, value, true);
      this.offset += 8;
    }
  }

  /** The bytes, checked to be filled exactly: a size computed wrong fails here, not on the wire. */
  finished(what: string): Uint8Array {
    if (this.offset !== this.bytes.length) {
      throw new Error(`${what} encoding wrote ${this.offset} of ${this.bytes.length} bytes`);
    }
    return this.bytes;
  }

  polygon(polygon: Polygon): void {
    for (const { coordinates } of polygon.rings) {
      this.header(1, ringSize(coordinates.length));
      if (coordinates.length === 0) continue;
      this.header(1, coordinates.length * 8);
      for (const value of coordinates) {
        this.view.setFloat64(this.offset, value, true);
        this.offset += 8;
      }
    }
  }
}

/** Size of the Geometry message; 0 when no kind is set (protobuf-es then writes nothing). */
export function geometrySize(g: Geometry): number {
  switch (g.kind.case) {
    case "polygon":
      return fieldSize(polygonSize(g.kind.value));
    case "multiPolygon":
      return fieldSize(polygonsSize(g.kind.value.polygons));
    default:
      return 0;
  }
}

/** Writes the Geometry message `g` (geometrySize(g) bytes) at the writer's offset. */
export function writeGeometry(out: WireWriter, g: Geometry): void {
  if (g.kind.case === "polygon") {
    out.header(1, polygonSize(g.kind.value));
    out.polygon(g.kind.value);
  } else if (g.kind.case === "multiPolygon") {
    const { polygons } = g.kind.value;
    out.header(2, polygonsSize(polygons));
    for (const polygon of polygons) {
      out.header(1, polygonSize(polygon));
      out.polygon(polygon);
    }
  }
}

/** `toBinary(GeometrySchema, g)`, written directly. */
export function encodeGeometry(g: Geometry): Uint8Array {
  const out = new WireWriter(geometrySize(g));
  writeGeometry(out, g);
  return out.finished("geometry");
}

/**
 * The positions a Geometry message's wire bytes hold (as encodeGeometry and geojson-wire.ts's
 * geometryWireBytes write them), as a GeoJSON geometry: the embedded store reads a large stored
 * geometry from its kept bytes about four times faster than JSON.parse reads its text (~6 against
 * ~25 ms for 99,000 positions). Throws on bytes that are not such a message.
 */
export function decodeGeometryWire(bytes: Uint8Array): SourceGeometry {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 0;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (;;) {
      if (offset >= bytes.length) throw new Error("geometry wire bytes end inside a varint");
      const byte = bytes[offset++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
  };
  /** The next field of a message ending at `end`, which must be `fieldNo` with a length: its end. */
  const field = (fieldNo: number, end: number): number => {
    const key = varint();
    if (key !== tag(fieldNo))
      throw new Error(`geometry wire bytes hold field key ${key} where ${tag(fieldNo)} belongs`);
    const length = varint();
    if (offset + length > end) throw new Error("geometry wire bytes end inside a field");
    return offset + length;
  };
  const ring = (end: number): Position[] => {
    const positions: Position[] = [];
    while (offset < end) {
      const valuesEnd = field(1, end);
      if ((valuesEnd - offset) % 16 !== 0) throw new Error("geometry wire bytes hold a ring of unpaired coordinates");
      for (; offset < valuesEnd; offset += 16) {
        positions.push([view.getFloat64(offset, true), view.getFloat64(offset + 8, true)]);
      }
    }
    return positions;
  };
  const polygon = (end: number): Position[][] => {
    const rings: Position[][] = [];
    while (offset < end) rings.push(ring(field(1, end)));
    return rings;
  };
  const key = varint();
  offset = 0;
  if (key === tag(1)) {
    const coordinates = polygon(field(1, bytes.length));
    if (offset !== bytes.length) throw new Error("geometry wire bytes go on past the geometry");
    return { type: "Polygon", coordinates };
  }
  const end = field(2, bytes.length);
  const coordinates: Position[][][] = [];
  while (offset < end) coordinates.push(polygon(field(1, end)));
  if (offset !== bytes.length) throw new Error("geometry wire bytes go on past the geometry");
  return { type: "MultiPolygon", coordinates };
}
