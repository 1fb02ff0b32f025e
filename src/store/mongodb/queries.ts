/**
 * Every filter, sort, projection, index and option the MongoDB store sends, as pure values and
 * functions, so tests can pin them without a server (test/store/mongodb-queries.test.ts).
 */
import {
  type AnyBulkWriteOperation,
  Binary,
  type DbOptions,
  type Filter,
  type FindOneAndDeleteOptions,
  type FindOptions,
  type IndexDescription,
  type MongoClientOptions,
  ReadConcern,
  type TransactionOptions,
  type UpdateFilter,
  type UpdateOptions,
  WriteConcern,
} from "mongodb";
import type { PreparedSearchArea } from "../../geo/intersects.js";
import type { BoundingBox, SourceGeometry } from "../../geo/types.js";
import {
  EQUALITY_FILTERS,
  LIST_FILTERS,
  type ListCursor,
  type ListFilter,
  type ListQuery,
  listFiltersOf,
  type TimeRange,
} from "../../model/list-query.js";
import { FIRST_BATCH } from "../page-collector.js";
import { spatialFilterOf } from "../spatial-filter.js";
import { type CoverGeometry, coverOf, sourceCoverOf } from "./cover.js";
import type {
  BoxDocument,
  ConflictPairDocument,
  GeometryChunkDocument,
  GuardDocument,
  ProtectedAreaDocument,
  SettingDocument,
  SourceBoxDocument,
  SourceDocument,
  SourceEventDocument,
} from "./documents.js";
import { conflictPairId, fromBoxDocument, sourceEventId } from "./documents.js";
import { LAYER_STATE_ID, type LayerStateDocument } from "./layer-state.js";

export const SOURCES = "sources";
export const GUARDS = "conflict_guards";
/** Every change to a source, append-only (docs/api.md §14; history.ts). */
export const SOURCE_EVENTS = "source_events";
/** The live conflicts, one document per pair (docs/api.md §14). */
export const CONFLICT_PAIRS = "conflict_pairs";
/** The box of every source ever created: the spatial index of the past (docs/api.md §14). */
export const SOURCE_BOXES = "source_boxes";
export const PROTECTED_AREAS = "protected_areas";
export const GEOMETRY_CHUNKS = "protected_area_geometry_chunks";
export const LAYERS = "protected_area_layers";
/** One document per store-wide setting (the ledger's secret). */
export const SETTINGS = "settings";

/** Name of the unique `(account_id, alt_id)` index; its duplicate-key errors mean "alt_id taken". */
export const ALT_ID_INDEX = "account_alt_id_unique";

/** Every write: acknowledged by a majority of the replica set, and journaled on them. */
export const WRITE_CONCERN = new WriteConcern("majority", undefined, true);
/** Reads outside transactions see only majority-committed data (nothing a failover rolls back). */
export const READ_CONCERN = new ReadConcern("majority");

/**
 * Options of every transaction (batch create, delete, and the read-only ones: a source's
 * conflicts, a create's protected areas): a snapshot of
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
 * The kinds of list filters matched by equality on one document field (`anyOf` by `$in`, a union
 * of equalities): an index with that field in front of the list order serves them. `instant`
 * (active_at) is a range on two fields and `box` (bbox) a spatial predicate: neither has a field
 * an equality index could hold (the document's own `bbox` field is the source's box for the
 * conflict checks, not this filter).
 */
const servedByEquality = (filter: ListFilter) => filter.kind === "anyOf" || EQUALITY_FILTERS.includes(filter);

/** The production list filters matched by equality, as document fields, in the proto's order. */
const EQUALITY_FIELDS = listFiltersOf("production")
  .filter(servedByEquality)
  .map((filter) => filter.documentPath);

/**
 * The equality fields indexed per account: all but alt_id, which the unique `(account_id, alt_id)`
 * index serves (at most one match, nothing to sort). Across accounts alt_id gets an index like
 * the others.
 */
const ACCOUNT_FIELDS = EQUALITY_FIELDS.filter((field) => field !== "alt_id");

/**
 * Indexes of `sources`, created at start (createIndexes is a no-op for identical ones). Every
 * equality list filter has an index with that filter's equality first and then the list order,
 * once with `account_id` in front (one account) and once without (admins across accounts), so
 * MongoDB walks the matches in `(created_at, _id)` order and stops at `limit` instead of sorting
 * (the Equality-Sort-Range rule). With several filters the planner picks one of these and checks
 * the others on the way. `attribute_type` is an array (a multikey index); a list asking for any
 * of several values merges the per-value scans in order (SORT_MERGE). `conflict` is a boolean:
 * its index pays off for `conflict=true` (the few flagged sources); `conflict=false` walks it
 * like the account's own index.
 *
 * Not indexed: `active_at` (a range on start_at and end_at, checked on the way: two ranges
 * cannot both bound one ordered scan) and the keyset cursor (a range on created_at, which every
 * index here holds right after its equalities, so it bounds the scan itself). The `bbox` and
 * `intersects` searches use the 2dsphere index on `cover` (listPlan).
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
  ...ACCOUNT_FIELDS.map(
    (field): IndexDescription => ({
      key: { account_id: 1, [field]: 1, created_at: 1, _id: 1 },
      name: `account_${field}_created`,
    }),
  ),
  { key: { created_at: 1, _id: 1 }, name: "created" },
  ...EQUALITY_FIELDS.map(
    (field): IndexDescription => ({
      key: { [field]: 1, created_at: 1, _id: 1 },
      name: `${field}_created`,
    }),
  ),
];

/**
 * Indexes of `source_events`. `source_seq` makes `(source_id, seq)` unique (a backstop: the
 * transactions number events from the source document's `event_seq`, history.ts) and serves a
 * source's history in seq order, account scoping checked on the way (all events of a source carry
 * its account), and the as_of reads of given sources. `_id` is `<source_id>:<seq>` already; the
 * index keeps the contract's key explicit and the query plain. `account_type_at` and `type_at`
 * walk the `created` events in list order for an as_of list (equality first, then the order, whose
 * first key also bounds the instant: Equality-Sort-Range).
 */
export const SOURCE_EVENT_INDEXES: IndexDescription[] = [
  { key: { source_id: 1, seq: 1 }, name: "source_seq", unique: true },
  // The ledger as it stood at an instant (as_of): `created` events in list order (their `at` is
  // the record's created_at), in one account and across accounts (asOfCreatedFilter).
  { key: { account_id: 1, type: 1, at: 1, source_id: 1 }, name: "account_type_at" },
  { key: { type: 1, at: 1, source_id: 1 }, name: "type_at" },
];

/**
 * Indexes of `source_boxes` (SourceBoxDocument): its 2dsphere index on `cover` finds the sources
 * whose box meets an as_of list's area, as `cover_2dsphere` does for live ones; `account_at` and
 * `at` walk them in list order (an area meeting most of the ledger), in one account or any. The
 * planner picks between them, as for live lists (listPlan).
 */
export const SOURCE_BOX_INDEXES: IndexDescription[] = [
  { key: { cover: "2dsphere" }, name: "cover_2dsphere" },
  { key: { account_id: 1, at: 1, _id: 1 }, name: "account_at" },
  { key: { at: 1, _id: 1 }, name: "at" },
];

/**
 * Indexes of `conflict_pairs`: a pair is stored once, so a source's pairs are found from either
 * side, `{$or: [{a: id}, {b: id}]}`, each clause an equality on the prefix of one index. Then
 * that side's event seq: a page of a source's conflicts is one range of each (pairsPageQuery).
 * The other side last lets the delete's reads of pair keys be covered by the indexes. `_id`
 * (`<a>|<b>`) keeps one document per pair. (Earlier versions made `a_b` and `b_a`, which nothing
 * reads any more: docs/mongodb.md says how to drop them.)
 */
export const CONFLICT_PAIR_INDEXES: IndexDescription[] = [
  { key: { a: 1, a_event: 1, b: 1 }, name: "a_event_b" },
  { key: { b: 1, b_event: 1, a: 1 }, name: "b_event_a" },
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

/** What events and pairs name of a source, and the seq of its last event (history.ts). */
export const EVENT_SUBJECT_PROJECTION = { _id: 1, account_id: 1, alt_id: 1, event_seq: 1, last_event_at: 1 } as const;

/** What a conflict decision reads of a stored source, and what its events and pairs name of it. */
export const SUBJECT_PROJECTION = {
  _id: 1,
  account_id: 1,
  alt_id: 1,
  event_seq: 1,
  last_event_at: 1,
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

/**
 * The filter of a list query, but for its spatial part (`bbox`, `intersects`: see listPlan): the
 * account, then each filter in LIST_FILTERS' order (absent ones left out), then the keyset cursor.
 */
export function listFilter(query: ListQuery): Filter<SourceDocument> {
  const filter: Record<string, unknown> = { ...scoped(query.accountId) };
  // The period tests: both name start_at and end_at, so two of them are joined by $and.
  const both: Filter<SourceDocument>[] = [];
  for (const { queryKey, kind, documentPath } of LIST_FILTERS) {
    const value = query[queryKey];
    if (value === undefined) continue;
    switch (kind) {
      case "text":
      case "year":
      case "bool":
      case "enum":
        filter[documentPath] = value;
        break;
      case "anyOf":
        // ANY of the values; a source holding several of them still comes back once.
        if (Array.isArray(value) && value.length > 0) filter[documentPath] = { $in: [...value] };
        break;
      case "instant":
        // The half-open period [start_at, end_at) contains the instant; times are BSON dates.
        both.push(activeAtFilter(value as number));
        break;
      case "range":
        both.push(activeDuringFilter(value as TimeRange));
        break;
      case "box":
        // Not an equality on the document's `bbox` (the source's own box): listPlan's spatial part.
        break;
      default: {
        const unknown: never = kind;
        throw new Error(`list filter ${documentPath}: no MongoDB query for kind ${String(unknown)}`);
      }
    }
  }
  if (both.length === 1) Object.assign(filter, both[0]);
  else if (both.length > 1) filter.$and = both;
  if (query.after !== undefined) Object.assign(filter, afterFilter(query.after.createdAt, query.after.id));
  return filter as Filter<SourceDocument>;
}

/** Sources whose period [start_at, end_at) meets the closed `range` (epoch ms; an end absent is open). */
export function activeDuringFilter(range: TimeRange): Filter<SourceDocument> {
  const filter: Record<string, unknown> = {};
  if (range.end !== undefined) filter.start_at = { $lte: new Date(range.end) };
  if (range.start !== undefined) filter.end_at = { $gt: new Date(range.start) };
  return filter as Filter<SourceDocument>;
}

/** Sources whose period [start_at, end_at) contains the instant `at` (epoch ms). */
export function activeAtFilter(at: number): Filter<SourceDocument> {
  return { start_at: { $lte: new Date(at) }, end_at: { $gt: new Date(at) } };
}

/**
 * Keyset paging: the records strictly after (createdAt, id) in (created_at, _id) order. The `$or`
 * alone says it exactly, but a top-level `$or` gives the planner no bounds for a single index
 * scan: walking `(…, created_at, _id)` it would start at the account's (or filter's) first entry
 * and discard every earlier record on the way, so a page would cost its depth. The redundant
 * `created_at: {$gte}` beside it is a plain range on the field every list index holds right after
 * its equalities (Equality-Sort-Range), so the scan starts at the cursor's time; the `$or` then
 * drops only the records of that same millisecond up to the cursor's id, and is checked on the
 * index keys (both fields are in every such index) before any document is fetched.
 */
export function afterFilter(createdAt: number, id: string): Filter<SourceDocument> {
  const at = new Date(createdAt);
  return { created_at: { $gte: at }, $or: [{ created_at: { $gt: at } }, { created_at: at, _id: { $gt: id } }] };
}

/** A list without a spatial part: the server filters, sorts and pages. */
export function listOptions(query: ListQuery): FindOptions {
  return { projection: RECORD_PROJECTION, sort: LIST_SORT, skip: query.offset, limit: query.limit };
}

/**
 * A list with a spatial part: the server narrows by cover and sorts, and code decides exactness
 * and pages (collectExact), so there is no skip or limit. When the planner takes the 2dsphere
 * index, the candidates are sorted in memory (a blocking SORT); `allowDiskUse` lets a large
 * candidate set spill instead of failing past the 100 MB sort limit (the default from MongoDB 6.0
 * on, pinned here for every version).
 */
export const SPATIAL_LIST_OPTIONS: FindOptions = {
  // With the source's own box: one that lies within every area matches without the exact test.
  projection: { ...RECORD_PROJECTION, bbox: 1 },
  sort: LIST_SORT,
  allowDiskUse: true,
};

/**
 * The 2dsphere candidates for a planar box: sources whose cover meets the cover of the box.
 *
 * Conservative: every source whose geometry meets `box` is a candidate. A stored cover is
 * `sourceCoverOf` its source (the cover of its planar box, or of the cells its geometry meets),
 * which, drawn with geodesic edges as 2dsphere draws it, contains every point of the geometry
 * (cover.ts), and `coverOf(box)` contains every point of `box`; so a point the geometry shares
 * with `box` lies in both covers, the covers intersect, and `$geoIntersects` (the index narrows,
 * the server then tests the covers exactly) returns the source. A degenerate box (a point's
 * envelope) gets a cover of the minimum width, like any narrow box.
 */
export function coverCandidatesFilter(box: BoundingBox): Filter<SourceDocument> {
  return { cover: { $geoIntersects: { $geometry: coverOf(box) } } };
}

/** How a list query runs: what the server is asked, and what code decides after it. */
export interface ListPlan {
  filter: Filter<SourceDocument>;
  options: FindOptions;
  /**
   * Empty: the server's answer is the page. Otherwise every area the exact geometry must
   * intersect; collectExact pages through the candidates with them.
   */
  exact: readonly PreparedSearchArea[];
}

/**
 * The plan of a list. Without `bbox` or `intersects`, listFilter and listOptions: the server does
 * everything. With them, listFilter plus the cover candidates of the narrowing box of the areas'
 * envelopes (spatial-filter.ts, coverCandidatesFilter), sorted in list order, and the prepared areas.
 *
 * Query plans: the planner tries, in a short trial run, (a) the 2dsphere index on `cover`, whose
 * candidates are fetched and then sorted in memory (a blocking SORT: nothing comes out before
 * the last candidate is in), against (b) an equality or `created` index walked in list order with
 * the cover and every other filter checked on each document, and keeps the more productive. A
 * small area has few candidates, which (a) fetches and sorts within the trial, so (a) wins and the
 * in-memory sort is of those few (acceptable, and the reason the spatial options allow disk use
 * for the rare large one). A large area (most of a continent) gives (b) a full batch first, and
 * (b) streams, so the read stops once collectExact has its page. No `hint`: forcing (a) would sort
 * every source for a world-sized box, forcing (b) would scan a whole account for a field-sized
 * one. A plan cached for one size is re-planned by MongoDB when it does far more work than when
 * it was cached.
 */
export function listPlan(query: ListQuery): ListPlan {
  const spatial = spatialFilterOf(query);
  if (spatial === null) return { filter: listFilter(query), options: listOptions(query), exact: [] };
  return {
    filter: { ...listFilter(query), ...coverCandidatesFilter(spatial.envelope) } as Filter<SourceDocument>,
    options: SPATIAL_LIST_OPTIONS,
    exact: spatial.areas,
  };
}

/** Where a stored source stands in list order. */
const cursorOfDocument = (doc: { _id: string; created_at: Date }): ListCursor => ({
  createdAt: doc.created_at.getTime(),
  id: doc._id,
});

/**
 * The page of a spatial list: reads `docs` (the candidates, in list order) one at a time, keeps
 * those whose exact geometry intersects every area, skips the first `offset` of those, and stops
 * as soon as it has `limit` (leaving the loop closes a driver cursor, so nothing more is read), or
 * once its exact tests have spent `exactTests` and another candidate follows (ListQuery.exactTests:
 * the next page resumes after the candidate that spent it).
 */
export async function collectExact<
  D extends { _id: string; created_at: Date; geometry: SourceGeometry; bbox?: BoxDocument },
>(
  docs: AsyncIterable<D>,
  areas: readonly Pick<PreparedSearchArea, "intersects" | "covers">[],
  page: Pick<ListQuery, "offset" | "limit" | "exactTests">,
): Promise<D[]> {
  const found: D[] = [];
  if (page.limit <= 0) return found;
  let skip = page.offset;
  let tested: D | null = null;
  for await (const doc of docs) {
    if (page.exactTests?.stopsBefore(tested, cursorOfDocument, skip)) break;
    tested = doc;
    const box = doc.bbox === undefined ? null : fromBoxDocument(doc.bbox);
    if (box === null || !areas.every((area) => area.covers(box))) {
      page.exactTests?.spendOn(doc.geometry);
      if (!areas.every((area) => area.intersects(doc.geometry))) continue;
    }
    if (skip > 0) {
      skip -= 1;
      continue;
    }
    found.push(doc);
    if (found.length >= page.limit) break;
  }
  return found;
}

export function getFilter(id: string, accountId: string | null): Filter<SourceDocument> {
  return { _id: id, ...scoped(accountId) };
}

export const GET_OPTIONS: FindOptions = { projection: RECORD_PROJECTION };

// --- deletes ---

export function deleteByIdFilter(id: string, accountId: string | null): Filter<SourceDocument> {
  return { _id: id, ...scoped(accountId) };
}

/**
 * A delete returns what its events name of the deleted source, the seq of its last event, and its
 * box (the guards of its place: docs/mongodb.md "Change times").
 */
export const DELETE_OPTIONS: FindOneAndDeleteOptions = { projection: { ...EVENT_SUBJECT_PROJECTION, bbox: 1 } };

export function deleteByAltIdFilter(altId: string, accountId: string): Filter<SourceDocument> {
  return { account_id: accountId, alt_id: altId };
}

// --- alt_id uniqueness ---

/** The stored sources of one account holding any of `altIds` (to name every taken one). */
export function takenAltIdsFilter(accountId: string, altIds: readonly string[]): Filter<SourceDocument> {
  return { account_id: accountId, alt_id: { $in: [...altIds] } };
}

export const TAKEN_ALT_IDS_OPTIONS: FindOptions = { projection: { _id: 0, alt_id: 1 } };

/**
 * After a duplicate key: the primary's own data (read concern "local"), where the unique index
 * found the clash, so a clashing write not yet majority-committed is seen too.
 */
export const CLASHING_ALT_IDS_OPTIONS: FindOptions = {
  projection: { _id: 0, alt_id: 1 },
  readConcern: new ReadConcern("local"),
  readPreference: "primary",
};

// --- a commit whose outcome is unknown ---

/**
 * A change's sources by id as majority-committed (the database's read concern), from the primary:
 * whether a create (any found) or a delete (none found) committed.
 */
export const COMMITTED_IDS_OPTIONS: FindOptions = { projection: { _id: 1 }, limit: 1, readPreference: "primary" };

/** The same as the primary holds them (read concern "local"): whether the commit applied there at all. */
export const APPLIED_IDS_OPTIONS: FindOptions = {
  projection: { _id: 1 },
  limit: 1,
  readConcern: new ReadConcern("local"),
  readPreference: "primary",
};

// --- conflict bookkeeping ---

/** `$geoIntersects` of the index's covers with the cover of one box. */
function intersectingCover(cover: CoverGeometry): Filter<SourceDocument> {
  return { cover: { $geoIntersects: { $geometry: cover } } };
}

/** A new source as its candidate query sees it: its box, and its geometry when the cover may follow its shape. */
export type CandidateShape = BoundingBox | { box: BoundingBox; geometry: SourceGeometry };

/** The cover a candidate query asks with: the source's own cover (sourceCoverOf) when its geometry is given. */
function candidateCover(shape: CandidateShape): CoverGeometry {
  return "geometry" in shape ? sourceCoverOf(shape.geometry, shape.box) : coverOf(shape);
}

/**
 * Candidates for a conflict with any of `shapes`, across every account: sources whose cover meets
 * the cover of one of the shapes (so at least every source whose geometry meets one of theirs:
 * both covers hold their geometries; the exact decision is the policy's). A shape given with its
 * geometry asks with the cover its document stores (`sourceCoverOf`: the box cover for a source up
 * to 1° on a side, the covers of the grid cells its geometry meets for a larger one, so a
 * jurisdiction does not pull in every source of its box); a bare box asks with the box cover. One
 * shape is one `$geoIntersects`; several are an `$or` of them, each clause served by the 2dsphere
 * index.
 */
export function conflictCandidatesFilter(shapes: readonly CandidateShape[]): Filter<SourceDocument> {
  if (shapes.length === 1) return intersectingCover(candidateCover(shapes[0]));
  return { $or: shapes.map((shape) => intersectingCover(candidateCover(shape))) };
}

export const CANDIDATE_OPTIONS: FindOptions = { projection: SUBJECT_PROJECTION };

/** How many boxes one candidate query asks about at most (a batch is split into such chunks). */
export const CANDIDATE_CHUNK = 100;

/** A stored source whose events a transaction appends (history.ts), and its flag when that changes. */
export interface EventSeqUpdate {
  id: string;
  /** The seq of the last event the transaction writes for it. */
  eventSeq: number;
  /** The instant of that event. */
  lastEventAt: number;
  /** The new flag; absent when the transaction leaves it as it is. */
  conflict?: boolean;
}

/**
 * Sets each source's `event_seq` to its last event's seq, and its flag where it changes: a create
 * sets `conflict: true` on every stored source it found a pair with; a delete sets `false` on a
 * counterpart left without pairs. Every one of these writes modifies its document (the seq grows),
 * so a concurrent transaction writing the same source collides (history.ts).
 */
export function eventSeqWrites(updates: readonly EventSeqUpdate[]): AnyBulkWriteOperation<SourceDocument>[] {
  return updates.map(({ id, eventSeq, lastEventAt, conflict }) => {
    const set = { event_seq: eventSeq, last_event_at: new Date(lastEventAt) };
    return {
      updateOne: { filter: { _id: id }, update: { $set: conflict === undefined ? set : { ...set, conflict } } },
    };
  });
}

/** In the given (id) order; the first failure aborts the transaction anyway. */
export const EVENT_SEQ_WRITE_OPTIONS = { ordered: true } as const;

// --- history and conflict pairs (docs/api.md §14) ---

/** Events and pairs are inserted in the order the transaction made them. */
export const HISTORY_INSERT_OPTIONS = { ordered: true } as const;

/** A source's events, in its account or (admins, `null`) any; served by `source_seq`. */
export function historyFilter(id: string, accountId: string | null): Filter<SourceEventDocument> {
  return accountId === null ? { source_id: id } : { source_id: id, account_id: accountId };
}

/** Oldest first; everything but the `_id` (source and seq say it). */
export const HISTORY_OPTIONS: FindOptions = { sort: { seq: 1 }, projection: { _id: 0 } };

/** A page of a source's events: those after `afterSeq`, read along `source_seq` from that seq on. */
export function historyPageFilter(id: string, accountId: string | null, afterSeq: number): Filter<SourceEventDocument> {
  return { ...historyFilter(id, accountId), seq: { $gt: afterSeq } };
}

/** At most `limit` events of a page, oldest first (HISTORY_OPTIONS). */
export function historyPageOptions(limit: number): FindOptions {
  return { ...HISTORY_OPTIONS, limit };
}

/** Whether a source has any event in scope (an empty page past the last one): its first's key only. */
export const HISTORY_EXISTS_OPTIONS: FindOptions = { projection: { _id: 1 } };

/** The pairs of the source `id`, from either side (one clause per index). */
export function pairsOfFilter(id: string): Filter<ConflictPairDocument> {
  return { $or: [{ a: id }, { b: id }] };
}

/** The pairs of any of the sources `ids`, from either side. */
export function pairsOfAnyFilter(ids: readonly string[]): Filter<ConflictPairDocument> {
  return { $or: [{ a: { $in: [...ids] } }, { b: { $in: [...ids] } }] };
}

/** Only the two sides: what a delete needs of pairs (both in each index, so the reads are covered). */
export const PAIR_KEYS_OPTIONS: FindOptions = { projection: { _id: 0, a: 1, b: 1 } };

/** What a source's conflicts show of its pairs. */
export const PAIR_OPTIONS: FindOptions = {
  projection: { _id: 0, a: 1, b: 1, measure: 1, detected_at: 1, a_event: 1, b_event: 1 },
};

/** The sides of a pair: the field naming the source, and the field of its event seq. */
export const PAIR_SIDES = [
  { source: "a", event: "a_event" },
  { source: "b", event: "b_event" },
] as const;

/**
 * The pairs where `id` is one side, in the order of that side's event seqs, from after `afterSeq`
 * (0: from the first), at most `limit`: one range of the side's index. A source's page of
 * conflicts is the first `limit` of both sides' pages merged by their event seqs.
 */
export function pairsPageQuery(
  id: string,
  side: (typeof PAIR_SIDES)[number],
  page: { afterSeq: number; limit?: number },
): { filter: Filter<ConflictPairDocument>; options: FindOptions } {
  const filter: Filter<ConflictPairDocument> =
    page.afterSeq > 0 ? { [side.source]: id, [side.event]: { $gt: page.afterSeq } } : { [side.source]: id };
  const options: FindOptions = { ...PAIR_OPTIONS, sort: { [side.event]: 1 } };
  if (page.limit !== undefined) options.limit = page.limit;
  return { filter, options };
}

// --- filling in the history of a ledger stored before the event log (history-fill.ts) ---

/** `settings` documents marking each step of the fill done (the embedded store's names). */
export const CREATED_EVENTS_FILLED = "history_created_events_filled";
export const CONFLICT_PAIRS_FILLED = "history_conflict_pairs_filled";

export function fillMarkerFilter(name: string): Filter<SettingDocument> {
  return { _id: name };
}

/** Marks a step done: inserted once, never changed (`$setOnInsert`). */
export function fillMarkerWrite(
  name: string,
  now: number,
): { filter: Filter<SettingDocument>; update: UpdateFilter<SettingDocument>; options: UpdateOptions } {
  return {
    filter: { _id: name },
    update: { $setOnInsert: { value: new Binary(Uint8Array.of(1)), created_at: new Date(now) } },
    options: { upsert: true },
  };
}

/** The marker of the fill of each stored pair's event seqs (fillPairEvents). */
export const PAIR_EVENTS_FILLED = "history_conflict_pair_events_filled";
/** `conflict_set` events read at a time by that fill. */
export const PAIR_EVENTS_CHUNK = 1_000;

/**
 * The next `conflict_set` events by `_id` from a keyset cursor: one pass along the `_id` index
 * over the event log, whatever its size. What names the pair and the seq only.
 */
export function conflictSetEventsQuery(after: string | undefined): {
  filter: Filter<SourceEventDocument>;
  options: FindOptions;
} {
  const filter: Filter<SourceEventDocument> = { type: "conflict_set" };
  if (after !== undefined) filter._id = { $gt: after };
  return {
    filter,
    // Along `_id` even where `type_at` looks cheaper: its order would need a sort of every
    // conflict_set event left, once a chunk.
    options: {
      sort: { _id: 1 },
      hint: { _id: 1 },
      limit: PAIR_EVENTS_CHUNK,
      projection: { _id: 1, source_id: 1, seq: 1, "counterpart.id": 1 },
    },
  };
}

/**
 * The seq of `source`'s `conflict_set` event naming `counterpart`, set on its side of their pair,
 * whichever side it is (the pair's `_id` names its `a` first; the write for the other order matches
 * nothing). `$max`: the same value again changes nothing, so fillers running at once agree.
 */
export function pairEventWrites(
  source: string,
  counterpart: string,
  seq: number,
): AnyBulkWriteOperation<ConflictPairDocument>[] {
  return [
    { updateOne: { filter: { _id: conflictPairId(source, counterpart) }, update: { $max: { a_event: seq } } } },
    { updateOne: { filter: { _id: conflictPairId(counterpart, source) }, update: { $max: { b_event: seq } } } },
  ];
}

/** A pair still without a seq on a side once every event was read: one, its key only. */
export const UNSEQUENCED_PAIR_QUERY: { filter: Filter<ConflictPairDocument>; options: FindOptions } = {
  filter: { $or: [{ a_event: { $exists: false } }, { b_event: { $exists: false } }] },
  options: { projection: { _id: 1 } },
};

/** Sources a `created` event is filled in for at a time, and flags checked at a time. */
export const LEGACY_CHUNK = 500;
/** Sources whose stored pairs are filled in per transaction (each measured against its neighbours). */
export const PAIR_FILL_CHUNK = 50;

/** The marker of the fill of `source_boxes` from the `created` events written before it (fillSourceBoxes). */
export const SOURCE_BOXES_FILLED = "history_source_boxes_filled";
/**
 * `created` events read at a time by that fill: each carries its record, geometry included (up to
 * a few MB), and a large one gets a cell cover computed, so a chunk stays small.
 */
export const BOX_FILL_CHUNK = 32;

/**
 * The next `created` events by `_id` from a keyset cursor: one pass along the `_id` index over the
 * event log, whatever its size. The record's key, account, created_at and geometry only.
 */
export function createdEventsWalk(after: string | undefined): {
  filter: Filter<SourceEventDocument>;
  options: FindOptions;
} {
  return {
    filter: after === undefined ? { type: "created" } : { _id: { $gt: after }, type: "created" },
    // Along `_id`, as conflictSetEventsQuery: `type_at`'s order would need a sort of every created
    // event left, once a chunk.
    options: {
      sort: { _id: 1 },
      hint: { _id: 1 },
      limit: BOX_FILL_CHUNK,
      projection: {
        _id: 1,
        "record._id": 1,
        "record.account_id": 1,
        "record.created_at": 1,
        "record.geometry": 1,
      },
    },
  };
}

/**
 * Writes boxes that are not there yet and leaves those that are as they are (`$setOnInsert`): a
 * create of this version wrote its own, and processes filling at once write each box once.
 */
export function sourceBoxInserts(boxes: readonly SourceBoxDocument[]): AnyBulkWriteOperation<SourceBoxDocument>[] {
  return boxes.map(({ _id, ...box }) => ({
    updateOne: { filter: { _id }, update: { $setOnInsert: box }, upsert: true },
  }));
}

/**
 * The next sources written before the event log (no `event_seq`), by `_id` from a keyset cursor:
 * one walk of the `_id` index over the collection, ids only.
 */
export function legacySourcesQuery(after?: string): { filter: Filter<SourceDocument>; options: FindOptions } {
  return {
    filter:
      after === undefined ? { event_seq: { $exists: false } } : { _id: { $gt: after }, event_seq: { $exists: false } },
    options: { sort: { _id: 1 }, limit: LEGACY_CHUNK, projection: { _id: 1 } },
  };
}

/** Of the sources `ids`, those still without `event_seq` (re-read inside the fill's transaction). */
export function unnumberedFilter(ids: readonly string[]): Filter<SourceDocument> {
  return { _id: { $in: [...ids] }, event_seq: { $exists: false } };
}

/** The record a filled-in `created` event keeps: the record fields as stored. */
export const LEGACY_RECORD_OPTIONS: FindOptions = { projection: RECORD_PROJECTION };

/** Their `created` event is seq 1. */
export function numberLegacyUpdate(ids: readonly string[]): {
  filter: Filter<SourceDocument>;
  update: UpdateFilter<SourceDocument>;
} {
  return { filter: unnumberedFilter(ids), update: { $set: { event_seq: 1 } } };
}

/** What the pair fill reads of a source: a conflict subject, its creation, what its events name. */
export const FILL_SUBJECT_PROJECTION = { ...SUBJECT_PROJECTION, created_at: 1, created_by: 1 } as const;

/** The next sources of the pair fill, in list order from a keyset cursor (the `created` index). */
export function pairFillQuery(after?: { createdAt: number; id: string }): {
  filter: Filter<SourceDocument>;
  options: FindOptions;
} {
  return {
    filter: after === undefined ? {} : afterFilter(after.createdAt, after.id),
    options: { sort: LIST_SORT, limit: PAIR_FILL_CHUNK, projection: FILL_SUBJECT_PROJECTION },
  };
}

/** A source's candidates (conflictCandidatesFilter) as the pair fill reads them. */
export const FILL_CANDIDATE_OPTIONS: FindOptions = { projection: FILL_SUBJECT_PROJECTION };

/** The flag pass: every source by `_id`, from a keyset cursor, its flag only. */
export function flagFillFilter(after?: string): Filter<SourceDocument> {
  return after === undefined ? {} : { _id: { $gt: after } };
}

export const FLAG_FILL_OPTIONS: FindOptions = {
  sort: { _id: 1 },
  limit: LEGACY_CHUNK,
  projection: { _id: 1, conflict: 1 },
};

/** Sets the flag of the sources `ids`. */
export function setFlagsUpdate(
  ids: readonly string[],
  conflict: boolean,
): { filter: Filter<SourceDocument>; update: UpdateFilter<SourceDocument> } {
  return { filter: { _id: { $in: [...ids] } }, update: { $set: { conflict } } };
}

// --- the ledger at an instant (as_of, docs/api.md §14) ---

/** `created` events an as_of list reads at most at a time. */
export const AS_OF_CHUNK = 500;
/** …and at least, in its first read. */
export const AS_OF_FIRST_CHUNK = 16;

/**
 * How many `created` events the `round`-th read (from 0) of an as_of list asks for: first what
 * the page would take if every source were live then and matched (at least AS_OF_FIRST_CHUNK),
 * then twice as many each time, up to AS_OF_CHUNK (each carries its record, geometry included).
 * A spatial list may stop after a few large candidates (ListQuery.exactTests): its first read
 * asks for FIRST_BATCH, so a read does not fetch hundreds of records it leaves.
 */
export function asOfChunkSize(offset: number, limit: number, round: number, spatial = false): number {
  const first = spatial ? FIRST_BATCH : Math.max(offset + limit, AS_OF_FIRST_CHUNK);
  return Math.min(AS_OF_CHUNK, first * 2 ** Math.min(round, 10));
}

/**
 * The `created` events of the sources an as_of list may show, by the instant `asOf`: in one
 * account (or any, `null`), after the keyset cursor, and of one source when the list asks for an
 * id. Their `at` is the record's created_at, so `(at, source_id)` is the list order.
 */
export function asOfCreatedFilter(
  asOf: number,
  accountId: string | null,
  after?: { createdAt: number; id: string },
  id?: string,
): Filter<SourceEventDocument> {
  const filter: Record<string, unknown> = {
    ...(accountId === null ? {} : { account_id: accountId }),
    type: "created",
    ...createdByThen(asOf, after, "source_id"),
  };
  if (id !== undefined) filter.source_id = id;
  return filter as Filter<SourceEventDocument>;
}

/**
 * Created by the instant `asOf` and after the keyset cursor in list order `(at, <idKey>)`: a range
 * on `at` for the index to bound, and the exact `$or`.
 */
function createdByThen(
  asOf: number,
  after: { createdAt: number; id: string } | undefined,
  idKey: "source_id" | "_id",
): Record<string, unknown> {
  if (after === undefined) return { at: { $lte: new Date(asOf) } };
  const at = new Date(after.createdAt);
  return { at: { $gte: at, $lte: new Date(asOf) }, $or: [{ at: { $gt: at } }, { at, [idKey]: { $gt: after.id } }] };
}

/** What an as_of list reads of a `created` event: the source and the record as created. */
const CREATED_EVENT_PROJECTION = { _id: 0, source_id: 1, at: 1, record: 1 } as const;

/** In list order, `limit` at a time (asOfChunkSize): the source and the record as created. */
export function asOfCreatedOptions(limit: number): FindOptions {
  return { sort: { at: 1, source_id: 1 }, projection: CREATED_EVENT_PROJECTION, limit };
}

/**
 * The boxes of the sources an as_of list within an area may show (source_boxes): created by the
 * instant `asOf` (their `at` is the created_at, so `(at, _id)` is the list order), in one account
 * or any, after the keyset cursor, of one source when the list asks for an id, whose cover meets
 * the cover of `envelope` (every source whose geometry meets the envelope: coverCandidatesFilter).
 * Those deleted by then are left out in code.
 */
export function asOfBoxesFilter(
  asOf: number,
  accountId: string | null,
  envelope: BoundingBox,
  after?: { createdAt: number; id: string },
  id?: string,
): Filter<SourceBoxDocument> {
  const filter: Record<string, unknown> = {
    ...(accountId === null ? {} : { account_id: accountId }),
    ...createdByThen(asOf, after, "_id"),
  };
  if (id !== undefined) filter._id = id;
  filter.cover = { $geoIntersects: { $geometry: coverOf(envelope) } };
  return filter as Filter<SourceBoxDocument>;
}

/** In list order, `limit` at a time (asOfChunkSize): the keys and the box, no cover. */
export function asOfBoxesOptions(limit: number): FindOptions {
  return { sort: { at: 1, _id: 1 }, projection: { _id: 1, at: 1, bbox: 1 }, limit, allowDiskUse: true };
}

/** The `created` events (each a source's first: seq 1, by `_id`) of the sources `ids`. */
export function createdEventsFilter(ids: readonly string[]): Filter<SourceEventDocument> {
  return { _id: { $in: ids.map((id) => sourceEventId(id, 1)) } };
}

/** The source and the record as created, as asOfCreatedOptions reads them. */
export const CREATED_EVENTS_OPTIONS: FindOptions = { projection: CREATED_EVENT_PROJECTION };

/** The event types after `created` that decide a source's state at an instant. */
export const AS_OF_CHANGE_TYPES = ["deleted", "conflict_set", "conflict_cleared"] as const;

/**
 * What happened to the sources `ids` by the instant `asOf`: deleted then, and the conflict events
 * that say their flags (more `conflict_set` than `conflict_cleared`: a pair sets once and clears at
 * most once on each side). Served by `source_seq`.
 */
export function asOfChangesFilter(ids: readonly string[], asOf: number): Filter<SourceEventDocument> {
  return { source_id: { $in: [...ids] }, type: { $in: [...AS_OF_CHANGE_TYPES] }, at: { $lte: new Date(asOf) } };
}

export const AS_OF_CHANGES_OPTIONS: FindOptions = { projection: { _id: 0, source_id: 1, type: 1 } };

/** One source's events by the instant `asOf`, in its account or any (getAsOf), along `source_seq`. */
export function asOfHistoryFilter(id: string, accountId: string | null, asOf: number): Filter<SourceEventDocument> {
  return { ...historyFilter(id, accountId), at: { $lte: new Date(asOf) } };
}

export const AS_OF_HISTORY_OPTIONS: FindOptions = { sort: { seq: 1 }, projection: { _id: 0, type: 1, record: 1 } };

/** The stored sources `ids` (counterparts of pairs). */
export function sourcesByIdFilter(ids: readonly string[]): Filter<SourceDocument> {
  return { _id: { $in: [...ids] } };
}

/** A counterpart as a delete's events name it, with its last seq. */
export const EVENT_SUBJECT_OPTIONS: FindOptions = { projection: EVENT_SUBJECT_PROJECTION };

/** A counterpart as a source's conflicts name it. */
export const COUNTERPART_OPTIONS: FindOptions = { projection: { _id: 1, alt_id: 1, account_id: 1 } };

/** Whether a source is live in scope (getFilter): its id only. */
export const LIVE_SOURCE_OPTIONS: FindOptions = { projection: { _id: 1 } };

/**
 * Upserts that modify every guard document of `cellIds` (guards.ts), so concurrent writers collide,
 * and keep the instant of the change they guard when it is the latest.
 */
export function guardWrites(cellIds: readonly string[], changedAt: Date): AnyBulkWriteOperation<GuardDocument>[] {
  return cellIds.map((id) => ({
    updateOne: {
      filter: { _id: id },
      update: { $inc: { writes: 1 }, $max: { last_change_at: changedAt } },
      upsert: true,
    },
  }));
}

/** The guard documents of `cellIds`, to read the instant of the last change each guarded. */
export function guardsFilter(cellIds: readonly string[]): Filter<GuardDocument> {
  return { _id: { $in: [...cellIds] } };
}

/** A guard's last change instant only. */
export const GUARD_TIMES_OPTIONS: FindOptions = { projection: { _id: 0, last_change_at: 1 } };

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
 * Candidates for the `unep_overlap` of sources `shapes`: the areas of layer `layerId` whose cover
 * meets the cover of one of the shapes, asked with the same cover as the conflict candidates (a
 * large source's geometry cells, not its whole box: a jurisdiction does not pull in every area of
 * its latitude band), so at least every area whose box meets one of them; the policy decides on
 * the exact geometry. Several shapes are an `$or` with the layer in each clause, so each clause is
 * one scan of the `layer_cover_2dsphere` index.
 */
export function protectedAreaCandidatesFilter(
  layerId: string,
  shapes: readonly CandidateShape[],
): Filter<ProtectedAreaDocument> {
  if (shapes.length === 1) return areaIntersectingCover(layerId, candidateCover(shapes[0]));
  return { $or: shapes.map((shape) => areaIntersectingCover(layerId, candidateCover(shape))) };
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

// --- settings ---

/** `_id` of the ledger's secret in SETTINGS. */
export const LEDGER_SECRET_ID = "ledger_secret";
/** Bytes of the ledger's secret. */
export const LEDGER_SECRET_BYTES = 32;

export const LEDGER_SECRET_FILTER: Filter<SettingDocument> = { _id: LEDGER_SECRET_ID };

/**
 * Stores `bytes` as the ledger's secret unless one is stored: `$setOnInsert` writes only when the
 * upsert inserts, so of several processes asking at once the first insert wins and every other
 * write changes nothing (or collides on `_id`, which the store treats the same), and all of them
 * then read the one value.
 */
export function ledgerSecretWrite(
  bytes: Uint8Array,
  now: number,
): { filter: Filter<SettingDocument>; update: UpdateFilter<SettingDocument>; options: UpdateOptions } {
  return {
    filter: { _id: LEDGER_SECRET_ID },
    update: { $setOnInsert: { value: new Binary(bytes), created_at: new Date(now) } },
    options: { upsert: true },
  };
}

/**
 * Reading the secret back: majority-committed only, from the primary, so a value a failover could
 * roll back is never handed out (the database default too; pinned here because keys hang on it).
 */
export const LEDGER_SECRET_READ_OPTIONS: FindOptions = {
  projection: { _id: 0, value: 1 },
  readConcern: READ_CONCERN,
  readPreference: "primary",
};

/** The server's answer to `hello` that the store needs. */
export const HELLO_COMMAND = { hello: 1 } as const;

/** `items` in consecutive slices of at most `size`, for batched writes. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let at = 0; at < items.length; at += size) result.push(items.slice(at, at + size));
  return result;
}
