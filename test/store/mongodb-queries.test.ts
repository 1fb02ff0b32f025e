/**
 * Pins what the MongoDB store sends, without a server: the filter documents, sort, projection and
 * paging of every list filter combination (one account and admin), get, delete by id and by
 * alt_id, the conflict candidate queries, the guard writes, the index specifications (and that an
 * index serves every combination in list order), write/read concerns, transaction and client
 * options. The store calls these functions and constants (src/store/mongodb/queries.ts); the
 * failure tests (mongodb-failures.test.ts) check it passes them through.
 */
import { WriteConcern } from "mongodb";
import { describe, expect, it } from "vitest";
import type { ListQuery } from "../../src/model/list-query.js";
import { coverOf } from "../../src/store/mongodb/cover.js";
import { guardCellIds, guardCellsOf } from "../../src/store/mongodb/guards.js";
import { emptyLayerState, LAYER_STATE_ID } from "../../src/store/mongodb/layer-state.js";
import {
  ACTIVE_LAYER_OPTIONS,
  ALT_ID_INDEX,
  AREA_BATCH,
  AREA_GEOMETRY_OPTIONS,
  AREA_INSERT_OPTIONS,
  areaGeometriesFilter,
  CANDIDATE_CHUNK,
  CANDIDATE_OPTIONS,
  clientOptions,
  conflictCandidatesFilter,
  DB_OPTIONS,
  DELETE_OPTIONS,
  deleteByAltIdFilter,
  deleteByIdFilter,
  GEOMETRY_CHUNK_INDEXES,
  GEOMETRY_CHUNK_OPTIONS,
  GEOMETRY_CHUNKS,
  GET_OPTIONS,
  GUARD_WRITE_OPTIONS,
  garbageBatchQuery,
  garbageDeleteFilter,
  geometryChunksFilter,
  getFilter,
  guardWrites,
  HELLO_COMMAND,
  LAYER_STATE_FILTER,
  LAYERS,
  LIST_SORT,
  layerStateWrite,
  listFilter,
  listOptions,
  otherCandidatesFilter,
  PROTECTED_AREA_CANDIDATE_OPTIONS,
  PROTECTED_AREA_INDEXES,
  PROTECTED_AREAS,
  protectedAreaCandidatesFilter,
  READ_CONCERN,
  RECORD_PROJECTION,
  SOURCE_INDEXES,
  SUBJECT_PROJECTION,
  setConflictUpdate,
  TAKEN_ALT_IDS_OPTIONS,
  TRANSACTION_OPTIONS,
  takenAltIdsFilter,
  uriOptionNames,
  WRITE_CONCERN,
} from "../../src/store/mongodb/queries.js";

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

const SUBJECT_FIELDS = {
  _id: 1,
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
];

/** Every subset of FILTERS (2^9 = 512), by bit mask. */
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

describe("list queries", () => {
  it("pins the filter of every combination of filters, for one account and for admins (1,024 cases)", () => {
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
  });

  it("pins a full literal filter, its key order, and copies the attribute list", () => {
    const attributeTypes = ["WATER_QUALITY"];
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
    });
    // The account first, then the filters in the proto's order (LIST_FILTERS).
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

  it("returns what conflict re-evaluation needs of a deleted source", () => {
    expect(DELETE_OPTIONS).toStrictEqual({ projection: SUBJECT_FIELDS });
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

  it("re-evaluating a neighbour reads only flagged sources other than itself", () => {
    expect(otherCandidatesFilter(box, "src_n")).toStrictEqual({
      cover: { $geoIntersects: { $geometry: coverOf(box) } },
      _id: { $ne: "src_n" },
      conflict: true,
    });
  });

  it("reads only what the policy needs", () => {
    expect(CANDIDATE_OPTIONS).toStrictEqual({ projection: SUBJECT_FIELDS });
    expect(SUBJECT_PROJECTION).toStrictEqual(SUBJECT_FIELDS);
  });

  it("pins the flag updates", () => {
    expect(setConflictUpdate(["src_a", "src_b"], true)).toStrictEqual({
      filter: { _id: { $in: ["src_a", "src_b"] } },
      update: { $set: { conflict: true } },
    });
    expect(setConflictUpdate(["src_c"], false)).toStrictEqual({
      filter: { _id: { $in: ["src_c"] } },
      update: { $set: { conflict: false } },
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
  it("covers a closed box with 1° cells, west to east then south to north", () => {
    expect(guardCellIds({ minX: 10.2, minY: 20.5, maxX: 10.4, maxY: 20.6 })).toEqual(["g1:190:110"]);
    expect(guardCellIds({ minX: 10.5, minY: 20.5, maxX: 11.5, maxY: 21.5 })).toEqual([
      "g1:190:110",
      "g1:190:111",
      "g1:191:110",
      "g1:191:111",
    ]);
    // A box touching a cell line meets both cells on it.
    expect(guardCellIds({ minX: 9, minY: 0.2, maxX: 10, maxY: 0.4 })).toEqual(["g1:189:90", "g1:190:90"]);
    expect(guardCellIds({ minX: -180, minY: -90, maxX: -179.9, maxY: -89.9 })).toEqual(["g1:0:0"]);
    expect(guardCellIds({ minX: 179.9, minY: 89.9, maxX: 180, maxY: 90 })).toEqual(["g1:359:179"]);
    expect(guardCellIds({ minX: -180, minY: -90, maxX: 180, maxY: 90 })).toHaveLength(360 * 180);
  });

  it("gives two boxes that meet (even at an edge) at least one common cell", () => {
    const a = { minX: 3.25, minY: 4.5, maxX: 3.75, maxY: 5.5 };
    const touching = { minX: 3.75, minY: 5.5, maxX: 4.25, maxY: 6 };
    const shared = guardCellIds(a).filter((id) => guardCellIds(touching).includes(id));
    expect(shared.length).toBeGreaterThan(0);
  });

  it("writes each cell of a batch once, in one sorted order", () => {
    const cells = guardCellsOf([
      { minX: 1.5, minY: 1.5, maxX: 1.6, maxY: 1.6 },
      { minX: 0.5, minY: 0.5, maxX: 1.6, maxY: 1.6 },
    ]);
    expect(cells).toEqual(["g1:180:90", "g1:180:91", "g1:181:90", "g1:181:91"]);
  });

  it("pins the guard upserts: $inc always modifies the document, so concurrent writers collide", () => {
    expect(guardWrites(["g1:1:2", "g1:1:3"])).toStrictEqual([
      { updateOne: { filter: { _id: "g1:1:2" }, update: { $inc: { writes: 1 } }, upsert: true } },
      { updateOne: { filter: { _id: "g1:1:3" }, update: { $inc: { writes: 1 } }, upsert: true } },
    ]);
    expect(GUARD_WRITE_OPTIONS).toStrictEqual({ ordered: true });
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
      ...fields.map((f) => ({ key: { account_id: 1, [f]: 1, created_at: 1, _id: 1 }, name: `account_${f}_created` })),
      { key: { created_at: 1, _id: 1 }, name: "created" },
      ...[...fields, "alt_id"].map((f) => ({ key: { [f]: 1, created_at: 1, _id: 1 }, name: `${f}_created` })),
    ]);
    // Key order is the index: equality, then the list order.
    expect(Object.keys(SOURCE_INDEXES[3].key as object)).toEqual(["account_id", "methodology", "created_at", "_id"]);
    expect(SOURCE_INDEXES).toHaveLength(19);
    expect(new Set(SOURCE_INDEXES.map((i) => i.name)).size).toBe(SOURCE_INDEXES.length);
  });

  it("never indexes the submitted geometry, only the cover", () => {
    expect(JSON.stringify(SOURCE_INDEXES)).not.toContain('"geometry"');
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
