import type { SourceGeometry } from "../../geo/types.js";
import type { ListCursor } from "../../model/list-query.js";
import type { NewSourceRecord, SourceRecord, UnepOverlapRecord } from "../../model/records.js";
import { withWire } from "./geometry-wire.js";

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

/** `geometryText`: JSON.stringify(r.geometry), when the caller has made it already. */
export function toRow(r: NewSourceRecord, geometryText = JSON.stringify(r.geometry)): SourceRow {
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
    geometry: geometryText,
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

/** Each column's position in COLUMNS, i.e. in a row read in raw mode (`statement.raw(true)`). */
const AT = Object.fromEntries(COLUMNS.map((column, i) => [column, i])) as Record<Column, number>;

/** The parsed geometry, once something has asked for it (hidden: not enumerable, symbol-keyed). */
const PARSED_GEOMETRY = Symbol("parsed geometry");

interface StoredRecord extends SourceRecord {
  [PARSED_GEOMETRY]: SourceGeometry | undefined;
}

/**
 * Shared by every record, so that all records keep one hidden class: an object literal with its
 * own `get geometry()` closure made V8 store each record as a dictionary, and every field read
 * while rendering a page of records was a hash lookup.
 */
function parsedGeometry(this: StoredRecord): SourceGeometry {
  this[PARSED_GEOMETRY] ??= JSON.parse(this.geometryJson as string) as SourceGeometry;
  return this[PARSED_GEOMETRY];
}

/** Where a row of COLUMNS stands in list order, without reading the rest of it. */
export function cursorOfColumns(v: readonly unknown[]): ListCursor {
  return { createdAt: v[AT.created_at] as number, id: v[AT.id] as string };
}

/**
 * A row read in raw mode (the values of COLUMNS, in order) → the record. The hot reads (get,
 * list) use raw mode: the driver then builds an array instead of an object with 21 named
 * properties per row, which showed in the single-row read profile (docs/benchmarks.md).
 *
 * `geometry` is an enumerable accessor that parses the stored GeoJSON text on first use (a REST
 * read sends `geometryJson` as it is and never parses it); `geometryJson` is not enumerable, so a
 * copy of the record (`{...record}`) or a comparison sees the plain fields only.
 */
export function fromColumns(v: readonly unknown[]): SourceRecord {
  const unepOverlap = v[AT.unep_overlap] as string | null;
  const record = {
    id: v[AT.id] as string,
    accountId: v[AT.account_id] as string,
    altId: v[AT.alt_id] as string,
    methodology: v[AT.methodology] as string | null,
    tags: JSON.parse(v[AT.tags] as string) as string[],
    stewardId: v[AT.steward_id] as string | null,
    projectId: v[AT.project_id] as string | null,
    outcomeReportingYear: v[AT.outcome_reporting_year] as number | null,
    sourceType: v[AT.source_type] as string | null,
    attributeType: JSON.parse(v[AT.attribute_type] as string) as string[],
    geometrySource: v[AT.geometry_source] as string | null,
    startAt: v[AT.start_at] as number,
    endAt: v[AT.end_at] as number,
    createdBy: v[AT.created_by] as string,
    updatedBy: v[AT.updated_by] as string,
    createdAt: v[AT.created_at] as number,
    updatedAt: v[AT.updated_at] as number,
    conflict: v[AT.conflict] === 1,
    unepOverlap: unepOverlap === null ? null : (JSON.parse(unepOverlap) as UnepOverlapRecord),
  };
  Object.defineProperty(record, "geometry", { get: parsedGeometry, enumerable: true, configurable: true });
  Object.defineProperty(record, "geometryJson", { value: v[AT.geometry] as string, enumerable: false });
  Object.defineProperty(record, PARSED_GEOMETRY, { value: undefined, writable: true, enumerable: false });
  return record as unknown as SourceRecord;
}

export function fromRow(row: SourceRow): SourceRecord {
  return fromColumns(COLUMNS.map((column) => row[column]));
}

/** A row read with WIRE_COLUMN after COLUMNS (geometry-wire.ts) → the record, with its wire bytes. */
export function fromColumnsWithWire(v: readonly unknown[]): SourceRecord {
  return withWire(fromColumns(v), v[COLUMNS.length]);
}
