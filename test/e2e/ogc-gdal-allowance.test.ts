/**
 * GDAL's OAPIF driver through a bbox whose candidates mostly fail the exact test (docs/api.md §13):
 * the driver stops at the first page without features, whatever its `next` link says, so the
 * service reads on instead of answering one (for up to ten reads). In list order: a small source in the box, four
 * sources of 100,000 positions whose boxes meet the box while their geometry stays clear of it
 * (two spend a page's exact-test allowance), and another small source in the box. ogr2ogr with a
 * spatial filter copies both small ones, across two pages. Runs when ogr2ogr is on PATH.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXACT_TEST_POSITIONS } from "../../src/model/exact-tests.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { gdalVersion, runGdal } from "./ogc-gdal-support.js";
import { createAll, featureOf, type Geometry, rect, roundedCircle } from "./paging-support.js";

const version = gdalVersion();
const SKIPPED = "skipped: ogr2ogr not installed";

const [X, Y] = [150, -30];
const DECOY_POSITIONS = 100_000;
/** The box GDAL filters by: each decoy's box reaches 0.05° into it, the decoys themselves ~0.15° short of it. */
const BOX = [X - 0.06, Y - 0.06, X + 0.06, Y + 0.06];

/** A decoy of DECOY_POSITIONS positions of radius 0.2° around (x, y). */
const circle = (x: number, y: number): Geometry => roundedCircle(x, y, 0.2, DECOY_POSITIONS);

let server: TestServer;
let token: string;
let dir: string;

describe.skipIf(version === null)(`GDAL through pages that stop early (${version ?? SKIPPED})`, () => {
  beforeAll(async () => {
    expect(2 * DECOY_POSITIONS).toBeGreaterThanOrEqual(EXACT_TEST_POSITIONS);
    server = await startTestServer();
    token = await server.userToken("acct-gdal-allowance");
    dir = mkdtempSync(join(tmpdir(), "ledger-gdal-allowance-"));
    await createAll(server, token, [featureOf("first", rect(X - 0.01, Y - 0.01, X, Y))]);
    const corners = [
      [0.25, 0.25],
      [-0.25, 0.25],
      [-0.25, -0.25],
      [0.25, -0.25],
    ];
    await createAll(
      server,
      token,
      corners.map(([dx, dy], i) => featureOf(`decoy-${i}`, circle(X + dx, Y + dy))),
    );
    await createAll(server, token, [featureOf("last", rect(X, Y, X + 0.01, Y + 0.01))]);
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("ogr2ogr -spat copies both sources in the box, across a page the allowance ended", async () => {
    const out = join(dir, "in-box.geojson");
    const run = await runGdal(
      "ogr2ogr",
      ["-f", "GeoJSON", out, `OAPIF:${server.baseUrl}/ogc`, "sources", "-spat", ...BOX.map(String)],
      { GDAL_HTTP_HEADERS: `Authorization: Bearer ${token}`, CPL_DEBUG: "ON" },
    );
    const shown = `exit ${run.code}\n${run.stderr.slice(0, 4000)}`.replaceAll(token, "<token>");
    expect(run.code, shown).toBe(0);
    // The items were read in two pages: the second through the first's next link.
    const pages = [...run.stderr.matchAll(/HTTP: Fetch\((\S*\/ogc\/collections\/sources\/items\?\S*)\)/g)];
    expect(new Set(pages.map((m) => new URL(m[1]).searchParams.get("page_token"))).size, shown).toBe(2);
    const copied = JSON.parse(readFileSync(out, "utf8")) as { features: { properties: { alt_id: string } }[] };
    expect(copied.features.map((f) => f.properties.alt_id)).toEqual(["first", "last"]);
  });
});
