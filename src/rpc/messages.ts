import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { ProtectedAreaOverlap, Source, UnepOverlap } from "../../gen/sourceledger/v2/source_ledger_pb.js";
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
    geometry: geometryToProto(record.geometry),
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
