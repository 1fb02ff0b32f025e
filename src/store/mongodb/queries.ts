/**
 * Every filter, sort, projection, index and option the MongoDB store sends, as pure values and
 * functions, so tests can pin them without a server (test/store/mongodb-queries.test.ts).
 */
import {
  type AnyBulkWriteOperation,
  type DbOptions,
  type Filter,
  type FindOneAndDeleteOptions,
  type FindOptions,
  type IndexDescription,
  type MongoClientOptions,
  ReadConcern,
  type TransactionOptions,
  type UpdateFilter,
  WriteConcern,
} from "mongodb";
import type { BoundingBox } from "../../geo/types.js";
import { LIST_FILTERS, type ListQuery, listFiltersOf } from "../../model/list-query.js";
import { type CoverGeometry, coverOf } from "./cover.js";
import type { GeometryChunkDocument, GuardDocument, ProtectedAreaDocument, SourceDocument } from "./documents.js";
import { LAYER_STATE_ID, type LayerStateDocument } from "./layer-state.js";

export const SOURCES = "sources";
export const GUARDS = "conflict_guards";
export const PROTECTED_AREAS = "protected_areas";
export const GEOMETRY_CHUNKS = "protected_area_geometry_chunks";
export const LAYERS = "protected_area_layers";

/** Name of the unique `(account_id, alt_id)` index; its duplicate-key errors mean "alt_id taken". */
export const ALT_ID_INDEX = "account_alt_id_unique";

/** Every write: acknowledged by a majority of the replica set, and journaled on them. */
export const WRITE_CONCERN = new WriteConcern("majority", undefined, true);
/** Reads outside transactions see only majority-committed data (nothing a failover rolls back). */
export const READ_CONCERN = new ReadConcern("majority");

/**
 * Options of every transaction (batch create, delete with conflict re-evaluation): a snapshot of
 * majority-committed data for all reads, a majority-journaled commit, the primary, and a bound on
 * how long the server may spend committing.
 */
export const TRANSACTION_OPTIONS: TransactionOptions = {
  readConcern: new ReadConcern("snapshot"),
  writeConcern: WRITE_CONCERN,
  readPreference: "primary",
  maxCommitTimeMS: 10_000,
};

/** Database defaults, which win over anything the URI says about concerns. */
export const DB_OPTIONS: DbOptions = { readConcern: READ_CONCERN, writeConcern: WRITE_CONCERN };

/**
 * Client defaults for failure handling. Timeouts the URI sets itself win (operators tune them
 * there); retryable reads and writes are always on.
 */
export const CLIENT_DEFAULTS = {
  serverSelectionTimeoutMS: 5_000,
  connectTimeoutMS: 5_000,
  socketTimeoutMS: 30_000,
  maxIdleTimeMS: 60_000,
  appName: "source-ledger",
} as const satisfies MongoClientOptions;

/** The option names a connection string sets, lower-cased (URI options are case-insensitive). */
export function uriOptionNames(uri: string): Set<string> {
  const query = uri.indexOf("?");
  const names = new Set<string>();
  if (query < 0) return names;
  for (const pair of uri.slice(query + 1).split("&")) {
    const name = pair.split("=")[0];
    if (name !== "") names.add(decodeURIComponent(name).toLowerCase());
  }
  return names;
}

export function clientOptions(uri: string): MongoClientOptions {
  const fromUri = uriOptionNames(uri);
  const options: MongoClientOptions = { retryWrites: true, retryReads: true };
  for (const [name, value] of Object.entries(CLIENT_DEFAULTS)) {
    if (!fromUri.has(name.toLowerCase())) Object.assign(options, { [name]: value });
  }
  return options;
}

// --- indexes ---

/**
 * The production list filters, as document fields. alt_id is served by the unique index for one
 * account (and gets an index across accounts below).
 */
const FILTER_FIELDS = listFiltersOf("production").map((filter) => filter.documentPath);

/**
 * Indexes of `sources`, created at start (createIndexes is a no-op for identical ones). Every
 * list filter has an index with that filter's equality first and then the list order, once with
 * `account_id` in front (one account) and once without (admins across accounts), so MongoDB walks
 * the matches in `(created_at, _id)` order and stops at `limit` instead of sorting (the
 * Equality-Sort-Range rule). With several filters the planner picks one of these and checks the
 * others on the way. `attribute_type` is an array (a multikey index); a list asking for any of
 * several values merges the per-value scans in order (SORT_MERGE).
 *
 * alt_id uniqueness: deletes are hard deletes, so every stored source is live and a plain unique
 * index on (account_id, alt_id) is exactly "unique among live sources"; deleting frees the alt_id.
 *
 * The 2dsphere index is on `cover` (cover.ts), never on the submitted `geometry`.
 */
export const SOURCE_INDEXES: IndexDescription[] = [
  { key: { cover: "2dsphere" }, name: "cover_2dsphere" },
  { key: { account_id: 1, alt_id: 1 }, name: ALT_ID_INDEX, unique: true },
  { key: { account_id: 1, created_at: 1, _id: 1 }, name: "account_created" },
  ...FILTER_FIELDS.map(
    (field): IndexDescription => ({
      key: { account_id: 1, [field]: 1, created_at: 1, _id: 1 },
      name: `account_${field}_created`,
    }),
  ),
  { key: { created_at: 1, _id: 1 }, name: "created" },
  ...[...FILTER_FIELDS, "alt_id"].map(
    (field): IndexDescription => ({
      key: { [field]: 1, created_at: 1, _id: 1 },
      name: `${field}_created`,
    }),
  ),
];

/**
 * The protected areas of every stored layer: each area's exact geometry in `geometry`, and in
 * `cover` the same kind of 2dsphere-indexable box cover as sources (cover.ts), for the same reasons.
 *
 * - `layer_cover_2dsphere` serves the candidate query of a create: equality on the active
 *   layer first, then the cover, so the geometric scan stays inside that layer (while an import
 *   loads the next layer, its areas are never scanned).
 * - `layer` serves garbage collection (the areas of a retired layer, a batch at a time, by `_id`
 *   only: covered by the index, no document is read). The 2dsphere index cannot: it is sparse on
 *   `cover`, so the planner never uses it for a query without a geometric predicate.
 */
export const PROTECTED_AREA_INDEXES: IndexDescription[] = [
  { key: { layer_id: 1, cover: "2dsphere" }, name: "layer_cover_2dsphere" },
  { key: { layer_id: 1, _id: 1 }, name: "layer" },
];

/** Chunks of oversized geometries (documents.ts), deleted with their layer. */
export const GEOMETRY_CHUNK_INDEXES: IndexDescription[] = [{ key: { layer_id: 1, _id: 1 }, name: "layer" }];

// --- reads ---

/** The list order: created time, then id. */
export const LIST_SORT = { created_at: 1, _id: 1 } as const;

/** Exactly the fields of a record; `cover`, `bbox` and `area_m2` stay in the database. */
export const RECORD_PROJECTION = {
  _id: 1,
  account_id: 1,
  alt_id: 1,
  methodology: 1,
  tags: 1,
  steward_id: 1,
  project_id: 1,
  outcome_reporting_year: 1,
  source_type: 1,
  attribute_type: 1,
  geometry_source: 1,
  geometry: 1,
  start_at: 1,
  end_at: 1,
  created_by: 1,
  updated_by: 1,
  created_at: 1,
  updated_at: 1,
  conflict: 1,
  unep_overlap: 1,
} as const;

/** What a conflict decision reads of a stored source. */
export const SUBJECT_PROJECTION = {
  _id: 1,
  geometry: 1,
  bbox: 1,
  area_m2: 1,
  start_at: 1,
  end_at: 1,
  attribute_type: 1,
  conflict: 1,
} as const;

/** Account scope: one account, or every account for `null` (admins). */
function scoped(accountId: string | null): Filter<SourceDocument> {
  return accountId === null ? {} : { account_id: accountId };
}

/** The filter of a list query; keys appear in LIST_FILTERS' order, absent filters are left out. */
export function listFilter(query: ListQuery): Filter<SourceDocument> {
  const filter: Record<string, unknown> = { ...scoped(query.accountId) };
  for (const { queryKey, kind, documentPath } of LIST_FILTERS) {
    const value = query[queryKey];
    if (value === undefined) continue;
    if (kind !== "anyOf") filter[documentPath] = value;
    // ANY of the values; a source holding several of them still comes back once.
    else if (Array.isArray(value) && value.length > 0) filter[documentPath] = { $in: [...value] };
  }
  return filter as Filter<SourceDocument>;
}

export function listOptions(query: ListQuery): FindOptions {
  return { projection: RECORD_PROJECTION, sort: LIST_SORT, skip: query.offset, limit: query.limit };
}

export function getFilter(id: string, accountId: string | null): Filter<SourceDocument> {
  return { _id: id, ...scoped(accountId) };
}

export const GET_OPTIONS: FindOptions = { projection: RECORD_PROJECTION };

// --- deletes ---

export function deleteByIdFilter(id: string, accountId: string | null): Filter<SourceDocument> {
  return { _id: id, ...scoped(accountId) };
}

/** A delete returns what the conflict re-evaluation needs of the deleted source. */
export const DELETE_OPTIONS: FindOneAndDeleteOptions = { projection: SUBJECT_PROJECTION };

export function deleteByAltIdFilter(altId: string, accountId: string): Filter<SourceDocument> {
  return { account_id: accountId, alt_id: altId };
}

// --- alt_id uniqueness ---

/** The stored sources of one account holding any of `altIds` (to name every taken one). */
export function takenAltIdsFilter(accountId: string, altIds: readonly string[]): Filter<SourceDocument> {
  return { account_id: accountId, alt_id: { $in: [...altIds] } };
}

export const TAKEN_ALT_IDS_OPTIONS: FindOptions = { projection: { _id: 0, alt_id: 1 } };

// --- conflict bookkeeping ---

/** `$geoIntersects` of the index's covers with the cover of one box. */
function intersectingCover(cover: CoverGeometry): Filter<SourceDocument> {
  return { cover: { $geoIntersects: { $geometry: cover } } };
}

/**
 * Candidates for a conflict with any of `boxes`, across every account: sources whose cover meets
 * the cover of one of the boxes (so at least every source whose box meets one of them; the exact
 * decision is the policy's). One box is one `$geoIntersects`; several are an `$or` of them, each
 * clause served by the 2dsphere index.
 */
export function conflictCandidatesFilter(boxes: readonly BoundingBox[]): Filter<SourceDocument> {
  if (boxes.length === 1) return intersectingCover(coverOf(boxes[0]));
  return { $or: boxes.map((box) => intersectingCover(coverOf(box))) };
}

/**
 * Re-evaluating a neighbour after a delete: the flagged candidates for `box` other than the source
 * `id` itself (both sides of a conflict are flagged, so only flagged sources can keep it flagged).
 */
export function otherCandidatesFilter(box: BoundingBox, id: string): Filter<SourceDocument> {
  return { ...intersectingCover(coverOf(box)), _id: { $ne: id }, conflict: true };
}

export const CANDIDATE_OPTIONS: FindOptions = { projection: SUBJECT_PROJECTION };

/** How many boxes one candidate query asks about at most (a batch is split into such chunks). */
export const CANDIDATE_CHUNK = 100;

/** Sets the flag on the sources `ids` (both sides of a conflict are kept flagged). */
export function setConflictUpdate(
  ids: readonly string[],
  conflict: boolean,
): { filter: Filter<SourceDocument>; update: UpdateFilter<SourceDocument> } {
  return { filter: { _id: { $in: [...ids] } }, update: { $set: { conflict } } };
}

/** Upserts that modify every guard document of `cellIds` (guards.ts), so concurrent writers collide. */
export function guardWrites(cellIds: readonly string[]): AnyBulkWriteOperation<GuardDocument>[] {
  return cellIds.map((id) => ({ updateOne: { filter: { _id: id }, update: { $inc: { writes: 1 } }, upsert: true } }));
}

/** Guards are written in order; the first conflict aborts the transaction anyway. */
export const GUARD_WRITE_OPTIONS = { ordered: true } as const;

// --- protected-area layers ---

/** The one layer-state document (layer-state.ts). */
export const LAYER_STATE_FILTER: Filter<LayerStateDocument> = { _id: LAYER_STATE_ID };

/** A create reads only the active layer of the state. */
export const ACTIVE_LAYER_OPTIONS: FindOptions = { projection: { _id: 0, active: 1 } };

/**
 * Replaces the state document only if it still has the version `next` was computed from; a
 * missing document (version 0) is inserted. When another writer got there first the filter
 * matches nothing and the upsert collides with the existing `_id` (a duplicate key): the writer
 * reads again and recomputes.
 */
export function layerStateWrite(
  readVersion: number,
  next: LayerStateDocument,
): { filter: Filter<LayerStateDocument>; replacement: Omit<LayerStateDocument, "_id">; options: { upsert: true } } {
  const { _id, ...rest } = next;
  return {
    filter: { _id, version: readVersion },
    replacement: { ...rest, version: readVersion + 1 },
    options: { upsert: true },
  };
}

/**
 * Area imports: unordered (the loading layer is invisible, order does not matter), so one bad
 * document does not stop the rest.
 */
export const AREA_INSERT_OPTIONS = { ordered: false } as const;

/** `$geoIntersects` of the covers of one layer's areas with the cover of one box. */
function areaIntersectingCover(layerId: string, cover: CoverGeometry): Filter<ProtectedAreaDocument> {
  return { layer_id: layerId, cover: { $geoIntersects: { $geometry: cover } } };
}

/**
 * Candidates for the `unep_overlap` of sources with boxes `boxes`: the areas of layer `layerId`
 * whose cover meets the cover of one of the boxes, padded exactly like the conflict candidates
 * (so at least every area whose box meets one of them; the policy decides on the exact
 * geometry). Several boxes are an `$or` with the layer in each clause, so each clause is one scan
 * of the `layer_cover_2dsphere` index.
 */
export function protectedAreaCandidatesFilter(
  layerId: string,
  boxes: readonly BoundingBox[],
): Filter<ProtectedAreaDocument> {
  if (boxes.length === 1) return areaIntersectingCover(layerId, coverOf(boxes[0]));
  return { $or: boxes.map((box) => areaIntersectingCover(layerId, coverOf(box))) };
}

/** What the policy needs of a candidate, without its geometry (fetched only when not cached). */
export const PROTECTED_AREA_CANDIDATE_OPTIONS: FindOptions = {
  projection: { _id: 1, wdpa_id: 1, name: 1, designation: 1, iucn_category: 1, bbox: 1, geometry_chunks: 1 },
};

/** The geometries of the areas `ids`. */
export function areaGeometriesFilter(ids: readonly string[]): Filter<ProtectedAreaDocument> {
  return { _id: { $in: [...ids] } };
}

export const AREA_GEOMETRY_OPTIONS: FindOptions = { projection: { _id: 1, geometry: 1 } };

/** The chunks `ids` of oversized geometries. */
export function geometryChunksFilter(ids: readonly string[]): Filter<GeometryChunkDocument> {
  return { _id: { $in: [...ids] } };
}

export const GEOMETRY_CHUNK_OPTIONS: FindOptions = { projection: { _id: 1, area_id: 1, n: 1, text: 1 } };

/** How many areas (or chunks) one geometry read or one garbage-collection delete takes at most. */
export const AREA_BATCH = 1_000;

/** The next batch of a retired layer's documents to delete: ids only, covered by the `layer` index. */
export function garbageBatchQuery(layerId: string): {
  filter: Filter<{ _id: string; layer_id: string }>;
  options: FindOptions;
} {
  return { filter: { layer_id: layerId }, options: { projection: { _id: 1 }, limit: AREA_BATCH } };
}

export function garbageDeleteFilter(
  layerId: string,
  ids: readonly string[],
): Filter<{ _id: string; layer_id: string }> {
  return { layer_id: layerId, _id: { $in: [...ids] } };
}

/** The server's answer to `hello` that the store needs. */
export const HELLO_COMMAND = { hello: 1 } as const;

/** `items` in consecutive slices of at most `size`, for batched writes. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let at = 0; at < items.length; at += size) result.push(items.slice(at, at + size));
  return result;
}
