/**
 * Protected-area layers and `unep_overlap` on the MongoDB store, and its event log, conflict pairs
 * and as_of reads (docs/api.md §14), without a server:
 * - the pure parts: the layer-state transitions (layer-state.ts), the area documents and their
 *   chunking (documents.ts), the reader's geometry cache;
 * - the behaviour, through a small in-memory fake of the driver surface the code uses, which
 *   evaluates exactly the filters queries.ts builds (equality, `$in`, `$or`, and `$geoIntersects`
 *   approximated by the planar extents of the covers, which is exact enough for the small boxes
 *   used here) and records every call, so the tests also check that the pinned values are sent;
 * - the CLI's import through `importProtectedAreas` into that fake;
 * - seeded random creates and deletes through that fake against a brute-force model of flags,
 *   pairs, measures and histories, and as_of replaying the model's past states;
 * - the fill of a ledger stored before the event log (history-fill.ts), also one that fails
 *   part-way and is finished by the next open.
 * The same behaviour runs against a real replica set in mongodb.test.ts (when MONGODB_URI is set).
 * The fake lives in this test only; the product never fakes MongoDB.
 */
import { type MongoClient, MongoServerError } from "mongodb";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { type ConflictMeasure, fromOtherSide } from "../../src/model/history.js";
import type { ListCursor, ListQuery } from "../../src/model/list-query.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { importProtectedAreas } from "../../src/protected-areas/import.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { GeometryCache } from "../../src/store/geometry-cache.js";
import {
  type ConflictPairDocument,
  geometryChunkId,
  geometryFromChunks,
  protectedAreaId,
  recordDocumentOf,
  type SourceEventDocument,
  sourceBoxOf,
  toDocument,
  toMeasureDocument,
  toProtectedAreaDocuments,
} from "../../src/store/mongodb/documents.js";
import {
  abandonLayer,
  activateLayer,
  beginLayer,
  emptyLayerState,
  forgetRetired,
  heartbeatLayer,
  type LayerStateDocument,
  layerStatus,
} from "../../src/store/mongodb/layer-state.js";
import { MongoProtectedAreaLayers } from "../../src/store/mongodb/protected-areas.js";
import {
  ACTIVE_LAYER_OPTIONS,
  AREA_GEOMETRY_OPTIONS,
  areaGeometriesFilter,
  CONFLICT_PAIRS_FILLED,
  CREATED_EVENTS_FILLED,
  LAYER_STATE_FILTER,
  PAIR_EVENTS_FILLED,
  PROTECTED_AREA_CANDIDATE_OPTIONS,
  protectedAreaCandidatesFilter,
  SOURCE_BOXES_FILLED,
  TRANSACTION_OPTIONS,
} from "../../src/store/mongodb/queries.js";
import { MongoSourceStore } from "../../src/store/mongodb/store.js";
import { openProtectedAreaLayers } from "../../src/store/open.js";
import { StoreNeedsRepairError, StoreUnavailableError } from "../../src/store/port.js";
import {
  type BeginImport,
  type LayerImport,
  LayerSupersededError,
  type NewProtectedArea,
} from "../../src/store/protected-area-layers.js";
import { spatialFilterOf } from "../../src/store/spatial-filter.js";
import { makeRecord, sampleUnepOverlap, stored } from "../contract/fixtures.js";
import { describeHistoryContract } from "../contract/history-contract.js";
import { expectAsOfFilteredWalksToStop } from "../contract/listing-contract.js";
import { featureCollection, paFeature, rect, type TempDir, tempDir } from "../protected-areas/fixtures.js";
import { prng } from "../support/geometry-fixtures.js";

function pa(id: string, geometry: SourceGeometry, name = `Area ${id}`): NewProtectedArea {
  return {
    id,
    name,
    designation: "National Park",
    iucnCategory: "II",
    geometry,
    bbox: boundingBox(geometry),
    areaM2: geodesicAreaM2(geometry),
  };
}

const begin = (overrides: Partial<BeginImport> = {}): BeginImport => ({
  dataset: "WDPA",
  sourceFile: "/data/wdpa.geojson",
  now: 1_000_000,
  staleAfterMs: 60_000,
  force: false,
  ...overrides,
});

// --- pure parts ---

describe("layer state transitions (layer-state.ts)", () => {
  const at = new Date(5);

  function started(state: LayerStateDocument, id: string, overrides: Partial<BeginImport> = {}): LayerStateDocument {
    const begun = beginLayer(state, begin(overrides), id, at);
    if ("busy" in begun) throw new Error("busy");
    return begun.next;
  }

  it("begins a loading layer with its start as its first heartbeat", () => {
    const begun = beginLayer(emptyLayerState(), begin({ dataset: "WDPA Jan", now: 1_000 }), "pal_1", at);
    expect(begun).toEqual({
      layer: expect.objectContaining({ id: "pal_1" }),
      next: {
        _id: "layers",
        version: 0,
        active: null,
        loading: [
          {
            id: "pal_1",
            dataset: "WDPA Jan",
            source_file: "/data/wdpa.geojson",
            started_at: new Date(1_000),
            heartbeat_at: new Date(1_000),
            imported_at: null,
            feature_count: 0,
            rejected_count: 0,
          },
        ],
        retired: [],
      },
    });
  });

  it("is busy while another import's heartbeat is fresh; takes over a stale one or with force, retiring it", () => {
    const one = started(emptyLayerState(), "pal_1", { now: 1_000 });
    expect(beginLayer(one, begin({ now: 1_000 + 59_999 }), "pal_2", at)).toEqual({
      busy: expect.objectContaining({ dataset: "WDPA", heartbeatAt: 1_000, importedAt: null }),
    });
    const stale = started(one, "pal_2", { now: 1_000 + 60_000 });
    expect(stale.loading.map((l) => l.id)).toEqual(["pal_2"]);
    expect(stale.retired).toEqual([{ id: "pal_1", retired_at: at }]);
    const forced = started(one, "pal_3", { now: 1_001, force: true });
    expect(forced.loading.map((l) => l.id)).toEqual(["pal_3"]);
    expect(forced.retired.map((r) => r.id)).toEqual(["pal_1"]);
  });

  it("counts heartbeats only for a layer still loading", () => {
    const one = started(emptyLayerState(), "pal_1");
    const beat = heartbeatLayer(one, "pal_1", 250, 2_000_000);
    expect(beat?.loading[0]).toMatchObject({ heartbeat_at: new Date(2_000_000), feature_count: 250 });
    expect(heartbeatLayer(beat as LayerStateDocument, "pal_1", 5, 2_000_001)?.loading[0].feature_count).toBe(255);
    expect(heartbeatLayer(one, "pal_other", 1, 0)).toBeNull();
  });

  it("activates in one step: the new layer active, the old one retired, other loading layers untouched", () => {
    const first = activateLayer(
      started(emptyLayerState(), "pal_1"),
      "pal_1",
      { featureCount: 3, rejectedCount: 1 },
      2_000,
      at,
    );
    expect(first?.next.active).toMatchObject({
      id: "pal_1",
      imported_at: new Date(2_000),
      heartbeat_at: new Date(2_000),
      feature_count: 3,
      rejected_count: 1,
    });
    expect(first?.next.retired).toEqual([]);
    const withTwoLoading: LayerStateDocument = {
      ...(first as { next: LayerStateDocument }).next,
      loading: [...started(emptyLayerState(), "pal_2").loading, ...started(emptyLayerState(), "pal_3").loading],
    };
    const second = activateLayer(withTwoLoading, "pal_2", { featureCount: 9, rejectedCount: 0 }, 3_000, at);
    expect(second?.next.active?.id).toBe("pal_2");
    expect(second?.next.loading.map((l) => l.id)).toEqual(["pal_3"]);
    expect(second?.next.retired).toEqual([{ id: "pal_1", retired_at: at }]);
    expect(layerStatus(second?.next as LayerStateDocument)).toEqual({
      active: expect.objectContaining({ featureCount: 9, importedAt: 3_000 }),
      importing: [expect.objectContaining({ importedAt: null })],
    });
    expect(activateLayer(withTwoLoading, "pal_1", { featureCount: 0, rejectedCount: 0 }, 0, at)).toBeNull();
  });

  it("abandons only a loading layer", () => {
    const one = started(emptyLayerState(), "pal_1");
    expect(abandonLayer(one, "pal_1", at)).toMatchObject({ loading: [], retired: [{ id: "pal_1", retired_at: at }] });
    expect(abandonLayer(one, "pal_2", at)).toBeNull();
  });

  it("forgets emptied retired layers only after the grace period", () => {
    const state: LayerStateDocument = {
      ...emptyLayerState(),
      retired: [
        { id: "old", retired_at: new Date(1_000) },
        { id: "recent", retired_at: new Date(9_000) },
        { id: "not-emptied", retired_at: new Date(1_000) },
      ],
    };
    expect(forgetRetired(state, new Set(["old", "recent"]), 10_000, 5_000)?.retired.map((r) => r.id)).toEqual([
      "recent",
      "not-emptied",
    ]);
    expect(forgetRetired(state, new Set(["recent"]), 10_000, 5_000)).toBeNull();
  });
});

describe("protected-area documents (documents.ts)", () => {
  const area = pa("555", rect(0.5, -1, 2, 2), "Reserva Río Ñandú");

  it("stores an area with its layer, exact box, cover and geometry as given; ids sort in import order", () => {
    const { area: doc, chunks } = toProtectedAreaDocuments("pal_A", 7, area);
    expect(chunks).toEqual([]);
    expect(doc).toStrictEqual({
      _id: "pal_A:000000000007",
      layer_id: "pal_A",
      wdpa_id: "555",
      name: "Reserva Río Ñandú",
      designation: "National Park",
      iucn_category: "II",
      area_m2: area.areaM2,
      bbox: { min_x: 0.5, min_y: -1, max_x: 2, max_y: 2 },
      cover: expect.objectContaining({ type: "Polygon" }),
      geometry: area.geometry,
      geometry_chunks: 0,
    });
    expect(protectedAreaId("pal_A", 9) < protectedAreaId("pal_A", 10)).toBe(true);
  });

  it("stores a geometry with more positions than the inline limit as chunks of its JSON text", () => {
    const ring: Position[] = Array.from(
      { length: 40 },
      (_, i) => [Math.cos((i * Math.PI) / 20) + 10, Math.sin((i * Math.PI) / 20) + 10] as Position,
    );
    ring.push(ring[0]);
    const big = pa("9", { type: "Polygon", coordinates: [ring] });
    const { area: doc, chunks } = toProtectedAreaDocuments("pal_A", 0, big, { inlinePositions: 40, chunkChars: 100 });
    const text = JSON.stringify(big.geometry);
    expect(doc.geometry).toBeNull();
    expect(doc.geometry_chunks).toBe(Math.ceil(text.length / 100));
    expect(chunks.map((c) => c._id)).toEqual(chunks.map((_, n) => geometryChunkId("pal_A:000000000000", n)));
    expect(chunks.every((c) => c.layer_id === "pal_A" && c.area_id === doc._id && c.text.length <= 100)).toBe(true);
    expect(geometryFromChunks(doc._id, doc.geometry_chunks, [...chunks].reverse())).toEqual(big.geometry);
    expect(() => geometryFromChunks(doc._id, doc.geometry_chunks, chunks.slice(1))).toThrow(/chunk 0 of/);
    // At the limit it stays inline.
    expect(toProtectedAreaDocuments("pal_A", 0, big, { inlinePositions: 41, chunkChars: 100 }).chunks).toEqual([]);
  });
});

describe("the reader's geometry cache", () => {
  const g = (n: number): SourceGeometry => {
    const ring: Position[] = Array.from({ length: n - 1 }, (_, i) => [i, i % 2] as Position);
    ring.push(ring[0]);
    return { type: "Polygon", coordinates: [ring] };
  };

  it("drops the least recently used past its budget, skips oversized geometries, and empties on a layer change", () => {
    const cache = new GeometryCache<string, string>(10).forLayer("pal_A");
    cache.put("a", g(4));
    cache.put("b", g(4));
    expect(cache.get("a")).toBeDefined(); // a is now the most recent
    cache.put("c", g(4)); // 12 > 10: b goes
    expect([cache.get("a"), cache.get("b"), cache.get("c")].map((x) => x !== undefined)).toEqual([true, false, true]);
    cache.put("huge", g(11));
    expect(cache.get("huge")).toBeUndefined();
    expect(cache.forLayer("pal_A").size).toBe(2);
    expect(cache.forLayer("pal_B").size).toBe(0);
  });
});

// --- the in-memory fake driver ---

type Doc = Record<string, unknown>;

interface Call {
  target: string;
  method: string;
  args: unknown[];
}

function extentOf(geometry: unknown): { minX: number; minY: number; maxX: number; maxY: number } {
  const box = { minX: Infinity, minY: Infinity, maxX: -Infinity, maxY: -Infinity };
  const walk = (value: unknown) => {
    if (Array.isArray(value) && typeof value[0] === "number") {
      const [x, y] = value as number[];
      box.minX = Math.min(box.minX, x);
      box.maxX = Math.max(box.maxX, x);
      box.minY = Math.min(box.minY, y);
      box.maxY = Math.max(box.maxY, y);
    } else if (Array.isArray(value)) {
      value.forEach(walk);
    }
  };
  walk((geometry as { coordinates: unknown }).coordinates);
  return box;
}

/** Values as MongoDB orders those the tests use: numbers, strings, dates (as their time). */
function comparable(value: unknown): number | string {
  return value instanceof Date ? value.getTime() : (value as number | string);
}

function sameValue(value: unknown, condition: unknown): boolean {
  if (condition instanceof Date) return value instanceof Date && value.getTime() === condition.getTime();
  return value === condition;
}

function matches(doc: Doc, filter: Doc): boolean {
  return Object.entries(filter).every(([key, condition]) => {
    if (key === "$or") return (condition as Doc[]).some((clause) => matches(doc, clause));
    const value = doc[key];
    if (
      condition !== null &&
      typeof condition === "object" &&
      !Array.isArray(condition) &&
      !(condition instanceof Date)
    ) {
      return Object.entries(condition as Doc).every(([operator, operand]) => {
        switch (operator) {
          case "$in":
            return (operand as unknown[]).some((candidate) => sameValue(value, candidate));
          case "$ne":
            return !sameValue(value, operand);
          case "$exists":
            return (value !== undefined) === operand;
          case "$gt":
            return value !== undefined && comparable(value) > comparable(operand);
          case "$gte":
            return value !== undefined && comparable(value) >= comparable(operand);
          case "$lt":
            return value !== undefined && comparable(value) < comparable(operand);
          case "$lte":
            return value !== undefined && comparable(value) <= comparable(operand);
          case "$geoIntersects": {
            if (value === undefined || value === null) return false;
            const a = extentOf((operand as { $geometry: unknown }).$geometry);
            const b = extentOf(value);
            return a.minX <= b.maxX && b.minX <= a.maxX && a.minY <= b.maxY && b.minY <= a.maxY;
          }
          default:
            throw new Error(`the fake does not know ${operator}`);
        }
      });
    }
    return sameValue(value, condition);
  });
}

/** An inclusion projection (fields set to 1, `_id` unless 0), or an exclusion one (only `_id: 0`). */
function project(doc: Doc, projection: Doc | undefined): Doc {
  if (projection === undefined) return structuredClone(doc);
  const included = Object.entries(projection).filter(([key, flag]) => key !== "_id" && flag === 1);
  if (included.length === 0) {
    const out = structuredClone(doc);
    for (const [key, flag] of Object.entries(projection)) if (flag === 0) delete out[key];
    return out;
  }
  const out: Doc = {};
  if (projection._id !== 0) out._id = doc._id;
  for (const [key] of included) {
    // A dotted path keeps that field of the embedded document, as MongoDB does.
    const [head, ...rest] = key.split(".");
    if (!(head in doc)) continue;
    if (rest.length === 0) out[head] = structuredClone(doc[head]);
    else {
      const inner = doc[head] as Doc | undefined;
      if (inner !== undefined && inner !== null && rest[0] in inner) {
        out[head] = { ...((out[head] as Doc | undefined) ?? {}), ...project(inner, { _id: 0, [rest.join(".")]: 1 }) };
      }
    }
  }
  return out;
}

function sortDocs(docs: Doc[], sort: Record<string, 1 | -1> | undefined): Doc[] {
  if (sort === undefined) return docs;
  const keys = Object.entries(sort);
  return [...docs].sort((x, y) => {
    for (const [key, direction] of keys) {
      const a = comparable(x[key]);
      const b = comparable(y[key]);
      if (a !== b) return (a < b ? -1 : 1) * direction;
    }
    return 0;
  });
}

/** `$set`, `$inc`, `$max` and `$setOnInsert` (applied by an upsert that inserts), the update operators the store sends. */
function applyUpdate(doc: Doc, update: Doc, inserting = false): void {
  for (const [operator, fields] of Object.entries(update)) {
    for (const [key, value] of Object.entries(fields as Doc)) {
      if (operator === "$set" || (operator === "$setOnInsert" && inserting)) doc[key] = structuredClone(value);
      else if (operator === "$setOnInsert") continue;
      else if (operator === "$inc") doc[key] = ((doc[key] as number | undefined) ?? 0) + (value as number);
      else if (operator === "$max") {
        if (doc[key] === undefined || comparable(value) > comparable(doc[key])) doc[key] = structuredClone(value);
      } else throw new Error(`the fake does not know ${operator}`);
    }
  }
}

function altIdDuplicateKey(doc: Doc): MongoServerError {
  return Object.assign(
    new MongoServerError({
      message: `E11000 duplicate key error collection: ledger.sources index: account_alt_id_unique dup key`,
      code: 11000,
    }),
    { keyPattern: { account_id: 1, alt_id: 1 }, keyValue: { account_id: doc.account_id, alt_id: doc.alt_id } },
  );
}

function duplicateKey(collection: string, id: unknown): MongoServerError {
  return new MongoServerError({
    message: `E11000 duplicate key error collection: ledger.${collection} index: _id_ dup key: { _id: "${String(id)}" }`,
    code: 11000,
  });
}

/**
 * One database in memory, shared by every client made from it (like two processes on one
 * server). Documents are cloned in and out, as BSON would. Sessions run their callback once, with
 * no isolation (the tests do not race readers against writers here; mongodb.test.ts does, on a
 * real server), but a callback that throws leaves the collections as they were (a transaction's
 * all or nothing). `sources` enforces the unique (account_id, alt_id) index.
 */
class MemoryMongo {
  readonly collections = new Map<string, Map<unknown, Doc>>();
  readonly calls: Call[] = [];
  readonly transactions: unknown[] = [];
  /** Runs before a call is answered (to interleave another writer, or to fail). */
  readonly before = new Map<string, (...args: unknown[]) => void>();

  private docs(name: string): Map<unknown, Doc> {
    let docs = this.collections.get(name);
    if (docs === undefined) {
      docs = new Map();
      this.collections.set(name, docs);
    }
    return docs;
  }

  count(name: string, filter: Doc = {}): number {
    return [...this.docs(name).values()].filter((d) => matches(d, filter)).length;
  }

  all(name: string): Doc[] {
    return [...this.docs(name).values()];
  }

  callsTo(target: string, method: string): unknown[][] {
    return this.calls.filter((c) => c.target === target && c.method === method).map((c) => c.args);
  }

  private record(target: string, method: string, args: unknown[]): void {
    this.calls.push({ target, method, args });
    this.before.get(`${target}.${method}`)?.(...args);
  }

  collection(name: string) {
    const docs = () => this.docs(name);
    type FindOptions = { projection?: Doc; limit?: number; sort?: Record<string, 1 | -1> };
    const find = (filter: Doc, options: FindOptions = {}) => {
      let found = sortDocs(
        [...docs().values()].filter((d) => matches(d, filter)),
        options.sort,
      );
      if (options.limit !== undefined && options.limit > 0) found = found.slice(0, options.limit);
      return found.map((d) => project(d, options.projection));
    };
    const updateWhere = (filter: Doc, update: Doc, options: { upsert?: boolean } = {}, many = false) => {
      const targets = [...docs().values()].filter((d) => matches(d, filter));
      // A changed copy replaces the document (top-level fields only), so a transaction's snapshot
      // of the collections can keep the old one.
      for (const target of many ? targets : targets.slice(0, 1)) {
        const changed = { ...target };
        applyUpdate(changed, update);
        docs().set(target._id, changed);
      }
      if (targets.length === 0 && options.upsert) {
        const inserted: Doc = { _id: filter._id };
        applyUpdate(inserted, update, true);
        docs().set(inserted._id, inserted);
      }
      return targets.length;
    };
    return {
      createIndexes: async (...args: unknown[]) => {
        this.record(name, "createIndexes", args);
        docs();
        return [];
      },
      dropIndex: async (...args: unknown[]) => {
        this.record(name, "dropIndex", args);
        return {};
      },
      insertMany: async (inserted: Doc[], ...rest: unknown[]) => {
        this.record(name, "insertMany", [inserted, ...rest]);
        for (const doc of inserted) {
          if (docs().has(doc._id)) throw duplicateKey(name, doc._id);
          // The unique (account_id, alt_id) index of sources.
          if (name === "sources") {
            const taken = [...docs().values()].some((d) => d.account_id === doc.account_id && d.alt_id === doc.alt_id);
            if (taken) throw altIdDuplicateKey(doc);
          }
          docs().set(doc._id, structuredClone(doc));
        }
        return { acknowledged: true, insertedCount: inserted.length };
      },
      find: (filter: Doc, options?: FindOptions) => ({
        toArray: async () => {
          this.record(name, "find", [filter, options]);
          return find(filter, options);
        },
      }),
      findOne: async (filter: Doc, options?: FindOptions) => {
        this.record(name, "findOne", [filter, options]);
        return find(filter, options)[0] ?? null;
      },
      findOneAndDelete: async (filter: Doc, options?: FindOptions) => {
        this.record(name, "findOneAndDelete", [filter, options]);
        const target = [...docs().values()].find((d) => matches(d, filter));
        if (target === undefined) return null;
        docs().delete(target._id);
        return project(target, options?.projection);
      },
      replaceOne: async (filter: Doc, replacement: Doc, options: { upsert?: boolean } = {}) => {
        this.record(name, "replaceOne", [filter, replacement, options]);
        const target = [...docs().values()].find((d) => matches(d, filter));
        if (target !== undefined) {
          docs().set(target._id, { _id: target._id, ...structuredClone(replacement) });
          return { matchedCount: 1, modifiedCount: 1, upsertedCount: 0 };
        }
        if (!options.upsert) return { matchedCount: 0, modifiedCount: 0, upsertedCount: 0 };
        if (docs().has(filter._id)) throw duplicateKey(name, filter._id);
        docs().set(filter._id, { _id: filter._id, ...structuredClone(replacement) });
        return { matchedCount: 0, modifiedCount: 0, upsertedCount: 1 };
      },
      deleteMany: async (filter: Doc) => {
        this.record(name, "deleteMany", [filter]);
        let deletedCount = 0;
        for (const [id, doc] of docs()) {
          if (matches(doc, filter)) {
            docs().delete(id);
            deletedCount++;
          }
        }
        return { deletedCount };
      },
      updateOne: async (filter: Doc, update: Doc, options: { upsert?: boolean } = {}) => {
        this.record(name, "updateOne", [filter, update, options]);
        return { acknowledged: true, matchedCount: updateWhere(filter, update, options) };
      },
      updateMany: async (filter: Doc, update: Doc, ...rest: unknown[]) => {
        this.record(name, "updateMany", [filter, update, ...rest]);
        return { acknowledged: true, matchedCount: updateWhere(filter, update, {}, true) };
      },
      bulkWrite: async (operations: Doc[], ...rest: unknown[]) => {
        this.record(name, "bulkWrite", [operations, ...rest]);
        for (const operation of operations) {
          const { filter, update, upsert } = operation.updateOne as { filter: Doc; update: Doc; upsert?: boolean };
          updateWhere(filter, update, { upsert });
        }
        return { acknowledged: true };
      },
    };
  }

  /** A client of this database, as the driver's MongoClient is used. */
  client(): MongoClient {
    const session = {
      withTransaction: async (fn: (s: unknown) => Promise<unknown>, options: unknown) => {
        this.transactions.push(options);
        this.calls.push({ target: "session", method: "startTransaction", args: [] });
        // Documents are never changed in place (updates replace them), so copying the maps is a snapshot.
        const before = new Map([...this.collections].map(([name, docs]) => [name, new Map(docs)]));
        try {
          return await fn(session);
        } catch (error) {
          this.collections.clear();
          for (const [name, docs] of before) this.collections.set(name, docs);
          throw error;
        }
      },
      // Wrapped by the store (store.ts commitWithinBudget); the scripted withTransaction commits nothing.
      commitTransaction: async () => undefined,
      endSession: async () => undefined,
    };
    const client = {
      db: () => ({
        collection: (name: string) => this.collection(name),
        command: async () => ({ setName: "rs0", ok: 1 }),
        createCollection: async (name: string) => {
          this.record("db", "createCollection", [name]);
          this.docs(name);
          return {};
        },
      }),
      connect: async () => client,
      startSession: () => session,
      close: async () => undefined,
    };
    return client as unknown as MongoClient;
  }
}

// --- behaviour through the fake ---

const source = rect(0, 0, 1, 1);
const half = geodesicAreaM2(rect(0.5, 0, 1, 1));

describe("MongoDB protected-area layers and unep_overlap (in-memory fake)", () => {
  let mongo: MemoryMongo;
  let clock: number;
  let layerCounter: number;

  beforeEach(() => {
    mongo = new MemoryMongo();
    clock = 1_000_000;
    layerCounter = 0;
  });

  function openStore(policy = true): MongoSourceStore {
    return new MongoSourceStore(
      mongo.client(),
      "ledger",
      policy ? { conflictPolicy, protectedAreaPolicy: unepOverlapPolicy } : {},
    );
  }

  function openLayers(options: { retiredGraceMs?: number; inlinePositions?: number } = {}): MongoProtectedAreaLayers {
    return new MongoProtectedAreaLayers(mongo.client(), "ledger", {
      clock: () => clock,
      newLayerId: () => `pal_${++layerCounter}`,
      retiredGraceMs: options.retiredGraceMs ?? 0,
      ...(options.inlinePositions === undefined
        ? {}
        : { geometryLimits: { inlinePositions: options.inlinePositions, chunkChars: 64 } }),
    });
  }

  async function start(layers: MongoProtectedAreaLayers, dataset: string, now = clock): Promise<LayerImport> {
    const begun = await layers.begin(begin({ dataset, sourceFile: `/data/${dataset}.geojson`, now }));
    if (!("started" in begun)) throw new Error("expected the import to start");
    return begun.started;
  }

  async function loadLayer(layers: MongoProtectedAreaLayers, dataset: string, areas: NewProtectedArea[]) {
    const layer = await start(layers, dataset);
    await layer.append(areas, clock);
    return layer.activate({ featureCount: areas.length, rejectedCount: 0 }, clock);
  }

  async function create(store: MongoSourceStore, geometry: SourceGeometry = source) {
    const [record] = await store.insertMany([
      makeRecord({ geometry, unepOverlap: structuredClone(sampleUnepOverlap) }),
    ]);
    return record;
  }

  it("is null while no layer is loaded", async () => {
    expect((await create(openStore())).unepOverlap).toBeNull();
  });

  it("a source half inside a protected area: fraction 0.5 and that half's area, stored as returned", async () => {
    const store = openStore();
    await loadLayer(openLayers(), "WDPA Test", [
      pa("555", rect(0.5, -1, 2, 2), "Half Park"),
      pa("9", rect(50, 50, 51, 51)),
    ]);
    const record = await create(store);
    expect(record.unepOverlap).toEqual({
      dataset: "WDPA Test",
      overlaps: true,
      areaM2: expect.closeTo(half, 3),
      fraction: expect.closeTo(0.5, 9),
      areas: [
        {
          id: "555",
          name: "Half Park",
          designation: "National Park",
          iucnCategory: "II",
          areaM2: expect.closeTo(half, 3),
        },
      ],
    });
    const inserted = mongo.all("sources").find((d) => d._id === record.id);
    expect(inserted?.unep_overlap).toEqual({
      dataset: "WDPA Test",
      overlaps: true,
      area_m2: record.unepOverlap?.areaM2,
      fraction: record.unepOverlap?.fraction,
      areas: [
        {
          id: "555",
          name: "Half Park",
          designation: "National Park",
          iucn_category: "II",
          area_m2: record.unepOverlap?.areas[0].areaM2,
        },
      ],
    });
    const far = await create(store, rect(20, 20, 21, 21));
    expect(far.unepOverlap).toEqual({ dataset: "WDPA Test", overlaps: false, areaM2: 0, fraction: 0, areas: [] });
  });

  it("reads the layer and its candidates in a snapshot transaction with the pinned queries, before the write transaction", async () => {
    const store = openStore();
    await store.ready(); // setup (indexes, the history fill's markers) is not what this test looks at
    await loadLayer(openLayers(), "WDPA", [pa("1", rect(0.5, -1, 2, 2))]);
    mongo.calls.length = 0;
    mongo.transactions.length = 0;
    const record = makeRecord({ geometry: source });
    await store.insertMany([record]);

    expect(mongo.transactions).toEqual([TRANSACTION_OPTIONS, TRANSACTION_OPTIONS]);
    const sequence = mongo.calls
      .filter((c) => !["createIndexes", "dropIndex", "createCollection"].includes(c.method))
      .map((c) => `${c.target}.${c.method}`);
    expect(sequence).toEqual([
      "session.startTransaction",
      "protected_area_layers.findOne",
      "protected_areas.find",
      "protected_areas.find",
      "session.startTransaction",
      "conflict_guards.find",
      "conflict_guards.bulkWrite",
      "sources.find",
      "sources.insertMany",
      "source_events.insertMany",
      "source_boxes.insertMany",
    ]);
    const session = expect.objectContaining({ withTransaction: expect.any(Function) });
    expect(mongo.callsTo("protected_area_layers", "findOne")).toEqual([
      [LAYER_STATE_FILTER, { ...ACTIVE_LAYER_OPTIONS, session }],
    ]);
    const [candidates, geometries] = mongo.callsTo("protected_areas", "find");
    expect(candidates).toEqual([
      protectedAreaCandidatesFilter("pal_1", [record.bbox]),
      { ...PROTECTED_AREA_CANDIDATE_OPTIONS, session },
    ]);
    expect(geometries).toEqual([areaGeometriesFilter(["pal_1:000000000000"]), { ...AREA_GEOMETRY_OPTIONS, session }]);

    // The geometry is cached now: the next create near it reads only the candidates.
    mongo.calls.length = 0;
    await store.insertMany([makeRecord({ geometry: rect(0.25, 0, 1.25, 1) })]);
    expect(mongo.callsTo("protected_areas", "find")).toHaveLength(1);
  });

  it("asks about a batch's boxes together, and gives each source its own overlap", async () => {
    const store = openStore();
    await loadLayer(openLayers(), "WDPA", [pa("1", rect(0.5, -1, 2, 2)), pa("2", rect(30, 30, 31, 31))]);
    mongo.calls.length = 0;
    const records = [
      makeRecord({ geometry: source }),
      makeRecord({ geometry: rect(0.75, 0, 1.75, 1) }),
      makeRecord({ geometry: rect(30.5, 30, 31.5, 31) }),
    ];
    const returned = await store.insertMany(records);
    expect(returned.map((r) => r.unepOverlap?.fraction)).toEqual([
      expect.closeTo(0.5, 9),
      expect.closeTo(1, 9),
      expect.closeTo(0.5, 9),
    ]);
    expect(returned[2].unepOverlap?.areas.map((a) => a.id)).toEqual(["2"]);
    expect(mongo.callsTo("protected_areas", "find")[0][0]).toEqual(
      protectedAreaCandidatesFilter(
        "pal_1",
        records.map((r) => r.bbox),
      ),
    );
  });

  it("two protected areas covering the same part are listed both but counted once", async () => {
    const store = openStore();
    await loadLayer(openLayers(), "WDPA", [pa("1", rect(0.5, -1, 2, 2)), pa("2", rect(0.5, -2, 3, 3))]);
    const { unepOverlap } = await create(store);
    expect(unepOverlap?.areaM2).toBeCloseTo(half, 3);
    expect(unepOverlap?.fraction).toBeCloseTo(0.5, 9);
    expect(unepOverlap?.areas.map((a) => a.id)).toEqual(["1", "2"]);
  });

  it("reads a geometry stored in chunks like any other", async () => {
    const store = openStore();
    await loadLayer(openLayers({ inlinePositions: 4 }), "WDPA", [
      pa("1", rect(0.5, -1, 2, 2)),
      pa("2", {
        type: "MultiPolygon",
        coordinates: [rect(0, 0, 0.25, 1).coordinates, rect(40, 40, 41, 41).coordinates],
      }),
    ]);
    expect(mongo.count("protected_area_geometry_chunks")).toBeGreaterThan(1);
    const { unepOverlap } = await create(store);
    expect(unepOverlap?.fraction).toBeCloseTo(0.75, 9);
    expect(unepOverlap?.areas.map((a) => a.id).sort()).toEqual(["1", "2"]);
  });

  it("sees a layer another client activates on its next create; never a layer still loading", async () => {
    const store = openStore();
    const layers = openLayers();
    expect((await create(store)).unepOverlap).toBeNull();
    await loadLayer(layers, "first", [pa("1", rect(0, 0, 0.25, 1))]);
    expect((await create(store)).unepOverlap).toMatchObject({ dataset: "first", fraction: expect.closeTo(0.25, 9) });

    const loading = await start(layers, "second");
    await loading.append([pa("2", rect(-5, -5, 5, 5))], clock);
    expect((await create(store)).unepOverlap).toMatchObject({ dataset: "first", fraction: expect.closeTo(0.25, 9) });
    expect((await layers.status()).importing.map((l) => [l.dataset, l.featureCount])).toEqual([["second", 1]]);

    await loading.activate({ featureCount: 1, rejectedCount: 3 }, clock + 5);
    expect((await create(store)).unepOverlap).toMatchObject({
      dataset: "second",
      fraction: expect.closeTo(1, 9),
      areas: [{ id: "2" }],
    });
    const status = await layers.status();
    expect(status.active).toEqual({
      dataset: "second",
      sourceFile: "/data/second.geojson",
      featureCount: 1,
      rejectedCount: 3,
      startedAt: clock,
      importedAt: clock + 5,
      heartbeatAt: clock + 5,
    });
    expect(status.importing).toEqual([]);
  });

  it("an abandoned import leaves the old layer; garbage collection deletes retired layers' areas and chunks", async () => {
    const store = openStore();
    const layers = openLayers({ inlinePositions: 4 });
    await loadLayer(layers, "kept", [pa("1", rect(0, 0, 0.5, 1))]);
    const failed = await start(layers, "failed");
    await failed.append([pa("2", rect(0, 0, 1, 1)), pa("3", rect(3, 3, 4, 4))], clock);
    await failed.abandon();
    expect((await create(store)).unepOverlap).toMatchObject({ dataset: "kept", fraction: expect.closeTo(0.5, 9) });

    expect(await layers.collectGarbage()).toBe(2);
    expect(mongo.count("protected_area_geometry_chunks", { layer_id: "pal_2" })).toBe(0);
    await loadLayer(layers, "next", [pa("4", rect(0, 0, 1, 1))]);
    expect(await layers.collectGarbage()).toBe(1);
    expect(mongo.all("protected_areas").map((d) => d.layer_id)).toEqual(["pal_3"]);
    expect(mongo.all("protected_area_geometry_chunks").every((d) => d.layer_id === "pal_3")).toBe(true);
    expect(mongo.all("protected_area_layers")).toEqual([
      expect.objectContaining({
        _id: "layers",
        active: expect.objectContaining({ id: "pal_3", dataset: "next" }),
        loading: [],
        retired: [],
      }),
    ]);
    expect((await create(store)).unepOverlap).toMatchObject({ dataset: "next", fraction: expect.closeTo(1, 9) });
  });

  it("deletes a large retired layer a batch of 1,000 at a time", async () => {
    const layers = openLayers();
    const areas = Array.from({ length: 2_345 }, (_, i) => pa(String(i), rect(i * 0.01, 0, i * 0.01 + 0.005, 0.005)));
    await loadLayer(layers, "big", areas);
    await loadLayer(layers, "small", [pa("x", rect(0, 0, 1, 1))]);
    mongo.calls.length = 0;
    expect(await layers.collectGarbage()).toBe(2_345);
    expect(
      mongo
        .callsTo("protected_areas", "deleteMany")
        .map(([filter]) => (filter as { _id: { $in: unknown[] } })._id.$in.length),
    ).toEqual([1_000, 1_000, 345]);
    expect(mongo.count("protected_areas")).toBe(1);
  });

  it("keeps a retired layer listed for the grace period, so a batch landing after the deletion is deleted too", async () => {
    const layers = openLayers({ retiredGraceMs: 60_000 });
    await loadLayer(layers, "old", [pa("1", rect(0, 0, 1, 1))]);
    await loadLayer(layers, "new", [pa("2", rect(0, 0, 1, 1))]);
    expect(await layers.collectGarbage()).toBe(1);
    expect(mongo.all("protected_area_layers")[0].retired).toEqual([{ id: "pal_1", retired_at: new Date(clock) }]);
    // A late batch of the retired layer (an import taken over while writing).
    await mongo
      .collection("protected_areas")
      .insertMany([toProtectedAreaDocuments("pal_1", 99, pa("9", rect(0, 0, 1, 1))).area as unknown as Doc]);
    expect(await layers.collectGarbage()).toBe(1);
    clock += 60_001;
    expect(await layers.collectGarbage()).toBe(0);
    expect(mongo.all("protected_area_layers")[0].retired).toEqual([]);
  });

  it("refuses a second import while one is alive, takes over a stale one or with force, and the loser cannot write or activate", async () => {
    const layers = openLayers();
    const t0 = 1_000_000;
    const first = await start(layers, "first", t0);
    const busy = await layers.begin(begin({ dataset: "second", sourceFile: "x", now: t0 + 1_000 }));
    expect(busy).toEqual({ busy: expect.objectContaining({ dataset: "first", importedAt: null }) });

    const forced = await layers.begin(begin({ dataset: "second", sourceFile: "x", now: t0 + 2_000, force: true }));
    expect("started" in forced).toBe(true);
    await expect(first.append([pa("1", rect(0, 0, 1, 1))], t0 + 3_000)).rejects.toBeInstanceOf(LayerSupersededError);
    await expect(first.activate({ featureCount: 0, rejectedCount: 0 }, t0 + 3_000)).rejects.toBeInstanceOf(
      LayerSupersededError,
    );
    // The batch the loser wrote before it noticed is the retired layer's, and is collected.
    expect(mongo.count("protected_areas", { layer_id: "pal_1" })).toBe(1);
    await layers.collectGarbage();
    expect(mongo.count("protected_areas", { layer_id: "pal_1" })).toBe(0);

    const stale = await layers.begin(begin({ dataset: "third", sourceFile: "y", now: t0 + 120_000 }));
    expect("started" in stale).toBe(true);
    expect((await layers.status()).importing.map((l) => l.dataset)).toEqual(["third"]);
  });

  it("retries a state write another writer got in before (optimistic concurrency), and gives up as unavailable", async () => {
    const layers = openLayers();
    const layer = await start(layers, "first");
    // Another writer bumps the version between this writer's read and its write, twice.
    let interleave = 2;
    mongo.before.set("protected_area_layers.replaceOne", () => {
      if (interleave-- <= 0) return;
      const state = mongo.collections.get("protected_area_layers")?.get("layers") as Doc;
      state.version = (state.version as number) + 1;
    });
    await layer.append([pa("1", rect(0, 0, 1, 1))], clock + 1);
    const replaces = mongo.callsTo("protected_area_layers", "replaceOne");
    expect(replaces.slice(-3).map(([filter]) => (filter as { version: number }).version)).toEqual([1, 2, 3]);
    expect((await layers.status()).importing[0].featureCount).toBe(1);

    mongo.before.set("protected_area_layers.replaceOne", () => {
      const state = mongo.collections.get("protected_area_layers")?.get("layers") as Doc;
      state.version = (state.version as number) + 1;
    });
    await expect(layer.activate({ featureCount: 1, rejectedCount: 0 }, clock)).rejects.toThrow(StoreUnavailableError);
  }, 20_000);

  it("a state document from the first import on: inserted at version 1, then replaced at each step", async () => {
    const layers = openLayers();
    const layer = await start(layers, "first");
    expect(mongo.callsTo("protected_area_layers", "replaceOne")[0]).toEqual([
      { _id: "layers", version: 0 },
      expect.objectContaining({ version: 1 }),
      { upsert: true },
    ]);
    await layer.append([pa("1", rect(0, 0, 1, 1))], clock);
    await layer.activate({ featureCount: 1, rejectedCount: 0 }, clock);
    expect(mongo.all("protected_area_layers")).toEqual([expect.objectContaining({ _id: "layers", version: 3 })]);
  });

  it("without a policy the store keeps unep_overlap as given and reads no layer (the contract suite relies on it)", async () => {
    await loadLayer(openLayers(), "WDPA", [pa("1", rect(-5, -5, 5, 5))]);
    const store = openStore(false);
    mongo.calls.length = 0;
    const record = makeRecord({ geometry: source, unepOverlap: structuredClone(sampleUnepOverlap) });
    expect(await store.insertMany([record])).toEqual([stored(record)]);
    expect(mongo.callsTo("protected_area_layers", "findOne")).toEqual([]);
  });

  it("layer operations failing for availability are StoreUnavailableError; after close nothing is sent", async () => {
    const layers = openLayers();
    mongo.before.set("protected_area_layers.findOne", () => {
      throw new MongoServerError({ message: "not primary", code: 10107, codeName: "NotWritablePrimary" });
    });
    await expect(layers.status()).rejects.toBeInstanceOf(StoreUnavailableError);
    mongo.before.clear();
    await layers.close();
    const before = mongo.calls.length;
    await expect(layers.status()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(layers.collectGarbage()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(mongo.calls.length).toBe(before);
  });

  describe("the CLI's import into MongoDB (importProtectedAreas)", () => {
    let temp: TempDir;

    beforeEach(() => {
      temp = tempDir("mongo-pa-import-");
    });

    afterEach(() => {
      temp.remove();
    });

    it("loads the valid features, swaps the layer in, and a new import replaces it and clears the old areas", async () => {
      const layers = openLayers();
      const store = openStore();
      const file = temp.write(
        "first.geojson",
        featureCollection([
          paFeature(1, rect(0, 0, 0.5, 1)),
          paFeature(undefined, rect(0, 0, 1, 1)),
          paFeature(2, rect(5, 5, 6, 6)),
          paFeature(3, rect(7, 7, 8, 8)),
        ]),
      );
      const first = await importProtectedAreas({ file, dataset: " first ", layers, batchSize: 2 });
      expect(first).toMatchObject({
        dataset: "first",
        accepted: 3,
        rejected: 1,
        garbageCollected: 0,
        garbageError: null,
      });
      expect(first.layer).toMatchObject({ dataset: "first", featureCount: 3, rejectedCount: 1, sourceFile: file });
      expect(await layers.status()).toEqual({ active: first.layer, importing: [] });
      expect(
        mongo.callsTo("protected_areas", "insertMany").map(([docs, options]) => [(docs as unknown[]).length, options]),
      ).toEqual([
        [2, { ordered: false }],
        [1, { ordered: false }],
      ]);
      expect((await create(store)).unepOverlap).toMatchObject({ dataset: "first", fraction: expect.closeTo(0.5, 9) });

      const second = await importProtectedAreas({
        file: temp.write("second.geojson", featureCollection([paFeature(4, rect(0, 0, 0.25, 1))])),
        dataset: "second",
        layers,
      });
      expect(second.garbageCollected).toBe(3);
      expect(mongo.count("protected_areas")).toBe(1);
      expect((await create(store)).unepOverlap).toMatchObject({ dataset: "second", fraction: expect.closeTo(0.25, 9) });
    });

    it("a failed import leaves the loaded layer and deletes what it wrote", async () => {
      const layers = openLayers();
      const store = openStore();
      await importProtectedAreas({
        file: temp.write("good.geojson", featureCollection([paFeature(1, rect(0, 0, 0.5, 1))])),
        dataset: "good",
        layers,
      });
      const text = JSON.stringify(
        featureCollection([paFeature(9, rect(-5, -5, 5, 5)), paFeature(10, rect(0, 0, 1, 1))]),
      ).slice(0, -30);
      await expect(
        importProtectedAreas({ file: temp.write("truncated.geojson", text), dataset: "bad", layers, batchSize: 1 }),
      ).rejects.toThrow(/ends before its JSON is complete/);
      expect((await create(store)).unepOverlap).toMatchObject({ dataset: "good", fraction: expect.closeTo(0.5, 9) });
      expect(mongo.count("protected_areas")).toBe(1);
      expect((await layers.status()).importing).toEqual([]);
    });
  });
});

describe("openProtectedAreaLayers on LEDGER_STORE=mongodb", () => {
  it("refuses a URI that does not parse as a configuration error, without repeating it", async () => {
    const config = loadConfig({ LEDGER_STORE: "mongodb", MONGODB_URI: "postgres://ledger:hunter2@db/x" });
    const error = await openProtectedAreaLayers(config).catch((e: unknown) => e);
    expect((error as Error).name).toBe("ConfigError");
    expect((error as Error).message).not.toContain("hunter2");
  });
});

// --- the event log and conflict pairs through the fake ---

// The history part of the store contract (docs/api.md §14), without and with the conflict policy;
// mongodb.test.ts runs the whole contract against a real replica set.
describe("SourceStore history contract: mongodb (in-memory fake)", () => {
  describeHistoryContract(() => new MongoSourceStore(new MemoryMongo().client(), "ledger"), {
    keepsRecordOfDeleted: true,
    makeConflictStore: async () => {
      const store = new MongoSourceStore(new MemoryMongo().client(), "ledger", { conflictPolicy });
      return { store, cleanup: () => store.close() };
    },
  });
});

describe("source history, conflict pairs and as_of (in-memory fake, docs/api.md §14)", () => {
  const ACCOUNTS = ["acct_a", "acct_b", "acct_c"];
  const pairKey = (a: string, b: string) => `${a}|${b}`;

  interface ModelPair {
    a: NewSourceRecord;
    b: NewSourceRecord;
    measure: ConflictMeasure;
  }

  /**
   * Seeded random creates (batches of 1–3) and deletes (by id or alt_id, in the account or as an
   * admin, and some that delete nothing) over overlapping rectangles of three accounts, against a
   * brute-force model: the live pairs are exactly the conflicting pairs of live sources (found by
   * the create of the later one, measured from its side). After every step the stored documents
   * must say the same, with the invariant "flag ⇔ at least one live pair; every pair has its
   * conflict_set on both sides", and every history must be 1..n, created first, deleted last.
   */
  it("keeps flags, pairs, measures and histories equal to a brute-force model over 300 random steps; as_of replays them", async () => {
    const mongo = new MemoryMongo();
    const store = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    const random = prng(20_261_126);
    let clock = Date.UTC(2024, 0, 1);
    const live = new Map<string, NewSourceRecord>();
    const created: NewSourceRecord[] = [];
    const pairs = new Map<string, ModelPair>();
    const snapshots: { at: number; flags: Map<string, boolean> }[] = [];
    let conflictsSeen = 0;
    let clearedSeen = 0;

    const flagOf = (id: string) => {
      for (const pair of pairs.values()) if (pair.a.id === id || pair.b.id === id) return true;
      return false;
    };
    const randomRecord = (): NewSourceRecord => {
      const w = 0.3 + random() * 1.2;
      const h = 0.3 + random() * 1.2;
      const x = random() * 12;
      const y = random() * 12;
      const startYear = 2020 + Math.floor(random() * 3);
      return makeRecord({
        accountId: ACCOUNTS[Math.floor(random() * ACCOUNTS.length)],
        geometry: rect(x, y, x + w, y + h),
        startAt: Date.UTC(startYear, 0, 1),
        endAt: Date.UTC(startYear + 1 + Math.floor(random() * 2), 0, 1),
        attributeType: random() < 0.3 ? [] : ["CARBON_REMOVAL", "BIODIVERSITY"].filter(() => random() < 0.6),
        createdAt: clock,
        updatedAt: clock,
        createdBy: `creator-${created.length}`,
      });
    };

    /** Every way the stored documents differ from the model (plain code: a few expects per step). */
    function differences(): string[] {
      const problems: string[] = [];
      const docs = mongo.all("sources");
      const storedPairs = mongo.all("conflict_pairs") as unknown as ConflictPairDocument[];
      const events = mongo.all("source_events") as unknown as SourceEventDocument[];
      const eventsOf = new Map<string, SourceEventDocument[]>();
      for (const event of events) {
        const list = eventsOf.get(event.source_id);
        if (list === undefined) eventsOf.set(event.source_id, [event]);
        else list.push(event);
      }
      for (const list of eventsOf.values()) list.sort((x, y) => x.seq - y.seq);
      const pairsOf = new Map<string, number>();
      for (const pair of storedPairs) {
        for (const id of [pair.a, pair.b]) pairsOf.set(id, (pairsOf.get(id) ?? 0) + 1);
      }
      const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);

      if (!same(docs.map((d) => d._id).sort(), [...live.keys()].sort())) problems.push("live sources differ");
      if (!same(storedPairs.map((p) => p._id).sort(), [...pairs.keys()].sort())) problems.push("pairs differ");
      for (const pair of storedPairs) {
        const model = pairs.get(pair._id);
        if (model === undefined) continue;
        if (pair.a !== model.a.id || pair.b !== model.b.id) problems.push(`${pair._id}: sides`);
        if (!same(pair.measure, toMeasureDocument(model.measure))) problems.push(`${pair._id}: measure`);
        if (pair.detected_at.getTime() !== model.a.createdAt) problems.push(`${pair._id}: detected_at`);
        // conflict_set on both sides, each naming the other with the measure from its side.
        const sides: [NewSourceRecord, NewSourceRecord, ConflictMeasure][] = [
          [model.a, model.b, model.measure],
          [model.b, model.a, fromOtherSide(model.measure)],
        ];
        for (const [side, other, measure] of sides) {
          const set = (eventsOf.get(side.id) ?? []).filter(
            (e) => e.type === "conflict_set" && e.counterpart?.id === other.id,
          );
          const expected = {
            counterpart: { id: other.id, alt_id: other.altId, account_id: other.accountId },
            measure: toMeasureDocument(measure),
          };
          if (set.length !== 1 || !same({ counterpart: set[0].counterpart, measure: set[0].measure }, expected)) {
            problems.push(`${pair._id}: conflict_set on ${side.id}`);
          }
        }
      }
      const modelPaired = new Set([...pairs.values()].flatMap((p) => [p.a.id, p.b.id]));
      for (const doc of docs) {
        const id = doc._id as string;
        // The invariant: flag ⇔ at least one live pair.
        if (doc.conflict !== (pairsOf.get(id) ?? 0) > 0) problems.push(`${id}: flag without pair or pair without flag`);
        if (doc.conflict !== modelPaired.has(id)) problems.push(`${id}: flag differs from the model`);
        const own = eventsOf.get(id) ?? [];
        if (doc.event_seq !== own.length) problems.push(`${id}: event_seq ${String(doc.event_seq)} of ${own.length}`);
        const open = own.filter((e) => e.type === "conflict_set").length;
        const closed = own.filter((e) => e.type === "conflict_cleared").length;
        if (open - closed !== (pairsOf.get(id) ?? 0)) problems.push(`${id}: sets minus clears`);
      }
      for (const record of created) {
        const own = eventsOf.get(record.id) ?? [];
        if (!own.every((e, i) => e.seq === i + 1 && e.account_id === record.accountId)) {
          problems.push(`${record.id}: seqs or accounts`);
        }
        if (own[0]?.type !== "created" || own[0].by !== record.createdBy) problems.push(`${record.id}: created first`);
        const deletes = own.filter((e) => e.type === "deleted");
        const deletedLast = deletes.length === 1 && deletes[0] === own.at(-1);
        if (live.has(record.id) ? deletes.length > 0 : !deletedLast) problems.push(`${record.id}: deleted last, once`);
      }
      return problems;
    }

    async function checkConflictsOf(record: NewSourceRecord): Promise<void> {
      // Each pair's place: the seq of the conflict_set event naming the counterpart in the source's history.
      const setSeq = new Map(
        ((await store.history(record.id, null)) ?? [])
          .filter((e) => e.type === "conflict_set")
          .map((e) => [e.counterpart?.id, e.seq]),
      );
      const expected = [...pairs.values()]
        .filter((p) => p.a.id === record.id || p.b.id === record.id)
        .map((p) => {
          const mine = p.a.id === record.id;
          const other = mine ? p.b : p.a;
          return {
            counterpart: { id: other.id, altId: other.altId, accountId: other.accountId },
            measure: mine ? p.measure : fromOtherSide(p.measure),
            detectedAt: p.a.createdAt,
            seq: setSeq.get(other.id),
          };
        })
        .sort((x, y) => (x.seq ?? 0) - (y.seq ?? 0));
      // Detection order: the events' order never goes back in time.
      expect(expected.map((c) => c.detectedAt)).toEqual(expected.map((c) => c.detectedAt).sort((x, y) => x - y));
      expect(await store.conflictsOf(record.id, record.accountId)).toEqual(expected);
      // Paged two at a time from each event seq, the same conflicts.
      const paged: unknown[] = [];
      for (let afterSeq = 0; ; ) {
        const page = (await store.conflictsOf(record.id, null, { afterSeq, limit: 2 })) ?? [];
        paged.push(...page);
        if (page.length < 2) break;
        afterSeq = page[1].seq;
      }
      expect(paged).toEqual(expected);
      expect(await store.conflictsOf(record.id, null)).toEqual(expected);
      const stranger = ACCOUNTS.find((account) => account !== record.accountId) as string;
      expect(await store.conflictsOf(record.id, stranger)).toBeNull();
    }

    for (let step = 0; step < 300; step++) {
      clock += 1_000;
      if (live.size > 0 && random() < 0.35) {
        const victims = [...live.values()];
        const victim = victims[Math.floor(random() * victims.length)];
        const stranger = ACCOUNTS.find((account) => account !== victim.accountId) as string;
        const when = { by: `deleter-${step}`, at: clock };
        if (random() < 0.1) expect(await store.deleteById(victim.id, stranger, when)).toBe(false);
        const deleted =
          random() < 0.5
            ? await store.deleteById(victim.id, random() < 0.3 ? null : victim.accountId, when)
            : await store.deleteByAltId(victim.altId, victim.accountId, when);
        expect(deleted).toBe(true);
        live.delete(victim.id);
        for (const [key, pair] of pairs) {
          if (pair.a.id === victim.id || pair.b.id === victim.id) {
            pairs.delete(key);
            clearedSeen += 1;
          }
        }
      } else {
        const batch = Array.from({ length: 1 + Math.floor(random() * 3) }, randomRecord);
        const returned = await store.insertMany(batch);
        for (const record of batch) {
          for (const other of live.values()) {
            const measure = conflictPolicy.measure(record, other);
            if (measure !== null) pairs.set(pairKey(record.id, other.id), { a: record, b: other, measure });
          }
          live.set(record.id, record);
          created.push(record);
        }
        expect(returned.map((r) => r.conflict)).toEqual(batch.map((r) => flagOf(r.id)));
        conflictsSeen = Math.max(conflictsSeen, pairs.size);
      }
      expect(differences(), `step ${step}`).toEqual([]);
      const sample = [...live.values()];
      if (sample.length > 0) await checkConflictsOf(sample[Math.floor(random() * sample.length)]);
      snapshots.push({ at: clock, flags: new Map([...live.keys()].map((id) => [id, flagOf(id)])) });
    }
    // The run exercised what it claims to.
    expect(conflictsSeen).toBeGreaterThan(100);
    expect(clearedSeen).toBeGreaterThan(50);
    expect(created.length - live.size).toBeGreaterThan(50);

    // History through the store: the raw events, in order, in scope; null out of scope.
    for (const record of created.slice(0, 40)) {
      const history = (await store.history(record.id, record.accountId)) ?? [];
      expect(history[0]).toMatchObject({ seq: 1, type: "created", at: record.createdAt, by: record.createdBy });
      expect(history[0].record?.id).toBe(record.id);
      expect(await store.history(record.id, null)).toEqual(history);
      const stranger = ACCOUNTS.find((account) => account !== record.accountId) as string;
      expect(await store.history(record.id, stranger)).toBeNull();
    }

    // as_of: at random past steps, the ledger as the model had it then, whole and in pages.
    const listAsOf = (asOf: number, accountId: string | null, limit: number, after?: ListCursor) =>
      store.list({ accountId, attributeTypes: [], limit, offset: 0, asOf, ...(after ? { after } : {}) });
    const byListOrder = (ids: string[]) => {
      const at = new Map(created.map((r) => [r.id, r.createdAt]));
      return [...ids].sort((x, y) => (at.get(x) as number) - (at.get(y) as number) || (x < y ? -1 : 1));
    };
    let boxesTelling = 0;
    for (let i = 0; i < 15; i++) {
      const { at, flags } = snapshots[Math.floor(random() * snapshots.length)];
      const all = await listAsOf(at, null, 1_000);
      expect(all.map((r) => r.id)).toEqual(byListOrder([...flags.keys()]));
      expect(all.map((r) => r.conflict)).toEqual(all.map((r) => flags.get(r.id)));
      const account = ACCOUNTS[i % ACCOUNTS.length];
      const mine = await listAsOf(at, account, 1_000);
      expect(mine.map((r) => r.id)).toEqual(all.filter((r) => r.accountId === account).map((r) => r.id));
      // Keyset pages of 7 give the same list.
      const paged: string[] = [];
      for (let after: ListCursor | undefined; ; ) {
        const page = await listAsOf(at, null, 7, after);
        paged.push(...page.map((r) => r.id));
        if (page.length < 7) break;
        after = { createdAt: page[6].createdAt, id: page[6].id };
      }
      expect(paged).toEqual(all.map((r) => r.id));
      // Within a box: read from source_boxes, the same sources as the whole list filtered exactly.
      const x = random() * 12;
      const y = random() * 12;
      const bbox = { minX: x, minY: y, maxX: x + 0.5 + random() * 3, maxY: y + 0.5 + random() * 3 };
      const near = spatialFilterOf({ accountId: null, limit: 1, offset: 0, bbox }) as NonNullable<
        ReturnType<typeof spatialFilterOf>
      >;
      const within = await store.list({ accountId: null, attributeTypes: [], limit: 1_000, offset: 0, asOf: at, bbox });
      expect(within.map((r) => r.id)).toEqual(all.filter((r) => near.matches(r.geometry)).map((r) => r.id));
      expect(within).toEqual(all.filter((r) => near.matches(r.geometry)));
      if (within.length > 0 && within.length < all.length) boxesTelling += 1;
      for (const record of created.filter(() => random() < 0.05)) {
        const then = await store.getAsOf(record.id, null, at);
        expect(then?.conflict).toBe(flags.get(record.id));
        if (then !== null) expect(then).toEqual({ ...stored(record), conflict: flags.get(record.id) });
        expect(await store.getAsOf(record.id, record.accountId === "acct_a" ? "acct_b" : "acct_a", at)).toBeNull();
      }
    }
    // Most boxes held some of the ledger, not all of it.
    expect(boxesTelling).toBeGreaterThan(10);
    // Before the first create there was nothing.
    expect(await listAsOf(Date.UTC(2023, 0, 1), null, 10)).toEqual([]);
  }, 120_000);

  it("an as_of list whose filter matches few stops as every source read costs; resumed, it lists the matches", async () => {
    const mongo = new MemoryMongo();
    const store = new MongoSourceStore(mongo.client(), "ledger");
    await expectAsOfFilteredWalksToStop(store, "fake-as-of-filtered");
  });

  it("within an area, a box whose events were erased by hand is left out, and a read of nothing but such boxes goes on", async () => {
    const mongo = new MemoryMongo();
    const store = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    const t = Date.UTC(2024, 0, 1);
    // Ten apart, in list order; the first eight deleted and their events erased (docs/mongodb.md
    // "Retention and erasure") but not their boxes: the first read (8 boxes) finds no event at all.
    const records = Array.from({ length: 10 }, (_, i) =>
      makeRecord({ geometry: rect(i * 2, 0, i * 2 + 1, 1), createdAt: t + 1 + i }),
    );
    for (const record of records) await store.insertMany([record]);
    for (const record of records.slice(0, 8)) await store.deleteById(record.id, null, { by: "x", at: t + 100 });
    await mongo.collection("source_events").deleteMany({ source_id: { $in: records.slice(0, 8).map((r) => r.id) } });
    expect(mongo.all("source_boxes")).toHaveLength(10);
    const bbox = { minX: -1, minY: -1, maxX: 30, maxY: 2 };
    const within = await store.list({ accountId: null, attributeTypes: [], limit: 100, offset: 0, asOf: t + 50, bbox });
    expect(within.map((r) => r.id)).toEqual(records.slice(8).map((r) => r.id));
    expect(mongo.calls.filter((c) => c.target === "source_boxes" && c.method === "find")).toHaveLength(2);
  });

  it("applies the plain filters to the ledger as it stood, and offset after them", async () => {
    const mongo = new MemoryMongo();
    const store = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    const t = Date.UTC(2024, 0, 1);
    const records = [
      makeRecord({ methodology: "VM0042", geometry: rect(0, 0, 1, 1), createdAt: t + 1 }),
      makeRecord({ methodology: "ISCC", geometry: rect(0.5, 0, 1.5, 1), createdAt: t + 2 }),
      makeRecord({ methodology: "VM0042", geometry: rect(10, 10, 11, 11), createdAt: t + 3 }),
      makeRecord({ methodology: "VM0042", geometry: rect(20, 20, 21, 21), createdAt: t + 4 }),
    ];
    for (const record of records) await store.insertMany([record]);
    await store.deleteById(records[1].id, null, { by: "x", at: t + 10 });
    const at = (asOf: number, filters: Partial<ListQuery> = {}) =>
      store.list({ accountId: null, attributeTypes: [], limit: 100, offset: 0, asOf, ...filters });

    expect((await at(t + 5, { methodology: "VM0042" })).map((r) => [r.id, r.conflict])).toEqual([
      [records[0].id, true],
      [records[2].id, false],
      [records[3].id, false],
    ]);
    expect((await at(t + 10, { methodology: "VM0042" })).map((r) => [r.id, r.conflict])).toEqual([
      [records[0].id, false],
      [records[2].id, false],
      [records[3].id, false],
    ]);
    expect((await at(t + 5, { conflict: true })).map((r) => r.id)).toEqual([records[0].id, records[1].id]);
    expect((await at(t + 5, { methodology: "VM0042", offset: 1, limit: 1 })).map((r) => r.id)).toEqual([records[2].id]);
    expect((await at(t + 5, { id: records[3].id })).map((r) => r.id)).toEqual([records[3].id]);
    expect((await at(t + 5, { bbox: { minX: 9, minY: 9, maxX: 30, maxY: 30 } })).map((r) => r.id)).toEqual([
      records[2].id,
      records[3].id,
    ]);
    expect(await store.getAsOf(records[1].id, null, t + 9)).toMatchObject({ conflict: true });
    expect(await store.getAsOf(records[1].id, null, t + 10)).toBeNull();
    expect(await store.getAsOf(records[1].id, null, t + 1)).toBeNull();
  });
});

// --- a ledger stored before the event log ---

describe("pairs stored before they kept their event seqs get them once (in-memory fake, docs/api.md §14)", () => {
  it("takes each side's seq from its conflict_set event naming the other; conflicts then page as any", async () => {
    const mongo = new MemoryMongo();
    const store = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    await store.ready();
    // A hub and six sources over it, created one by one, then two of them deleted (a hub's
    // conflicts are then not its seqs 2, 3, …).
    const hub = makeRecord({ geometry: rect(0, 0, 6, 1), createdAt: Date.UTC(2024, 0, 1) });
    const spokes = Array.from({ length: 6 }, (_, i) =>
      makeRecord({ geometry: rect(i, 0, i + 1, 1), createdAt: Date.UTC(2024, 0, 2 + i) }),
    );
    await store.insertMany([hub]);
    for (const spoke of spokes) await store.insertMany([spoke]);
    for (const gone of [spokes[1], spokes[4]]) {
      expect(await store.deleteById(gone.id, null, { at: Date.UTC(2024, 1, 1), by: "tidy" })).toBe(true);
    }
    const before = (await store.conflictsOf(hub.id, null)) ?? [];
    expect(before.map((c) => [c.counterpart.id, c.seq])).toEqual([
      [spokes[0].id, 2],
      [spokes[2].id, 4],
      [spokes[3].id, 5],
      [spokes[5].id, 7],
    ]);
    const seqs = mongo.all("conflict_pairs").map((p) => [p._id, p.a_event, p.b_event]);

    // As an earlier version stored them: no event seqs, and no marker.
    for (const pair of mongo.all("conflict_pairs")) {
      delete pair.a_event;
      delete pair.b_event;
    }
    mongo.collections.get("settings")?.delete(PAIR_EVENTS_FILLED);
    const reopened = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    await reopened.ready();

    expect(mongo.all("conflict_pairs").map((p) => [p._id, p.a_event, p.b_event])).toEqual(seqs);
    expect(mongo.all("settings").map((d) => d._id)).toContain(PAIR_EVENTS_FILLED);
    expect(await reopened.conflictsOf(hub.id, null)).toEqual(before);
    const [first, second] = [
      await reopened.conflictsOf(hub.id, null, { afterSeq: 0, limit: 3 }),
      await reopened.conflictsOf(hub.id, null, { afterSeq: 5, limit: 3 }),
    ];
    expect([...(first ?? []), ...(second ?? [])]).toEqual(before);
    expect(second?.map((c) => c.counterpart.id)).toEqual([spokes[5].id]);
    // From a spoke's side: its one conflict, recorded by its own create (seq 2).
    expect((await reopened.conflictsOf(spokes[3].id, null))?.map((c) => c.seq)).toEqual([2]);

    // A pair an earlier version wrote after the fill (a rolling deploy, which the docs forbid):
    // its source's conflicts are unavailable, naming the pair for the log, not a page out of order.
    const [stray] = mongo.all("conflict_pairs").filter((p) => p.a === spokes[3].id);
    delete stray.b_event;
    await expect(reopened.conflictsOf(hub.id, null)).rejects.toThrow(
      new StoreUnavailableError(
        `mongodb conflict pair ${spokes[3].id}|${hub.id} has no b_event: written by a process of an earlier version (docs/mongodb.md, "A ledger stored before the event log")`,
      ),
    );
    stray.b_event = 5;

    // A pair whose event is missing on a side (no version writes one): the open stops, saying which.
    for (const pair of mongo.all("conflict_pairs")) {
      delete pair.a_event;
      delete pair.b_event;
    }
    mongo.collections.get("settings")?.delete(PAIR_EVENTS_FILLED);
    const [lost] = mongo.all("source_events").filter((e) => e.source_id === spokes[5].id && e.type === "conflict_set");
    mongo.collections.get("source_events")?.delete(lost._id);
    const broken = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    const refusal = await broken.ready().then(
      () => null,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(StoreNeedsRepairError);
    expect((refusal as Error).message).toBe(
      `mongodb conflict pair ${spokes[5].id}|${hub.id} has no conflict_set event on one side: the ledger is inconsistent (docs/mongodb.md, "A ledger stored before the event log")`,
    );
    expect(mongo.all("settings").map((d) => d._id)).not.toContain(PAIR_EVENTS_FILLED);
    // Not walked again on the next call: it fails at once, with the same reason, until an operator repairs it.
    const walks = mongo.callsTo("source_events", "find").length;
    await expect(broken.get(hub.id, null)).rejects.toBe(refusal);
    await expect(broken.ready()).rejects.toBe(refusal);
    expect(mongo.callsTo("source_events", "find")).toHaveLength(walks);
  });
});

describe("a ledger stored before the event log gains its history once (in-memory fake, docs/api.md §14)", () => {
  /** Sources as the store wrote them before the event log: no `event_seq`, flags as given. */
  function legacyLedger(count: number, seed: number): NewSourceRecord[] {
    const random = prng(seed);
    const t = Date.UTC(2023, 0, 1);
    return Array.from({ length: count }, (_, i) => {
      const x = random() * 4;
      const y = random() * 4;
      const size = 0.3 + random();
      return makeRecord({
        accountId: i % 2 === 0 ? "acct_a" : "acct_b",
        geometry: rect(x, y, x + size, y + size),
        // Pairs of sources share a created_at: the fill orders them by id then.
        createdAt: t + Math.floor(i / 2) * 1_000,
        createdBy: `legacy-${i}`,
        // Stale on purpose for some: the fill sets every flag from the pairs.
        conflict: random() < 0.5,
      });
    });
  }

  async function storeLegacy(mongo: MemoryMongo, records: readonly NewSourceRecord[]): Promise<void> {
    const docs = records.map((record) => {
      const { event_seq: _none, ...doc } = toDocument(record);
      return doc as unknown as Doc;
    });
    await mongo.collection("sources").insertMany(docs);
  }

  const before = (x: NewSourceRecord, y: NewSourceRecord) =>
    x.createdAt < y.createdAt || (x.createdAt === y.createdAt && x.id < y.id);

  /** What the fill must give: the pairs of conflicting sources, each from its later side. */
  function expectedPairs(records: readonly NewSourceRecord[]): Map<string, { a: NewSourceRecord; b: NewSourceRecord }> {
    const pairs = new Map<string, { a: NewSourceRecord; b: NewSourceRecord }>();
    for (const a of records) {
      for (const b of records) {
        if (before(b, a) && conflictPolicy.measure(a, b) !== null) pairs.set(`${a.id}|${b.id}`, { a, b });
      }
    }
    return pairs;
  }

  function checkFilled(mongo: MemoryMongo, records: readonly NewSourceRecord[]): void {
    const pairs = expectedPairs(records);
    const storedPairs = mongo.all("conflict_pairs") as unknown as ConflictPairDocument[];
    expect(storedPairs.map((p) => p._id).sort()).toEqual([...pairs.keys()].sort());
    const events = mongo.all("source_events") as unknown as SourceEventDocument[];
    const problems: string[] = [];
    for (const pair of storedPairs) {
      const { a, b } = pairs.get(pair._id) as { a: NewSourceRecord; b: NewSourceRecord };
      const measure = conflictPolicy.measure(a, b) as ConflictMeasure;
      if (JSON.stringify(pair.measure) !== JSON.stringify(toMeasureDocument(measure)))
        problems.push(`${pair._id} measure`);
      if (pair.detected_at.getTime() !== a.createdAt) problems.push(`${pair._id} detected_at`);
      for (const [side, other, seen] of [
        [a, b, measure],
        [b, a, fromOtherSide(measure)],
      ] as const) {
        const set = events.filter(
          (e) => e.source_id === side.id && e.type === "conflict_set" && e.counterpart?.id === other.id,
        );
        // At the later source's creation, by its creator: when its create would have found it.
        const ok =
          set.length === 1 &&
          set[0].at.getTime() === a.createdAt &&
          set[0].by === a.createdBy &&
          JSON.stringify(set[0].measure) === JSON.stringify(toMeasureDocument(seen));
        if (!ok) problems.push(`${pair._id} conflict_set on ${side.id}`);
      }
    }
    for (const record of records) {
      const own = events.filter((e) => e.source_id === record.id).sort((x, y) => x.seq - y.seq);
      const [created] = own;
      const doc = mongo.all("sources").find((d) => d._id === record.id) as Doc;
      const paired = storedPairs.some((p) => p.a === record.id || p.b === record.id);
      if (
        created?.type !== "created" ||
        created.at.getTime() !== record.createdAt ||
        created.by !== record.createdBy ||
        created.account_id !== record.accountId
      ) {
        problems.push(`${record.id} created event`);
      }
      // The record as it was stored, its old flag included.
      if (JSON.stringify(created?.record) !== JSON.stringify(recordDocumentOf(toDocument(record)))) {
        problems.push(`${record.id} created record`);
      }
      if (!own.every((e, i) => e.seq === i + 1) || doc.event_seq !== own.length) problems.push(`${record.id} seqs`);
      if (doc.conflict !== paired) problems.push(`${record.id} flag`);
    }
    // Every source's box in the spatial index of the past, as a create of this version writes it.
    const boxes = new Map(mongo.all("source_boxes").map((d) => [d._id, d]));
    for (const record of records) {
      if (JSON.stringify(boxes.get(record.id)) !== JSON.stringify(sourceBoxOf(toDocument(record)))) {
        problems.push(`${record.id} box`);
      }
    }
    expect(problems).toEqual([]);
    expect(
      mongo
        .all("settings")
        .map((d) => d._id)
        .sort(),
    ).toEqual([CONFLICT_PAIRS_FILLED, PAIR_EVENTS_FILLED, CREATED_EVENTS_FILLED, SOURCE_BOXES_FILLED].sort());
  }

  it("created events for every source, then every conflicting pair from its later side with conflict_set on both, flags from the pairs", async () => {
    const mongo = new MemoryMongo();
    const records = legacyLedger(120, 77);
    await storeLegacy(mongo, records);
    const store = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    await store.ready();

    expect(expectedPairs(records).size).toBeGreaterThan(60);
    expect(records.filter((r) => r.conflict !== flagIn(mongo, r.id)).length).toBeGreaterThan(10); // stale ones fixed
    checkFilled(mongo, records);
    // History, conflicts and as_of read the filled-in ledger like any other.
    const [first] = records;
    expect((await store.history(first.id, first.accountId))?.[0]).toMatchObject({ seq: 1, type: "created" });
    expect(await store.getAsOf(first.id, null, first.createdAt)).toMatchObject({ id: first.id });

    // Opening again reads the two markers and writes nothing.
    const events = mongo.all("source_events").length;
    mongo.calls.length = 0;
    await new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy }).ready();
    expect(mongo.all("source_events")).toHaveLength(events);
    expect(mongo.calls.filter((c) => c.method !== "createIndexes" && c.method !== "createCollection")).toEqual([
      { target: "settings", method: "findOne", args: [{ _id: PAIR_EVENTS_FILLED }, undefined] },
      { target: "settings", method: "findOne", args: [{ _id: CREATED_EVENTS_FILLED }, undefined] },
      { target: "settings", method: "findOne", args: [{ _id: SOURCE_BOXES_FILLED }, undefined] },
      { target: "settings", method: "findOne", args: [{ _id: CONFLICT_PAIRS_FILLED }, undefined] },
    ]);

    // And the filled ledger goes on like any other: a create pairs with the stored sources.
    const [late] = await store.insertMany([
      makeRecord({ geometry: rect(1, 1, 2, 2), createdAt: Date.UTC(2024, 0, 1) }),
    ]);
    expect(late.conflict).toBe(true);
    expect(mongo.all("sources").find((d) => d._id === late.id)?.event_seq).toBeGreaterThan(1);
  });

  it("without a policy fills the created events only; the first open with one fills the pairs", async () => {
    const mongo = new MemoryMongo();
    const records = legacyLedger(30, 5);
    await storeLegacy(mongo, records);
    await new MongoSourceStore(mongo.client(), "ledger").ready();
    expect(mongo.all("source_events")).toHaveLength(30);
    expect(mongo.all("conflict_pairs")).toEqual([]);
    expect(mongo.all("settings").map((d) => d._id)).toEqual([
      PAIR_EVENTS_FILLED,
      CREATED_EVENTS_FILLED,
      SOURCE_BOXES_FILLED,
    ]);

    await new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy }).ready();
    checkFilled(mongo, records);
  });

  it("a fill that fails part-way (a chunk's transaction lost) is finished by the next open, each event written once", async () => {
    const mongo = new MemoryMongo();
    const records = legacyLedger(130, 11); // three chunks of pairs
    await storeLegacy(mongo, records);
    let chunks = 0;
    mongo.before.set("conflict_pairs.insertMany", () => {
      chunks += 1;
      if (chunks === 2) throw new MongoServerError({ message: "interrupted", code: 11602 });
    });
    const store = new MongoSourceStore(mongo.client(), "ledger", { conflictPolicy });
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(mongo.all("settings").map((d) => d._id)).toEqual([
      PAIR_EVENTS_FILLED,
      CREATED_EVENTS_FILLED,
      SOURCE_BOXES_FILLED,
    ]);
    expect(mongo.all("conflict_pairs").length).toBeGreaterThan(0);

    await store.ready();
    checkFilled(mongo, records);
  });
});

function flagIn(mongo: MemoryMongo, id: string): unknown {
  return mongo.all("sources").find((d) => d._id === id)?.conflict;
}
