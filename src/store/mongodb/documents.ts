import type { Binary } from "mongodb";
import { countPositions } from "../../geo/parts.js";
import type { BoundingBox, SourceGeometry } from "../../geo/types.js";
import {
  type NewSourceRecord,
  type SourceRecord,
  type UnepOverlapJson,
  type UnepOverlapRecord,
  unepOverlapJson,
} from "../../model/records.js";
import type { ProtectedArea, SpatialSubject } from "../../model/spatial.js";
import type { NewProtectedArea } from "../protected-area-layers.js";
import { type CoverGeometry, coverOf } from "./cover.js";

/** A source's protected-area overlap, stored in the API's snake_case form. */
export type UnepOverlapDocument = UnepOverlapJson;

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
    unep_overlap: record.unepOverlap === null ? null : unepOverlapJson(record.unepOverlap),
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

/**
 * A store-wide setting (collection `settings`): today only `ledger_secret`, the 32 random bytes
 * every process serving this database derives its keys from (SourceStore.ledgerSecret).
 */
export interface SettingDocument {
  _id: string;
  value: Binary;
  created_at: Date;
}

// --- protected areas ---

/**
 * A protected area of a layer (collection `protected_areas`). `_id` is `<layer id>:<sequence>`
 * (zero-padded, so ids sort in import order). `geometry` is the GeoJSON as imported and is never
 * indexed; `cover` is the 2dsphere-indexed box cover (cover.ts), as for sources. A geometry too
 * large for one document (16 MB) is stored as JSON text in `geometry_chunks` documents instead:
 * then `geometry` is null and `geometry_chunks` their number.
 */
export interface ProtectedAreaDocument {
  _id: string;
  layer_id: string;
  wdpa_id: string;
  name: string;
  designation: string;
  iucn_category: string;
  area_m2: number;
  bbox: BoxDocument;
  cover: CoverGeometry;
  geometry: SourceGeometry | null;
  geometry_chunks: number;
}

/** What a candidate query reads of an area: everything but the geometry (see the reader's cache). */
export type ProtectedAreaCandidateDocument = Omit<ProtectedAreaDocument, "layer_id" | "area_m2" | "cover" | "geometry">;

/** Piece `n` of the JSON text of an oversized area's geometry (collection `protected_area_geometry_chunks`). */
export interface GeometryChunkDocument {
  /** `<area _id>#<n>`. */
  _id: string;
  layer_id: string;
  area_id: string;
  n: number;
  text: string;
}

/**
 * Geometries with more positions than this are stored in chunks. A position takes at most about
 * 36 bytes of BSON, so an inline geometry stays under about 7 MB, well within MongoDB's 16 MB
 * document limit.
 */
export const INLINE_GEOMETRY_POSITIONS = 200_000;
/** Characters of JSON text per geometry chunk (ASCII, so bytes): 8 MiB. */
export const GEOMETRY_CHUNK_CHARS = 8 * 1024 * 1024;

export interface GeometryStorageLimits {
  inlinePositions: number;
  chunkChars: number;
}

export const DEFAULT_GEOMETRY_LIMITS: GeometryStorageLimits = {
  inlinePositions: INLINE_GEOMETRY_POSITIONS,
  chunkChars: GEOMETRY_CHUNK_CHARS,
};

/** `_id` of the area at `sequence` (from 0) of a layer; zero-padded so they sort in import order. */
export function protectedAreaId(layerId: string, sequence: number): string {
  return `${layerId}:${String(sequence).padStart(12, "0")}`;
}

export function geometryChunkId(areaId: string, n: number): string {
  return `${areaId}#${n}`;
}

/** The documents that store `area` as the `sequence`-th area of layer `layerId`. */
export function toProtectedAreaDocuments(
  layerId: string,
  sequence: number,
  area: NewProtectedArea,
  limits: GeometryStorageLimits = DEFAULT_GEOMETRY_LIMITS,
): { area: ProtectedAreaDocument; chunks: GeometryChunkDocument[] } {
  const id = protectedAreaId(layerId, sequence);
  const chunks: GeometryChunkDocument[] = [];
  if (countPositions(area.geometry) > limits.inlinePositions) {
    const text = JSON.stringify(area.geometry);
    for (let at = 0, n = 0; at < text.length; at += limits.chunkChars, n++) {
      chunks.push({
        _id: geometryChunkId(id, n),
        layer_id: layerId,
        area_id: id,
        n,
        text: text.slice(at, at + limits.chunkChars),
      });
    }
  }
  return {
    chunks,
    area: {
      _id: id,
      layer_id: layerId,
      wdpa_id: area.id,
      name: area.name,
      designation: area.designation,
      iucn_category: area.iucnCategory,
      area_m2: area.areaM2,
      bbox: toBoxDocument(area.bbox),
      cover: coverOf(area.bbox),
      geometry: chunks.length === 0 ? structuredClone(area.geometry) : null,
      geometry_chunks: chunks.length,
    },
  };
}

/** The geometry from its chunks (any order); throws when one is missing. */
export function geometryFromChunks(
  areaId: string,
  count: number,
  chunks: readonly Pick<GeometryChunkDocument, "n" | "text">[],
): SourceGeometry {
  const texts = new Array<string | undefined>(count).fill(undefined);
  for (const chunk of chunks) if (chunk.n >= 0 && chunk.n < count) texts[chunk.n] = chunk.text;
  const missing = texts.indexOf(undefined);
  if (missing >= 0) throw new Error(`protected area ${areaId}: geometry chunk ${missing} of ${count} is missing`);
  return JSON.parse(texts.join("")) as SourceGeometry;
}

/** A candidate area for the policy, with the geometry the reader found for it. */
export function fromProtectedAreaDocument(
  doc: ProtectedAreaCandidateDocument,
  geometry: SourceGeometry,
): ProtectedArea {
  return {
    id: doc.wdpa_id,
    name: doc.name,
    designation: doc.designation,
    iucnCategory: doc.iucn_category,
    bbox: fromBoxDocument(doc.bbox),
    geometry,
  };
}
