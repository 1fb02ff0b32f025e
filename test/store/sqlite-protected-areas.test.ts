import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import type { SourceGeometry } from "../../src/geo/types.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import {
  type LayerImport,
  LayerSupersededError,
  type NewProtectedArea,
} from "../../src/store/protected-area-layers.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import {
  openSqliteProtectedAreaLayers,
  openSqliteStore,
  type SqliteProtectedAreaLayers,
} from "../../src/store/sqlite/index.js";
import { appliedMigrations, runMigrations } from "../../src/store/sqlite/migrations.js";
import { MIGRATIONS } from "../../src/store/sqlite/schema.js";
import { makeRecord, sampleUnepOverlap, stored } from "../contract/fixtures.js";
import { rect, type TempDir, tempDir } from "../protected-areas/fixtures.js";

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

const source = rect(0, 0, 1, 1);
const half = geodesicAreaM2(rect(0.5, 0, 1, 1));

describe("sqlite store: unep_overlap from the protected-area layer", () => {
  let temp: TempDir;
  let path: string;
  const toClose: { close(): unknown }[] = [];

  beforeEach(() => {
    temp = tempDir("sqlite-pa-");
    path = temp.path("ledger.sqlite");
  });

  afterEach(async () => {
    for (const c of toClose.splice(0).reverse()) await c.close();
    temp.remove();
  });

  function openStore() {
    const store = openSqliteStore({ path, protectedAreaPolicy: unepOverlapPolicy });
    toClose.push(store);
    return store;
  }

  /** A second connection, as the CLI process has. */
  function openLayers(): SqliteProtectedAreaLayers {
    const layers = openSqliteProtectedAreaLayers(path);
    toClose.push(layers);
    return layers;
  }

  async function begin(layers: SqliteProtectedAreaLayers, dataset: string, now = Date.now()): Promise<LayerImport> {
    const begun = await layers.begin({
      dataset,
      sourceFile: `/data/${dataset}.geojson`,
      now,
      staleAfterMs: 60_000,
      force: false,
    });
    if (!("started" in begun)) throw new Error("expected the import to start");
    return begun.started;
  }

  async function loadLayer(layers: SqliteProtectedAreaLayers, dataset: string, areas: NewProtectedArea[]) {
    const layer = await begin(layers, dataset);
    await layer.append(areas, Date.now());
    return layer.activate({ featureCount: areas.length, rejectedCount: 0 }, Date.now());
  }

  async function create(store: ReturnType<typeof openStore>, geometry: SourceGeometry = source) {
    const [record] = await store.insertMany([
      makeRecord({ geometry, unepOverlap: structuredClone(sampleUnepOverlap) }),
    ]);
    return record;
  }

  it("is null while no layer is loaded", async () => {
    const store = openStore();
    expect((await create(store)).unepOverlap).toBeNull();
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
    expect(await store.get(record.id, null)).toEqual(record);
    const far = await create(store, rect(20, 20, 21, 21));
    expect(far.unepOverlap).toEqual({ dataset: "WDPA Test", overlaps: false, areaM2: 0, fraction: 0, areas: [] });
  });

  it("two protected areas covering the same part are listed both but counted once", async () => {
    const store = openStore();
    await loadLayer(openLayers(), "WDPA", [pa("1", rect(0.5, -1, 2, 2)), pa("2", rect(0.5, -2, 3, 3))]);
    const { unepOverlap } = await create(store);
    expect(unepOverlap?.areaM2).toBeCloseTo(half, 3);
    expect(unepOverlap?.fraction).toBeCloseTo(0.5, 9);
    expect(unepOverlap?.areas.map((a) => a.id)).toEqual(["1", "2"]);
  });

  it("each source of a batch gets its own overlap", async () => {
    const store = openStore();
    await loadLayer(openLayers(), "WDPA", [pa("1", rect(0.5, -1, 2, 2))]);
    const records = await store.insertMany([
      makeRecord({ geometry: source }),
      makeRecord({ geometry: rect(0.75, 0, 1.75, 1) }),
    ]);
    expect(records.map((r) => r.unepOverlap?.fraction)).toEqual([expect.closeTo(0.5, 9), expect.closeTo(1, 9)]);
  });

  it("sees a layer another connection activates on its next create; never a layer still loading", async () => {
    const store = openStore();
    const layers = openLayers();
    expect((await create(store)).unepOverlap).toBeNull();
    await loadLayer(layers, "first", [pa("1", rect(0, 0, 0.25, 1))]);
    expect((await create(store)).unepOverlap).toMatchObject({ dataset: "first", fraction: expect.closeTo(0.25, 9) });

    const loading = await begin(layers, "second");
    await loading.append([pa("2", rect(-5, -5, 5, 5))], Date.now());
    // Readers keep the old layer until the new one is complete.
    expect((await create(store)).unepOverlap).toMatchObject({ dataset: "first", fraction: expect.closeTo(0.25, 9) });
    expect((await layers.status()).importing.map((l) => l.dataset)).toEqual(["second"]);

    await loading.activate({ featureCount: 1, rejectedCount: 3 }, Date.now());
    expect((await create(store)).unepOverlap).toMatchObject({
      dataset: "second",
      fraction: expect.closeTo(1, 9),
      areas: [{ id: "2" }],
    });
    const status = await layers.status();
    expect(status.active).toMatchObject({
      dataset: "second",
      featureCount: 1,
      rejectedCount: 3,
      sourceFile: "/data/second.geojson",
    });
    expect(status.importing).toEqual([]);
  });

  it("an abandoned import leaves the old layer; garbage collection clears retired layers and their index entries", async () => {
    const store = openStore();
    const layers = openLayers();
    await loadLayer(layers, "kept", [pa("1", rect(0, 0, 0.5, 1))]);
    const failed = await begin(layers, "failed");
    await failed.append([pa("2", rect(0, 0, 1, 1)), pa("3", rect(3, 3, 4, 4))], Date.now());
    await failed.abandon();
    expect((await create(store)).unepOverlap).toMatchObject({ dataset: "kept", fraction: expect.closeTo(0.5, 9) });

    expect(await layers.collectGarbage()).toBe(2);
    await loadLayer(layers, "next", [pa("4", rect(0, 0, 1, 1))]);
    expect(await layers.collectGarbage()).toBe(1);
    const db = openConnection({ path, busyTimeoutMs: 0 });
    toClose.push(db);
    expect(db.prepare("SELECT dataset, state FROM protected_area_layers").all()).toEqual([
      { dataset: "next", state: "active" },
    ]);
    expect(db.prepare("SELECT count(*) AS n FROM protected_areas").get()).toEqual({ n: 1 });
    expect(db.prepare("SELECT count(*) AS n FROM protected_area_bbox").get()).toEqual({ n: 1 });
  });

  it("refuses a second import while one is alive, takes over a stale one or with force, and the loser cannot activate", async () => {
    const layers = openLayers();
    const t0 = 1_000_000;
    const first = await begin(layers, "first", t0);
    const busy = await layers.begin({
      dataset: "second",
      sourceFile: "x",
      now: t0 + 1_000,
      staleAfterMs: 60_000,
      force: false,
    });
    expect(busy).toEqual({ busy: expect.objectContaining({ dataset: "first", importedAt: null }) });

    const forced = await layers.begin({
      dataset: "second",
      sourceFile: "x",
      now: t0 + 2_000,
      staleAfterMs: 60_000,
      force: true,
    });
    expect("started" in forced).toBe(true);
    await expect(first.append([pa("1", rect(0, 0, 1, 1))], t0 + 3_000)).rejects.toBeInstanceOf(LayerSupersededError);
    await expect(first.activate({ featureCount: 0, rejectedCount: 0 }, t0 + 3_000)).rejects.toBeInstanceOf(
      LayerSupersededError,
    );

    const stale = await layers.begin({
      dataset: "third",
      sourceFile: "y",
      now: t0 + 120_000,
      staleAfterMs: 60_000,
      force: false,
    });
    expect("started" in stale).toBe(true);
    expect((await layers.status()).importing.map((l) => l.dataset)).toEqual(["third"]);
  });

  it("without a policy the store keeps unep_overlap as given (the contract suite relies on it)", async () => {
    const store = openSqliteStore({ path });
    toClose.push(store);
    await loadLayer(openLayers(), "WDPA", [pa("1", rect(-5, -5, 5, 5))]);
    const record = makeRecord({ geometry: source, unepOverlap: structuredClone(sampleUnepOverlap) });
    expect(await store.insertMany([record])).toEqual([stored(record)]);
  });

  it("migration 2 upgrades a file created by migration 1, keeping its sources", async () => {
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    runMigrations(db, MIGRATIONS.slice(0, 1));
    db.close();
    const old = openSqliteStore({ path });
    const record = makeRecord();
    await old.insertMany([record]);
    await old.close();

    const store = openStore();
    expect(await store.get(record.id, null)).toEqual(stored(record));
    const check = openConnection({ path, busyTimeoutMs: 0 });
    toClose.push(check);
    expect(appliedMigrations(check).map((m) => m.version)).toEqual(MIGRATIONS.map((m) => m.version));
  });
});
