import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type {
  Geometry,
  ProtectedAreaOverlap,
  Source,
  UnepOverlap,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { type GeoJsonWire, storedWire } from "../geo/geojson-wire.js";
import type { SourceRecord, UnepOverlapRecord } from "../model/records.js";
import { attributeTypes, geometrySources, sourceTypes } from "../model/vocabulary.js";
import { geometryToProto } from "./geometry-codec.js";

/**
 * A stored record → the API's Source message. Written as the message itself (every field, with
 * its type name) rather than through protobuf-es' `create`, which walks the schema and copies
 * each nested init per call: that walk was 13% of a gRPC GetSource's CPU (docs/benchmarks.md,
 * issue 13). The `Source` type checks that every field is here; test/rpc/messages.test.ts that the
 * result equals `create(SourceSchema, …)` of the same record.
 */
export function toProtoSource(record: SourceRecord): Source {
  const text = storedGeometryText(record);
  return {
    $typeName: "sourceledger.v2.Source",
    id: record.id,
    altId: record.altId,
    methodology: record.methodology ?? undefined,
    tags: record.tags,
    stewardId: record.stewardId ?? undefined,
    projectId: record.projectId ?? undefined,
    outcomeReportingYear: record.outcomeReportingYear ?? undefined,
    sourceType: record.sourceType === null ? 0 : (sourceTypes.valueOf(record.sourceType) ?? 0),
    attributeType: record.attributeType.map((name) => attributeTypes.valueOf(name) ?? 0),
    geometrySource: record.geometrySource === null ? 0 : (geometrySources.valueOf(record.geometrySource) ?? 0),
    geometry: text === undefined ? geometryToProto(record.geometry) : (new DeferredGeometry(record, text) as Geometry),
    startAt: timestamp(record.startAt),
    endAt: timestamp(record.endAt),
    accountId: record.accountId,
    createdBy: record.createdBy,
    updatedBy: record.updatedBy,
    createdAt: timestamp(record.createdAt),
    updatedAt: timestamp(record.updatedAt),
    conflict: record.conflict,
    unepOverlap: record.unepOverlap ? unepOverlap(record.unepOverlap) : undefined,
  };
}

/**
 * The geometry's text as its store read it back (a data property: the embedded store's column),
 * whose parse IS the record's geometry. The sandbox derives its text from exact doubles with an
 * accessor, and JSON cannot write -0: its geometry is encoded from the doubles instead.
 */
function storedGeometryText(record: SourceRecord): string | undefined {
  const value = Object.getOwnPropertyDescriptor(record, "geometryJson")?.value;
  return typeof value === "string" ? value : undefined;
}

/** On a Geometry message made from stored GeoJSON text: the text, and its wire form. */
export interface StoredGeometry {
  text: string;
  /** As the store kept it, or scanned from the text once (source-wire.ts storedGeometry); null when the text is not the plain form. */
  wire: GeoJsonWire | null | undefined;
}

/**
 * The Geometry message of a record whose store keeps the geometry's GeoJSON text: `kind` is built
 * on first read (a JSON answer, an interceptor), and a binary answer writes its wire bytes from the
 * store's copy or straight from the text (geojson-wire.ts) without ever parsing it into positions.
 *
 * `kind` is an accessor of the class, not of each message: one defined per object (and its
 * closures) was a third of a page's Source-building time, and an accessor redefined on the
 * Source itself turned every Source into a dictionary-mode object. protobuf-es reads and writes
 * `kind` by property access (reflect, clone, toJson, toBinary, merge). Its own enumerable property
 * is `$typeName` only: a copy by spread or structuredClone, which nothing here makes, lacks `kind`.
 *
 * The stored bytes are written only while nothing has read or assigned `kind`: once read, the
 * message it gave may be changed in place (merge appends rings), and the bytes would no longer
 * say what the message holds. A binary answer never reads it.
 */
class DeferredGeometry {
  readonly $typeName = "sourceledger.v2.Geometry";
  #kind: Geometry["kind"] | undefined;
  readonly #record: SourceRecord;
  /** Undefined once `kind` was read or assigned. */
  #stored: StoredGeometry | undefined;

  constructor(record: SourceRecord, text: string) {
    this.#record = record;
    // The store's wire bytes of this text when it attached them (RecordRead.geometryWire): copied, not scanned.
    const wire = record.geometryWire === undefined ? undefined : storedWire(record.geometryWire);
    this.#stored = { text, wire };
  }

  get kind(): Geometry["kind"] {
    this.#stored = undefined;
    this.#kind ??= geometryToProto(this.#record.geometry).kind;
    return this.#kind;
  }

  set kind(value: Geometry["kind"]) {
    this.#stored = undefined;
    this.#kind = value;
  }

  /** The stored text and its wire form, when `geometry` is such a message and its kind was neither read nor assigned. */
  static storedOf(geometry: Geometry | null | undefined): StoredGeometry | undefined {
    return typeof geometry === "object" && geometry !== null && #stored in geometry ? geometry.#stored : undefined;
  }
}

export const storedGeometryOf = DeferredGeometry.storedOf;

/** What `timestampFromMs` makes, without `create`. */
function timestamp(ms: number): Timestamp {
  const seconds = Math.floor(ms / 1000);
  return { $typeName: "google.protobuf.Timestamp", seconds: BigInt(seconds), nanos: (ms - seconds * 1000) * 1_000_000 };
}

function unepOverlap(overlap: UnepOverlapRecord): UnepOverlap {
  return {
    $typeName: "sourceledger.v2.UnepOverlap",
    dataset: overlap.dataset,
    overlaps: overlap.overlaps,
    areaM2: overlap.areaM2,
    fraction: overlap.fraction,
    areas: overlap.areas.map(
      (area): ProtectedAreaOverlap => ({
        $typeName: "sourceledger.v2.ProtectedAreaOverlap",
        id: area.id,
        name: area.name,
        designation: area.designation,
        iucnCategory: area.iucnCategory,
        areaM2: area.areaM2,
      }),
    ),
  };
}
