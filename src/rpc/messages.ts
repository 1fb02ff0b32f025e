import { create } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Source, SourceSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { geometryToProto } from "../geo/proto-codec.js";
import { encodeGeometryFieldData } from "../geo/proto-wire.js";
import type { SourceRecord } from "../store/port.js";
import { attributeTypes, geometrySources, sourceTypes } from "./vocabulary.js";

/** `Source.geometry`'s field number (proto/sourceledger/v2/source_ledger.proto). */
const GEOMETRY_FIELD = SourceSchema.field.geometry.number;

export interface ToProtoOptions {
  /**
   * The answer will be written in protobuf binary: the geometry goes in as its finished wire bytes
   * (an unknown field 11 that protobuf-es writes verbatim) instead of a Geometry message, which
   * protobuf-es would encode one double at a time. `geometry` then reads as unset on the message
   * object: use this only for messages that go straight to a binary serialiser.
   */
  geometryAsWireBytes?: boolean;
}

/** A stored record → the API's Source message. */
export function toProtoSource(record: SourceRecord, options: ToProtoOptions = {}): Source {
  const source = create(SourceSchema, {
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
    geometry: options.geometryAsWireBytes ? undefined : geometryToProto(record.geometry),
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
  if (options.geometryAsWireBytes) {
    source.$unknown = [
      { no: GEOMETRY_FIELD, wireType: WireType.LengthDelimited, data: encodeGeometryFieldData(record.geometry) },
    ];
  }
  return source;
}
