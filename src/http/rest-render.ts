import type { Source } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { geometryFromProto } from "../geo/proto-codec.js";
import { attributeTypes, geometrySources, sourceTypes } from "../ledger/vocabulary.js";
import { formatRfc3339, timestampToMs } from "./rfc3339.js";

/** Contract §4's record: every key always present, absent values null, lists [] when empty. */
export function renderSource(source: Source): Record<string, unknown> {
  const time = (ts: Source["startAt"]) => (ts ? formatRfc3339(timestampToMs(ts)) : null);
  const overlap = source.unepOverlap;
  return {
    id: source.id,
    alt_id: source.altId,
    methodology: source.methodology ?? null,
    tags: source.tags,
    steward_id: source.stewardId ?? null,
    project_id: source.projectId ?? null,
    outcome_reporting_year: source.outcomeReportingYear ?? null,
    source_type: sourceTypes.nameOf(source.sourceType) ?? null,
    attribute_type: source.attributeType.map((value) => attributeTypes.nameOf(value)),
    geometry_source: geometrySources.nameOf(source.geometrySource) ?? null,
    geometry: geometryFromProto(source.geometry).geometry,
    start_at: time(source.startAt),
    end_at: time(source.endAt),
    account_id: source.accountId,
    created_by: source.createdBy,
    updated_by: source.updatedBy,
    created_at: time(source.createdAt),
    updated_at: time(source.updatedAt),
    conflict: source.conflict,
    unep_overlap: overlap
      ? {
          dataset: overlap.dataset,
          overlaps: overlap.overlaps,
          area_m2: overlap.areaM2,
          fraction: overlap.fraction,
          areas: overlap.areas.map((a) => ({
            id: a.id,
            name: a.name,
            designation: a.designation,
            iucn_category: a.iucnCategory,
            area_m2: a.areaM2,
          })),
        }
      : null,
  };
}
