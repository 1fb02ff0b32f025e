/**
 * Issue 12's acceptance with a real client, GDAL (Debian's gdal-bin): its OAPIF driver reads the
 * OGC API – Features collections through every page with the bearer token in GDAL_HTTP_HEADERS,
 * ogr2ogr copies the ledger into a GeoPackage exactly once, ogrinfo opens a saved `?f=geojson`
 * answer, and what GDAL writes from a GeoPackage or a shapefile is posted to
 * `POST /ogc/collections/sources/items`. Runs when ogrinfo and ogr2ogr are on PATH; otherwise
 * every test is skipped with the reason in the suite's name (`.ci/run` installs gdal-bin).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  FIXTURE_PERIODS,
  fixtureBbox,
  fixturePolygons,
  type GdalRun,
  gdalVersion,
  parseSummary,
  runGdal,
} from "./ogc-gdal-support.js";
import {
  collection,
  createOk,
  expectProblem,
  type Json,
  manyFeatures,
  PRODUCTION_ID,
  type SourceRecord,
  unique,
} from "./rest-support.js";

const version = gdalVersion();
const SKIPPED = "skipped: ogrinfo not installed";
if (version === null) console.info(`GDAL acceptance tests (ogc-gdal.test.ts) ${SKIPPED}`);

/** Production sources of the reading account, made through REST in batches of 1,000. */
const SOURCES = 2_500;
const SANDBOX_SOURCES = 3;
const GEOJSON = /^application\/geo\+json$/;

let server: TestServer;
let token: string;
let dir: string;
let ogc: string;
const records = new Map<string, SourceRecord>();

/** GDAL's settings that send the caller's token on every request, as the issue names them. */
const withToken = (): Record<string, string> => ({ GDAL_HTTP_HEADERS: `Authorization: Bearer ${token}` });

/** A run's output for an assertion message, without the token. */
const shown = (run: GdalRun) => `exit ${run.code}\n${run.stderr.slice(0, 4000)}`.replaceAll(token, "<token>");

function expectClean(run: GdalRun): void {
  expect(run.code, shown(run)).toBe(0);
  expect(run.stderr, shown(run)).not.toMatch(/ERROR/);
}

/** The same type and rings, each coordinate to 1e-9°. */
function expectSameGeometry(actual: unknown, expected: unknown): void {
  const { type, coordinates } = expected as { type: string; coordinates: unknown[] };
  expect(actual).toEqual({ type, coordinates: closeTo(coordinates) });
}
function closeTo(value: unknown): unknown {
  return Array.isArray(value) ? value.map(closeTo) : expect.closeTo(value as number, 9);
}

async function json(res: Response, status: number): Promise<Json> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text) as Json;
}

describe.skipIf(version === null)(`GDAL reads and writes the ledger (${version ?? SKIPPED})`, () => {
  beforeAll(async () => {
    server = await startTestServer();
    ogc = `OAPIF:${server.baseUrl}/ogc`;
    dir = mkdtempSync(join(tmpdir(), "ledger-gdal-"));
    const account = unique("gdal");
    token = await server.userToken(account);
    for (let made = 0; made < SOURCES; made += 1_000) {
      const features = manyFeatures(unique("g"), Math.min(1_000, SOURCES - made), { source_type: "FIELD" });
      for (const record of await createOk(server, token, collection(features))) records.set(record.id, record);
    }
    await createOk(server, token, collection(manyFeatures(unique("gs"), SANDBOX_SOURCES)), "sandbox");
    // Another account's sources are never counted or copied.
    await createOk(server, await server.userToken(unique("gdal-other")), collection(manyFeatures(unique("x"), 7)));
  });

  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe("ogrinfo on the OGC API (OAPIF driver)", () => {
    it("with GDAL_HTTP_HEADERS lists both collections and counts the caller's features through every page", async () => {
      const run = await runGdal("ogrinfo", ["-al", "-so", ogc], withToken());
      expectClean(run);
      const layers = parseSummary(run.stdout);
      expect(layers.map((l) => [l.name, l.featureCount])).toEqual([
        ["sources", SOURCES],
        ["sandbox-sources", SANDBOX_SOURCES],
      ]);
      const [sources] = layers;
      expect(sources.geometry).toBe("Polygon");
      expect(Object.fromEntries(["id", "alt_id", "start_at", "end_at"].map((f) => [f, sources.fields.get(f)]))).toEqual(
        { id: "String", alt_id: "String", start_at: "DateTime", end_at: "DateTime" },
      );
    });

    it("sends GDAL_HTTP_HEADERS beside the driver's own Accept header on every request, never the token in a URL", async () => {
      const run = await runGdal("ogrinfo", ["-so", ogc, "sources", "-oo", "PAGE_SIZE=1000"], {
        ...withToken(),
        CPL_CURL_VERBOSE: "YES",
      });
      expect(run.code, shown(run)).toBe(0);
      expect(parseSummary(run.stdout)[0]?.featureCount).toBe(SOURCES);
      // curl's verbose trace: "> GET <path> HTTP/1.1", then the request's headers up to a blank line.
      const requests = run.stderr
        .split("\n> ")
        .slice(1)
        .map((block) => block.split("\r\n\r\n")[0].split("\r\n"));
      expect(requests.length).toBeGreaterThanOrEqual(4);
      for (const [line, ...headers] of requests) {
        expect(line).toMatch(/^GET \/\S* HTTP\/1\.1$/);
        expect(line.includes(token)).toBe(false);
        const named = (name: string) => headers.filter((h) => h.toLowerCase().startsWith(`${name}:`));
        expect(named("authorization"), line).toEqual([`Authorization: Bearer ${token}`]);
        expect(named("accept"), line).toHaveLength(1);
      }
      const items = requests.filter(([line]) => line.includes("/items"));
      expect(items.length).toBeGreaterThanOrEqual(3);
      for (const [, ...headers] of items) expect(headers).toContain("Accept: application/geo+json, application/json");
    });

    it("GDAL_HTTP_HEADER_FILE (one Authorization line) works as well", async () => {
      const file = join(dir, "headers.txt");
      writeFileSync(file, `Authorization: Bearer ${token}\n`, { mode: 0o600 });
      const run = await runGdal("ogrinfo", ["-so", ogc, "sources", "-oo", "PAGE_SIZE=1000"], {
        GDAL_HTTP_HEADER_FILE: file,
      });
      expectClean(run);
      expect(parseSummary(run.stdout).map((l) => [l.name, l.featureCount])).toEqual([["sources", SOURCES]]);
    });

    it("without a token the collections still list, and GDAL prints the service's 401 problem for the items", async () => {
      const run = await runGdal("ogrinfo", ["-so", ogc, "sources", "-oo", "PAGE_SIZE=1000"]);
      expect(run.stderr).toContain("HTTP error code : 401");
      expect(run.stderr).toContain('"detail":"missing bearer token"');
      expect(run.stderr).toContain('"code":"unauthenticated"');
      const layers = parseSummary(run.stdout);
      // GDAL goes on after the errors: the layer is listed with no features.
      expect(layers.map((l) => [l.name, l.featureCount])).toEqual([["sources", 0]]);
    });
  });

  it("ogr2ogr -f GPKG copies every source across pages of 100 exactly once, with its properties and polygon", async () => {
    const gpkg = join(dir, "copy.gpkg");
    const copy = await runGdal("ogr2ogr", ["-f", "GPKG", gpkg, ogc, "sources", "-oo", "PAGE_SIZE=100"], {
      ...withToken(),
      CPL_DEBUG: "ON",
    });
    expect(copy.code, shown(copy)).toBe(0);
    expect(copy.stderr, shown(copy)).not.toMatch(/ERROR/);
    // Every page was asked with limit=100: 25 distinct pages (GDAL reads the first twice).
    const pages = [...copy.stderr.matchAll(/HTTP: Fetch\((\S*\/ogc\/collections\/sources\/items\?\S*)\)/g)].map(
      (m) => m[1],
    );
    expect(pages.every((url) => new URL(url).searchParams.get("limit") === "100")).toBe(true);
    expect(new Set(pages).size).toBe(SOURCES / 100);

    const sql = "SELECT count(*) AS n, count(DISTINCT id) AS ids, count(DISTINCT alt_id) AS alt_ids FROM sources";
    const counts = await runGdal("ogrinfo", ["-ro", "-sql", sql, gpkg]);
    expectClean(counts);
    expect(counts.stdout).toContain(`n (Integer) = ${SOURCES}`);
    expect(counts.stdout).toContain(`ids (Integer) = ${SOURCES}`);
    expect(counts.stdout).toContain(`alt_ids (Integer) = ${SOURCES}`);

    const out = join(dir, "copy.geojson");
    expectClean(await runGdal("ogr2ogr", ["-f", "GeoJSON", out, gpkg]));
    const features = (JSON.parse(readFileSync(out, "utf8")) as { features: Json[] }).features;
    const ids = features.map((f) => (f.properties as Json).id as string);
    expect(ids).toHaveLength(SOURCES);
    expect([...ids].sort()).toEqual([...records.keys()].sort());
    for (const f of features) {
      const properties = f.properties as Json;
      const record = records.get(properties.id as string) as SourceRecord;
      expect(properties.alt_id).toBe(record.alt_id);
      expect(Date.parse(properties.start_at as string)).toBe(Date.parse(record.start_at as string));
      expect(Date.parse(properties.end_at as string)).toBe(Date.parse(record.end_at as string));
      expect(properties.source_type).toBe("FIELD");
      const geometry = f.geometry as { type: string; coordinates: number[][][] };
      expect(geometry.type).toBe("Polygon");
      expectSameGeometry(geometry, record.geometry);
    }
  });

  describe("ogrinfo on a saved ?f=geojson answer", () => {
    it("opens a page of GET /sources?f=geojson: its features, ids and properties", async () => {
      const res = await server.request("GET", "/sources?f=geojson&limit=250", { token });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(GEOJSON);
      const saved = join(dir, "page.geojson");
      const text = await res.text();
      writeFileSync(saved, text);
      const first = (JSON.parse(text) as { features: Json[] }).features[0];

      const summary = await runGdal("ogrinfo", ["-ro", "-al", "-so", saved]);
      expectClean(summary);
      const [layer] = parseSummary(summary.stdout);
      expect(layer).toMatchObject({ name: "page", geometry: "Polygon", featureCount: 250 });
      for (const [field, type] of Object.entries({ id: "String", alt_id: "String", start_at: "DateTime" })) {
        expect(layer.fields.get(field), field).toBe(type);
      }
      const one = await runGdal("ogrinfo", ["-ro", "-al", "-q", "-where", `id = '${first.id}'`, saved]);
      expectClean(one);
      expect(one.stdout).toContain(`id (String) = ${first.id}`);
      expect(one.stdout).toContain(`alt_id (String) = ${(first.properties as Json).alt_id}`);
      expect(one.stdout).toContain("start_at (DateTime) = 2024/01/01 00:00:00+00");
      expect(one.stdout).toMatch(/POLYGON \(\(/);
    });

    it("opens one Feature saved from GET /sources/{id}?f=geojson", async () => {
      const [id] = records.keys();
      const res = await server.request("GET", `/sources/${id}?f=geojson`, { token });
      expect(res.status).toBe(200);
      const saved = join(dir, "one.geojson");
      writeFileSync(saved, await res.text());
      const run = await runGdal("ogrinfo", ["-ro", "-al", saved]);
      expectClean(run);
      expect(parseSummary(run.stdout)[0]).toMatchObject({ geometry: "Polygon", featureCount: 1 });
      expect(run.stdout).toContain(`id (String) = ${id}`);
    });
  });

  describe("POST /ogc/collections/sources/items with what GDAL converted", () => {
    let writer: string;
    beforeAll(async () => {
      writer = await server.userToken(unique("gdal-writer"));
    });

    /** fixture → `format` with ogr2ogr → back with `ogr2ogr -f GeoJSON -t_srs EPSG:4326`: the file's body. */
    async function convert(name: string, fixture: Json, format: "GPKG" | "ESRI Shapefile"): Promise<Json> {
      const at = join(dir, name);
      mkdirSync(at);
      writeFileSync(join(at, "in.geojson"), JSON.stringify(fixture));
      const file = format === "GPKG" ? "in.gpkg" : "in.shp";
      const to = await runGdal("ogr2ogr", ["-f", format, file, "in.geojson"], {}, at);
      expect(to.code, shown(to)).toBe(0);
      const back = await runGdal("ogr2ogr", ["-f", "GeoJSON", "-t_srs", "EPSG:4326", "out.geojson", file], {}, at);
      expectClean(back);
      return JSON.parse(readFileSync(join(at, "out.geojson"), "utf8")) as Json;
    }

    function post(body: Json): Promise<Response> {
      return server.request("POST", "/ogc/collections/sources/items", {
        token: writer,
        body: JSON.stringify(body),
        headers: { "content-type": "application/geo+json" },
      });
    }

    /** 201 with the created features, and then the same features listed in their bbox. */
    async function expectCreatedAndListed(res: Response, sent: Json, bbox: string): Promise<Json[]> {
      expect(res.headers.get("content-type")).toMatch(GEOJSON);
      const body = await json(res, 201);
      expect(body.type).toBe("FeatureCollection");
      const created = body.features as Json[];
      const features = sent.features as Json[];
      expect(created).toHaveLength(features.length);
      created.forEach((f, i) => {
        expect(f.id).toMatch(PRODUCTION_ID);
        // Stored as sent: the geometry GDAL wrote, in its ring order.
        expect(f.geometry).toEqual(features[i].geometry);
        expect((f.properties as Json).alt_id).toBe((features[i].properties as Json).alt_id);
      });
      const listed = await json(
        await server.request("GET", `/ogc/collections/sources/items?bbox=${bbox}`, { token: writer }),
        200,
      );
      expect((listed.features as Json[]).map((f) => f.id)).toEqual(created.map((f) => f.id));
      return created;
    }

    it("a GeoPackage's GeoJSON is accepted as-is: 201, the created features, then listed", async () => {
      const [x, y] = [10, 50];
      const fixture = fixturePolygons(unique("gpkg"), x, y);
      const sent = await convert("gpkg", fixture, "GPKG");
      // What GDAL writes: a `name` member, the Feature id moved into properties.id, times kept.
      expect(sent.name).toBe("in");
      const sentFeatures = sent.features as Json[];
      const original = fixture.features as Json[];
      sentFeatures.forEach((f, i) => {
        expect(f.id).toBeUndefined();
        expect((f.properties as Json).id).toBe(original[i].id);
        // GDAL writes 15 significant digits: 50.004000000000005 comes back as 50.004.
        expectSameGeometry(f.geometry, original[i].geometry);
      });

      const created = await expectCreatedAndListed(await post(sent), sent, fixtureBbox(x, y));
      created.forEach((f, i) => {
        const { alt_id, methodology, source_type, geometry_source, outcome_reporting_year, start_at, end_at } =
          original[i].properties as Json;
        expect(f.properties).toMatchObject({
          alt_id,
          methodology,
          source_type,
          geometry_source,
          outcome_reporting_year,
          start_at: new Date(start_at as string).toISOString(),
          end_at: new Date(end_at as string).toISOString(),
        });
      });
    });

    it("a shapefile's GeoJSON: refused for its date-only periods, accepted as-is plus the period properties", async () => {
      const [x, y] = [10, 49];
      const fixture = fixturePolygons(unique("shp"), x, y);
      const sent = await convert("shp", fixture, "ESRI Shapefile");
      // What GDAL writes from a shapefile: a CRS84 `crs` member, dates without a time, names cut to 10 characters.
      expect(sent.crs).toEqual({ type: "name", properties: { name: "urn:ogc:def:crs:OGC:1.3:CRS84" } });
      const first = (sent.features as Json[])[0].properties as Json;
      expect(Object.keys(first).sort()).toEqual(
        ["alt_id", "end_at", "geometry_s", "id", "methodolog", "outcome_re", "source_typ", "start_at"].sort(),
      );
      expect(first.start_at).toBe("2024-01-01");

      const refused = await expectProblem(await post(sent), 422, "invalid_argument");
      expect(refused.errors).toHaveLength(6);
      expect(refused.errors[0]).toEqual({
        pointer: "/features/0/properties/start_at",
        detail:
          'start_at must be an RFC 3339 date-time with a time zone offset, like 2024-01-01T00:00:00Z; got "2024-01-01"',
      });

      const withPeriods = structuredClone(sent);
      (withPeriods.features as Json[]).forEach((f, i) => {
        Object.assign(f.properties as Json, FIXTURE_PERIODS[i]);
      });
      const created = await expectCreatedAndListed(await post(withPeriods), withPeriods, fixtureBbox(x, y));
      created.forEach((f, i) => {
        const properties = f.properties as Json;
        expect(properties.start_at).toBe(new Date(FIXTURE_PERIODS[i].start_at).toISOString());
        // Today the cut names (source_typ, methodolog, outcome_re, geometry_s) are ignored without a word.
        expect(properties).toMatchObject({
          source_type: null,
          methodology: null,
          outcome_reporting_year: null,
          geometry_source: null,
        });
      });
    });

    it("list properties (tags, attribute_type) survive a GeoPackage only as GDAL's '(2:a,b)' text: refused at each", async () => {
      const [x, y] = [10, 48];
      const fixture = fixturePolygons(unique("lists"), x, y, { tags: ["a", "b"], attribute_type: ["CARBON_REMOVAL"] });
      const sent = await convert("lists", fixture, "GPKG");
      const tags = ((sent.features as Json[])[0].properties as Json).tags;
      if (Array.isArray(tags)) {
        // A GDAL that writes GeoPackage lists as JSON arrays: accepted as-is.
        await expectCreatedAndListed(await post(sent), sent, fixtureBbox(x, y));
        return;
      }
      expect(tags).toBe("(2:a,b)");
      const refused = await expectProblem(await post(sent), 422, "invalid_argument");
      expect(refused.errors.map((e) => e.pointer)).toEqual(
        [0, 1, 2].flatMap((i) => [`/features/${i}/properties/tags`, `/features/${i}/properties/attribute_type`]),
      );
      expect(refused.errors[0].detail).toBe("tags must be an array of strings, got a string");
    });
  });
});
