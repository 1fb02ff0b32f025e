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
    geometry: text === undefined ? geometryToProto(record.geometry) : deferredGeometry(record, text),
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

/**
 * On a Geometry message made from stored GeoJSON text: the text, and its wire form, as the store
 * kept it or scanned from the text once (source-wire.ts storedGeometry; null when the text is not
 * the plain form).
 */
export const STORED_GEOMETRY = Symbol("stored GeoJSON text");

export interface StoredGeometry {
  text: string;
  wire: GeoJsonWire | null | undefined;
  /** Set when `kind` was assigned: the text no longer says what the message holds. */
  replaced: boolean;
}

/**
 * The Geometry message of a record whose store keeps the geometry's GeoJSON text: `kind` is built
 * on first read (a JSON answer, an interceptor), and a binary answer writes its wire bytes straight
 * from the text (geojson-wire.ts) without ever parsing it into positions. The deferral lives on
 * this small message, not on the Source: redefining a Source's own property as an accessor turned
 * every Source into a dictionary-mode object, and each of the ~40 field reads of encoding it into
 * a hash lookup.
 */
function deferredGeometry(record: SourceRecord, text: string): Geometry {
  // The store's wire bytes of this text when it attached them (RecordRead.geometryWire): copied, not scanned.
  const wire = record.geometryWire === undefined ? undefined : storedWire(record.geometryWire);
  const stored: StoredGeometry = { text, wire, replaced: false };
  const geometry = { $typeName: "sourceledger.v2.Geometry" } as Geometry;
  const settle = (value: Geometry["kind"]) => {
    Object.defineProperty(geometry, "kind", { value, writable: true, enumerable: true, configurable: true });
    return value;
  };
  Object.defineProperty(geometry, "kind", {
    get: () => settle(geometryToProto(record.geometry).kind),
    set(value: Geometry["kind"]) {
      stored.replaced = true;
      settle(value);
    },
    enumerable: true,
    configurable: true,
  });
  Object.defineProperty(geometry, STORED_GEOMETRY, { value: stored, enumerable: false });
  return geometry;
}

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
