import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  type ProtectedAreaOverlap,
  ProtectedAreaOverlapSchema,
  type Source,
  SourceSchema,
  type UnepOverlap,
  UnepOverlapSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { type GeoJsonWire, geoJsonWire } from "../geo/geojson-wire.js";
import { geometrySize, varintSize, WireWriter, writeGeometry } from "../geo/geometry-wire.js";
import { storedGeometryOf } from "./messages.js";

/**
 * The protobuf wire bytes of a `sourceledger.v2.Source`, written directly: protobuf-es' reflective
 * `toBinary` walks the schema per field, forks a writer per nested message and encodes each string
 * with a TextEncoder call, which made ~20% of a gRPC GetSource's CPU (docs/benchmarks.md, issue 13).
 * The field numbers are the schema's (`SourceSchema.field.*.number`), the presence rules proto3's
 * as protobuf-es applies them (implicit fields only when not zero or empty; `optional`, message and
 * repeated fields when set), and test/rpc/source-wire.test.ts checks the bytes equal `toBinary`'s
 * for every field set, unset, empty, negative and non-ASCII.
 */

const F = SourceSchema.field;
const U = UnepOverlapSchema.field;
const P = ProtectedAreaOverlapSchema.field;
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;

const tagOf = (no: number, wire: number) => (no << 3) | wire;

/** An int32 or int64 varint: negatives take ten bytes (two's complement, sign-extended). */
function intSize(value: number | bigint): number {
  return value < 0 ? 10 : varintSize(Number(value));
}

const lenFieldSize = (no: number, payload: number) => varintSize(tagOf(no, LEN)) + varintSize(payload) + payload;

/**
 * What sizing a source found that writing it reads again (sourceSize, then writeSource): the stored
 * geometry's scanned wire form. Everything else is counted again where it is written: counting
 * (UTF-8 lengths included) is cheap, scanning is not.
 */
interface Plan {
  /** The geometry's wire form straight from its stored GeoJSON text, when the source has one. */
  geometry?: GeoJsonWire;
}

/** Up to this many characters an ASCII string is copied in JavaScript, cheaper than Buffer's native write. */
const SHORT_TEXT = 64;

const utf8Length = (text: string) => Buffer.byteLength(text, "utf8");

/**
 * The stored text's wire form, when the Source's geometry is the one made from the text
 * (messages.ts) and the text scans; scanned once per message (the page-size bound reads it before
 * the encoder does). Undefined once anything assigned the geometry or its kind.
 */
export function storedGeometry(s: Source): GeoJsonWire | undefined {
  const stored = storedGeometryOf(s.geometry);
  if (stored === undefined) return undefined;
  if (stored.wire === undefined) stored.wire = geoJsonWire(stored.text) ?? null;
  return stored.wire ?? undefined;
}

/** The Geometry message's wire size: the stored text's wire form when there is one, else the message's; 0 when unset. */
export function geometryWireSize(s: Source): number {
  return storedGeometry(s)?.size ?? (s.geometry === undefined ? 0 : geometrySize(s.geometry));
}

function stringFieldSize(no: number, text: string): number {
  return lenFieldSize(no, utf8Length(text));
}

function timestampSize(t: Timestamp): number {
  let size = 0;
  if (t.seconds !== 0n) size += 1 + intSize(t.seconds);
  if (t.nanos !== 0) size += 1 + intSize(t.nanos);
  return size;
}

function areaSize(a: ProtectedAreaOverlap): number {
  let size = 0;
  if (a.id !== "") size += stringFieldSize(P.id.number, a.id);
  if (a.name !== "") size += stringFieldSize(P.name.number, a.name);
  if (a.designation !== "") size += stringFieldSize(P.designation.number, a.designation);
  if (a.iucnCategory !== "") size += stringFieldSize(P.iucnCategory.number, a.iucnCategory);
  if (a.areaM2 !== 0) size += 9;
  return size;
}

function unepSize(u: UnepOverlap): number {
  let size = 0;
  if (u.dataset !== "") size += stringFieldSize(U.dataset.number, u.dataset);
  if (u.overlaps) size += 2;
  if (u.areaM2 !== 0) size += 9;
  if (u.fraction !== 0) size += 9;
  for (const area of u.areas) size += lenFieldSize(U.areas.number, areaSize(area));
  return size;
}

function sourceSize(plan: Plan, s: Source): number {
  let size = 0;
  if (s.id !== "") size += stringFieldSize(F.id.number, s.id);
  if (s.altId !== "") size += stringFieldSize(F.altId.number, s.altId);
  if (s.methodology !== undefined) size += stringFieldSize(F.methodology.number, s.methodology);
  for (const tag of s.tags) size += stringFieldSize(F.tags.number, tag);
  if (s.stewardId !== undefined) size += stringFieldSize(F.stewardId.number, s.stewardId);
  if (s.projectId !== undefined) size += stringFieldSize(F.projectId.number, s.projectId);
  if (s.outcomeReportingYear !== undefined) size += 1 + intSize(s.outcomeReportingYear);
  if (s.sourceType !== 0) size += 1 + intSize(s.sourceType);
  if (s.attributeType.length > 0) {
    let packed = 0;
    for (const value of s.attributeType) packed += intSize(value);
    size += lenFieldSize(F.attributeType.number, packed);
  }
  if (s.geometrySource !== 0) size += 1 + intSize(s.geometrySource);
  plan.geometry = storedGeometry(s);
  if (plan.geometry !== undefined) size += lenFieldSize(F.geometry.number, plan.geometry.size);
  else if (s.geometry !== undefined) size += lenFieldSize(F.geometry.number, geometrySize(s.geometry));
  if (s.startAt !== undefined) size += lenFieldSize(F.startAt.number, timestampSize(s.startAt));
  if (s.endAt !== undefined) size += lenFieldSize(F.endAt.number, timestampSize(s.endAt));
  if (s.accountId !== "") size += stringFieldSize(F.accountId.number, s.accountId);
  if (s.createdBy !== "") size += stringFieldSize(F.createdBy.number, s.createdBy);
  if (s.updatedBy !== "") size += stringFieldSize(F.updatedBy.number, s.updatedBy);
  if (s.createdAt !== undefined) size += lenFieldSize(F.createdAt.number, timestampSize(s.createdAt));
  if (s.updatedAt !== undefined) size += lenFieldSize(F.updatedAt.number, timestampSize(s.updatedAt));
  if (s.conflict) size += 3;
  if (s.unepOverlap !== undefined) size += lenFieldSize(F.unepOverlap.number, unepSize(s.unepOverlap));
  return size;
}

/** The geometry writer's varints and headers, and what a Source adds: ints, tags, strings, doubles, times. */
class Writer extends WireWriter {
  /** The same bytes as a Buffer, for its UTF-8 and double writes. */
  private readonly buffer: Buffer;

  constructor(size: number) {
    const buffer = Buffer.allocUnsafe(size);
    super(size, buffer);
    this.buffer = buffer;
  }

  int(value: number | bigint): void {
    if (value >= 0) {
      this.varint(Number(value));
      return;
    }
    let rest = BigInt.asUintN(64, BigInt(value));
    for (let i = 0; i < 9; i++) {
      this.bytes[this.offset++] = Number(rest & 0x7fn) | 0x80;
      rest >>= 7n;
    }
    this.bytes[this.offset++] = Number(rest);
  }

  tag(no: number, wire: number): void {
    this.varint(tagOf(no, wire));
  }

  string(no: number, text: string): void {
    this.tag(no, LEN);
    const size = utf8Length(text);
    this.varint(size);
    if (size !== text.length || size > SHORT_TEXT) {
      this.offset += this.buffer.write(text, this.offset, "utf8");
      return;
    }
    // As many UTF-8 bytes as UTF-16 units: ASCII, one byte a unit.
    const { bytes } = this;
    let at = this.offset;
    for (let i = 0; i < size; i++) bytes[at++] = text.charCodeAt(i);
    this.offset = at;
  }

  double(no: number, value: number): void {
    this.tag(no, FIXED64);
    this.buffer.writeDoubleLE(value, this.offset);
    this.offset += 8;
  }

  timestamp(no: number, t: Timestamp): void {
    this.tag(no, LEN);
    this.varint(timestampSize(t));
    if (t.seconds !== 0n) {
      this.tag(1, VARINT);
      this.int(t.seconds);
    }
    if (t.nanos !== 0) {
      this.tag(2, VARINT);
      this.int(t.nanos);
    }
  }
}

function writeArea(out: Writer, a: ProtectedAreaOverlap): void {
  if (a.id !== "") out.string(P.id.number, a.id);
  if (a.name !== "") out.string(P.name.number, a.name);
  if (a.designation !== "") out.string(P.designation.number, a.designation);
  if (a.iucnCategory !== "") out.string(P.iucnCategory.number, a.iucnCategory);
  if (a.areaM2 !== 0) out.double(P.areaM2.number, a.areaM2);
}

function writeUnep(out: Writer, u: UnepOverlap): void {
  if (u.dataset !== "") out.string(U.dataset.number, u.dataset);
  if (u.overlaps) {
    out.tag(U.overlaps.number, VARINT);
    out.varint(1);
  }
  if (u.areaM2 !== 0) out.double(U.areaM2.number, u.areaM2);
  if (u.fraction !== 0) out.double(U.fraction.number, u.fraction);
  for (const area of u.areas) {
    out.tag(U.areas.number, LEN);
    out.varint(areaSize(area));
    writeArea(out, area);
  }
}

function writeSource(out: Writer, plan: Plan, s: Source): void {
  if (s.id !== "") out.string(F.id.number, s.id);
  if (s.altId !== "") out.string(F.altId.number, s.altId);
  if (s.methodology !== undefined) out.string(F.methodology.number, s.methodology);
  for (const tag of s.tags) out.string(F.tags.number, tag);
  if (s.stewardId !== undefined) out.string(F.stewardId.number, s.stewardId);
  if (s.projectId !== undefined) out.string(F.projectId.number, s.projectId);
  if (s.outcomeReportingYear !== undefined) {
    out.tag(F.outcomeReportingYear.number, VARINT);
    out.int(s.outcomeReportingYear);
  }
  if (s.sourceType !== 0) {
    out.tag(F.sourceType.number, VARINT);
    out.int(s.sourceType);
  }
  if (s.attributeType.length > 0) {
    let packed = 0;
    for (const value of s.attributeType) packed += intSize(value);
    out.tag(F.attributeType.number, LEN);
    out.varint(packed);
    for (const value of s.attributeType) out.int(value);
  }
  if (s.geometrySource !== 0) {
    out.tag(F.geometrySource.number, VARINT);
    out.int(s.geometrySource);
  }
  if (plan.geometry !== undefined) {
    out.tag(F.geometry.number, LEN);
    out.varint(plan.geometry.size);
    out.offset = plan.geometry.write(out.bytes, out.offset);
  } else if (s.geometry !== undefined) {
    out.tag(F.geometry.number, LEN);
    out.varint(geometrySize(s.geometry));
    writeGeometry(out, s.geometry);
  }
  if (s.startAt !== undefined) out.timestamp(F.startAt.number, s.startAt);
  if (s.endAt !== undefined) out.timestamp(F.endAt.number, s.endAt);
  if (s.accountId !== "") out.string(F.accountId.number, s.accountId);
  if (s.createdBy !== "") out.string(F.createdBy.number, s.createdBy);
  if (s.updatedBy !== "") out.string(F.updatedBy.number, s.updatedBy);
  if (s.createdAt !== undefined) out.timestamp(F.createdAt.number, s.createdAt);
  if (s.updatedAt !== undefined) out.timestamp(F.updatedAt.number, s.updatedAt);
  if (s.conflict) {
    out.tag(F.conflict.number, VARINT);
    out.varint(1);
  }
  if (s.unepOverlap !== undefined) {
    out.tag(F.unepOverlap.number, LEN);
    out.varint(unepSize(s.unepOverlap));
    writeUnep(out, s.unepOverlap);
  }
}

/** `toBinary(SourceSchema, s)`, written directly. */
export function encodeSource(s: Source): Uint8Array {
  const plan: Plan = {};
  const out = new Writer(sourceSize(plan, s));
  writeSource(out, plan, s);
  return out.finished("source");
}

/**
 * Sources as the data of length-delimited fields in protobuf-es's unknown-field form
 * (`{ no, wireType, data }`: the length varint followed by the message bytes), one per source, all
 * views of ONE buffer: a page of a hundred sources is one allocation, not a hundred.
 */
export function encodeSourcesFieldData(sources: readonly Source[]): Uint8Array[] {
  const plans: Plan[] = [];
  const sizes: number[] = [];
  let total = 0;
  for (const s of sources) {
    const plan: Plan = {};
    const size = sourceSize(plan, s);
    plans.push(plan);
    sizes.push(size);
    total += varintSize(size) + size;
  }
  const out = new Writer(total);
  const fields: Uint8Array[] = [];
  sources.forEach((s, i) => {
    const start = out.offset;
    out.varint(sizes[i]);
    writeSource(out, plans[i], s);
    fields.push(out.bytes.subarray(start, out.offset));
  });
  out.finished("sources");
  return fields;
}
