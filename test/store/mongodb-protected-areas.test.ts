/**
 * Protected-area layers and `unep_overlap` on the MongoDB store, without a server:
 * - the pure parts: the layer-state transitions (layer-state.ts), the area documents and their
 *   chunking (documents.ts), the reader's geometry cache;
 * - the behaviour, through a small in-memory fake of the driver surface the code uses, which
 *   evaluates exactly the filters queries.ts builds (equality, `$in`, `$or`, and `$geoIntersects`
 *   approximated by the planar extents of the covers, which is exact enough for the small boxes
 *   used here) and records every call, so the tests also check that the pinned values are sent;
 * - the CLI's import through `importProtectedAreas` into that fake.
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
import { importProtectedAreas } from "../../src/protected-areas/import.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { GeometryCache } from "../../src/store/geometry-cache.js";
import {
  geometryChunkId,
  geometryFromChunks,
  protectedAreaId,
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
  LAYER_STATE_FILTER,
  PROTECTED_AREA_CANDIDATE_OPTIONS,
  protectedAreaCandidatesFilter,
  TRANSACTION_OPTIONS,
} from "../../src/store/mongodb/queries.js";
import { MongoSourceStore } from "../../src/store/mongodb/store.js";
import { openProtectedAreaLayers } from "../../src/store/open.js";
import { StoreUnavailableError } from "../../src/store/port.js";
import {
  type BeginImport,
  type LayerImport,
  LayerSupersededError,
  type NewProtectedArea,
} from "../../src/store/protected-area-layers.js";
import { makeRecord, sampleUnepOverlap, stored } from "../contract/fixtures.js";
import { featureCollection, paFeature, rect, type TempDir, tempDir } from "../protected-areas/fixtures.js";

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
      const operators = condition as Doc;
      if ("$in" in operators) return (operators.$in as unknown[]).includes(value);
      if ("$geoIntersects" in operators) {
        if (value === undefined || value === null) return false;
        const a = extentOf((operators.$geoIntersects as { $geometry: unknown }).$geometry);
        const b = extentOf(value);
        return a.minX <= b.maxX && b.minX <= a.maxX && a.minY <= b.maxY && b.minY <= a.maxY;
      }
      throw new Error(`the fake does not know ${JSON.stringify(operators)}`);
    }
    return value === condition;
  });
}

function project(doc: Doc, projection: Doc | undefined): Doc {
  if (projection === undefined) return structuredClone(doc);
  const out: Doc = {};
  if (projection._id !== 0) out._id = doc._id;
  for (const [key, include] of Object.entries(projection))
    if (include === 1 && key in doc) out[key] = structuredClone(doc[key]);
  return out;
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
 * no isolation: the tests do not race readers against writers here (mongodb.test.ts does, on a
 * real server).
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
    const find = (filter: Doc, options: { projection?: Doc; limit?: number } = {}) => {
      let found = [...docs().values()].filter((d) => matches(d, filter));
      if (options.limit !== undefined && options.limit > 0) found = found.slice(0, options.limit);
      return found.map((d) => project(d, options.projection));
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
          docs().set(doc._id, structuredClone(doc));
        }
        return { acknowledged: true, insertedCount: inserted.length };
      },
      find: (filter: Doc, options?: { projection?: Doc; limit?: number }) => ({
        toArray: async () => {
          this.record(name, "find", [filter, options]);
          return find(filter, options);
        },
      }),
      findOne: async (filter: Doc, options?: { projection?: Doc }) => {
        this.record(name, "findOne", [filter, options]);
        return find(filter, options)[0] ?? null;
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
      updateMany: async (...args: unknown[]) => {
        this.record(name, "updateMany", args);
        return { acknowledged: true };
      },
      bulkWrite: async (...args: unknown[]) => {
        this.record(name, "bulkWrite", args);
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
        return fn(session);
      },
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
      "conflict_guards.bulkWrite",
      "sources.find",
      "sources.insertMany",
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
