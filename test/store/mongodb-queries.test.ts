/**
 * Pins what the MongoDB store sends, without a server: the filter documents, sort, projection and
 * paging of every list filter combination (one account and admin), the active_at range, the
 * keyset cursor, the spatial lists (cover narrowing, the exact filtering loop), get, delete by id
 * and by alt_id, the conflict candidate queries, the guard writes, the event log's and the
 * conflict pairs' documents, filters, updates and options (docs/api.md §14), the index
 * specifications (and that an index serves every combination in list order), the ledger secret's
 * upsert and read,
 * write/read concerns, transaction and client options. The store calls these functions and constants (src/store/mongodb/queries.ts); the
 * failure tests (mongodb-failures.test.ts) check it passes them through.
 */
import { Binary, type MongoClient, MongoNetworkError, MongoServerError, WriteConcern } from "mongodb";
import { describe, expect, it } from "vitest";
import { boxesIntersect } from "../../src/geo/bbox.js";
import { prepareSearchArea } from "../../src/geo/intersects.js";
import { countPositions } from "../../src/geo/parts.js";
import type { BoundingBox, PolygonGeometry, SourceGeometry } from "../../src/geo/types.js";
import { ExactTestAllowance, POSITIONS_PER_TEST } from "../../src/model/exact-tests.js";
import type { ConflictMeasure } from "../../src/model/history.js";
import { type ListQuery, listFiltersOf } from "../../src/model/list-query.js";
import { cellCoverRectangles, coverOf, sourceCoverOf } from "../../src/store/mongodb/cover.js";
import {
  type ConflictPairDocument,
  conflictPairId,
  fromEventDocument,
  fromMeasureDocument,
  fromPairDocument,
  recordDocumentOf,
  type SourceEventDocument,
  sourceBoxOf,
  sourceBoxOfRecord,
  sourceEventId,
  toDocument,
  toMeasureDocument,
} from "../../src/store/mongodb/documents.js";
import { guardCellIds, guardCellsOf } from "../../src/store/mongodb/guards.js";
import { HistoryWrites } from "../../src/store/mongodb/history.js";
import { emptyLayerState, LAYER_STATE_ID } from "../../src/store/mongodb/layer-state.js";
import {
  ACTIVE_LAYER_OPTIONS,
  ALT_ID_INDEX,
  AREA_BATCH,
  AREA_GEOMETRY_OPTIONS,
  AREA_INSERT_OPTIONS,
  AS_OF_CHANGES_OPTIONS,
  AS_OF_CHUNK,
  AS_OF_FIRST_CHUNK,
  AS_OF_HISTORY_OPTIONS,
  activeAtFilter,
  activeDuringFilter,
  afterFilter,
  areaGeometriesFilter,
  asOfBoxesFilter,
  asOfBoxesOptions,
  asOfChangesFilter,
  asOfChunkSize,
  asOfCreatedFilter,
  asOfCreatedOptions,
  asOfHistoryFilter,
  BOX_FILL_CHUNK,
  CANDIDATE_CHUNK,
  CANDIDATE_OPTIONS,
  CONFLICT_PAIR_INDEXES,
  CONFLICT_PAIRS,
  CONFLICT_PAIRS_FILLED,
  COUNTERPART_OPTIONS,
  CREATED_EVENTS_FILLED,
  CREATED_EVENTS_OPTIONS,
  clientOptions,
  collectExact,
  conflictCandidatesFilter,
  conflictSetEventsQuery,
  coverCandidatesFilter,
  createdEventsFilter,
  createdEventsWalk,
  DB_OPTIONS,
  DELETE_OPTIONS,
  deleteByAltIdFilter,
  deleteByIdFilter,
  EVENT_SEQ_WRITE_OPTIONS,
  EVENT_SUBJECT_OPTIONS,
  EVENT_SUBJECT_PROJECTION,
  eventSeqWrites,
  FILL_CANDIDATE_OPTIONS,
  FLAG_FILL_OPTIONS,
  fillMarkerFilter,
  fillMarkerWrite,
  flagFillFilter,
  GEOMETRY_CHUNK_INDEXES,
  GEOMETRY_CHUNK_OPTIONS,
  GEOMETRY_CHUNKS,
  GET_OPTIONS,
  GUARD_TIMES_OPTIONS,
  GUARD_WRITE_OPTIONS,
  garbageBatchQuery,
  garbageDeleteFilter,
  geometryChunksFilter,
  getFilter,
  guardsFilter,
  guardWrites,
  HELLO_COMMAND,
  HISTORY_EXISTS_OPTIONS,
  HISTORY_INSERT_OPTIONS,
  HISTORY_OPTIONS,
  historyFilter,
  historyPageFilter,
  historyPageOptions,
  LAYER_STATE_FILTER,
  LAYERS,
  LEDGER_SECRET_BYTES,
  LEDGER_SECRET_FILTER,
  LEDGER_SECRET_ID,
  LEDGER_SECRET_READ_OPTIONS,
  LEGACY_CHUNK,
  LEGACY_RECORD_OPTIONS,
  LIST_SORT,
  LIVE_SOURCE_OPTIONS,
  layerStateWrite,
  ledgerSecretWrite,
  legacySourcesQuery,
  listFilter,
  listOptions,
  listPlan,
  numberLegacyUpdate,
  PAIR_EVENTS_CHUNK,
  PAIR_EVENTS_FILLED,
  PAIR_FILL_CHUNK,
  PAIR_KEYS_OPTIONS,
  PAIR_OPTIONS,
  PAIR_SIDES,
  PROTECTED_AREA_CANDIDATE_OPTIONS,
  PROTECTED_AREA_INDEXES,
  PROTECTED_AREAS,
  pairEventWrites,
  pairFillQuery,
  pairsOfAnyFilter,
  pairsOfFilter,
  pairsPageQuery,
  protectedAreaCandidatesFilter,
  READ_CONCERN,
  RECORD_PROJECTION,
  SETTINGS,
  SOURCE_BOX_INDEXES,
  SOURCE_BOXES_FILLED,
  SOURCE_EVENT_INDEXES,
  SOURCE_EVENTS,
  SOURCE_INDEXES,
  SPATIAL_LIST_OPTIONS,
  SUBJECT_PROJECTION,
  setFlagsUpdate,
  sourceBoxInserts,
  sourcesByIdFilter,
  TAKEN_ALT_IDS_OPTIONS,
  TRANSACTION_OPTIONS,
  takenAltIdsFilter,
  UNSEQUENCED_PAIR_QUERY,
  unnumberedFilter,
  uriOptionNames,
  WRITE_CONCERN,
} from "../../src/store/mongodb/queries.js";
import { MongoSourceStore } from "../../src/store/mongodb/store.js";
import { StoreUnavailableError } from "../../src/store/port.js";
import { narrowingBox } from "../../src/store/spatial-filter.js";
import { makeRecord } from "../contract/fixtures.js";

const RECORD_FIELDS = {
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
};

const EVENT_SUBJECT_FIELDS = { _id: 1, account_id: 1, alt_id: 1, event_seq: 1, last_event_at: 1 };

const SUBJECT_FIELDS = {
  ...EVENT_SUBJECT_FIELDS,
  geometry: 1,
  bbox: 1,
  area_m2: 1,
  start_at: 1,
  end_at: 1,
  attribute_type: 1,
  conflict: 1,
};

function query(accountId: string | null, filters: Partial<ListQuery> = {}): ListQuery {
  return { accountId, attributeTypes: [], limit: 100, offset: 0, ...filters };
}

/** Each list filter: how the query sets it, and the exact clause it must become. */
const FILTERS: { name: string; set: Partial<ListQuery>; clause: Record<string, unknown> }[] = [
  { name: "id", set: { id: "src_01J0000000000000000000000A" }, clause: { _id: "src_01J0000000000000000000000A" } },
  { name: "altId", set: { altId: "field-7" }, clause: { alt_id: "field-7" } },
  { name: "methodology", set: { methodology: "VM0042" }, clause: { methodology: "VM0042" } },
  { name: "stewardId", set: { stewardId: "S1" }, clause: { steward_id: "S1" } },
  { name: "projectId", set: { projectId: "P1" }, clause: { project_id: "P1" } },
  { name: "outcomeReportingYear", set: { outcomeReportingYear: 2024 }, clause: { outcome_reporting_year: 2024 } },
  { name: "sourceType", set: { sourceType: "FIELD" }, clause: { source_type: "FIELD" } },
  { name: "geometrySource", set: { geometrySource: "DERIVED" }, clause: { geometry_source: "DERIVED" } },
  {
    name: "attributeTypes",
    set: { attributeTypes: ["CARBON_REMOVAL", "BIODIVERSITY"] },
    clause: { attribute_type: { $in: ["CARBON_REMOVAL", "BIODIVERSITY"] } },
  },
  { name: "conflict", set: { conflict: true }, clause: { conflict: true } },
];

/** Every subset of FILTERS (2^10 = 1,024), by bit mask. */
function subsets(): number[] {
  return Array.from({ length: 1 << FILTERS.length }, (_, mask) => mask);
}

function combination(mask: number): { label: string; set: Partial<ListQuery>; clauses: Record<string, unknown> } {
  const chosen = FILTERS.filter((_, i) => mask & (1 << i));
  return {
    label: chosen.map((f) => f.name).join("+") || "none",
    set: Object.assign({}, ...chosen.map((f) => f.set)) as Partial<ListQuery>,
    clauses: Object.assign({}, ...chosen.map((f) => f.clause)) as Record<string, unknown>,
  };
}

/**
 * The index that serves `filter` best in (created_at, _id) order without a sort: `_id` or a unique
 * index on fields the filter fixes (at most one match, nothing to sort), else the index whose keys
 * are the most fields the filter fixes followed by created_at and _id (Equality-Sort-Range).
 */
function servingIndex(filter: Record<string, unknown>): { name: string; prefix: string[] } | null {
  const fixed = new Set(Object.keys(filter));
  if (fixed.has("_id")) return { name: "_id_", prefix: ["_id"] };
  let best: { name: string; prefix: string[] } | null = null;
  for (const index of SOURCE_INDEXES) {
    const keys = Object.keys(index.key as Record<string, unknown>);
    if (index.unique && keys.every((k) => fixed.has(k))) return { name: index.name as string, prefix: keys };
    const sortAt = keys.indexOf("created_at");
    if (sortAt < 0 || keys.slice(sortAt).join(",") !== "created_at,_id") continue;
    const prefix = keys.slice(0, sortAt);
    // Usable: every prefix field is fixed by the filter, and a scoped list starts with its account.
    if (!prefix.every((k) => fixed.has(k)) || (fixed.has("account_id") && prefix[0] !== "account_id")) continue;
    if (best === null || prefix.length > best.prefix.length) best = { name: index.name as string, prefix };
  }
  return best;
}

/** Two 2° × 2° squares on the equator, 16° apart: a "jurisdiction" whose box is 20° wide. */
const TWIN: SourceGeometry = {
  type: "MultiPolygon",
  coordinates: [
    [
      [
        [-10, -1],
        [-8, -1],
        [-8, 1],
        [-10, 1],
        [-10, -1],
      ],
    ],
    [
      [
        [8, -1],
        [10, -1],
        [10, 1],
        [8, 1],
        [8, -1],
      ],
    ],
  ],
};
const TWIN_BOX = { minX: -10, minY: -1, maxX: 10, maxY: 1 };

describe("list queries", () => {
  it("pins the filter of every combination of equality filters, for one account and for admins (2,048 cases)", () => {
    for (const mask of subsets()) {
      const { label, set, clauses } = combination(mask);
      expect(listFilter(query("acct_a", set)), `account, ${label}`).toStrictEqual({ account_id: "acct_a", ...clauses });
      expect(listFilter(query(null, set)), `admin, ${label}`).toStrictEqual(clauses);
    }
  });

  it("has an index narrowing every combination by one of its filters, in list order, for one account and for admins", () => {
    const unserved: string[] = [];
    for (const mask of subsets()) {
      const { label, set } = combination(mask);
      for (const accountId of ["acct_a", null]) {
        const filter = listFilter(query(accountId, set)) as Record<string, unknown>;
        const index = servingIndex(filter);
        const filters = Object.keys(filter).filter((k) => k !== "account_id");
        const narrows = index !== null && (filters.length === 0 || index.prefix.some((k) => filters.includes(k)));
        if (!narrows) unserved.push(`${accountId ?? "admin"}: ${label} (${index?.name ?? "no index"})`);
      }
    }
    expect(unserved).toEqual([]);
  });

  it("names the indexes the planner can use for single filters", () => {
    const name = (accountId: string | null, set: Partial<ListQuery> = {}) =>
      servingIndex(listFilter(query(accountId, set)) as Record<string, unknown>)?.name;
    expect(name("acct_a")).toBe("account_created");
    expect(name(null)).toBe("created");
    expect(name("acct_a", { stewardId: "S" })).toBe("account_steward_id_created");
    expect(name(null, { stewardId: "S" })).toBe("steward_id_created");
    expect(name("acct_a", { attributeTypes: ["CI_SCORE"] })).toBe("account_attribute_type_created");
    expect(name(null, { outcomeReportingYear: 2024 })).toBe("outcome_reporting_year_created");
    expect(name("acct_a", { altId: "x" })).toBe(ALT_ID_INDEX);
    expect(name(null, { altId: "x" })).toBe("alt_id_created");
    expect(name(null, { id: "src_x" })).toBe("_id_");
    expect(name("acct_a", { conflict: true })).toBe("account_conflict_created");
    expect(name(null, { conflict: false })).toBe("conflict_created");
    expect(name("acct_a", { conflict: true, altId: "x" })).toBe(ALT_ID_INDEX);
  });

  it("pins a full literal filter, its key order, and copies the attribute list", () => {
    const attributeTypes = ["WATER_QUALITY"];
    const at = Date.UTC(2024, 5, 1);
    const filter = listFilter(
      query("acct_a", {
        id: "src_x",
        altId: "a",
        methodology: "M",
        stewardId: "S",
        projectId: "P",
        outcomeReportingYear: 2025,
        sourceType: "SITE",
        geometrySource: "AUTHORITATIVE_GIS",
        attributeTypes,
        conflict: false,
        activeAt: at,
        bbox: { minX: 0, minY: 0, maxX: 1, maxY: 1 },
        after: { createdAt: at, id: "src_y" },
      }),
    );
    expect(filter).toStrictEqual({
      account_id: "acct_a",
      _id: "src_x",
      alt_id: "a",
      methodology: "M",
      steward_id: "S",
      project_id: "P",
      outcome_reporting_year: 2025,
      source_type: "SITE",
      geometry_source: "AUTHORITATIVE_GIS",
      attribute_type: { $in: ["WATER_QUALITY"] },
      conflict: false,
      start_at: { $lte: new Date(at) },
      end_at: { $gt: new Date(at) },
      created_at: { $gte: new Date(at) },
      $or: [{ created_at: { $gt: new Date(at) } }, { created_at: new Date(at), _id: { $gt: "src_y" } }],
    });
    // The account first, then the filters in the proto's order (LIST_FILTERS), then the cursor.
    // The bbox filter is no equality on the document's own `bbox` (listPlan's spatial part).
    expect(Object.keys(filter)).toEqual([
      "account_id",
      "methodology",
      "steward_id",
      "project_id",
      "outcome_reporting_year",
      "source_type",
      "attribute_type",
      "geometry_source",
      "_id",
      "alt_id",
      "conflict",
      "start_at",
      "end_at",
      "created_at",
      "$or",
    ]);
    attributeTypes.push("CI_SCORE");
    expect(filter.attribute_type).toStrictEqual({ $in: ["WATER_QUALITY"] });
  });

  it("leaves out an empty attribute list (no filter), and keeps 0 and empty-string values", () => {
    expect(listFilter(query("acct_a", { attributeTypes: [] }))).toStrictEqual({ account_id: "acct_a" });
    expect(listFilter(query(null, { methodology: "" }))).toStrictEqual({ methodology: "" });
  });

  it("pins sort, projection and paging", () => {
    expect(LIST_SORT).toStrictEqual({ created_at: 1, _id: 1 });
    expect(Object.keys(LIST_SORT)).toEqual(["created_at", "_id"]);
    expect(RECORD_PROJECTION).toStrictEqual(RECORD_FIELDS);
    expect(listOptions(query("acct_a", { limit: 25, offset: 50 }))).toStrictEqual({
      projection: RECORD_FIELDS,
      sort: { created_at: 1, _id: 1 },
      skip: 50,
      limit: 25,
    });
    expect(listOptions(query(null))).toStrictEqual({
      projection: RECORD_FIELDS,
      sort: { created_at: 1, _id: 1 },
      skip: 0,
      limit: 100,
    });
  });

  it("never projects the index-only fields", () => {
    for (const hidden of ["cover", "bbox", "area_m2"]) expect(RECORD_PROJECTION).not.toHaveProperty(hidden);
  });
});

describe("list filters beyond equality: conflict, alt_id, active_at, the keyset cursor", () => {
  const at = Date.UTC(2024, 5, 1, 12, 0, 0, 250);

  it("matches conflict by equality on the boolean, true and false, in one account and across accounts", () => {
    expect(listFilter(query("acct_a", { conflict: true }))).toStrictEqual({ account_id: "acct_a", conflict: true });
    expect(listFilter(query("acct_a", { conflict: false }))).toStrictEqual({ account_id: "acct_a", conflict: false });
    expect(listFilter(query(null, { conflict: true }))).toStrictEqual({ conflict: true });
    expect(listFilter(query(null, { conflict: false }))).toStrictEqual({ conflict: false });
  });

  it("offers alt_id in production and matches it by equality", () => {
    expect(listFiltersOf("production").map((f) => f.name)).toContain("alt_id");
    expect(listFilter(query("acct_a", { altId: "field-7" }))).toStrictEqual({
      account_id: "acct_a",
      alt_id: "field-7",
    });
    expect(listFilter(query(null, { altId: "field-7" }))).toStrictEqual({ alt_id: "field-7" });
  });

  it("turns active_at into the half-open period test on the stored BSON dates", () => {
    expect(activeAtFilter(at)).toStrictEqual({ start_at: { $lte: new Date(at) }, end_at: { $gt: new Date(at) } });
    const filter = listFilter(query("acct_a", { activeAt: at })) as Record<string, { $lte?: Date; $gt?: Date }>;
    expect(filter).toStrictEqual({
      account_id: "acct_a",
      start_at: { $lte: new Date(at) },
      end_at: { $gt: new Date(at) },
    });
    // Dates, like the documents (documents.ts), not numbers: BSON compares a number and a date as unequal types.
    expect(filter.start_at.$lte).toBeInstanceOf(Date);
    expect(filter.end_at.$gt).toBeInstanceOf(Date);
    expect(listFilter(query(null, { activeAt: 0 }))).toStrictEqual({
      start_at: { $lte: new Date(0) },
      end_at: { $gt: new Date(0) },
    });
  });

  it("turns active_during into the closed-range test, open ends left out, and joins it to active_at with $and", () => {
    const end = at + 86_400_000;
    expect(activeDuringFilter({ start: at, end })).toStrictEqual({
      start_at: { $lte: new Date(end) },
      end_at: { $gt: new Date(at) },
    });
    expect(activeDuringFilter({ end })).toStrictEqual({ start_at: { $lte: new Date(end) } });
    expect(activeDuringFilter({ start: at })).toStrictEqual({ end_at: { $gt: new Date(at) } });
    expect(activeDuringFilter({})).toStrictEqual({});
    expect(listFilter(query("acct_a", { activeDuring: { start: at } }))).toStrictEqual({
      account_id: "acct_a",
      end_at: { $gt: new Date(at) },
    });
    expect(listFilter(query("acct_a", { activeAt: at, activeDuring: { end } }))).toStrictEqual({
      account_id: "acct_a",
      $and: [
        { start_at: { $lte: new Date(at) }, end_at: { $gt: new Date(at) } },
        { start_at: { $lte: new Date(end) } },
      ],
    });
  });

  it("pins the keyset cursor: a range on created_at for the index bounds, and the exact $or", () => {
    expect(afterFilter(at, "src_01J")).toStrictEqual({
      created_at: { $gte: new Date(at) },
      $or: [{ created_at: { $gt: new Date(at) } }, { created_at: new Date(at), _id: { $gt: "src_01J" } }],
    });
    expect(
      listFilter(query("acct_a", { after: { createdAt: at, id: "src_01J" }, offset: 0, limit: 50 })),
    ).toStrictEqual({
      account_id: "acct_a",
      created_at: { $gte: new Date(at) },
      $or: [{ created_at: { $gt: new Date(at) } }, { created_at: new Date(at), _id: { $gt: "src_01J" } }],
    });
    // Combined with the other conditions by AND (plain keys); the id filter's `_id` stays apart from the cursor's.
    expect(
      listFilter(query(null, { id: "src_x", stewardId: "S", after: { createdAt: at, id: "src_w" } })),
    ).toStrictEqual({
      steward_id: "S",
      _id: "src_x",
      created_at: { $gte: new Date(at) },
      $or: [{ created_at: { $gt: new Date(at) } }, { created_at: new Date(at), _id: { $gt: "src_w" } }],
    });
  });

  it("keeps offset as a skip, also beside a cursor", () => {
    expect(listOptions(query("acct_a", { after: { createdAt: at, id: "src_w" }, limit: 10, offset: 3 }))).toStrictEqual(
      {
        projection: RECORD_FIELDS,
        sort: { created_at: 1, _id: 1 },
        skip: 3,
        limit: 10,
      },
    );
  });

  it("lets the range conditions (active_at, the cursor) leave every combination's serving index as it was", () => {
    const changed: string[] = [];
    for (const mask of subsets()) {
      const { label, set } = combination(mask);
      for (const accountId of ["acct_a", null]) {
        const plain = servingIndex(listFilter(query(accountId, set)) as Record<string, unknown>)?.name;
        const ranged = servingIndex(
          listFilter(query(accountId, { ...set, activeAt: at, after: { createdAt: at, id: "src_w" } })) as Record<
            string,
            unknown
          >,
        )?.name;
        if (plain !== ranged) changed.push(`${accountId ?? "admin"}: ${label}: ${plain} → ${ranged}`);
      }
    }
    expect(changed).toEqual([]);
  });
});

/** The box [x1, x2] × [y1, y2]. */
function box(x1: number, y1: number, x2: number, y2: number): BoundingBox {
  return { minX: x1, minY: y1, maxX: x2, maxY: y2 };
}

function polygon(...positions: [number, number][]): PolygonGeometry {
  return { type: "Polygon", coordinates: [[...positions, positions[0]]] };
}

/** An L along the west and south edges of [0, 2]²: its box meets [1, 2]², the geometry does not. */
const ELL = polygon([0, 0], [2, 0], [2, 0.5], [0.5, 0.5], [0.5, 2], [0, 2]);
const UPPER_RIGHT = box(1, 1, 2, 2);

/** Documents as the cursor would hand them out, counting what was pulled and whether the loop let go. */
function feed<D>(docs: readonly D[]): { iterable: AsyncIterable<D>; pulled: () => number; closed: () => boolean } {
  let pulled = 0;
  let closed = false;
  return {
    iterable: {
      async *[Symbol.asyncIterator]() {
        try {
          for (const doc of docs) {
            pulled += 1;
            yield doc;
          }
        } finally {
          closed = true;
        }
      },
    },
    pulled: () => pulled,
    closed: () => closed,
  };
}

describe("spatial lists (bbox, intersects)", () => {
  it("leaves a list without a spatial part to the server: listFilter, listOptions, nothing exact", () => {
    const q = query("acct_a", { methodology: "M", limit: 5, offset: 10 });
    expect(listPlan(q)).toStrictEqual({ filter: listFilter(q), options: listOptions(q), exact: [] });
  });

  it("narrows bbox with the cover of the box, sorted in list order, without skip or limit", () => {
    const bbox = box(10, 20, 10.5, 20.25);
    const plan = listPlan(query("acct_a", { bbox, limit: 5, offset: 10 }));
    expect(plan.filter).toStrictEqual({
      account_id: "acct_a",
      cover: { $geoIntersects: { $geometry: coverOf(bbox) } },
    });
    // With the source's own box, so one within the area matches without the exact test.
    expect(plan.options).toStrictEqual({
      projection: { ...RECORD_FIELDS, bbox: 1 },
      sort: { created_at: 1, _id: 1 },
      allowDiskUse: true,
    });
    expect(SPATIAL_LIST_OPTIONS).toStrictEqual(plan.options);
    expect(plan.exact).toHaveLength(1);
    expect(plan.exact[0].envelope).toStrictEqual(bbox);
    // Never the document's own `bbox` field (the source's box for the conflict checks).
    expect(Object.keys(plan.filter)).toEqual(["account_id", "cover"]);
  });

  it("pins the literal cover query of a small bbox: the padded box, counter-clockwise, closed", () => {
    const pad = 1e-7;
    expect(listPlan(query(null, { bbox: box(1, -1, 2, 1) })).filter).toStrictEqual({
      cover: {
        $geoIntersects: {
          $geometry: {
            type: "Polygon",
            coordinates: [
              [
                [1 - pad, -1 - pad],
                [2 + pad, -1 - pad],
                [2 + pad, 1 + pad],
                [1 - pad, 1 + pad],
                [1 - pad, -1 - pad],
              ],
            ],
          },
        },
      },
    });
    expect(coverCandidatesFilter(box(1, -1, 2, 1))).toStrictEqual(
      listPlan(query(null, { bbox: box(1, -1, 2, 1) })).filter,
    );
  });

  it("narrows a search area by its envelope: a point (a degenerate box), a polygon's bounding box", () => {
    const point = listPlan(query("acct_a", { intersects: { type: "Point", coordinates: [3, 4] } }));
    expect(point.filter).toStrictEqual({
      account_id: "acct_a",
      cover: { $geoIntersects: { $geometry: coverOf(box(3, 4, 3, 4)) } },
    });
    const area = listPlan(query(null, { intersects: polygon([0, 0], [4, 1], [1, 3]) }));
    expect(area.filter).toStrictEqual({ cover: { $geoIntersects: { $geometry: coverOf(box(0, 0, 4, 3)) } } });
    expect(area.exact).toHaveLength(1);
  });

  it("with bbox and intersects: narrows by the common box of both envelopes and requires both exactly", () => {
    const plan = listPlan(
      query("acct_a", { bbox: box(0, 0, 2, 2), intersects: polygon([1, 1], [3, 1], [3, 3], [1, 3]), conflict: true }),
    );
    expect(plan.filter).toStrictEqual({
      account_id: "acct_a",
      conflict: true,
      cover: { $geoIntersects: { $geometry: coverOf(box(1, 1, 2, 2)) } },
    });
    expect(plan.options).toStrictEqual(SPATIAL_LIST_OPTIONS);
    expect(plan.exact.map((a) => a.envelope)).toStrictEqual([box(0, 0, 2, 2), box(1, 1, 3, 3)]);
    // Meets the search area but not the bbox, and the other way round: neither passes both.
    const [inBoxOnly, inAreaOnly, inBoth] = [
      polygon([0, 0], [0.5, 0], [0.5, 0.5]),
      polygon([2.5, 2.5], [3, 2.5], [3, 3]),
      polygon([1.5, 1.5], [1.8, 1.5], [1.8, 1.8]),
    ];
    const passes = (g: SourceGeometry) => plan.exact.every((a) => a.intersects(g));
    expect([inBoxOnly, inAreaOnly, inBoth].map(passes)).toEqual([false, false, true]);
  });

  it("with envelopes that do not meet, still asks: a source can reach from one area to the other", () => {
    // A point east of the box: their envelopes share nothing, yet a long field meets both.
    const plan = listPlan(
      query("acct_a", { bbox: box(0, 0, 1, 1), intersects: { type: "Point", coordinates: [5, 0.5] } }),
    );
    expect(plan.filter).toStrictEqual({
      account_id: "acct_a",
      cover: { $geoIntersects: { $geometry: coverOf(box(5, 0.5, 5, 0.5)) } },
    });
    expect(plan.exact.every((a) => a.intersects(polygon([0, 0], [6, 0], [6, 1], [0, 1])))).toBe(true);
  });

  it("the narrowing box: the common box, else the smallest envelope", () => {
    expect(narrowingBox([box(0, 0, 2, 2)])).toStrictEqual(box(0, 0, 2, 2));
    expect(narrowingBox([box(0, 0, 2, 2), box(1, 1, 3, 3)])).toStrictEqual(box(1, 1, 2, 2));
    expect(narrowingBox([box(0, 0, 2, 2), box(2, 2, 3, 3)])).toStrictEqual(box(2, 2, 2, 2)); // touching counts
    expect(narrowingBox([box(0, 0, 2, 2), box(5, 0, 5.5, 0.5)])).toStrictEqual(box(5, 0, 5.5, 0.5));
    expect(narrowingBox([box(5, 0, 9, 9), box(0, 0, 1, 1)])).toStrictEqual(box(0, 0, 1, 1));
    expect(() => narrowingBox([])).toThrow(RangeError);
  });

  it("the narrowing box loses no source: a box meeting every envelope meets it (20,000 random cases)", () => {
    let state = 7;
    const random = () => {
      // mulberry32
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const randomBox = () => {
      const x = Math.round(random() * 10) / 2;
      const y = Math.round(random() * 10) / 2;
      return box(x, y, x + Math.round(random() * 8) / 2, y + Math.round(random() * 8) / 2);
    };
    const lost: string[] = [];
    let common = 0;
    let apart = 0;
    for (let i = 0; i < 20_000; i++) {
      const envelopes = [randomBox(), randomBox()];
      const source = randomBox();
      if (!envelopes.every((e) => boxesIntersect(source, e))) continue;
      if (boxesIntersect(envelopes[0], envelopes[1])) common += 1;
      else apart += 1;
      if (!boxesIntersect(source, narrowingBox(envelopes))) lost.push(JSON.stringify({ envelopes, source }));
    }
    // Both ways of narrowing are exercised: by the common box, and by one envelope.
    expect(common).toBeGreaterThan(1_000);
    expect(apart).toBeGreaterThan(50);
    expect(lost).toEqual([]);
  });
});

describe("collectExact: the exact filtering loop of spatial lists", () => {
  /** Candidates stand in list order by their one-letter ids: "a" at 97 ms, "b" at 98 ms… */
  const at = (id: string) => new Date(id.charCodeAt(0));
  const inside = (id: string) => ({
    _id: id,
    created_at: at(id),
    geometry: polygon([1.2, 1.2], [1.8, 1.2], [1.8, 1.8]),
  });
  const ell = (id: string) => ({ _id: id, created_at: at(id), geometry: ELL });
  const area = prepareSearchArea({ type: "Box", box: UPPER_RIGHT });

  it("drops a candidate whose box (so whose cover) meets the area but whose geometry does not", async () => {
    expect(boxesIntersect(box(0, 0, 2, 2), UPPER_RIGHT)).toBe(true);
    const docs = feed([ell("a"), inside("b"), ell("c"), inside("d")]);
    expect((await collectExact(docs.iterable, [area], { offset: 0, limit: 10 })).map((d) => d._id)).toEqual(["b", "d"]);
    expect(docs.closed()).toBe(true);
  });

  it("keeps list order, skips `offset` exact matches (not candidates), and stops reading at `limit`", async () => {
    const docs = feed([ell("a"), inside("b"), inside("c"), ell("d"), inside("e"), inside("f"), inside("g")]);
    expect((await collectExact(docs.iterable, [area], { offset: 1, limit: 2 })).map((d) => d._id)).toEqual(["c", "e"]);
    expect(docs.pulled()).toBe(5);
    // Leaving the loop early closes the iterator (for a driver cursor: killCursors).
    expect(docs.closed()).toBe(true);
  });

  it("returns what there is when the candidates run out, and [] past the end", async () => {
    expect(
      (await collectExact(feed([inside("a"), ell("b")]).iterable, [area], { offset: 0, limit: 5 })).map((d) => d._id),
    ).toEqual(["a"]);
    expect(await collectExact(feed([inside("a")]).iterable, [area], { offset: 3, limit: 5 })).toEqual([]);
  });

  it("requires every area", async () => {
    const west = prepareSearchArea({ type: "Box", box: box(0, 0, 0.25, 2) });
    const docs = [ell("a"), inside("b")];
    expect((await collectExact(feed(docs).iterable, [west], { offset: 0, limit: 5 })).map((d) => d._id)).toEqual(["a"]);
    expect(await collectExact(feed(docs).iterable, [area, west], { offset: 0, limit: 5 })).toEqual([]);
  });

  it("reads nothing for a limit of 0", async () => {
    const docs = feed([inside("a")]);
    expect(await collectExact(docs.iterable, [area], { offset: 0, limit: 0 })).toEqual([]);
    expect(docs.pulled()).toBe(0);
  });

  it("stops after the candidate that spends the exact tests' allowance, and says where to resume", async () => {
    // What testing each costs: its positions and the fixed cost of a test.
    const positions = countPositions(ELL) + POSITIONS_PER_TEST;
    const small = countPositions(inside("x").geometry) + POSITIONS_PER_TEST;
    expect(small).toBe(4 + POSITIONS_PER_TEST);
    // ELL, 4, ELL: the third test spends it; "d" follows, so the page (holding "b") stops after "c".
    const exactTests = new ExactTestAllowance(positions + small + positions);
    const docs = feed([ell("a"), inside("b"), ell("c"), inside("d")]);
    const page = await collectExact(docs.iterable, [area], { offset: 0, limit: 10, exactTests });
    expect(page.map((d) => d._id)).toEqual(["b"]);
    expect(exactTests.stoppedAt).toEqual({ createdAt: 99, id: "c", skip: 0 });
    // "d" was read (so another candidate follows) but not tested.
    expect(docs.pulled()).toBe(4);
    expect(docs.closed()).toBe(true);
    // Spent by the last candidate, the listing just ends.
    const last = new ExactTestAllowance(positions + small + positions);
    const page3 = await collectExact(feed([ell("a"), inside("b"), ell("c")]).iterable, [area], {
      offset: 0,
      limit: 10,
      exactTests: last,
    });
    expect(page3.map((d) => d._id)).toEqual(["b"]);
    expect(last.exhausted).toBe(true);
    expect(last.stoppedAt).toBeUndefined();
  });

  it("takes a candidate whose own box lies within every area without the exact test or spending", async () => {
    const exactTests = new ExactTestAllowance(1);
    const boxed = (id: string) => ({ ...inside(id), bbox: { min_x: 1.2, min_y: 1.2, max_x: 1.8, max_y: 1.8 } });
    const docs = feed([boxed("a"), boxed("b"), boxed("c")]);
    const page = await collectExact(docs.iterable, [area], { offset: 0, limit: 10, exactTests });
    expect(page.map((d) => d._id)).toEqual(["a", "b", "c"]);
    expect(exactTests.exhausted).toBe(false);
    // A box reaching past the area: tested (and spent on), as a candidate without a box is.
    const reaching = { ...ell("d"), bbox: { min_x: 0, min_y: 0, max_x: 2, max_y: 2 } };
    const tested = new ExactTestAllowance(1);
    const none = await collectExact(feed([reaching, inside("e")]).iterable, [area], {
      offset: 0,
      limit: 10,
      exactTests: tested,
    });
    expect(none).toEqual([]);
    expect(tested.stoppedAt).toEqual({ createdAt: 100, id: "d", skip: 0 });
  });

  it("stopped within the offset, keeps the matches still to skip; a page filled as it runs out is full", async () => {
    const within = new ExactTestAllowance(2 * (4 + POSITIONS_PER_TEST));
    const docs = [inside("a"), inside("b"), inside("c"), inside("d")];
    expect(await collectExact(feed(docs).iterable, [area], { offset: 3, limit: 5, exactTests: within })).toEqual([]);
    expect(within.stoppedAt).toEqual({ createdAt: 98, id: "b", skip: 1 });
    const filled = new ExactTestAllowance(2 * (4 + POSITIONS_PER_TEST));
    const page = await collectExact(feed(docs).iterable, [area], { offset: 0, limit: 2, exactTests: filled });
    expect(page.map((d) => d._id)).toEqual(["a", "b"]);
    expect(filled.stoppedAt).toBeUndefined();
  });
});

describe("the ledger's secret", () => {
  it("upserts 32 random bytes only when missing ($setOnInsert), in the settings collection", () => {
    const bytes = new Uint8Array(32).map((_, i) => i);
    const now = Date.UTC(2025, 2, 3);
    expect(SETTINGS).toBe("settings");
    expect(LEDGER_SECRET_ID).toBe("ledger_secret");
    expect(LEDGER_SECRET_BYTES).toBe(32);
    expect(ledgerSecretWrite(bytes, now)).toStrictEqual({
      filter: { _id: "ledger_secret" },
      update: { $setOnInsert: { value: new Binary(bytes), created_at: new Date(now) } },
      options: { upsert: true },
    });
    const { update } = ledgerSecretWrite(bytes, now) as { update: { $setOnInsert: { value: Binary } } };
    expect([...update.$setOnInsert.value.value()]).toEqual([...bytes]);
  });

  it("reads it back majority-committed, from the primary, the value only", () => {
    expect(LEDGER_SECRET_FILTER).toStrictEqual({ _id: "ledger_secret" });
    expect(LEDGER_SECRET_READ_OPTIONS).toStrictEqual({
      projection: { _id: 0, value: 1 },
      readConcern: READ_CONCERN,
      readPreference: "primary",
    });
    expect(READ_CONCERN.level).toBe("majority");
  });
});

// --- the store calling the driver (a minimal stand-in for the driver surface; the product never fakes MongoDB) ---

type Handler = (...args: unknown[]) => unknown;

const FILL_MARKERS = [CREATED_EVENTS_FILLED, CONFLICT_PAIRS_FILLED, PAIR_EVENTS_FILLED, SOURCE_BOXES_FILLED];

/**
 * A MongoClient stand-in: records `collection.method(args)` calls and answers from `handlers`.
 * The history fill's markers read as set (a ledger filled already), unrecorded.
 */
function standIn(handlers: Record<string, Handler> = {}) {
  const calls: { key: string; args: unknown[] }[] = [];
  const call =
    (key: string, fallback: unknown) =>
    async (...args: unknown[]) => {
      const marker = (args[0] as { _id?: unknown } | undefined)?._id;
      if (key === "settings.findOne" && FILL_MARKERS.includes(String(marker))) return args[0];
      calls.push({ key, args });
      const handler = handlers[key];
      return handler ? handler(...args) : fallback;
    };
  const collection = (name: string) => ({
    createIndexes: call(`${name}.createIndexes`, []),
    updateOne: call(`${name}.updateOne`, { acknowledged: true, upsertedCount: 1 }),
    findOne: call(`${name}.findOne`, null),
    find: (...args: unknown[]) => {
      calls.push({ key: `${name}.find`, args });
      const docs = (handlers[`${name}.find`]?.(...args) ?? []) as unknown[];
      return {
        toArray: async () => docs,
        async *[Symbol.asyncIterator]() {
          yield* docs;
        },
      };
    },
  });
  const client = {
    db: () => ({ collection, createCollection: call("db.createCollection", {}), command: call("db.command", {}) }),
    connect: call("client.connect", undefined),
    close: call("client.close", undefined),
  };
  const store = new MongoSourceStore(client as unknown as MongoClient, "ledger");
  return { store, calls: (key: string) => calls.filter((c) => c.key === key).map((c) => c.args) };
}

describe("the store runs these queries", () => {
  it("lists a bbox search with the plan's filter and options, and drops candidates whose geometry misses", async () => {
    const docs = [
      toDocument(makeRecord({ geometry: ELL })),
      toDocument(makeRecord({ geometry: polygon([1.2, 1.2], [1.8, 1.2], [1.8, 1.8]) })),
    ];
    const { store, calls } = standIn({ "sources.find": () => docs });
    const q = query("acct_a", { bbox: UPPER_RIGHT, limit: 10 });
    const page = await store.list(q);
    expect(page.map((r) => r.id)).toEqual([docs[1]._id]);
    const plan = listPlan(q);
    expect(calls("sources.find")).toStrictEqual([[plan.filter, plan.options]]);
  });

  it("upserts the secret, reads it back, and caches it: one round trip for several calls", async () => {
    const stored = new Uint8Array(32).fill(7);
    const { store, calls } = standIn({ "settings.findOne": () => ({ value: new Binary(stored) }) });
    const first = await store.ledgerSecret();
    expect([...first]).toEqual([...stored]);
    first.fill(0); // a copy: the caller cannot change what the store holds
    expect([...(await store.ledgerSecret())]).toEqual([...stored]);
    const [[filter, update, options]] = calls("settings.updateOne") as [Record<string, unknown>, ...unknown[]][];
    expect(calls("settings.updateOne")).toHaveLength(1);
    expect(filter).toStrictEqual({ _id: "ledger_secret" });
    expect(options).toStrictEqual({ upsert: true });
    const inserted = (update as { $setOnInsert: { value: Binary; created_at: Date } }).$setOnInsert;
    expect(inserted.value.value()).toHaveLength(32);
    expect(inserted.created_at).toBeInstanceOf(Date);
    expect(calls("settings.findOne")).toStrictEqual([[LEDGER_SECRET_FILTER, LEDGER_SECRET_READ_OPTIONS]]);
  });

  it("reads the winner's value after losing the upsert race on _id (duplicate key)", async () => {
    const winner = new Uint8Array(32).fill(9);
    const duplicate = new MongoServerError({
      message: "E11000 duplicate key error collection: ledger.settings index: _id_ dup key",
      code: 11000,
    });
    const { store, calls } = standIn({
      "settings.updateOne": () => {
        throw duplicate;
      },
      "settings.findOne": () => ({ value: new Binary(winner) }),
    });
    expect([...(await store.ledgerSecret())]).toEqual([...winner]);
    expect(calls("settings.findOne")).toHaveLength(1);
  });

  it("upserts again when the read finds nothing yet (the winner's insert not majority-committed), then reads", async () => {
    let reads = 0;
    const value = new Uint8Array(32).fill(3);
    const { store, calls } = standIn({
      "settings.findOne": () => (++reads < 2 ? null : { value: new Binary(value) }),
    });
    expect([...(await store.ledgerSecret())]).toEqual([...value]);
    expect(calls("settings.updateOne")).toHaveLength(2);
  });

  it("fails as unavailable when MongoDB is, and asks again on the next call (nothing cached)", async () => {
    let fail = true;
    const { store } = standIn({
      "settings.updateOne": () => {
        if (fail) throw new MongoNetworkError("connection 1 to db:27017 closed");
        return { acknowledged: true };
      },
      "settings.findOne": () => ({ value: new Binary(new Uint8Array(32).fill(1)) }),
    });
    await expect(store.ledgerSecret()).rejects.toBeInstanceOf(StoreUnavailableError);
    fail = false;
    expect(await store.ledgerSecret()).toHaveLength(32);
  });

  it("refuses a stored secret of the wrong length (not a value to derive keys from)", async () => {
    const { store } = standIn({ "settings.findOne": () => ({ value: new Binary(new Uint8Array(16)) }) });
    await expect(store.ledgerSecret()).rejects.toThrow(/holds 16 bytes, not 32/);
  });
});

describe("get and delete", () => {
  it("pins get by id, scoped and for admins", () => {
    expect(getFilter("src_1", "acct_a")).toStrictEqual({ _id: "src_1", account_id: "acct_a" });
    expect(getFilter("src_1", null)).toStrictEqual({ _id: "src_1" });
    expect(GET_OPTIONS).toStrictEqual({ projection: RECORD_FIELDS });
  });

  it("pins delete by id, scoped and for admins", () => {
    expect(deleteByIdFilter("src_1", "acct_a")).toStrictEqual({ _id: "src_1", account_id: "acct_a" });
    expect(deleteByIdFilter("src_1", null)).toStrictEqual({ _id: "src_1" });
  });

  it("pins delete by alt_id (always in one account)", () => {
    expect(deleteByAltIdFilter("field-7", "acct_a")).toStrictEqual({ account_id: "acct_a", alt_id: "field-7" });
  });

  it("returns what the delete's events name of the deleted source, its last seq and its box (no geometry)", () => {
    expect(DELETE_OPTIONS).toStrictEqual({ projection: { ...EVENT_SUBJECT_FIELDS, bbox: 1 } });
    expect(EVENT_SUBJECT_PROJECTION).toStrictEqual(EVENT_SUBJECT_FIELDS);
  });

  it("pins the taken-alt_id lookup", () => {
    expect(takenAltIdsFilter("acct_a", ["a", "b"])).toStrictEqual({
      account_id: "acct_a",
      alt_id: { $in: ["a", "b"] },
    });
    expect(TAKEN_ALT_IDS_OPTIONS).toStrictEqual({ projection: { _id: 0, alt_id: 1 } });
  });
});

describe("conflict candidate queries", () => {
  const box = { minX: 10, minY: 20, maxX: 10.5, maxY: 20.25 };
  const other = { minX: -3, minY: -2, maxX: -2, maxY: -1 };

  it("asks the 2dsphere index for covers meeting the cover of one box, across every account", () => {
    expect(conflictCandidatesFilter([box])).toStrictEqual({ cover: { $geoIntersects: { $geometry: coverOf(box) } } });
    expect(JSON.stringify(conflictCandidatesFilter([box]))).not.toContain("account_id");
  });

  it("pins the literal query for a small box: the padded cover, counter-clockwise, closed", () => {
    const pad = 1e-7;
    const filter = conflictCandidatesFilter([{ minX: 1, minY: -1, maxX: 2, maxY: 1 }]);
    expect(filter).toStrictEqual({
      cover: {
        $geoIntersects: {
          $geometry: {
            type: "Polygon",
            coordinates: [
              [
                [1 - pad, -1 - pad],
                [2 + pad, -1 - pad],
                [2 + pad, 1 + pad],
                [1 - pad, 1 + pad],
                [1 - pad, -1 - pad],
              ],
            ],
          },
        },
      },
    });
  });

  it("asks about a batch's boxes with one $or", () => {
    expect(conflictCandidatesFilter([box, other])).toStrictEqual({
      $or: [
        { cover: { $geoIntersects: { $geometry: coverOf(box) } } },
        { cover: { $geoIntersects: { $geometry: coverOf(other) } } },
      ],
    });
    expect(CANDIDATE_CHUNK).toBe(100);
  });

  it("asks about a source up to 1° on a side with the cover of its box, geometry or not", () => {
    const field = polygon([10, 20], [10.5, 20], [10.5, 20.25]);
    expect(conflictCandidatesFilter([{ box, geometry: field }])).toStrictEqual(conflictCandidatesFilter([box]));
    expect(sourceCoverOf(field, box)).toStrictEqual(coverOf(box));
  });

  it("pins the literal query for a larger source: the cells its geometry meets, not its whole box", () => {
    // A grid of 2.8125° (360 / 2^7: at most 8 cells across the 20° box) cuts the box at
    // −8.4375, −5.625, …, 8.4375 and at the equator; each square meets the two columns around
    // it in both rows, merged into one rectangle each. Nothing between −5.625 and 5.625 is asked.
    const pad = 1e-7;
    const ring = (x0: number, x1: number) => [
      [x0 - pad, -1 - pad],
      [x1 + pad, -1 - pad],
      [x1 + pad, 1 + pad],
      [x0 - pad, 1 + pad],
      [x0 - pad, -1 - pad],
    ];
    expect(cellCoverRectangles(TWIN, TWIN_BOX)).toStrictEqual([
      { minX: -10, minY: -1, maxX: -5.625, maxY: 1 },
      { minX: 5.625, minY: -1, maxX: 10, maxY: 1 },
    ]);
    expect(conflictCandidatesFilter([{ box: TWIN_BOX, geometry: TWIN }])).toStrictEqual({
      cover: {
        $geoIntersects: {
          $geometry: { type: "MultiPolygon", coordinates: [[ring(-10, -5.625)], [ring(5.625, 10)]] },
        },
      },
    });
    // The document stores the same cover, so a field between the squares finds neither side.
    expect(toDocument(makeRecord({ geometry: TWIN })).cover).toStrictEqual(sourceCoverOf(TWIN, TWIN_BOX));
    expect(toDocument(makeRecord({ geometry: TWIN })).cover.type).toBe("MultiPolygon");
  });

  it("covers a source that fills its box with the box cover, and mixes shapes and boxes in one $or", () => {
    const square = polygon([0, 0], [20, 0], [20, 20], [0, 20]);
    const squareBox = { minX: 0, minY: 0, maxX: 20, maxY: 20 };
    expect(cellCoverRectangles(square, squareBox)).toStrictEqual([squareBox]);
    expect(sourceCoverOf(square, squareBox)).toStrictEqual(coverOf(squareBox));
    expect(conflictCandidatesFilter([box, { box: TWIN_BOX, geometry: TWIN }])).toStrictEqual({
      $or: [
        { cover: { $geoIntersects: { $geometry: coverOf(box) } } },
        { cover: { $geoIntersects: { $geometry: sourceCoverOf(TWIN, TWIN_BOX) } } },
      ],
    });
  });

  it("keeps a country's islands from pulling in the ocean between them", () => {
    // A mainland, an island far west and one far south-west: the box is 111° × 33°.
    const country: SourceGeometry = {
      type: "MultiPolygon",
      coordinates: [
        [
          [
            [-125, 25],
            [-67, 25],
            [-67, 49],
            [-125, 49],
            [-125, 25],
          ],
        ],
        [
          [
            [-178, 51],
            [-177, 51],
            [-177, 52],
            [-178, 52],
            [-178, 51],
          ],
        ],
        [
          [
            [-160, 19],
            [-155, 19],
            [-155, 22],
            [-160, 22],
            [-160, 19],
          ],
        ],
      ],
    };
    const rectangles = cellCoverRectangles(country, { minX: -178, minY: 19, maxX: -67, maxY: 52 });
    expect(rectangles).toStrictEqual([
      { minX: -178, minY: 19, maxX: -135, maxY: 22.5 },
      { minX: -135, minY: 22.5, maxX: -67, maxY: 52 },
      { minX: -178, minY: 45, maxX: -157.5, maxY: 52 },
    ]);
    const inside = (x: number, y: number) =>
      rectangles.some((r) => r.minX <= x && x <= r.maxX && r.minY <= y && y <= r.maxY);
    // Every vertex of the country is held; a field in the ocean between its parts is not.
    for (const part of country.coordinates) for (const [x, y] of part[0]) expect(inside(x, y)).toBe(true);
    expect(inside(-140, 40)).toBe(false);
    expect(inside(-170, 30)).toBe(false);
  });

  it("reads only what the policy needs, and what the events name of a candidate with its last seq and instant", () => {
    expect(CANDIDATE_OPTIONS).toStrictEqual({ projection: SUBJECT_FIELDS });
    expect(SUBJECT_PROJECTION).toStrictEqual(SUBJECT_FIELDS);
    expect(Object.keys(SUBJECT_PROJECTION)).toEqual([
      "_id",
      "account_id",
      "alt_id",
      "event_seq",
      "last_event_at",
      "geometry",
      "bbox",
      "area_m2",
      "start_at",
      "end_at",
      "attribute_type",
      "conflict",
    ]);
  });

  it("pins the flag, last-seq and last-event-instant updates of stored sources: a $set that always changes the document", () => {
    const t = Date.UTC(2026, 10, 26);
    const at = new Date(t);
    expect(
      eventSeqWrites([
        { id: "src_a", eventSeq: 4, lastEventAt: t, conflict: true },
        { id: "src_b", eventSeq: 2, lastEventAt: t },
        { id: "src_c", eventSeq: 9, lastEventAt: t, conflict: false },
      ]),
    ).toStrictEqual([
      {
        updateOne: { filter: { _id: "src_a" }, update: { $set: { event_seq: 4, last_event_at: at, conflict: true } } },
      },
      { updateOne: { filter: { _id: "src_b" }, update: { $set: { event_seq: 2, last_event_at: at } } } },
      {
        updateOne: { filter: { _id: "src_c" }, update: { $set: { event_seq: 9, last_event_at: at, conflict: false } } },
      },
    ]);
    expect(EVENT_SEQ_WRITE_OPTIONS).toStrictEqual({ ordered: true });
  });
});

describe("history and conflict pairs (docs/api.md §14)", () => {
  const measure = {
    overlapAreaM2: 1234.5,
    overlapFraction: 0.25,
    counterpartOverlapFraction: 0.5,
    overlapPeriod: { startAt: Date.UTC(2024, 0, 1), endAt: Date.UTC(2024, 6, 1) },
    sharedAttributeTypes: ["CARBON_REMOVAL"],
  };
  const measureDoc = {
    overlap_area_m2: 1234.5,
    overlap_fraction: 0.25,
    counterpart_overlap_fraction: 0.5,
    overlap_period: { start_at: new Date(Date.UTC(2024, 0, 1)), end_at: new Date(Date.UTC(2024, 6, 1)) },
    shared_attribute_types: ["CARBON_REMOVAL"],
  };
  const change = { by: "client:farm-co", at: Date.UTC(2025, 2, 3, 4, 5, 6, 789) };

  it("names the collections", () => {
    expect([SOURCE_EVENTS, CONFLICT_PAIRS]).toEqual(["source_events", "conflict_pairs"]);
  });

  it("keys an event by its source and zero-padded seq (sorting in seq order), a pair by its two sides", () => {
    expect(sourceEventId("src_01J0000000000000000000000A", 7)).toBe("src_01J0000000000000000000000A:0000000007");
    expect(sourceEventId("src_x", 1234567890)).toBe("src_x:1234567890");
    const ids = [1, 2, 9, 10, 11, 100].map((seq) => sourceEventId("src_x", seq));
    expect([...ids].sort()).toEqual(ids);
    expect(conflictPairId("src_a", "src_b")).toBe("src_a|src_b");
  });

  it("stores a measure in snake_case with its period as BSON dates, and reads it back", () => {
    expect(toMeasureDocument(measure)).toStrictEqual(measureDoc);
    expect(fromMeasureDocument(measureDoc)).toStrictEqual(measure);
    const copy = toMeasureDocument(measure);
    copy.shared_attribute_types.push("X");
    expect(measure.sharedAttributeTypes).toEqual(["CARBON_REMOVAL"]);
  });

  it("writes a create's events: created first (the record as stored then), then a conflict_set on both sides", () => {
    const record = makeRecord({ id: "src_new", accountId: "acct_a", altId: "north-40", conflict: true });
    const doc = toDocument(record, 2);
    const history = new HistoryWrites();
    history.track({ id: "src_old", eventSeq: 5, lastEventAt: change.at - 1 });
    history.created(recordDocumentOf(doc), change);
    history.conflictFound(record, { id: "src_old", accountId: "acct_b", altId: "mill" }, measure, change);
    const at = new Date(change.at);
    expect(history.events).toStrictEqual([
      {
        _id: "src_new:0000000001",
        source_id: "src_new",
        seq: 1,
        account_id: "acct_a",
        type: "created",
        at,
        by: "client:farm-co",
        record: recordDocumentOf(doc),
      },
      {
        _id: "src_new:0000000002",
        source_id: "src_new",
        seq: 2,
        account_id: "acct_a",
        type: "conflict_set",
        at,
        by: "client:farm-co",
        counterpart: { id: "src_old", alt_id: "mill", account_id: "acct_b" },
        measure: measureDoc,
      },
      {
        _id: "src_old:0000000006",
        source_id: "src_old",
        seq: 6,
        account_id: "acct_b",
        type: "conflict_set",
        at,
        by: "client:farm-co",
        counterpart: { id: "src_new", alt_id: "north-40", account_id: "acct_a" },
        measure: { ...measureDoc, overlap_fraction: 0.5, counterpart_overlap_fraction: 0.25 },
      },
    ]);
    expect(history.pairs).toStrictEqual([
      {
        _id: "src_new|src_old",
        a: "src_new",
        b: "src_old",
        measure: measureDoc,
        detected_at: at,
        // The seqs of the two conflict_set events above: the pair's place in each side's conflicts.
        a_event: 2,
        b_event: 6,
      },
    ]);
    expect(history.lastSeqOf("src_new")).toBe(2);
    expect(history.lastSeqOf("src_old")).toBe(6);
    expect(history.lastSeqOf("src_elsewhere")).toBe(0);
  });

  it("keeps the record of a created event apart from the document (no index-only fields, its own flag)", () => {
    const doc = toDocument(makeRecord({ conflict: false }));
    const kept = recordDocumentOf(doc);
    doc.conflict = true;
    expect(kept.conflict).toBe(false);
    expect(Object.keys(kept).sort()).toEqual(Object.keys(RECORD_FIELDS).sort());
    expect(toDocument(makeRecord()).event_seq).toBe(1);
    expect(toDocument(makeRecord(), 4).event_seq).toBe(4);
  });

  it("writes a delete's events: deleted after the source's last seq, conflict_cleared on each counterpart", () => {
    const history = new HistoryWrites();
    const removed = { id: "src_gone", accountId: "acct_a", altId: "gone", eventSeq: 3, lastEventAt: change.at - 1 };
    history.track(removed);
    history.deleted(removed, change);
    const counterpart = { id: "src_left", accountId: "acct_b", altId: "left", eventSeq: 8, lastEventAt: change.at - 1 };
    history.track(counterpart);
    history.track({ id: "src_left", eventSeq: 1, lastEventAt: 0 }); // tracked once: the first read wins
    history.released(counterpart, removed, change);
    const at = new Date(change.at);
    expect(history.events).toStrictEqual([
      {
        _id: "src_gone:0000000004",
        source_id: "src_gone",
        seq: 4,
        account_id: "acct_a",
        type: "deleted",
        at,
        by: "client:farm-co",
      },
      {
        _id: "src_left:0000000009",
        source_id: "src_left",
        seq: 9,
        account_id: "acct_b",
        type: "conflict_cleared",
        at,
        by: "client:farm-co",
        counterpart: { id: "src_gone", alt_id: "gone", account_id: "acct_a" },
      },
    ]);
    expect(history.pairs).toEqual([]);
  });

  it("reads an event back: times as epoch ms, the record through the record mapping, optional parts only when there", () => {
    const record = makeRecord({ conflict: false });
    const doc = toDocument(record);
    const created: Omit<SourceEventDocument, "_id"> = {
      source_id: record.id,
      seq: 1,
      account_id: record.accountId,
      type: "created",
      at: new Date(change.at),
      by: change.by,
      record: recordDocumentOf(doc),
    };
    const { bbox: _bbox, areaM2: _areaM2, ...stored } = record;
    expect(fromEventDocument(created)).toStrictEqual({
      sourceId: record.id,
      accountId: record.accountId,
      seq: 1,
      type: "created",
      at: change.at,
      by: change.by,
      record: stored,
    });
    expect(
      fromEventDocument({
        source_id: "src_b",
        seq: 2,
        account_id: "acct_b",
        type: "conflict_set",
        at: new Date(change.at),
        by: change.by,
        counterpart: { id: "src_a", alt_id: "a", account_id: "acct_a" },
        measure: measureDoc,
      }),
    ).toStrictEqual({
      sourceId: "src_b",
      accountId: "acct_b",
      seq: 2,
      type: "conflict_set",
      at: change.at,
      by: change.by,
      counterpart: { id: "src_a", altId: "a", accountId: "acct_a" },
      measure,
    });
    expect(
      fromEventDocument({
        source_id: "src_b",
        seq: 3,
        account_id: "acct_b",
        type: "deleted",
        at: new Date(change.at),
        by: "admin",
      }),
    ).toStrictEqual({ sourceId: "src_b", accountId: "acct_b", seq: 3, type: "deleted", at: change.at, by: "admin" });
  });

  it("pins the history query: the source's events in seq order, scoped to its account or any (admins)", () => {
    expect(historyFilter("src_1", "acct_a")).toStrictEqual({ source_id: "src_1", account_id: "acct_a" });
    expect(historyFilter("src_1", null)).toStrictEqual({ source_id: "src_1" });
    expect(HISTORY_OPTIONS).toStrictEqual({ sort: { seq: 1 }, projection: { _id: 0 } });
  });

  it("pins a history page: from after its seq along source_seq, at most its limit; the existence check reads a key", () => {
    expect(historyPageFilter("src_1", "acct_a", 40)).toStrictEqual({
      source_id: "src_1",
      account_id: "acct_a",
      seq: { $gt: 40 },
    });
    expect(historyPageFilter("src_1", null, 0)).toStrictEqual({ source_id: "src_1", seq: { $gt: 0 } });
    expect(historyPageOptions(101)).toStrictEqual({ sort: { seq: 1 }, projection: { _id: 0 }, limit: 101 });
    expect(HISTORY_EXISTS_OPTIONS).toStrictEqual({ projection: { _id: 1 } });
  });

  it("pins the pair queries: from either side, one clause per index; keys only for a delete", () => {
    expect(pairsOfFilter("src_1")).toStrictEqual({ $or: [{ a: "src_1" }, { b: "src_1" }] });
    expect(pairsOfAnyFilter(["src_1", "src_2"])).toStrictEqual({
      $or: [{ a: { $in: ["src_1", "src_2"] } }, { b: { $in: ["src_1", "src_2"] } }],
    });
    expect(PAIR_KEYS_OPTIONS).toStrictEqual({ projection: { _id: 0, a: 1, b: 1 } });
    expect(PAIR_OPTIONS).toStrictEqual({
      projection: { _id: 0, a: 1, b: 1, measure: 1, detected_at: 1, a_event: 1, b_event: 1 },
    });
    // Each clause's field leads one index, and a key read needs nothing beyond the index.
    for (const [clause, index] of [
      ["a", CONFLICT_PAIR_INDEXES[0]],
      ["b", CONFLICT_PAIR_INDEXES[1]],
    ] as const) {
      const keys = Object.keys(index.key as object);
      expect(keys[0]).toBe(clause);
      expect(keys).toContain(clause === "a" ? "b" : "a");
    }
  });

  it("pins a page of a source's conflicts: one range of each side's (side, event seq) index", () => {
    const [a, b] = PAIR_SIDES;
    expect(pairsPageQuery("src_1", a, { afterSeq: 7, limit: 11 })).toStrictEqual({
      filter: { a: "src_1", a_event: { $gt: 7 } },
      options: { ...PAIR_OPTIONS, sort: { a_event: 1 }, limit: 11 },
    });
    expect(pairsPageQuery("src_1", b, { afterSeq: 7, limit: 11 })).toStrictEqual({
      filter: { b: "src_1", b_event: { $gt: 7 } },
      options: { ...PAIR_OPTIONS, sort: { b_event: 1 }, limit: 11 },
    });
    // The first page: from the first (a pair without seqs, which never happens, would come first).
    expect(pairsPageQuery("src_1", b, { afterSeq: 0 })).toStrictEqual({
      filter: { b: "src_1" },
      options: { ...PAIR_OPTIONS, sort: { b_event: 1 } },
    });
    // The sort and the range are the index's second key, after equality on its first.
    for (const [side, index] of [
      [a, CONFLICT_PAIR_INDEXES[0]],
      [b, CONFLICT_PAIR_INDEXES[1]],
    ] as const) {
      expect(Object.keys(index.key as object).slice(0, 2)).toEqual([side.source, side.event]);
    }
  });

  it("pins the fill of pairs stored before they kept their event seqs: one walk of conflict_set events by _id; $max on the side named", () => {
    expect(PAIR_EVENTS_FILLED).toBe("history_conflict_pair_events_filled");
    const options = {
      sort: { _id: 1 },
      hint: { _id: 1 },
      limit: PAIR_EVENTS_CHUNK,
      projection: { _id: 1, source_id: 1, seq: 1, "counterpart.id": 1 },
    };
    expect(conflictSetEventsQuery(undefined)).toStrictEqual({ filter: { type: "conflict_set" }, options });
    expect(conflictSetEventsQuery("src_a:0000000003")).toStrictEqual({
      filter: { type: "conflict_set", _id: { $gt: "src_a:0000000003" } },
      options,
    });
    // src_a's event seq 3 naming src_b: a_event of the pair src_a|src_b, or b_event of src_b|src_a.
    expect(pairEventWrites("src_a", "src_b", 3)).toStrictEqual([
      { updateOne: { filter: { _id: "src_a|src_b" }, update: { $max: { a_event: 3 } } } },
      { updateOne: { filter: { _id: "src_b|src_a" }, update: { $max: { b_event: 3 } } } },
    ]);
    expect(UNSEQUENCED_PAIR_QUERY).toStrictEqual({
      filter: { $or: [{ a_event: { $exists: false } }, { b_event: { $exists: false } }] },
      options: { projection: { _id: 1 } },
    });
  });

  it("pins the counterpart reads and the live check of a source's conflicts", () => {
    expect(sourcesByIdFilter(["src_1", "src_2"])).toStrictEqual({ _id: { $in: ["src_1", "src_2"] } });
    expect(EVENT_SUBJECT_OPTIONS).toStrictEqual({ projection: EVENT_SUBJECT_FIELDS });
    expect(COUNTERPART_OPTIONS).toStrictEqual({ projection: { _id: 1, alt_id: 1, account_id: 1 } });
    expect(LIVE_SOURCE_OPTIONS).toStrictEqual({ projection: { _id: 1 } });
  });

  it("inserts events and pairs in the order made", () => {
    expect(HISTORY_INSERT_OPTIONS).toStrictEqual({ ordered: true });
  });

  it("shows a pair from the asked source's side: as stored from a, turned round from b", () => {
    const pair: Omit<ConflictPairDocument, "_id"> = {
      a: "src_a",
      b: "src_b",
      measure: measureDoc,
      detected_at: new Date(change.at),
      a_event: 4,
      b_event: 9,
    };
    expect(fromPairDocument("src_a", pair, { _id: "src_b", alt_id: "bee", account_id: "acct_b" })).toStrictEqual({
      counterpart: { id: "src_b", altId: "bee", accountId: "acct_b" },
      measure,
      detectedAt: change.at,
      seq: 4,
    });
    expect(fromPairDocument("src_b", pair, { _id: "src_a", alt_id: "ay", account_id: "acct_a" })).toStrictEqual({
      counterpart: { id: "src_a", altId: "ay", accountId: "acct_a" },
      measure: { ...measure, overlapFraction: 0.5, counterpartOverlapFraction: 0.25 },
      detectedAt: change.at,
      seq: 9,
    });
  });
});

describe("protected-area queries", () => {
  const box = { minX: 10, minY: 20, maxX: 10.5, maxY: 20.25 };
  const other = { minX: -3, minY: -2, maxX: -2, maxY: -1 };

  it("asks for the active layer's areas whose covers meet the source's cover, padded like the conflict candidates", () => {
    expect(protectedAreaCandidatesFilter("pal_A", [box])).toStrictEqual({
      layer_id: "pal_A",
      cover: { $geoIntersects: { $geometry: coverOf(box) } },
    });
    // The same cover the conflict query sends for that box.
    expect(protectedAreaCandidatesFilter("pal_A", [box]).cover).toStrictEqual(conflictCandidatesFilter([box]).cover);
  });

  it("pins the literal query for a small box", () => {
    const pad = 1e-7;
    expect(protectedAreaCandidatesFilter("pal_A", [{ minX: 1, minY: -1, maxX: 2, maxY: 1 }])).toStrictEqual({
      layer_id: "pal_A",
      cover: {
        $geoIntersects: {
          $geometry: {
            type: "Polygon",
            coordinates: [
              [
                [1 - pad, -1 - pad],
                [2 + pad, -1 - pad],
                [2 + pad, 1 + pad],
                [1 - pad, 1 + pad],
                [1 - pad, -1 - pad],
              ],
            ],
          },
        },
      },
    });
  });

  it("asks about a large source with its geometry's cells, as the conflict query does, not its whole box", () => {
    const [twin, twinBox] = [TWIN, TWIN_BOX];
    const shape = { box: twinBox, geometry: twin };
    expect(protectedAreaCandidatesFilter("pal_A", [shape])).toStrictEqual({
      layer_id: "pal_A",
      cover: { $geoIntersects: { $geometry: sourceCoverOf(twin, twinBox) } },
    });
    expect(sourceCoverOf(twin, twinBox)).not.toStrictEqual(coverOf(twinBox));
    expect(protectedAreaCandidatesFilter("pal_A", [shape]).cover).toStrictEqual(
      conflictCandidatesFilter([shape]).cover,
    );
  });

  it("asks about a batch with one $or, the layer in every clause (one index scan each)", () => {
    expect(protectedAreaCandidatesFilter("pal_A", [box, other])).toStrictEqual({
      $or: [
        { layer_id: "pal_A", cover: { $geoIntersects: { $geometry: coverOf(box) } } },
        { layer_id: "pal_A", cover: { $geoIntersects: { $geometry: coverOf(other) } } },
      ],
    });
  });

  it("reads candidates without their geometry, then the geometries and chunks not cached, by id", () => {
    expect(PROTECTED_AREA_CANDIDATE_OPTIONS).toStrictEqual({
      projection: { _id: 1, wdpa_id: 1, name: 1, designation: 1, iucn_category: 1, bbox: 1, geometry_chunks: 1 },
    });
    expect(areaGeometriesFilter(["a", "b"])).toStrictEqual({ _id: { $in: ["a", "b"] } });
    expect(AREA_GEOMETRY_OPTIONS).toStrictEqual({ projection: { _id: 1, geometry: 1 } });
    expect(geometryChunksFilter(["a#0", "a#1"])).toStrictEqual({ _id: { $in: ["a#0", "a#1"] } });
    expect(GEOMETRY_CHUNK_OPTIONS).toStrictEqual({ projection: { _id: 1, area_id: 1, n: 1, text: 1 } });
    expect(AREA_BATCH).toBe(1_000);
  });

  it("reads the active layer from the one state document", () => {
    expect(LAYER_STATE_ID).toBe("layers");
    expect(LAYER_STATE_FILTER).toStrictEqual({ _id: "layers" });
    expect(ACTIVE_LAYER_OPTIONS).toStrictEqual({ projection: { _id: 0, active: 1 } });
  });

  it("replaces the state only at the version it was computed from, inserting the first one", () => {
    const next = { ...emptyLayerState(), version: 7 };
    expect(layerStateWrite(7, next)).toStrictEqual({
      filter: { _id: "layers", version: 7 },
      replacement: { version: 8, active: null, loading: [], retired: [] },
      options: { upsert: true },
    });
    expect(layerStateWrite(0, emptyLayerState()).filter).toStrictEqual({ _id: "layers", version: 0 });
  });

  it("inserts areas unordered and deletes a retired layer a covered batch at a time", () => {
    expect(AREA_INSERT_OPTIONS).toStrictEqual({ ordered: false });
    expect(garbageBatchQuery("pal_old")).toStrictEqual({
      filter: { layer_id: "pal_old" },
      options: { projection: { _id: 1 }, limit: 1_000 },
    });
    expect(garbageDeleteFilter("pal_old", ["x", "y"])).toStrictEqual({ layer_id: "pal_old", _id: { $in: ["x", "y"] } });
  });
});

describe("guard cells", () => {
  it("covers a closed box with 11.25° cells, west to east then south to north", () => {
    expect(guardCellIds({ minX: 10.2, minY: 20.5, maxX: 10.4, maxY: 20.6 })).toEqual(["g11.25:16:9"]);
    expect(guardCellIds({ minX: 10, minY: 20, maxX: 12, maxY: 23 })).toEqual([
      "g11.25:16:9",
      "g11.25:16:10",
      "g11.25:17:9",
      "g11.25:17:10",
    ]);
    // A box touching a cell line (0° is one) meets both cells on it.
    expect(guardCellIds({ minX: -1, minY: 0.2, maxX: 0, maxY: 0.4 })).toEqual(["g11.25:15:8", "g11.25:16:8"]);
    expect(guardCellIds({ minX: -180, minY: -90, maxX: -179.9, maxY: -89.9 })).toEqual(["g11.25:0:0"]);
    expect(guardCellIds({ minX: 179.9, minY: 89.9, maxX: 180, maxY: 90 })).toEqual(["g11.25:31:15"]);
    expect(guardCellIds({ minX: -180, minY: -90, maxX: 180, maxY: 90 })).toHaveLength(32 * 16);
  });

  it("gives two boxes that meet (even at an edge) at least one common cell", () => {
    const a = { minX: 3.25, minY: 4.5, maxX: 11.25, maxY: 5.5 };
    const touching = { minX: 11.25, minY: 5.5, maxX: 14.25, maxY: 6 };
    const shared = guardCellIds(a).filter((id) => guardCellIds(touching).includes(id));
    expect(shared.length).toBeGreaterThan(0);
  });

  it("writes each cell of a batch once, in one sorted order", () => {
    const cells = guardCellsOf([
      { minX: 1.5, minY: 1.5, maxX: 1.6, maxY: 1.6 },
      { minX: -0.5, minY: 0.5, maxX: 1.6, maxY: 1.6 },
    ]);
    expect(cells).toEqual(["g11.25:15:8", "g11.25:16:8"]);
  });

  it("pins the guard upserts: $inc always modifies the document, so concurrent writers collide; $max keeps the last change's instant", () => {
    const at = new Date(Date.UTC(2026, 10, 26));
    const update = { $inc: { writes: 1 }, $max: { last_change_at: at } };
    expect(guardWrites(["g11.25:1:2", "g11.25:1:3"], at)).toStrictEqual([
      { updateOne: { filter: { _id: "g11.25:1:2" }, update, upsert: true } },
      { updateOne: { filter: { _id: "g11.25:1:3" }, update, upsert: true } },
    ]);
    expect(guardsFilter(["g11.25:1:2", "g11.25:1:3"])).toStrictEqual({ _id: { $in: ["g11.25:1:2", "g11.25:1:3"] } });
    expect(GUARD_TIMES_OPTIONS).toStrictEqual({ projection: { _id: 0, last_change_at: 1 } });
    expect(GUARD_WRITE_OPTIONS).toStrictEqual({ ordered: true });
  });
});

describe("filling in the history of a ledger stored before the event log", () => {
  it("marks each step done once in settings, under the embedded store's names", () => {
    expect([CREATED_EVENTS_FILLED, CONFLICT_PAIRS_FILLED]).toEqual([
      "history_created_events_filled",
      "history_conflict_pairs_filled",
    ]);
    expect(fillMarkerFilter(CREATED_EVENTS_FILLED)).toStrictEqual({ _id: "history_created_events_filled" });
    const { filter, update, options } = fillMarkerWrite(CONFLICT_PAIRS_FILLED, 5);
    expect(filter).toStrictEqual({ _id: "history_conflict_pairs_filled" });
    expect(options).toStrictEqual({ upsert: true });
    const inserted = (update as { $setOnInsert: { value: Binary; created_at: Date } }).$setOnInsert;
    expect([...inserted.value.value()]).toEqual([1]);
    expect(inserted.created_at).toEqual(new Date(5));
  });

  it("walks the sources without event_seq by _id, ids only; re-reads and numbers them inside the transaction", () => {
    expect(legacySourcesQuery()).toStrictEqual({
      filter: { event_seq: { $exists: false } },
      options: { sort: { _id: 1 }, limit: 500, projection: { _id: 1 } },
    });
    expect(legacySourcesQuery("src_9").filter).toStrictEqual({ _id: { $gt: "src_9" }, event_seq: { $exists: false } });
    expect(unnumberedFilter(["src_1", "src_2"])).toStrictEqual({
      _id: { $in: ["src_1", "src_2"] },
      event_seq: { $exists: false },
    });
    expect(LEGACY_RECORD_OPTIONS).toStrictEqual({ projection: RECORD_FIELDS });
    expect(numberLegacyUpdate(["src_1"])).toStrictEqual({
      filter: { _id: { $in: ["src_1"] }, event_seq: { $exists: false } },
      update: { $set: { event_seq: 1 } },
    });
    expect(LEGACY_CHUNK).toBe(500);
  });

  it("walks every source in list order for the pairs, reading what a conflict subject needs and its creation", () => {
    const fields = { ...SUBJECT_FIELDS, created_at: 1, created_by: 1 };
    expect(pairFillQuery()).toStrictEqual({
      filter: {},
      options: { sort: { created_at: 1, _id: 1 }, limit: 50, projection: fields },
    });
    expect(pairFillQuery({ createdAt: 7, id: "src_3" }).filter).toStrictEqual(afterFilter(7, "src_3"));
    expect(FILL_CANDIDATE_OPTIONS).toStrictEqual({ projection: fields });
    expect(PAIR_FILL_CHUNK).toBe(50);
  });

  it("then sets every flag from the pairs, a chunk of sources by _id at a time, only where it differs", () => {
    expect(flagFillFilter()).toStrictEqual({});
    expect(flagFillFilter("src_4")).toStrictEqual({ _id: { $gt: "src_4" } });
    expect(FLAG_FILL_OPTIONS).toStrictEqual({ sort: { _id: 1 }, limit: 500, projection: { _id: 1, conflict: 1 } });
    expect(setFlagsUpdate(["src_1", "src_2"], false)).toStrictEqual({
      filter: { _id: { $in: ["src_1", "src_2"] } },
      update: { $set: { conflict: false } },
    });
  });
});

describe("the ledger at an instant (as_of)", () => {
  const asOf = Date.UTC(2025, 0, 1);
  const instant = new Date(asOf);

  it("reads the created events by the instant, in one account or any, in list order, a chunk at a time", () => {
    expect(asOfCreatedFilter(asOf, "acct_a")).toStrictEqual({
      account_id: "acct_a",
      type: "created",
      at: { $lte: instant },
    });
    expect(asOfCreatedFilter(asOf, null)).toStrictEqual({ type: "created", at: { $lte: instant } });
    expect(asOfCreatedOptions(40)).toStrictEqual({
      sort: { at: 1, source_id: 1 },
      projection: { _id: 0, source_id: 1, at: 1, record: 1 },
      limit: 40,
    });
  });

  it("reads what a page would take first (at least 16), then doubles, up to 500 created events a read", () => {
    expect([0, 1, 2, 3, 4, 5].map((round) => asOfChunkSize(0, 7, round))).toEqual([16, 32, 64, 128, 256, 500]);
    expect([0, 1, 2].map((round) => asOfChunkSize(20, 100, round))).toEqual([120, 240, 480]);
    expect(asOfChunkSize(0, 1_000, 0)).toBe(500);
    expect(asOfChunkSize(0, 1, 10_000)).toBe(500);
    // A spatial list may stop after a few large candidates: it starts at 8 whatever the page.
    expect([0, 1, 2, 6, 7].map((round) => asOfChunkSize(20, 101, round, true))).toEqual([8, 16, 32, 500, 500]);
    expect([AS_OF_FIRST_CHUNK, AS_OF_CHUNK]).toEqual([16, 500]);
  });

  it("continues after a keyset cursor: a range on at for the index bounds, and the exact $or", () => {
    const t = new Date(1_700_000_000_000);
    expect(asOfCreatedFilter(asOf, "acct_a", { createdAt: t.getTime(), id: "src_5" })).toStrictEqual({
      account_id: "acct_a",
      type: "created",
      at: { $gte: t, $lte: instant },
      $or: [{ at: { $gt: t } }, { at: t, source_id: { $gt: "src_5" } }],
    });
  });

  it("within an area: the boxes created by the instant whose cover meets the area's, in list order, keys and box only", () => {
    const envelope = { minX: 1, minY: 2, maxX: 3, maxY: 4 };
    const t = new Date(1_700_000_000_000);
    const meets = { $geoIntersects: { $geometry: coverOf(envelope) } };
    expect(asOfBoxesFilter(asOf, "acct_a", envelope)).toStrictEqual({
      account_id: "acct_a",
      at: { $lte: instant },
      cover: meets,
    });
    expect(asOfBoxesFilter(asOf, null, envelope, { createdAt: t.getTime(), id: "src_5" }, "src_9")).toStrictEqual({
      at: { $gte: t, $lte: instant },
      $or: [{ at: { $gt: t } }, { at: t, _id: { $gt: "src_5" } }],
      _id: "src_9",
      cover: meets,
    });
    expect(asOfBoxesOptions(8)).toStrictEqual({
      sort: { at: 1, _id: 1 },
      projection: { _id: 1, at: 1, bbox: 1 },
      limit: 8,
      allowDiskUse: true,
    });
    // Their created events: each source's first, by _id.
    expect(createdEventsFilter(["src_1", "src_2"])).toStrictEqual({
      _id: { $in: ["src_1:0000000001", "src_2:0000000001"] },
    });
    expect(CREATED_EVENTS_OPTIONS).toStrictEqual({ projection: { _id: 0, source_id: 1, at: 1, record: 1 } });
  });

  it("fills source_boxes once from the created events along _id, each box written unless there", () => {
    expect(createdEventsWalk(undefined)).toStrictEqual({
      filter: { type: "created" },
      options: {
        sort: { _id: 1 },
        hint: { _id: 1 },
        limit: BOX_FILL_CHUNK,
        projection: { _id: 1, "record._id": 1, "record.account_id": 1, "record.created_at": 1, "record.geometry": 1 },
      },
    });
    expect(createdEventsWalk("src_1:0000000001").filter).toStrictEqual({
      _id: { $gt: "src_1:0000000001" },
      type: "created",
    });
    const record = makeRecord({ geometry: ELL });
    const box = sourceBoxOfRecord(recordDocumentOf(toDocument(record)));
    // The box a create of this version writes: the source's own cover and box.
    expect(box).toStrictEqual(sourceBoxOf(toDocument(record)));
    const { _id, ...fields } = box;
    expect(sourceBoxInserts([box])).toStrictEqual([
      { updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } },
    ]);
    expect(SOURCE_BOXES_FILLED).toMatch(/^history_/);
  });

  it("narrows to one source when the list asks for an id", () => {
    expect(asOfCreatedFilter(asOf, null, undefined, "src_9")).toStrictEqual({
      type: "created",
      at: { $lte: instant },
      source_id: "src_9",
    });
  });

  it("reads what happened to a chunk's sources by the instant: deletes and conflict events, types only", () => {
    expect(asOfChangesFilter(["src_1", "src_2"], asOf)).toStrictEqual({
      source_id: { $in: ["src_1", "src_2"] },
      type: { $in: ["deleted", "conflict_set", "conflict_cleared"] },
      at: { $lte: instant },
    });
    expect(AS_OF_CHANGES_OPTIONS).toStrictEqual({ projection: { _id: 0, source_id: 1, type: 1 } });
  });

  it("reads one source's events by the instant along source_seq for a get", () => {
    expect(asOfHistoryFilter("src_1", "acct_a", asOf)).toStrictEqual({
      source_id: "src_1",
      account_id: "acct_a",
      at: { $lte: instant },
    });
    expect(asOfHistoryFilter("src_1", null, asOf)).toStrictEqual({ source_id: "src_1", at: { $lte: instant } });
    expect(AS_OF_HISTORY_OPTIONS).toStrictEqual({ sort: { seq: 1 }, projection: { _id: 0, type: 1, record: 1 } });
  });
});

describe("index specifications", () => {
  it("pins every index of sources", () => {
    const fields = [
      "methodology",
      "steward_id",
      "project_id",
      "outcome_reporting_year",
      "source_type",
      "attribute_type",
      "geometry_source",
    ];
    expect(SOURCE_INDEXES).toStrictEqual([
      { key: { cover: "2dsphere" }, name: "cover_2dsphere" },
      { key: { account_id: 1, alt_id: 1 }, name: "account_alt_id_unique", unique: true },
      { key: { account_id: 1, created_at: 1, _id: 1 }, name: "account_created" },
      ...[...fields, "conflict"].map((f) => ({
        key: { account_id: 1, [f]: 1, created_at: 1, _id: 1 },
        name: `account_${f}_created`,
      })),
      { key: { created_at: 1, _id: 1 }, name: "created" },
      ...[...fields, "alt_id", "conflict"].map((f) => ({
        key: { [f]: 1, created_at: 1, _id: 1 },
        name: `${f}_created`,
      })),
    ]);
    // Key order is the index: equality, then the list order.
    expect(Object.keys(SOURCE_INDEXES[3].key as object)).toEqual(["account_id", "methodology", "created_at", "_id"]);
    expect(SOURCE_INDEXES).toHaveLength(21);
    expect(new Set(SOURCE_INDEXES.map((i) => i.name)).size).toBe(SOURCE_INDEXES.length);
  });

  it("indexes conflict like the other equality filters, alt_id once per account (the unique index) and once across", () => {
    const names = SOURCE_INDEXES.map((i) => i.name);
    expect(names).toContain("account_conflict_created");
    expect(names).toContain("conflict_created");
    expect(names).not.toContain("account_alt_id_created");
    expect(names.filter((n) => n?.includes("alt_id"))).toEqual([ALT_ID_INDEX, "alt_id_created"]);
  });

  it("has no index for active_at (a range on two dates) nor for the bbox filter (the 2dsphere index on cover serves it)", () => {
    const keys = SOURCE_INDEXES.flatMap((i) => Object.keys(i.key as object));
    for (const field of ["active_at", "start_at", "end_at", "bbox"]) expect(keys).not.toContain(field);
    expect(SOURCE_INDEXES.filter((i) => Object.values(i.key as object).includes("2dsphere"))).toStrictEqual([
      { key: { cover: "2dsphere" }, name: "cover_2dsphere" },
    ]);
  });

  it("never indexes the submitted geometry, only the cover", () => {
    expect(JSON.stringify(SOURCE_INDEXES)).not.toContain('"geometry"');
  });

  it("pins the event log's indexes: (source_id, seq) unique, also serving a history in seq order; created events in list order", () => {
    expect(SOURCE_EVENT_INDEXES).toStrictEqual([
      { key: { source_id: 1, seq: 1 }, name: "source_seq", unique: true },
      { key: { account_id: 1, type: 1, at: 1, source_id: 1 }, name: "account_type_at" },
      { key: { type: 1, at: 1, source_id: 1 }, name: "type_at" },
    ]);
    expect(SOURCE_EVENT_INDEXES.map((i) => Object.keys(i.key as object))).toEqual([
      ["source_id", "seq"],
      ["account_id", "type", "at", "source_id"],
      ["type", "at", "source_id"],
    ]);
    // The history query: equality on the prefix, sorted by the next key.
    expect(Object.keys(historyFilter("src_1", null))).toEqual(["source_id"]);
    expect(Object.keys(HISTORY_OPTIONS.sort as object)).toEqual(["seq"]);
    // An as_of list: its equalities are the prefix of one index, its order that index's next keys.
    expect(Object.keys(asOfCreatedFilter(5, "acct_a")).slice(0, 2)).toEqual(["account_id", "type"]);
    expect(Object.keys(asOfCreatedFilter(5, null))[0]).toBe("type");
    expect(Object.keys(asOfCreatedOptions(1).sort as object)).toEqual(["at", "source_id"]);
  });

  it("pins the spatial index of the past: source_boxes' 2dsphere on cover, and the list order in one account or any", () => {
    expect(SOURCE_BOX_INDEXES).toStrictEqual([
      { key: { cover: "2dsphere" }, name: "cover_2dsphere" },
      { key: { account_id: 1, at: 1, _id: 1 }, name: "account_at" },
      { key: { at: 1, _id: 1 }, name: "at" },
    ]);
    const envelope = { minX: 0, minY: 0, maxX: 1, maxY: 1 };
    // Its equality, then the order's keys (at bounds the instant), as for the created events.
    expect(Object.keys(asOfBoxesFilter(5, "acct_a", envelope)).slice(0, 2)).toEqual(["account_id", "at"]);
    expect(Object.keys(asOfBoxesFilter(5, null, envelope))[0]).toBe("at");
    expect(Object.keys(asOfBoxesOptions(1).sort as object)).toEqual(["at", "_id"]);
    expect(JSON.stringify(SOURCE_BOX_INDEXES)).not.toContain('"geometry"');
  });

  it("pins the conflict pairs' indexes: a source's pairs are found from either side", () => {
    expect(CONFLICT_PAIR_INDEXES).toStrictEqual([
      { key: { a: 1, a_event: 1, b: 1 }, name: "a_event_b" },
      { key: { b: 1, b_event: 1, a: 1 }, name: "b_event_a" },
    ]);
    // Key order is the index: equality on the side, the range of its event seqs, the other side.
    expect(Object.keys(CONFLICT_PAIR_INDEXES[0].key as object)).toEqual(["a", "a_event", "b"]);
    expect(Object.keys(CONFLICT_PAIR_INDEXES[1].key as object)).toEqual(["b", "b_event", "a"]);
  });

  it("pins the protected-area collections' indexes: the active layer first, then its covers", () => {
    expect(PROTECTED_AREA_INDEXES).toStrictEqual([
      { key: { layer_id: 1, cover: "2dsphere" }, name: "layer_cover_2dsphere" },
      { key: { layer_id: 1, _id: 1 }, name: "layer" },
    ]);
    // Key order is the index: equality on the layer, then the geometric scan inside it.
    expect(Object.keys(PROTECTED_AREA_INDEXES[0].key as object)).toEqual(["layer_id", "cover"]);
    expect(JSON.stringify(PROTECTED_AREA_INDEXES)).not.toContain('"geometry"');
    expect(GEOMETRY_CHUNK_INDEXES).toStrictEqual([{ key: { layer_id: 1, _id: 1 }, name: "layer" }]);
    expect([PROTECTED_AREAS, GEOMETRY_CHUNKS, LAYERS]).toEqual([
      "protected_areas",
      "protected_area_geometry_chunks",
      "protected_area_layers",
    ]);
  });
});

describe("concerns, transactions and client options", () => {
  it("writes with w: majority and j: true (the wire form)", () => {
    expect(WriteConcern.apply({}, WRITE_CONCERN)).toStrictEqual({ writeConcern: { w: "majority", j: true } });
    expect(DB_OPTIONS.writeConcern).toBe(WRITE_CONCERN);
  });

  it("reads majority-committed data outside transactions", () => {
    expect(READ_CONCERN.level).toBe("majority");
    expect(DB_OPTIONS.readConcern).toBe(READ_CONCERN);
  });

  it("runs transactions on a snapshot, committing with majority and journal, on the primary", () => {
    expect(TRANSACTION_OPTIONS).toEqual({
      readConcern: { level: "snapshot" },
      writeConcern: WRITE_CONCERN,
      readPreference: "primary",
      maxCommitTimeMS: 10_000,
    });
    expect(WriteConcern.apply({}, TRANSACTION_OPTIONS.writeConcern as WriteConcern)).toStrictEqual({
      writeConcern: { w: "majority", j: true },
    });
  });

  it("sets timeouts and retryable reads and writes", () => {
    expect(clientOptions("mongodb://db:27017/?replicaSet=rs0")).toStrictEqual({
      retryWrites: true,
      retryReads: true,
      serverSelectionTimeoutMS: 5_000,
      connectTimeoutMS: 5_000,
      socketTimeoutMS: 30_000,
      maxIdleTimeMS: 60_000,
      appName: "source-ledger",
    });
  });

  it("lets the URI tune timeouts (case-insensitively) but never turns retryable writes off", () => {
    const uri = "mongodb+srv://u:p@cluster.example/?retryWrites=false&SERVERSELECTIONTIMEOUTMS=20000&socketTimeoutMS=0";
    expect(uriOptionNames(uri)).toEqual(new Set(["retrywrites", "serverselectiontimeoutms", "sockettimeoutms"]));
    expect(clientOptions(uri)).toStrictEqual({
      retryWrites: true,
      retryReads: true,
      connectTimeoutMS: 5_000,
      maxIdleTimeMS: 60_000,
      appName: "source-ledger",
    });
    expect(uriOptionNames("mongodb://a:1,b:2")).toEqual(new Set());
  });

  it("asks hello for the server's role", () => {
    expect(HELLO_COMMAND).toStrictEqual({ hello: 1 });
  });
});

describe("a conflict's measure document (docs/api.md §14)", () => {
  const measured: ConflictMeasure = {
    overlapAreaM2: 12.5,
    overlapFraction: 0.25,
    counterpartOverlapFraction: 0.5,
    overlapPeriod: { startAt: Date.UTC(2024, 0, 1), endAt: Date.UTC(2025, 0, 1) },
    sharedAttributeTypes: ["CARBON_REMOVAL"],
  };

  it("keeps a measured pair without the upper-bound mark, and a bound with it, both ways", () => {
    expect(toMeasureDocument(measured)).not.toHaveProperty("overlap_area_upper_bound");
    expect(fromMeasureDocument(toMeasureDocument(measured))).toStrictEqual(measured);
    const bound: ConflictMeasure = { ...measured, overlapAreaUpperBound: true };
    expect(toMeasureDocument(bound)).toMatchObject({ overlap_area_upper_bound: true, overlap_area_m2: 12.5 });
    expect(fromMeasureDocument(toMeasureDocument(bound))).toStrictEqual(bound);
  });
});
