import { fieldSize, ringSize, WireWriter } from "./geometry-wire.js";
import type { PolygonCoordinates, SourceGeometry } from "./types.js";

/**
 * A stored geometry's GeoJSON text → its `sourceledger.v2.Geometry` protobuf wire bytes, without
 * JSON.parse: the coordinates are scanned into one Float64Array and copied out, instead of a
 * position array per vertex that is read once and dropped (parsing was 10–20% of a gRPC answer's
 * CPU, and most of its garbage: docs/benchmarks.md, issue 13). Only the text the embedded store
 * writes is taken (`{"type":"Polygon"|"MultiPolygon","coordinates":…}`, plain JSON numbers);
 * anything else answers undefined and the caller parses as before. Numbers are exact: up to 15
 * significant digits and 22 decimals as one correctly rounded division of two exact doubles (the
 * same double JSON.parse makes), otherwise by Number() of the text.
 */

export interface GeoJsonWire {
  /** The Geometry message's size in bytes. */
  size: number;
  write(into: Uint8Array, offset: number): number;
}

const POLYGON_PREFIX = '{"type":"Polygon","coordinates":';
const MULTI_PREFIX = '{"type":"MultiPolygon","coordinates":';
const POWERS = Array.from({ length: 23 }, (_, i) => 10 ** i);

/** Coordinates as scanned: every value in order, each ring's value count, each polygon's ring count. */
interface Scanned {
  values: Float64Array;
  rings: number[];
  polygons: number[];
}

/** Values are scanned into this one buffer (grown as needed) and copied out at their exact size. */
let scratch = new Float64Array(4096);

class Scanner {
  pos: number;
  count = 0;

  constructor(
    readonly text: string,
    start: number,
  ) {
    this.pos = start;
  }

  expect(code: number): boolean {
    if (this.text.charCodeAt(this.pos) !== code) return false;
    this.pos++;
    return true;
  }

  /** A JSON number at pos, or NaN when there is none. */
  number(): number {
    const { text } = this;
    const start = this.pos;
    let i = start;
    let negative = false;
    if (text.charCodeAt(i) === 45 /* - */) {
      negative = true;
      i++;
    }
    let mantissa = 0;
    let digits = 0;
    let decimals = 0;
    let c = text.charCodeAt(i);
    while (c >= 48 && c <= 57) {
      mantissa = mantissa * 10 + (c - 48);
      if (mantissa !== 0) digits++;
      c = text.charCodeAt(++i);
    }
    if (i === start + (negative ? 1 : 0)) return Number.NaN;
    if (c === 46 /* . */) {
      c = text.charCodeAt(++i);
      while (c >= 48 && c <= 57) {
        mantissa = mantissa * 10 + (c - 48);
        if (mantissa !== 0) digits++;
        decimals++;
        c = text.charCodeAt(++i);
      }
    }
    let value: number;
    if (c === 101 || c === 69 /* e E */ || digits > 15 || decimals > 22) {
      if (c === 101 || c === 69) {
        c = text.charCodeAt(++i);
        if (c === 43 || c === 45) c = text.charCodeAt(++i);
        while (c >= 48 && c <= 57) c = text.charCodeAt(++i);
      }
      value = Number(text.slice(start, i));
    } else {
      // Both exact doubles (mantissa < 2^53, 10^decimals ≤ 10^22): one correctly rounded division.
      value = mantissa / POWERS[decimals];
      if (negative) value = -value;
    }
    this.pos = i;
    return value;
  }

  push(value: number): void {
    if (this.count === scratch.length) {
      const grown = new Float64Array(scratch.length * 2);
      grown.set(scratch);
      scratch = grown;
    }
    scratch[this.count++] = value;
  }

  /** `[[x,y],…]`: the ring's values pushed; its value count, or -1 when the text is not that. */
  ring(): number {
    const before = this.count;
    if (!this.expect(91 /* [ */)) return -1;
    if (this.expect(93 /* ] */)) return 0;
    do {
      if (!this.expect(91)) return -1;
      const x = this.number();
      if (!this.expect(44 /* , */)) return -1;
      const y = this.number();
      if (Number.isNaN(x) || Number.isNaN(y) || !this.expect(93)) return -1;
      this.push(x);
      this.push(y);
    } while (this.expect(44));
    return this.expect(93) ? this.count - before : -1;
  }

  /** `[ring,…]`: the rings' value counts appended to `rings`; their number, or -1. */
  polygon(rings: number[]): number {
    if (!this.expect(91)) return -1;
    if (this.expect(93)) return 0;
    let n = 0;
    do {
      const values = this.ring();
      if (values < 0) return -1;
      rings.push(values);
      n++;
    } while (this.expect(44));
    return this.expect(93) ? n : -1;
  }
}

function scan(text: string): (Scanned & { multi: boolean }) | undefined {
  const multi = text.startsWith(MULTI_PREFIX);
  if (!multi && !text.startsWith(POLYGON_PREFIX)) return undefined;
  const scanner = new Scanner(text, (multi ? MULTI_PREFIX : POLYGON_PREFIX).length);
  const rings: number[] = [];
  const polygons: number[] = [];
  if (multi) {
    if (!scanner.expect(91)) return undefined;
    if (!scanner.expect(93)) {
      do {
        const n = scanner.polygon(rings);
        if (n < 0) return undefined;
        polygons.push(n);
      } while (scanner.expect(44));
      if (!scanner.expect(93)) return undefined;
    }
  } else {
    const n = scanner.polygon(rings);
    if (n < 0) return undefined;
    polygons.push(n);
  }
  if (!scanner.expect(125 /* } */) || scanner.pos !== text.length) return undefined;
  return { values: scratch.slice(0, scanner.count), rings, polygons, multi };
}

/** The wire form of the GeoJSON text `text`, or undefined when it is not the store's plain form. */
export function geoJsonWire(text: string): GeoJsonWire | undefined {
  const scanned = scan(text);
  return scanned === undefined ? undefined : wireOf(scanned);
}

/** The Geometry message of coordinates laid out as scanned: its size, and its writer. */
function wireOf({ values, rings, polygons, multi }: Scanned & { multi: boolean }): GeoJsonWire {
  const polygonSizes: number[] = [];
  let ring = 0;
  for (const count of polygons) {
    let size = 0;
    for (let r = 0; r < count; r++) size += fieldSize(ringSize(rings[ring++]));
    polygonSizes.push(size);
  }
  let inner = 0;
  if (multi) for (const size of polygonSizes) inner += fieldSize(size);
  const size = multi ? fieldSize(inner) : fieldSize(polygonSizes[0]);
  return {
    size,
    write(into, offset) {
      const out = new WireWriter(0, into, offset);
      if (multi) out.header(2, inner);
      let r = 0;
      let v = 0;
      polygons.forEach((count, p) => {
        out.header(1, polygonSizes[p]);
        for (let i = 0; i < count; i++) {
          const n = rings[r++];
          out.header(1, ringSize(n));
          if (n === 0) continue;
          out.header(1, n * 8);
          out.doubles(values.subarray(v, v + n));
          v += n;
        }
      });
      return out.offset;
    },
  };
}

/**
 * The encoding geoJsonWireBytes writes. Stores keep its bytes (the embedded store's
 * source_geometry_wire) and make them again when this changes: raise it with any change to the
 * bytes a text gives (this scanner, geometry-wire.ts, or the Geometry message).
 */
export const GEOMETRY_WIRE_VERSION = 1;

/**
 * The Geometry message's wire bytes for the GeoJSON text `text` (what `geoJsonWire(text).write`
 * writes), or undefined when it is not the store's plain form. The embedded store keeps them beside
 * the text, so a protobuf answer copies them instead of scanning the text on every read.
 */
export function geoJsonWireBytes(text: string): Uint8Array | undefined {
  const wire = geoJsonWire(text);
  return wire === undefined ? undefined : bytesOf(wire);
}

/** Wire bytes already made (geoJsonWireBytes), in the GeoJsonWire shape the encoders take. */
export function storedWire(bytes: Uint8Array): GeoJsonWire {
  return {
    size: bytes.length,
    write(into, offset) {
      into.set(bytes, offset);
      return offset + bytes.length;
    },
  };
}

/**
 * The bytes geoJsonWireBytes(JSON.stringify(geometry)) gives, laid out from the positions instead
 * of scanned from the text: what the embedded store keeps for a source it inserts, at a fraction of
 * a stringify and a scan (~35 µs a 100-position source together). JSON writes -0 as 0, so -0 is
 * written as 0: the bytes are always the stored text's parse. Defined for any geometry, also one
 * whose text would not be the plain form (extra members): its coordinates are the same.
 */
export function geometryWireBytes(geometry: SourceGeometry): Uint8Array {
  const multi = geometry.type === "MultiPolygon";
  const polygonList: readonly PolygonCoordinates[] = multi ? geometry.coordinates : [geometry.coordinates];
  const rings: number[] = [];
  const polygons: number[] = [];
  let count = 0;
  for (const polygon of polygonList) {
    polygons.push(polygon.length);
    for (const ring of polygon) {
      rings.push(ring.length * 2);
      count += ring.length * 2;
    }
  }
  const values = new Float64Array(count);
  let v = 0;
  for (const polygon of polygonList) {
    for (const ring of polygon) {
      for (let i = 0; i < ring.length; i++) {
        // + 0 turns -0 into 0, as JSON text does.
        values[v++] = ring[i][0] + 0;
        values[v++] = ring[i][1] + 0;
      }
    }
  }
  return bytesOf(wireOf({ values, rings, polygons, multi }));
}

/** A wire form written into bytes of its own. */
function bytesOf(wire: GeoJsonWire): Uint8Array {
  const bytes = new Uint8Array(wire.size);
  if (wire.write(bytes, 0) !== bytes.length) throw new Error("geometry wire size and bytes disagree");
  return bytes;
}
