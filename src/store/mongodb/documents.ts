import type { Binary } from "mongodb";
import { boundingBox } from "../../geo/bbox.js";
import { countPositions } from "../../geo/parts.js";
import type { BoundingBox, SourceGeometry } from "../../geo/types.js";
import {
  type ConflictMeasure,
  type Counterpart,
  fromOtherSide,
  type SourceConflict,
  type SourceEvent,
  type SourceEventType,
} from "../../model/history.js";
import {
  type NewSourceRecord,
  type SourceRecord,
  type UnepOverlapJson,
  type UnepOverlapRecord,
  unepOverlapJson,
} from "../../model/records.js";
import type { ProtectedArea, SpatialSubject } from "../../model/spatial.js";
import type { NewProtectedArea } from "../protected-area-layers.js";
import { type CoverGeometry, coverOf, sourceCoverOf } from "./cover.js";

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
  /**
   * The `seq` of the source's last event in `source_events` (history.ts): every transaction that
   * appends events for a live source sets it in the same transaction. Missing on documents written
   * before the event log existed, until the history fill (history-fill.ts) gives them their events.
   */
  event_seq?: number;
  /**
   * The instant of the source's last event, set with `event_seq`: a transaction appending events
   * for the source records them no earlier, so its history's times never go back (docs/mongodb.md
   * "Change times"). Missing on documents written before it was kept.
   */
  last_event_at?: Date;
}

/** The fields a record is read from (the `RECORD_PROJECTION`). */
export type RecordDocument = Omit<SourceDocument, "cover" | "bbox" | "area_m2" | "event_seq" | "last_event_at">;

/** What the events and pairs of a source name of it (the `EVENT_SUBJECT_PROJECTION`). */
export type EventSubjectDocument = Pick<
  SourceDocument,
  "_id" | "account_id" | "alt_id" | "event_seq" | "last_event_at"
>;

/** The fields a conflict decision reads (the `SUBJECT_PROJECTION`). */
export type SubjectDocument = EventSubjectDocument &
  Pick<SourceDocument, "geometry" | "bbox" | "area_m2" | "start_at" | "end_at" | "attribute_type" | "conflict">;

/** What the history fill reads of a stored source: a conflict subject, and its creation. */
export type FillSubjectDocument = SubjectDocument & Pick<SourceDocument, "created_at" | "created_by">;

/** A stored source as its events and pairs name it, with the seq of its last event. */
export interface EventSubject {
  id: string;
  accountId: string;
  altId: string;
  /** 0 when it has no event yet. */
  eventSeq: number;
  /** The instant of its last event; −∞ when its document does not say. */
  lastEventAt: number;
}

/** A stored source as the conflict bookkeeping sees it. */
export interface StoredSubject extends SpatialSubject, EventSubject {
  conflict: boolean;
}

/**
 * A guard document (guards.ts): its id, a counter every guarding write increments, and the instant
 * of the last change guarded by it (missing on guards written before it was kept): a change is
 * recorded no earlier, so the times of changes to one place follow the order of their commits.
 */
export interface GuardDocument {
  _id: string;
  writes: number;
  last_change_at?: Date;
}

function toBoxDocument(box: BoundingBox): BoxDocument {
  return { min_x: box.minX, min_y: box.minY, max_x: box.maxX, max_y: box.maxY };
}

export function fromBoxDocument(box: BoxDocument): BoundingBox {
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

/**
 * The document for a new record; everything is copied, nothing of the caller's is shared.
 * `eventSeq` is the seq of the last event its create writes (1: the `created` event alone).
 */
export function toDocument(record: NewSourceRecord, eventSeq = 1): SourceDocument {
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
    cover: sourceCoverOf(record.geometry, record.bbox),
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
    event_seq: eventSeq,
    // Every event a create writes for a new source is at its created_at.
    last_event_at: new Date(record.createdAt),
  };
}

/**
 * The record fields of a source document: the record as a `created` event keeps it. A shallow
 * copy: its top-level fields (the flag) are its own, nested values are shared with the document
 * (the driver only serializes them).
 */
export function recordDocumentOf(doc: SourceDocument): RecordDocument {
  const { cover: _cover, bbox: _bbox, area_m2: _area, event_seq: _seq, last_event_at: _last, ...record } = doc;
  return record;
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

export function fromEventSubjectDocument(doc: EventSubjectDocument): EventSubject {
  return {
    id: doc._id,
    accountId: doc.account_id,
    altId: doc.alt_id,
    eventSeq: doc.event_seq ?? 0,
    lastEventAt: doc.last_event_at?.getTime() ?? Number.NEGATIVE_INFINITY,
  };
}

export function fromSubjectDocument(doc: SubjectDocument): StoredSubject {
  return {
    ...fromEventSubjectDocument(doc),
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

// --- history (docs/api.md §14) ---

/** A conflict's measure (model/history.ts ConflictMeasure) in snake_case, the period as BSON dates. */
export interface ConflictMeasureDocument {
  overlap_area_m2: number;
  overlap_fraction: number;
  counterpart_overlap_fraction: number;
  overlap_period: { start_at: Date; end_at: Date };
  shared_attribute_types: string[];
  /** Present (true) only on a pair no overlay could measure (ConflictMeasure). */
  overlap_area_upper_bound?: true;
}

/** The other side of a conflict, as an event names it. */
export interface CounterpartDocument {
  id: string;
  alt_id: string;
  account_id: string;
}

/**
 * An event of collection `source_events` (docs/api.md §14). `_id` is `<source_id>:<seq>`, the seq
 * zero-padded to 10 digits (sourceEventId), so one source's events sort by `_id` in seq order and
 * a second event of the same seq is a duplicate key twice over (`_id` and `source_seq`).
 * Append-only: the store only ever inserts these.
 */
export interface SourceEventDocument {
  _id: string;
  source_id: string;
  seq: number;
  /** The owning account of the source (not of the actor). */
  account_id: string;
  type: SourceEventType;
  at: Date;
  by: string;
  /** `created`: the record as stored by its create (conflict as it stood then). */
  record?: RecordDocument;
  /** `conflict_set`, `conflict_cleared`: the other side. */
  counterpart?: CounterpartDocument;
  /** `conflict_set`: the pair's measure from this source's side. */
  measure?: ConflictMeasureDocument;
}

/**
 * A document of collection `source_boxes`: the box of a source ever created, the spatial index of
 * the past (docs/api.md §14) that an `as_of` list within an area reads, as a live list reads the
 * sources' `cover`. `_id` is the source id; `at` its created_at (its `created` event's `at`).
 * Inserted with the source and its `created` event; like the events, never changed or removed.
 */
export interface SourceBoxDocument {
  _id: string;
  account_id: string;
  at: Date;
  cover: CoverGeometry;
  bbox: BoxDocument;
}

/** The box document of a source document (its cover and box as the source keeps them). */
export function sourceBoxOf(
  doc: Pick<SourceDocument, "_id" | "account_id" | "created_at" | "cover" | "bbox">,
): SourceBoxDocument {
  return { _id: doc._id, account_id: doc.account_id, at: doc.created_at, cover: doc.cover, bbox: doc.bbox };
}

/** The box document of a record a `created` event holds (events written before `source_boxes`). */
export function sourceBoxOfRecord(
  record: Pick<RecordDocument, "_id" | "account_id" | "created_at" | "geometry">,
): SourceBoxDocument {
  const box = boundingBox(record.geometry);
  return {
    _id: record._id,
    account_id: record.account_id,
    at: record.created_at,
    cover: sourceCoverOf(record.geometry, box),
    bbox: toBoxDocument(box),
  };
}

/**
 * A live conflict of collection `conflict_pairs`: stored once, `a` the source whose create found
 * it and `measure` from a's side; `_id` is `<a>|<b>` (conflictPairId). Removed with either source.
 * `a_event` / `b_event`: the seq of the `conflict_set` event that recorded it in each side's
 * history, the order (and the page keys) of a source's conflicts.
 */
export interface ConflictPairDocument {
  _id: string;
  a: string;
  b: string;
  measure: ConflictMeasureDocument;
  detected_at: Date;
  a_event: number;
  b_event: number;
}

/** Width of the zero-padded seq in an event's `_id`. */
export const EVENT_SEQ_DIGITS = 10;

export function sourceEventId(sourceId: string, seq: number): string {
  return `${sourceId}:${String(seq).padStart(EVENT_SEQ_DIGITS, "0")}`;
}

/** Record ids (`src_<ULID>`) hold no `|`, so the pair's `_id` names its two sides unambiguously. */
export function conflictPairId(a: string, b: string): string {
  return `${a}|${b}`;
}

export function toMeasureDocument(measure: ConflictMeasure): ConflictMeasureDocument {
  return {
    overlap_area_m2: measure.overlapAreaM2,
    overlap_fraction: measure.overlapFraction,
    counterpart_overlap_fraction: measure.counterpartOverlapFraction,
    overlap_period: {
      start_at: new Date(measure.overlapPeriod.startAt),
      end_at: new Date(measure.overlapPeriod.endAt),
    },
    shared_attribute_types: [...measure.sharedAttributeTypes],
    ...(measure.overlapAreaUpperBound === true ? { overlap_area_upper_bound: true as const } : {}),
  };
}

export function fromMeasureDocument(doc: ConflictMeasureDocument): ConflictMeasure {
  return {
    overlapAreaM2: doc.overlap_area_m2,
    overlapFraction: doc.overlap_fraction,
    counterpartOverlapFraction: doc.counterpart_overlap_fraction,
    overlapPeriod: { startAt: doc.overlap_period.start_at.getTime(), endAt: doc.overlap_period.end_at.getTime() },
    sharedAttributeTypes: doc.shared_attribute_types,
    ...(doc.overlap_area_upper_bound === true ? { overlapAreaUpperBound: true as const } : {}),
  };
}

export function toCounterpartDocument(subject: Pick<EventSubject, "id" | "altId" | "accountId">): CounterpartDocument {
  return { id: subject.id, alt_id: subject.altId, account_id: subject.accountId };
}

export function fromCounterpartDocument(doc: CounterpartDocument): Counterpart {
  return { id: doc.id, altId: doc.alt_id, accountId: doc.account_id };
}

/** The event an event document holds (the `_id` is not needed: source and seq say it). */
export function fromEventDocument(doc: Omit<SourceEventDocument, "_id">): SourceEvent {
  const event: SourceEvent = {
    sourceId: doc.source_id,
    accountId: doc.account_id,
    seq: doc.seq,
    type: doc.type,
    at: doc.at.getTime(),
    by: doc.by,
  };
  if (doc.record) event.record = fromDocument(doc.record);
  if (doc.counterpart) event.counterpart = fromCounterpartDocument(doc.counterpart);
  if (doc.measure) event.measure = fromMeasureDocument(doc.measure);
  return event;
}

/** A pair as conflictsOf reads it (the `PAIR_OPTIONS` projection). */
export type PairViewDocument = Omit<ConflictPairDocument, "_id">;

/**
 * A live conflict of source `id` from its side: the pair's measure as stored when `id` is its `a`,
 * turned round when it is its `b`; the counterpart as its source document names it now.
 */
export function fromPairDocument(
  id: string,
  pair: PairViewDocument,
  counterpart: Pick<EventSubjectDocument, "_id" | "alt_id" | "account_id">,
): SourceConflict {
  const measure = fromMeasureDocument(pair.measure);
  return {
    counterpart: { id: counterpart._id, altId: counterpart.alt_id, accountId: counterpart.account_id },
    measure: pair.a === id ? measure : fromOtherSide(measure),
    detectedAt: pair.detected_at.getTime(),
    seq: pair.a === id ? pair.a_event : pair.b_event,
  };
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
