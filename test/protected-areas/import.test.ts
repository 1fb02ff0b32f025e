import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ImportAbortedError,
  ImportInProgressError,
  NotFeatureCollectionError,
} from "../../src/protected-areas/errors.js";
import {
  type ImportOptions,
  type ImportProgress,
  importProtectedAreas,
  NoValidFeaturesError,
} from "../../src/protected-areas/import.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import {
  openSqliteProtectedAreaLayers,
  openSqliteStore,
  type SqliteProtectedAreaLayers,
} from "../../src/store/sqlite/index.js";
import { makeRecord } from "../contract/fixtures.js";
import { featureCollection, paFeature, rect, type TempDir, tempDir } from "./fixtures.js";

/** Three valid areas and five features rejected for five different reasons. */
const mixed = featureCollection([
  paFeature(1, rect(0, 0, 1, 1)),
  paFeature(undefined, rect(0, 0, 1, 1)),
  paFeature(2, { type: "Point", coordinates: [0, 0] }),
  paFeature(3, null),
  paFeature(4, {
    type: "Polygon",
    coordinates: [
      [
        [0, 0],
        [1, 1],
        [1, 0],
        [0, 1],
        [0, 0],
      ],
    ],
  }),
  paFeature(5, { type: "MultiPolygon", coordinates: [rect(10, 10, 11, 11).coordinates] }),
  "not a feature",
  paFeature("6", rect(20, 20, 21, 21)),
]);

describe("importProtectedAreas", () => {
  let temp: TempDir;
  let path: string;
  let layers: SqliteProtectedAreaLayers;

  beforeEach(() => {
    temp = tempDir("pa-import-");
    path = temp.path("ledger.sqlite");
    layers = openSqliteProtectedAreaLayers(path);
  });

  afterEach(async () => {
    await layers.close();
    temp.remove();
  });

  function run(file: string, dataset: string, options: Partial<ImportOptions> = {}) {
    return importProtectedAreas({ file, dataset, layers, ...options });
  }

  function tableCounts() {
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    try {
      const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
      return {
        layers: count("protected_area_layers"),
        areas: count("protected_areas"),
        boxes: count("protected_area_bbox"),
      };
    } finally {
      db.close();
    }
  }

  /** The dataset and overlap fraction a create sees for the unit square at the origin. */
  async function overlapAtOrigin() {
    const store = openSqliteStore({ path, protectedAreaPolicy: unepOverlapPolicy });
    try {
      const [record] = await store.insertMany([makeRecord({ geometry: rect(0, 0, 1, 1) })]);
      return record.unepOverlap === null
        ? null
        : { dataset: record.unepOverlap.dataset, fraction: record.unepOverlap.fraction };
    } finally {
      await store.close();
    }
  }

  it("loads the valid features, counts the rejected ones and says why each was rejected", async () => {
    const summary = await run(temp.write("mixed.geojson", mixed), " WDPA Test ");
    expect(summary).toMatchObject({
      dataset: "WDPA Test",
      read: 8,
      accepted: 3,
      rejected: 5,
      garbageCollected: 0,
      garbageError: null,
    });
    expect(summary.reasons).toEqual([
      { index: 1, wdpaId: null, reason: "it has no WDPAID property" },
      { index: 2, wdpaId: "2", reason: 'its geometry type is "Point"; only Polygon and MultiPolygon are accepted' },
      { index: 3, wdpaId: "3", reason: "the feature has no geometry" },
      { index: 4, wdpaId: "4", reason: expect.stringMatching(/^invalid geometry: the exterior ring self-intersects/) },
      { index: 6, wdpaId: null, reason: 'it is "not a feature", not a GeoJSON Feature object' },
    ]);
    expect(summary.layer).toMatchObject({
      dataset: "WDPA Test",
      featureCount: 3,
      rejectedCount: 5,
      sourceFile: temp.path("mixed.geojson"),
    });
    expect(summary.layer.importedAt).toEqual(expect.any(Number));
    expect(await layers.status()).toEqual({ active: summary.layer, importing: [] });
    expect(tableCounts()).toEqual({ layers: 1, areas: 3, boxes: 3 });
    expect(await overlapAtOrigin()).toEqual({ dataset: "WDPA Test", fraction: 1 });
  });

  it("keeps at most maxReasons reasons but counts every rejection", async () => {
    const summary = await run(temp.write("mixed.geojson", mixed), "WDPA", { maxReasons: 2 });
    expect(summary.rejected).toBe(5);
    expect(summary.reasons.map((r) => r.index)).toEqual([1, 2]);
  });

  it("writes in batches and reports progress with counts and rate", async () => {
    const seen: ImportProgress[] = [];
    let clock = 0;
    const summary = await run(temp.write("mixed.geojson", mixed), "WDPA", {
      batchSize: 2,
      progressEveryFeatures: 3,
      progressIntervalMs: 1e9,
      now: () => (clock += 100),
      onProgress: (p) => seen.push(p),
    });
    expect(seen.map((p) => [p.read, p.accepted, p.rejected])).toEqual([
      [3, 1, 2],
      [6, 2, 4],
    ]);
    expect(seen.every((p) => p.elapsedMs > 0 && p.featuresPerSecond > 0)).toBe(true);
    expect(summary.accepted).toBe(3);
  });

  it("a new import replaces the layer and clears the old one's areas", async () => {
    await run(
      temp.write(
        "first.geojson",
        featureCollection([paFeature(1, rect(0, 0, 0.5, 1)), paFeature(2, rect(5, 5, 6, 6))]),
      ),
      "first",
    );
    expect(await overlapAtOrigin()).toEqual({ dataset: "first", fraction: expect.closeTo(0.5, 9) });
    const second = await run(
      temp.write("second.geojson", featureCollection([paFeature(3, rect(0, 0, 0.25, 1))])),
      "second",
    );
    expect(second.garbageCollected).toBe(2);
    expect(await overlapAtOrigin()).toEqual({ dataset: "second", fraction: expect.closeTo(0.25, 9) });
    expect(tableCounts()).toEqual({ layers: 1, areas: 1, boxes: 1 });
    expect((await layers.status()).active?.dataset).toBe("second");
  });

  describe("a failed import leaves the loaded layer as it was", () => {
    beforeEach(async () => {
      await run(temp.write("good.geojson", featureCollection([paFeature(1, rect(0, 0, 0.5, 1))])), "good");
    });

    async function expectGoodLayerKept() {
      expect(await overlapAtOrigin()).toEqual({ dataset: "good", fraction: expect.closeTo(0.5, 9) });
      expect(tableCounts()).toEqual({ layers: 1, areas: 1, boxes: 1 });
      expect((await layers.status()).importing).toEqual([]);
    }

    it("when the file turns out not to be a FeatureCollection after its features were read", async () => {
      const text = `{"features":[${JSON.stringify(paFeature(9, rect(-5, -5, 5, 5)))}],"type":"Feature"}`;
      await expect(run(temp.write("late-type.geojson", text), "bad")).rejects.toThrow(NotFeatureCollectionError);
      await expectGoodLayerKept();
    });

    it("when the file is truncated", async () => {
      const text = JSON.stringify(
        featureCollection([paFeature(9, rect(-5, -5, 5, 5)), paFeature(10, rect(0, 0, 1, 1))]),
      ).slice(0, -30);
      await expect(run(temp.write("truncated.geojson", text), "bad", { batchSize: 1 })).rejects.toThrow(
        /ends before its JSON is complete/,
      );
      await expectGoodLayerKept();
    });

    it("when no feature is valid, or there are none", async () => {
      const error = await run(temp.write("none.geojson", featureCollection([paFeature(1, null), 3])), "bad").catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(NoValidFeaturesError);
      expect((error as NoValidFeaturesError).reasons).toHaveLength(2);
      expect((error as Error).message).toMatch(/none of the 2 features could be loaded; the loaded layer is unchanged/);
      await expect(run(temp.write("empty.geojson", featureCollection([])), "bad")).rejects.toThrow(/has no features/);
      await expectGoodLayerKept();
    });

    it("when interrupted", async () => {
      const controller = new AbortController();
      const file = temp.write(
        "many.geojson",
        featureCollection(Array.from({ length: 50 }, (_, i) => paFeature(i, rect(i, 0, i + 0.5, 1)))),
      );
      const importing = run(file, "bad", {
        batchSize: 5,
        progressEveryFeatures: 10,
        onProgress: () => controller.abort(),
        signal: controller.signal,
      });
      await expect(importing).rejects.toBeInstanceOf(ImportAbortedError);
      await expectGoodLayerKept();
    });

    it("when another import is running (unless forced)", async () => {
      const other = await layers.begin({
        dataset: "other",
        sourceFile: "/x",
        now: Date.now(),
        staleAfterMs: 60_000,
        force: false,
      });
      expect("started" in other).toBe(true);
      const file = temp.write("next.geojson", featureCollection([paFeature(2, rect(0, 0, 1, 1))]));
      await expect(run(file, "next")).rejects.toThrow(ImportInProgressError);
      await expect(run(file, "next")).rejects.toThrow(/another import \("other" from \/x, 0 areas so far\).*--force/);
      expect((await run(file, "next", { force: true })).layer.dataset).toBe("next");
    });

    it("when the input is refused up front", async () => {
      await expect(run(temp.path("missing.geojson"), "x")).rejects.toThrow(/no such file/);
      await expect(run(temp.dir, "x")).rejects.toThrow(/not a file/);
      await expect(run(temp.write("ok.geojson", featureCollection([])), "  ")).rejects.toThrow(/--dataset/);
      await expect(run(temp.write("array.json", "[]"), "x")).rejects.toThrow(/not an object/);
      await expectGoodLayerKept();
    });
  });
});
