import type { SourceGeometry } from "../../geo/types.js";
import type { NewSourceRecord, SourceRecord, UnepOverlapRecord } from "../../model/records.js";
import { type PackedGeometry, packedGeometryJson, packGeometry, unpackGeometry } from "./packed-geometry.js";

/**
 * A source as a sandbox session holds it: the record's plain fields, and its geometry packed into
 * one Float64Array (packed-geometry.ts) instead of GeoJSON's nested arrays. `bytes` is what the
 * sandbox's memory budget counts for it (`estimateBytes`).
 */
export interface StoredSource {
  readonly id: string;
  readonly accountId: string;
  readonly altId: string;
  readonly methodology: string | null;
  readonly tags: readonly string[];
  readonly stewardId: string | null;
  readonly projectId: string | null;
  readonly outcomeReportingYear: number | null;
  readonly sourceType: string | null;
  readonly attributeType: readonly string[];
  readonly geometrySource: string | null;
  readonly packed: PackedGeometry;
  readonly startAt: number;
  readonly endAt: number;
  readonly createdBy: string;
  readonly updatedBy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly conflict: boolean;
  readonly unepOverlap: UnepOverlapRecord | null;
  readonly bytes: number;
}

/**
 * What the budget counts for one stored source besides its strings and coordinates, in bytes, on a
 * 64-bit V8 without pointer compression (Node's default): the StoredSource object (~200), the
 * Float64Array's JS objects and off-heap backing-store bookkeeping (~350), its entries in the
 * session's three Maps (~160, with the tables' growth slack), the two string arrays (~64), its
 * entry in the session's R-tree (the box object and its node slot, ~80). The per-session
 * measurement in docs/benchmarks.md checks the total against `process.memoryUsage()`.
 */
export const SOURCE_OVERHEAD_BYTES = 896;

function oneByte(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0xff) return false;
  return true;
}

/**
 * A flat string's bytes in V8: a 16-byte header, then one byte a character when every character
 * is Latin-1, two otherwise, rounded up to 8. Counted for every source that holds it, although
 * equal strings are often one shared object (the actor, enum names): the estimate errs on the
 * safe side.
 */
function stringBytes(value: string | null): number {
  if (value === null) return 0;
  const text = oneByte(value) ? value.length : 2 * value.length;
  return 16 + Math.ceil(text / 8) * 8;
}

/**
 * The budget's estimate of one stored source: fixed overhead, the packed doubles, and every string
 * and array it holds. The account id is the session's key, shared by all its sources, and counts
 * once per session instead (SESSION_OVERHEAD_BYTES in sessions.ts).
 */
function estimateBytes(record: NewSourceRecord, packed: PackedGeometry): number {
  let bytes = SOURCE_OVERHEAD_BYTES + packed.byteLength;
  for (const value of [
    record.id,
    record.altId,
    record.methodology,
    record.stewardId,
    record.projectId,
    record.sourceType,
    record.geometrySource,
    record.createdBy,
    record.updatedBy,
  ]) {
    bytes += stringBytes(value);
  }
  // A list's slot for each value, and the value.
  for (const value of record.tags) bytes += 8 + stringBytes(value);
  for (const value of record.attributeType) bytes += 8 + stringBytes(value);
  // Always null in the sandbox (no spatial analysis); counted generously should that change.
  if (record.unepOverlap !== null) bytes += 4 * JSON.stringify(record.unepOverlap).length;
  return bytes;
}

/** Held by every stored source without tags or attribute types; readers get copies anyway. */
const NONE: readonly string[] = Object.freeze([]);

const listCopy = (values: readonly string[]): readonly string[] => (values.length === 0 ? NONE : [...values]);

/**
 * A flat copy of a string. A generated id is a rope of concatenations (`sandbox_` + a UUID that
 * Node assembles from hex pairs): kept as it is, it held ~520 bytes of heap, where its flat text
 * takes ~72 (docs/benchmarks.md). Other strings arrive flat from the JSON and protobuf decoders,
 * or are shared by every record of a request (the actor), and are kept as they are.
 */
const flatCopy = (value: string): string => JSON.parse(JSON.stringify(value)) as string;

/** The stored form of a record: its own copies of everything mutable, its geometry packed. */
export function toStoredSource(record: NewSourceRecord): StoredSource {
  const packed = packGeometry(record.geometry);
  return {
    id: flatCopy(record.id),
    accountId: record.accountId,
    altId: record.altId,
    methodology: record.methodology,
    tags: listCopy(record.tags),
    stewardId: record.stewardId,
    projectId: record.projectId,
    outcomeReportingYear: record.outcomeReportingYear,
    sourceType: record.sourceType,
    attributeType: listCopy(record.attributeType),
    geometrySource: record.geometrySource,
    packed,
    startAt: record.startAt,
    endAt: record.endAt,
    createdBy: record.createdBy,
    updatedBy: record.updatedBy,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    conflict: record.conflict,
    unepOverlap: record.unepOverlap === null ? null : structuredClone(record.unepOverlap),
    bytes: estimateBytes(record, packed),
  };
}

/** The packed geometry behind a record handed out, and the GeoJSON built from it once asked for. */
const PACKED = Symbol("packed geometry");
const BUILT = Symbol("built geometry");

interface HandedOut extends SourceRecord {
  [PACKED]: PackedGeometry;
  [BUILT]: SourceGeometry | undefined;
}

/**
 * Shared by every record handed out, so they all keep one hidden class (as src/store/sqlite/rows.ts
 * does for the same reason): the GeoJSON is built on first use and kept, so a caller changing it
 * sees its own change, and never the stored source.
 */
function builtGeometry(this: HandedOut): SourceGeometry {
  this[BUILT] ??= unpackGeometry(this[PACKED]);
  return this[BUILT];
}

/** The stored geometry's GeoJSON text, written straight from the doubles (what REST splices in). */
function geometryText(this: HandedOut): string {
  return packedGeometryJson(this[PACKED]);
}

/**
 * A record for a caller: plain fields and fresh arrays, so changing it changes nothing stored.
 * `geometry` is an enumerable accessor building the GeoJSON on first read (the gRPC adapter reads
 * it); `geometryJson` is a non-enumerable accessor writing the JSON text directly (the REST adapter
 * reads it, and never builds the arrays). Neither shows in a copy (`{...record}`) or a comparison
 * as anything but the plain `geometry` value.
 */
export function toRecord(stored: StoredSource): SourceRecord {
  const record = {
    id: stored.id,
    accountId: stored.accountId,
    altId: stored.altId,
    methodology: stored.methodology,
    tags: [...stored.tags],
    stewardId: stored.stewardId,
    projectId: stored.projectId,
    outcomeReportingYear: stored.outcomeReportingYear,
    sourceType: stored.sourceType,
    attributeType: [...stored.attributeType],
    geometrySource: stored.geometrySource,
    startAt: stored.startAt,
    endAt: stored.endAt,
    createdBy: stored.createdBy,
    updatedBy: stored.updatedBy,
    createdAt: stored.createdAt,
    updatedAt: stored.updatedAt,
    conflict: stored.conflict,
    unepOverlap: stored.unepOverlap === null ? null : structuredClone(stored.unepOverlap),
  };
  Object.defineProperty(record, "geometry", { get: builtGeometry, enumerable: true, configurable: true });
  Object.defineProperty(record, "geometryJson", { get: geometryText, enumerable: false });
  Object.defineProperty(record, PACKED, { value: stored.packed, enumerable: false });
  Object.defineProperty(record, BUILT, { value: undefined, writable: true, enumerable: false });
  return record as unknown as SourceRecord;
}
