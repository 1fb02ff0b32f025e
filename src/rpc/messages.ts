import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Source, SourceSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { SourceRecord } from "../model/records.js";
import { attributeTypes, geometrySources, sourceTypes } from "../model/vocabulary.js";
import { geometryToProto } from "./geometry-codec.js";

/** A stored record → the API's Source message. */
export function toProtoSource(record: SourceRecord): Source {
  return create(SourceSchema, {
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
    startAt: timestampFromMs(record.startAt),
    endAt: timestampFromMs(record.endAt),
    accountId: record.accountId,
    createdBy: record.createdBy,
    updatedBy: record.updatedBy,
    createdAt: timestampFromMs(record.createdAt),
    updatedAt: timestampFromMs(record.updatedAt),
    conflict: record.conflict,
    unepOverlap: record.unepOverlap
      ? {
          dataset: record.unepOverlap.dataset,
          overlaps: record.unepOverlap.overlaps,
          areaM2: record.unepOverlap.areaM2,
          fraction: record.unepOverlap.fraction,
          areas: record.unepOverlap.areas,
        }
      : undefined,
  });
}
