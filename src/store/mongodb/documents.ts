import type { BoundingBox, SourceGeometry } from "../../geo/types.js";
import type { NewSourceRecord, SourceRecord, SpatialSubject, UnepOverlapRecord } from "../port.js";
import { coverOf, type CoverGeometry } from "./cover.js";

/** A protected area's overlap, in the document's snake_case. */
export interface UnepOverlapDocument {
  dataset: string;
  overlaps: boolean;
  area_m2: number;
  fraction: number;
  areas: { id: string; name: string; designation: string; iucn_category: string; area_m2: number }[];
}

/** Bounding box in degrees, kept exact (doubles) for the conflict policy's box test. */
export interface BoxDocument {
  min_x: number;
  min_y: number;
  max_x: number;
  max_y: number;
}

/**
 * A document of the `sources` collection. `_id` is the record id (`src_<ULID>`). `geometry` is the
 * GeoJSON exactly as submitted and is never indexed; `cover` is what the 2dsphere index holds
 * (see cover.ts). Times are BSON dates (millisecond precision, like the records).
 */
export interface SourceDocument {
  _id: string;
  account_id: string;
  alt_id: string;
  methodology: string | null;
  tags: string[];
  steward_id: string | null;
  project_id: string | null;
  outcome_reporting_year: number | null;
  source_type: string | null;
  attribute_type: string[];
  geometry_source: string | null;
  geometry: SourceGeometry;
  cover: CoverGeometry;
  bbox: BoxDocument;
  area_m2: number;
  start_at: Date;
  end_at: Date;
  created_by: string;
  updated_by: string;
  created_at: Date;
  updated_at: Date;
  conflict: boolean;
  unep_overlap: UnepOverlapDocument | null;
}

/** The fields a record is read from (the `RECORD_PROJECTION`). */
export type RecordDocument = Omit<SourceDocument, "cover" | "bbox" | "area_m2">;

/** The fields a conflict decision reads (the `SUBJECT_PROJECTION`). */
export type SubjectDocument = Pick<
  SourceDocument,
  "_id" | "geometry" | "bbox" | "area_m2" | "start_at" | "end_at" | "attribute_type" | "conflict"
>;

/** A stored source as the conflict bookkeeping sees it. */
export interface StoredSubject extends SpatialSubject {
  id: string;
  conflict: boolean;
}

/** A guard document (guards.ts): only its id and a counter every guarding write increments. */
export interface GuardDocument {
  _id: string;
  writes: number;
}

function toBoxDocument(box: BoundingBox): BoxDocument {
  return { min_x: box.minX, min_y: box.minY, max_x: box.maxX, max_y: box.maxY };
}

function fromBoxDocument(box: BoxDocument): BoundingBox {
  return { minX: box.min_x, minY: box.min_y, maxX: box.max_x, maxY: box.max_y };
}

function toUnepDocument(overlap: UnepOverlapRecord): UnepOverlapDocument {
  return {
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
  };
}

function fromUnepDocument(overlap: UnepOverlapDocument): UnepOverlapRecord {
  return {
    dataset: overlap.dataset,
    overlaps: overlap.overlaps,
    areaM2: overlap.area_m2,
    fraction: overlap.fraction,
    areas: overlap.areas.map((a) => ({
      id: a.id,
      name: a.name,
      designation: a.designation,
      iucnCategory: a.iucn_category,
      areaM2: a.area_m2,
    })),
  };
}

/** The document for a new record; everything is copied, nothing of the caller's is shared. */
export function toDocument(record: NewSourceRecord): SourceDocument {
  return {
    _id: record.id,
    account_id: record.accountId,
    alt_id: record.altId,
    methodology: record.methodology,
    tags: [...record.tags],
    steward_id: record.stewardId,
    project_id: record.projectId,
    outcome_reporting_year: record.outcomeReportingYear,
    source_type: record.sourceType,
    attribute_type: [...record.attributeType],
    geometry_source: record.geometrySource,
    geometry: structuredClone(record.geometry),
    cover: coverOf(record.bbox),
    bbox: toBoxDocument(record.bbox),
    area_m2: record.areaM2,
    start_at: new Date(record.startAt),
    end_at: new Date(record.endAt),
    created_by: record.createdBy,
    updated_by: record.updatedBy,
    created_at: new Date(record.createdAt),
    updated_at: new Date(record.updatedAt),
    conflict: record.conflict,
    unep_overlap: record.unepOverlap === null ? null : toUnepDocument(record.unepOverlap),
  };
}

/** The record a document holds. The driver hands out fresh objects, so nothing is shared. */
export function fromDocument(doc: RecordDocument): SourceRecord {
  return {
    id: doc._id,
    accountId: doc.account_id,
    altId: doc.alt_id,
    methodology: doc.methodology,
    tags: doc.tags,
    stewardId: doc.steward_id,
    projectId: doc.project_id,
    outcomeReportingYear: doc.outcome_reporting_year,
    sourceType: doc.source_type,
    attributeType: doc.attribute_type,
    geometrySource: doc.geometry_source,
    geometry: doc.geometry,
    startAt: doc.start_at.getTime(),
    endAt: doc.end_at.getTime(),
    createdBy: doc.created_by,
    updatedBy: doc.updated_by,
    createdAt: doc.created_at.getTime(),
    updatedAt: doc.updated_at.getTime(),
    conflict: doc.conflict,
    unepOverlap: doc.unep_overlap === null ? null : fromUnepDocument(doc.unep_overlap),
  };
}

export function fromSubjectDocument(doc: SubjectDocument): StoredSubject {
  return {
    id: doc._id,
    geometry: doc.geometry,
    bbox: fromBoxDocument(doc.bbox),
    areaM2: doc.area_m2,
    startAt: doc.start_at.getTime(),
    endAt: doc.end_at.getTime(),
    attributeType: doc.attribute_type,
    conflict: doc.conflict,
  };
}
