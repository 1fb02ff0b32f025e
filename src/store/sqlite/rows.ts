import type { SourceGeometry } from "../../geo/types.js";
import type { NewSourceRecord, SourceRecord, UnepOverlapRecord } from "../port.js";

/** A `sources` row as the driver returns it. */
export interface SourceRow {
  id: string;
  account_id: string;
  alt_id: string;
  methodology: string | null;
  tags: string;
  steward_id: string | null;
  project_id: string | null;
  outcome_reporting_year: number | null;
  source_type: string | null;
  attribute_type: string;
  geometry_source: string | null;
  geometry: string;
  start_at: number;
  end_at: number;
  created_by: string;
  updated_by: string;
  created_at: number;
  updated_at: number;
  area_m2: number;
  conflict: number;
  unep_overlap: string | null;
}

type Column = keyof SourceRow;

/** Every column of a record, shared by INSERT and SELECT so the two cannot drift apart. */
export const COLUMNS: readonly Column[] = [
  "id",
  "account_id",
  "alt_id",
  "methodology",
  "tags",
  "steward_id",
  "project_id",
  "outcome_reporting_year",
  "source_type",
  "attribute_type",
  "geometry_source",
  "geometry",
  "start_at",
  "end_at",
  "created_by",
  "updated_by",
  "created_at",
  "updated_at",
  "area_m2",
  "conflict",
  "unep_overlap",
];

/** The select list, qualified by `alias` so joins stay unambiguous. */
export function selectList(alias: string): string {
  return COLUMNS.map((c) => `${alias}.${c}`).join(", ");
}

export function toRow(r: NewSourceRecord): SourceRow {
  return {
    id: r.id,
    account_id: r.accountId,
    alt_id: r.altId,
    methodology: r.methodology,
    tags: JSON.stringify(r.tags),
    steward_id: r.stewardId,
    project_id: r.projectId,
    outcome_reporting_year: r.outcomeReportingYear,
    source_type: r.sourceType,
    attribute_type: JSON.stringify(r.attributeType),
    geometry_source: r.geometrySource,
    // The submitted GeoJSON text, so a read returns the same positions in the same order.
    geometry: JSON.stringify(r.geometry),
    start_at: r.startAt,
    end_at: r.endAt,
    created_by: r.createdBy,
    updated_by: r.updatedBy,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    area_m2: r.areaM2,
    conflict: r.conflict ? 1 : 0,
    unep_overlap: r.unepOverlap === null ? null : JSON.stringify(r.unepOverlap),
  };
}

export function fromRow(row: SourceRow): SourceRecord {
  let geometry: SourceGeometry | undefined;
  const record: SourceRecord = {
    id: row.id,
    accountId: row.account_id,
    altId: row.alt_id,
    methodology: row.methodology,
    tags: JSON.parse(row.tags) as string[],
    stewardId: row.steward_id,
    projectId: row.project_id,
    outcomeReportingYear: row.outcome_reporting_year,
    sourceType: row.source_type,
    attributeType: JSON.parse(row.attribute_type) as string[],
    geometrySource: row.geometry_source,
    // Parsed on first use only: a REST read sends `geometryJson` as it is.
    get geometry(): SourceGeometry {
      geometry ??= JSON.parse(row.geometry) as SourceGeometry;
      return geometry;
    },
    startAt: row.start_at,
    endAt: row.end_at,
    createdBy: row.created_by,
    updatedBy: row.updated_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    conflict: row.conflict === 1,
    unepOverlap: row.unep_overlap === null ? null : (JSON.parse(row.unep_overlap) as UnepOverlapRecord),
  };
  // Not enumerable: a copy of the record ({...record}) or a comparison sees the plain fields only.
  Object.defineProperty(record, "geometryJson", { value: row.geometry, enumerable: false });
  return record;
}
