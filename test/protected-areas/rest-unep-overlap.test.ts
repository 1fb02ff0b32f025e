/**
 * docs/api.md §8: the unep_overlap through the public REST API: the real server on a temporary SQLite
 * file, and the layer imported into that same file by the CLI, a separate process, while the
 * server runs (as an operator would).
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { intersectionAreaM2 } from "../../src/geo/overlap.js";
import type { PolygonGeometry } from "../../src/geo/types.js";
import { importProtectedAreas } from "../../src/protected-areas/import.js";
import { openSqliteProtectedAreaLayers } from "../../src/store/sqlite/index.js";
import { zigzag } from "../geo/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { featureCollection, type Json, paFeature, rect, tempDir } from "./fixtures.js";

const temp = tempDir("pa-rest-");
const sqlitePath = temp.path("ledger.sqlite");
let server: TestServer;
let token: string;
let altSeq = 0;

beforeAll(async () => {
  server = await startTestServer({ SQLITE_PATH: sqlitePath });
  token = await server.userToken("acct-pa");
});

afterAll(async () => {
  await server?.close();
  temp.remove();
});

async function create(geometry: PolygonGeometry, environment: "production" | "sandbox" = "production"): Promise<Json> {
  const response = await server.request("POST", environment === "sandbox" ? "/sandbox/sources" : "/sources", {
    token,
    json: { alt_id: `pa-${++altSeq}`, geometry, start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" },
  });
  expect(response.status).toBe(201);
  const [record] = (await response.json()) as Json[];
  return record;
}

async function get(id: unknown): Promise<Json> {
  const response = await server.request("GET", `/sources/${String(id)}`, { token });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

function runCli(args: string[]) {
  return spawnSync(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], {
    cwd: process.cwd(),
    env: { ...process.env, SQLITE_PATH: sqlitePath },
    encoding: "utf8",
  });
}

/** r = 1 + 0.2 sin(40 a) about (150, 0): a field across it meets a bent stretch of its boundary. */
const wavyRadius = (angle: number) => 1 + 0.2 * Math.sin(angle * 40);
const WAVY_RESERVE: PolygonGeometry = {
  type: "Polygon",
  coordinates: [
    Array.from({ length: 20_001 }, (_, i): [number, number] => {
      const angle = (2 * Math.PI * (i % 20_000)) / 20_000;
      return [150 + wavyRadius(angle) * Math.cos(angle), wavyRadius(angle) * Math.sin(angle)];
    }),
  ],
};

/** Half of the unit square at (0,0) lies in area 555; the unit square at (10,0) lies half in both 1 and 2. */
const layer = featureCollection([
  paFeature(555, rect(0.5, -1, 2, 2), { NAME: "Parque Río Ñandú", DESIG_ENG: "National Park", IUCN_CAT: "II" }),
  paFeature(1, rect(10.5, -1, 12, 2), { NAME: "Inner Reserve", DESIG_ENG: "Nature Reserve", IUCN_CAT: "Ia" }),
  paFeature(2, rect(10.5, -2, 13, 3), {
    NAME: "Outer Biosphere",
    DESIG_ENG: "UNESCO-MAB Biosphere Reserve",
    IUCN_CAT: "Not Applicable",
  }),
  paFeature(3, null),
  // Far from the others: a zig-zag that a source laid across it meets at over 400,000 edge pairs.
  paFeature(4, zigzag(100, 0, 0.1, 4_000, 0.2), { NAME: "Zig-zag Reserve" }),
  // Far from the others: a reserve with a 20,000-position wavy boundary.
  paFeature(5, WAVY_RESERVE, { NAME: "Wavy Reserve" }),
]);

const halfOfUnitSquare = geodesicAreaM2(rect(0.5, 0, 1, 1));

describe("unep_overlap over REST", () => {
  it("is null while no layer is loaded", async () => {
    expect((await create(rect(0, 0, 1, 1))).unep_overlap).toBeNull();
  });

  it("after a CLI import into the running server's file, the next create has it: a source half inside one area", async () => {
    const imported = runCli(["protected-areas", "import", temp.write("wdpa.geojson", layer), "--dataset", "WDPA Test"]);
    expect(imported.stderr).toContain("feature 3 (WDPAID 3): the feature has no geometry");
    expect(imported.status).toBe(0);

    const record = await create(rect(0, 0, 1, 1));
    expect(record.unep_overlap).toEqual({
      dataset: "WDPA Test",
      overlaps: true,
      area_m2: expect.closeTo(halfOfUnitSquare, 3),
      fraction: expect.closeTo(0.5, 9),
      areas: [
        {
          id: "555",
          name: "Parque Río Ñandú",
          designation: "National Park",
          iucn_category: "II",
          area_m2: expect.closeTo(halfOfUnitSquare, 3),
        },
      ],
    });
    expect((await get(record.id)).unep_overlap).toEqual(record.unep_overlap);
  });

  it("two protected areas covering the same part: both listed, the area counted once", async () => {
    const { unep_overlap: overlap } = await create(rect(10, 0, 11, 1));
    expect(overlap).toMatchObject({
      dataset: "WDPA Test",
      overlaps: true,
      area_m2: expect.closeTo(halfOfUnitSquare, 3),
      fraction: expect.closeTo(0.5, 9),
    });
    const areas = (overlap as { areas: Json[] }).areas;
    expect(areas.map((a) => a.id)).toEqual(["1", "2"]);
    expect(areas[1]).toEqual({
      id: "2",
      name: "Outer Biosphere",
      designation: "UNESCO-MAB Biosphere Reserve",
      iucn_category: "Not Applicable",
      area_m2: expect.closeTo(halfOfUnitSquare, 3),
    });
  });

  it("a source away from every area: overlaps false, zero, no areas", async () => {
    expect((await create(rect(50, 50, 51, 51))).unep_overlap).toEqual({
      dataset: "WDPA Test",
      overlaps: false,
      area_m2: 0,
      fraction: 0,
      areas: [],
    });
  });

  it("an overlap past the overlay limits is sampled and counted in /metrics, and still found", async () => {
    const sampled = async () => {
      const text = await (await server.request("GET", "/metrics")).text();
      return Number(/^source_ledger_protected_area_overlaps_sampled_total (\d+)$/m.exec(text)?.[1]);
    };
    expect(await sampled()).toBe(0);
    const across = zigzag(100, 0, 0.1, 4_000, 0.2, true);
    const { unep_overlap: overlap } = await create(across);
    expect(overlap).toMatchObject({
      dataset: "WDPA Test",
      overlaps: true,
      areas: [{ id: "4", name: "Zig-zag Reserve" }],
    });
    // The two zig-zags share about half of each: a 64 × 64 sample is within a few percent of it.
    expect((overlap as { fraction: number }).fraction).toBeGreaterThan(0.3);
    expect((overlap as { fraction: number }).fraction).toBeLessThan(0.7);
    expect(await sampled()).toBe(1);
  });

  it("a batch of 200 fields across a large reserve's boundary: each measured exactly, none sampled", async () => {
    const sampledBefore = Number(
      /^source_ledger_protected_area_overlaps_sampled_total (\d+)$/m.exec(
        await (await server.request("GET", "/metrics")).text(),
      )?.[1],
    );
    const fields = Array.from({ length: 200 }, (_, i) => {
      const angle = (2 * Math.PI * (i + 0.37)) / 200;
      const [x, y] = [150 + wavyRadius(angle) * Math.cos(angle), wavyRadius(angle) * Math.sin(angle)];
      return rect(x - 0.005, y - 0.005, x + 0.005, y + 0.005);
    });
    const response = await server.request("POST", "/sources", {
      token,
      json: {
        type: "FeatureCollection",
        features: fields.map((geometry, i) => ({
          type: "Feature",
          geometry,
          properties: { alt_id: `wavy-${i}`, start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" },
        })),
      },
    });
    expect(response.status).toBe(201);
    const records = (await response.json()) as Json[];
    for (const [i, record] of records.entries()) {
      const overlap = record.unep_overlap as { fraction: number; areas: { id: string; area_m2: number }[] };
      expect(overlap.areas.map((a) => a.id)).toEqual(["5"]);
      if (i % 20 === 0) {
        const expected = intersectionAreaM2(fields[i], structuredClone(WAVY_RESERVE));
        expect(overlap.areas[0].area_m2 / expected).toBeCloseTo(1, 6);
      }
      expect(overlap.fraction).toBeLessThan(0.99);
    }
    const sampledAfter = Number(
      /^source_ledger_protected_area_overlaps_sampled_total (\d+)$/m.exec(
        await (await server.request("GET", "/metrics")).text(),
      )?.[1],
    );
    expect(sampledAfter).toBe(sampledBefore);
  });

  it("the sandbox stays null with a layer loaded", async () => {
    expect((await create(rect(0, 0, 1, 1), "sandbox")).unep_overlap).toBeNull();
  });

  it("a re-import replaces the layer for later creates; earlier records keep what they were given", async () => {
    const before = await create(rect(0, 0, 1, 1));
    const layers = openSqliteProtectedAreaLayers(sqlitePath);
    try {
      await importProtectedAreas({
        file: temp.write("v2.geojson", featureCollection([paFeature(9, rect(-5, -5, 5, 5))])),
        dataset: "WDPA v2",
        layers,
      });
    } finally {
      await layers.close();
    }
    const after = await create(rect(0, 0, 1, 1));
    expect(after.unep_overlap).toMatchObject({
      dataset: "WDPA v2",
      fraction: expect.closeTo(1, 12),
      areas: [{ id: "9" }],
    });
    expect((await get(before.id)).unep_overlap).toMatchObject({
      dataset: "WDPA Test",
      fraction: expect.closeTo(0.5, 9),
    });

    const status = runCli(["protected-areas", "status"]);
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(/dataset: {6}WDPA v2\n {2}features: {5}1\n {2}rejected: {5}0\n/);
  });
});
