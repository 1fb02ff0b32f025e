/**
 * docs/api.md §5–§6 over REST: a table of invalid create bodies. Each row is sent to production and
 * to the sandbox and must answer 422 invalid_argument with exactly the listed JSON pointers, a
 * detail naming the problem, and nothing stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  collection,
  ENVIRONMENTS,
  expectProblem,
  feature,
  flat,
  type Json,
  list,
  pathOf,
  polygon,
  type Ring,
  square,
  unique,
} from "./rest-support.js";

interface Row {
  name: string;
  /** A JSON value, or raw text when `raw` is set. */
  body: unknown;
  raw?: boolean;
  /** Pointers of all errors, in order; the first one's detail must contain `detail`. */
  pointers: string[];
  detail: string;
}

/** A one-feature collection with this geometry. */
const withGeometry = (geometry: unknown): Json => collection([feature("v", {}, geometry)]);
/** A one-feature collection with these properties (over valid start_at/end_at). */
const withProperties = (properties: Json): Json => collection([feature("v", properties)]);
const G = "/features/0/geometry";
const P = "/features/0/properties";

/** A closed ring of `n` positions on the unit circle. */
function circle(n: number): Ring {
  const ring: Ring = [];
  for (let i = 0; i < n - 1; i++) {
    const a = (2 * Math.PI * i) / (n - 1);
    ring.push([Math.cos(a), Math.sin(a)]);
  }
  ring.push(ring[0]);
  return ring;
}

/** A ring in EPSG:2263 feet (New York), as a shapefile export sends it: 200 positions. */
function projectedRing(): Ring {
  const r: Ring = Array.from({ length: 199 }, (_, i) => [980_000 + i * 25, 190_000 + (i % 9) * 25]);
  r.push(r[0]);
  return r;
}

const rows: Row[] = [
  // --- GIS input rules (docs/api.md §5.4) ---
  {
    name: "a 2° square from longitude 179 to -179 (crossing the antimeridian)",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [179, 0],
          [-179, 0],
          [-179, 2],
          [179, 2],
          [179, 0],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0`],
    detail: "crosses the antimeridian",
  },
  {
    name: "a projected (EPSG:2263) polygon: ten positions, then one advice to reproject",
    body: withGeometry({ type: "Polygon", coordinates: [projectedRing()] }),
    pointers: [...Array.from({ length: 10 }, (_, i) => `${G}/coordinates/0/${i}`), `${G}/coordinates`],
    detail: "longitude must be within -180..180",
  },
  {
    name: "a crs member naming EPSG:2263 on the collection",
    body: {
      ...collection([feature("v", {})]),
      crs: { type: "name", properties: { name: "urn:ogc:def:crs:EPSG::2263" } },
    },
    pointers: ["/crs"],
    detail: 'crs names "urn:ogc:def:crs:EPSG::2263"; coordinates must be WGS 84 longitude/latitude',
  },
  {
    name: "a crs member naming EPSG:3857 on a feature",
    body: collection([{ ...feature("v", {}), crs: { type: "name", properties: { name: "EPSG:3857" } } }]),
    pointers: ["/features/0/crs"],
    detail: "reproject the data to EPSG:4326",
  },
  // --- geometry ---
  {
    name: "geometry of the wrong type (LineString)",
    body: withGeometry({
      type: "LineString",
      coordinates: [
        [0, 0],
        [1, 1],
      ],
    }),
    pointers: [`${G}/type`],
    detail: `geometry type must be "Polygon" or "MultiPolygon", got "LineString"`,
  },
  {
    name: "a Point",
    body: withGeometry({ type: "Point", coordinates: [0, 0] }),
    pointers: [`${G}/type`],
    detail: `got "Point"`,
  },
  {
    name: "geometry without type",
    body: withGeometry({ coordinates: [square()] }),
    pointers: [`${G}/type`],
    detail: "got null",
  },
  {
    name: "geometry missing",
    body: collection([
      { type: "Feature", id: "v", properties: { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" } },
    ]),
    pointers: [G],
    detail: "geometry is required",
  },
  {
    name: "geometry not an object",
    body: withGeometry("POLYGON((0 0,1 0,1 1,0 0))"),
    pointers: [G],
    detail: "geometry must be a GeoJSON Polygon or MultiPolygon object, got a string",
  },
  {
    name: "coordinates missing",
    body: withGeometry({ type: "Polygon" }),
    pointers: [`${G}/coordinates`],
    detail: "polygon coordinates must be an array of linear rings, got nothing",
  },
  {
    name: "a Polygon without rings",
    body: withGeometry({ type: "Polygon", coordinates: [] }),
    pointers: [`${G}/coordinates`],
    detail: "an exterior ring is required",
  },
  {
    name: "an unclosed ring",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [1, 0],
          [1, 1],
          [0, 1],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0`],
    detail: "the exterior ring is not closed",
  },
  {
    name: "a ring of fewer than 4 positions",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [1, 0],
          [0, 0],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0`, `${G}/coordinates/0`],
    detail: "the exterior ring has 3 positions; a ring needs at least 4",
  },
  {
    name: "a ring of fewer than 3 distinct vertices",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [1, 0],
          [1, 0],
          [0, 0],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0`],
    detail: "only 2 distinct vertices; at least 3 are required",
  },
  {
    name: "a collinear ring",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [1, 0],
          [2, 0],
          [0, 0],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0`],
    detail: "zero area",
  },
  {
    name: "a self-intersecting ring (bowtie)",
    body: withGeometry({
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
    pointers: [`${G}/coordinates/0`],
    detail: "the exterior ring self-intersects near (0.5, 0.5)",
  },
  {
    name: "a hole outside its shell",
    body: withGeometry({ type: "Polygon", coordinates: [square(0, 0, 1), square(5, 5, 1)] }),
    pointers: [`${G}/coordinates/1`],
    detail: "hole 1 lies outside the exterior ring",
  },
  {
    name: "a hole sharing an edge with its shell",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        square(0, 0, 4),
        [
          [0, 1],
          [1, 1],
          [1, 2],
          [0, 2],
          [0, 1],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/1`],
    detail: "hole 1 crosses or shares an edge with the exterior ring",
  },
  {
    name: "two overlapping holes",
    body: withGeometry({ type: "Polygon", coordinates: [square(0, 0, 10), square(2, 2, 3), square(4, 4, 3)] }),
    pointers: [`${G}/coordinates/2`],
    detail: "hole 1 and hole 2 overlap or share an edge",
  },
  {
    name: "a hole nested in another hole",
    body: withGeometry({ type: "Polygon", coordinates: [square(0, 0, 10), square(2, 2, 5), square(3, 3, 1)] }),
    pointers: [`${G}/coordinates/2`],
    detail: "holes must not be nested",
  },
  {
    name: "a hole outside its shell, in a MultiPolygon part",
    body: withGeometry({
      type: "MultiPolygon",
      coordinates: [[square(10, 10, 1)], [square(0, 0, 1), square(5, 5, 1)]],
    }),
    pointers: [`${G}/coordinates/1/1`],
    detail: "hole 1 of polygon 1 lies outside the exterior ring of polygon 1",
  },
  {
    name: "MultiPolygon parts sharing an edge",
    body: withGeometry({ type: "MultiPolygon", coordinates: [[square(0, 0, 1)], [square(1, 0, 1)]] }),
    pointers: [`${G}/coordinates/1`],
    detail: "dissolve them into one polygon",
  },
  {
    name: "overlapping MultiPolygon parts",
    body: withGeometry({ type: "MultiPolygon", coordinates: [[square(0, 0, 2)], [square(1, 1, 2)]] }),
    pointers: [`${G}/coordinates/1`],
    detail: "polygons 0 and 1 overlap",
  },
  {
    name: "longitude 181",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [179, 0],
          [181, 0],
          [179, 1],
          [179, 0],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0/1`],
    detail: "longitude must be within -180..180",
  },
  {
    name: "latitude -91",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [0, -90],
          [1, -90],
          [1, -91],
          [0, -90],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0/2`],
    detail: "latitude must be within -90..90",
  },
  {
    name: "a position of 4 numbers",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [0, 0, 0, 0],
          [1, 0],
          [1, 1],
          [0, 0],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0/0`],
    detail: "a position must be an array of 2 or 3 numbers (longitude, latitude[, altitude]), got [0,0,0,0]",
  },
  {
    // JSON has no Infinity: the literal overflows to it when parsed.
    name: "an altitude of 1e400",
    body: '{"alt_id":"alt-1e400","start_at":"2024-01-01T00:00:00Z","end_at":"2025-01-01T00:00:00Z","geometry":{"type":"Polygon","coordinates":[[[0,0,1e400],[1,0],[1,1],[0,0]]]}}',
    raw: true,
    pointers: ["/geometry/coordinates/0/0/2"],
    detail: "an altitude must be a finite number (altitudes are accepted and dropped), got Infinity",
  },
  {
    name: "a position of 1 number",
    body: withGeometry({ type: "Polygon", coordinates: [[[0, 0], [1], [1, 1], [0, 0]]] }),
    pointers: [`${G}/coordinates/0/1`],
    detail: "got [1]",
  },
  {
    name: "a string coordinate",
    body: withGeometry({
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          ["1", 0],
          [1, 1],
          [0, 0],
        ],
      ],
    }),
    pointers: [`${G}/coordinates/0/1`],
    detail: `got ["1",0]`,
  },
  {
    name: "a non-finite coordinate (1e400)",
    raw: true,
    body: JSON.stringify(
      withGeometry({
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [7777, 0],
            [1, 1],
            [0, 0],
          ],
        ],
      }),
    ).replace("7777", "1e400"),
    pointers: [`${G}/coordinates/0/1`],
    detail: "is not a pair of finite numbers",
  },
  {
    name: "100,001 vertices",
    body: withGeometry({ type: "Polygon", coordinates: [circle(100_001)] }),
    pointers: [`${G}/coordinates`],
    detail: "geometry has 100001 positions; at most 100000 are allowed",
  },
  // --- dates ---
  {
    name: "start_at missing",
    body: withProperties({ start_at: undefined }),
    pointers: [`${P}/start_at`],
    detail: "start_at is required",
  },
  {
    name: "end_at missing (flat)",
    body: flat("v", { end_at: undefined }),
    pointers: ["/end_at"],
    detail: "end_at is required",
  },
  {
    name: "a malformed date",
    body: withProperties({ start_at: "yesterday" }),
    pointers: [`${P}/start_at`],
    detail: `start_at must be an RFC 3339 date-time with a time zone offset, like 2024-01-01T00:00:00Z; got "yesterday"`,
  },
  {
    // A real date (year 0 is a leap year), before Timestamp's range: told so, not "not a real date".
    name: "29 February of year 0",
    body: withProperties({ start_at: "0000-02-29T00:00:00Z" }),
    pointers: [`${P}/start_at`],
    detail: "start_at is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z",
  },
  {
    name: "a date only",
    body: withProperties({ start_at: "2024-01-01" }),
    pointers: [`${P}/start_at`],
    detail: "must be an RFC 3339 date-time",
  },
  {
    name: "a date-time without offset",
    body: withProperties({ start_at: "2024-01-01T00:00:00" }),
    pointers: [`${P}/start_at`],
    detail: `"2024-01-01T00:00:00" has no offset`,
  },
  {
    name: "February 30",
    body: withProperties({ start_at: "2024-02-30T00:00:00Z" }),
    pointers: [`${P}/start_at`],
    detail: `start_at "2024-02-30T00:00:00Z" is not a real date and time`,
  },
  {
    name: "hour 24",
    body: withProperties({ end_at: "2025-01-01T24:00:00Z" }),
    pointers: [`${P}/end_at`],
    detail: "is not a real date and time",
  },
  {
    name: "a numeric date",
    body: withProperties({ start_at: 1704067200 }),
    pointers: [`${P}/start_at`],
    detail: "got 1704067200",
  },
  {
    name: "end_at before start_at",
    body: withProperties({ end_at: "2023-12-31T23:59:59Z" }),
    pointers: [`${P}/end_at`],
    detail: "end_at must be after start_at",
  },
  {
    name: "end_at equal to start_at (other offset)",
    body: withProperties({ end_at: "2024-01-01T01:00:00+01:00" }),
    pointers: [`${P}/end_at`],
    detail: "end_at must be after start_at",
  },
  // --- enums ---
  {
    name: "a lower-case source_type",
    body: withProperties({ source_type: "field" }),
    pointers: [`${P}/source_type`],
    detail: `source_type must be one of FIELD, FACILITY, DEVICE, PROGRAM, JURISDICTIONAL, SITE (exact, upper case), got "field"`,
  },
  {
    name: "an unknown attribute_type",
    body: withProperties({ attribute_type: ["BIODIVERSITY", "CARBON"] }),
    pointers: [`${P}/attribute_type/1`],
    detail: `attribute_type must be one of CARBON_REMOVAL, CARBON_AVOIDANCE, CI_SCORE, BIODIVERSITY, RENEWABLE_ENERGY, WATER_QUALITY, WATER_QUANTITY (exact, upper case), got "CARBON"`,
  },
  {
    name: "a repeated attribute_type",
    body: withProperties({ attribute_type: ["BIODIVERSITY", "CI_SCORE", "BIODIVERSITY"] }),
    pointers: [`${P}/attribute_type/2`],
    detail: "attribute_type BIODIVERSITY is repeated",
  },
  {
    name: "a repeated and an unknown attribute_type: both reported",
    body: withProperties({ attribute_type: ["BIODIVERSITY", "BIODIVERSITY", "CARBON"] }),
    pointers: [`${P}/attribute_type/1`, `${P}/attribute_type/2`],
    detail: "attribute_type BIODIVERSITY is repeated",
  },
  {
    name: "tags with two non-strings and an empty string: all three reported",
    body: withProperties({ tags: [1, 2, ""] }),
    pointers: [`${P}/tags/0`, `${P}/tags/1`, `${P}/tags/2`],
    detail: "a tag must be a string, got a number",
  },
  {
    name: "attribute_type not an array",
    body: withProperties({ attribute_type: "BIODIVERSITY" }),
    pointers: [`${P}/attribute_type`],
    detail: "attribute_type must be an array of strings, got a string",
  },
  {
    name: "an unknown geometry_source",
    body: withProperties({ geometry_source: "DRAWN" }),
    pointers: [`${P}/geometry_source`],
    detail: `geometry_source must be one of CUSTODIAN_DRAWN, AUTHORITATIVE_GIS, EXTERNAL_REGISTRY, DERIVED (exact, upper case), got "DRAWN"`,
  },
  // --- alt_id ---
  {
    name: "alt_id missing (Feature without id)",
    body: collection([feature(undefined)]),
    pointers: ["/features/0/id"],
    detail: "alt_id is required",
  },
  {
    name: "alt_id missing (flat)",
    body: flat("v", { alt_id: undefined }),
    pointers: ["/alt_id"],
    detail: "alt_id is required",
  },
  { name: "alt_id empty", body: collection([feature("")]), pointers: ["/features/0/id"], detail: "alt_id is required" },
  {
    name: "alt_id of 257 characters",
    body: collection([feature("a".repeat(257))]),
    pointers: ["/features/0/id"],
    detail: "alt_id must be at most 256 characters, got 257",
  },
  {
    // JSON's \ud801 escape: UTF-8 storage would have made it U+FFFD, equal to other alt_ids.
    name: "alt_id with an unpaired surrogate",
    body: collection([feature("sur\ud801")]),
    pointers: ["/features/0/id"],
    detail: "alt_id must be Unicode text: it has an unpaired surrogate (U+D801) at character 4",
  },
  {
    name: "methodology with an unpaired surrogate",
    body: withProperties({ methodology: "m\udc00" }),
    pointers: [`${P}/methodology`],
    detail: "methodology must be Unicode text: it has an unpaired surrogate (U+DC00) at character 2",
  },
  {
    name: "alt_id with a control character",
    body: collection([feature("ab\u0007c")]),
    pointers: ["/features/0/id"],
    detail: "alt_id must not contain control characters",
  },
  {
    name: "alt_id with a leading space",
    body: collection([feature(" abc")]),
    pointers: ["/features/0/id"],
    detail: "alt_id must not start or end with white space",
  },
  {
    name: "alt_id with a trailing space, in properties.alt_id",
    body: collection([feature(undefined, { alt_id: "abc " })]),
    pointers: [`${P}/alt_id`],
    detail: "alt_id must not start or end with white space",
  },
  {
    name: "alt_id not a string",
    body: flat("v", { alt_id: 42 }),
    pointers: ["/alt_id"],
    detail: "alt_id must be a string, got a number",
  },
  {
    name: "id and properties.alt_id differ",
    body: collection([feature("one", { alt_id: "two" })]),
    pointers: [`${P}/alt_id`],
    detail: "differ; give one alt_id",
  },
  {
    name: "alt_id repeated in the request",
    body: collection([feature("same"), feature("same", {}, polygon(3, 3))]),
    pointers: ["/features/1/id"],
    detail: `alt_id "same" repeats source 0 of this request`,
  },
  // --- outcome_reporting_year ---
  {
    name: "year 999",
    body: withProperties({ outcome_reporting_year: 999 }),
    pointers: [`${P}/outcome_reporting_year`],
    detail: "outcome_reporting_year must be a year from 1000 to 9999, got 999",
  },
  {
    name: "year 10000",
    body: withProperties({ outcome_reporting_year: 10000 }),
    pointers: [`${P}/outcome_reporting_year`],
    detail: "got 10000",
  },
  {
    name: "year 2024.5",
    body: withProperties({ outcome_reporting_year: 2024.5 }),
    pointers: [`${P}/outcome_reporting_year`],
    detail: "outcome_reporting_year must be an integer year, got 2024.5",
  },
  {
    name: "year as a string",
    body: withProperties({ outcome_reporting_year: "2024" }),
    pointers: [`${P}/outcome_reporting_year`],
    detail: `must be an integer year, got "2024"`,
  },
  // --- tags ---
  {
    name: "65 tags",
    body: withProperties({ tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }),
    pointers: [`${P}/tags`],
    detail: "at most 64 tags are allowed, got 65",
  },
  {
    name: "an empty tag",
    body: withProperties({ tags: ["a", ""] }),
    pointers: [`${P}/tags/1`],
    detail: "a tag must be 1 to 128 characters, got 0",
  },
  {
    name: "a tag of 129 characters",
    body: withProperties({ tags: ["t".repeat(129)] }),
    pointers: [`${P}/tags/0`],
    detail: "a tag must be 1 to 128 characters, got 129",
  },
  {
    name: "a tag that is not a string",
    body: withProperties({ tags: ["a", 7] }),
    pointers: [`${P}/tags/1`],
    detail: "a tag must be a string, got a number",
  },
  {
    name: "tags not an array",
    body: withProperties({ tags: "a,b" }),
    pointers: [`${P}/tags`],
    detail: "tags must be an array of strings, got a string",
  },
  {
    name: "a bad collection-level tag points at the collection",
    body: collection([feature("v")], { tags: ["t".repeat(129)] }),
    pointers: ["/tags/0"],
    detail: "got 129",
  },
  // --- methodology, steward_id, project_id ---
  {
    name: "methodology empty",
    body: withProperties({ methodology: "" }),
    pointers: [`${P}/methodology`],
    detail: "methodology must not be empty",
  },
  {
    name: "methodology of 257 characters",
    body: withProperties({ methodology: "m".repeat(257) }),
    pointers: [`${P}/methodology`],
    detail: "methodology must be at most 256 characters, got 257",
  },
  {
    name: "methodology not a string",
    body: withProperties({ methodology: 5 }),
    pointers: [`${P}/methodology`],
    detail: "methodology must be a string, got a number",
  },
  {
    name: "steward_id empty (flat)",
    body: flat("v", { steward_id: "" }),
    pointers: ["/steward_id"],
    detail: "steward_id must not be empty",
  },
  {
    name: "project_id of 257 characters (single Feature)",
    body: feature("v", { project_id: "p".repeat(257) }),
    pointers: ["/properties/project_id"],
    detail: "project_id must be at most 256 characters",
  },
  // --- body shapes ---
  {
    name: "an array body",
    body: [flat("v")],
    pointers: [""],
    detail: "the body must be a GeoJSON FeatureCollection, a Feature, or a source object, got an array",
  },
  { name: "a string body", body: "hello", pointers: [""], detail: "got a string" },
  { name: "a null body", body: null, pointers: [""], detail: "got null" },
  {
    name: `a bare geometry (type "Polygon")`,
    body: polygon(),
    pointers: ["/type"],
    detail: `type must be "FeatureCollection" or "Feature", or absent for a flat source; got "Polygon"`,
  },
  {
    name: "features not an array",
    body: { type: "FeatureCollection", features: { 0: feature("v") } },
    pointers: ["/features"],
    detail: "features must be an array of Feature objects, got an object",
  },
  {
    name: "features missing",
    body: { type: "FeatureCollection" },
    pointers: ["/features"],
    detail: "features must be an array of Feature objects, got nothing",
  },
  {
    name: "a feature that is not an object",
    body: collection([feature("ok"), "feature"]),
    pointers: ["/features/1"],
    detail: "a feature must be a GeoJSON Feature object, got a string",
  },
  {
    name: "a feature of the wrong type",
    body: collection([{ ...feature("v"), type: "Polygon" }]),
    pointers: ["/features/0/type"],
    detail: `type must be "Feature", got "Polygon"`,
  },
  {
    name: "properties not an object",
    body: collection([{ type: "Feature", id: "v", geometry: polygon(), properties: [] }]),
    pointers: [P, `${P}/start_at`, `${P}/end_at`],
    detail: "properties must be an object, got an array",
  },
];

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

it("the table has at least 30 rows", () => {
  expect(rows.length).toBeGreaterThanOrEqual(30);
  expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
});

describe.each(ENVIRONMENTS)("%s", (env) => {
  let token: string;

  beforeAll(async () => {
    token = await server.userToken(unique(`acct-table-${env}`));
  });

  it.each(rows)("$name → 422 at $pointers", async (row) => {
    const res = row.raw
      ? await server.request("POST", pathOf(env), {
          token,
          body: row.body as string,
          headers: { "content-type": "application/json" },
        })
      : await server.request("POST", pathOf(env), { token, json: row.body });
    const problem = await expectProblem(res, 422, "invalid_argument");
    expect(problem.errors.map((e) => e.pointer)).toEqual(row.pointers);
    expect(problem.errors[0].detail).toContain(row.detail);
    // The summary names the first pointer and its detail, and counts the rest.
    const more = row.pointers.length > 1 ? ` (and ${row.pointers.length - 1} more)` : "";
    expect(problem.detail).toBe(`${row.pointers[0] || "/"}: ${problem.errors[0].detail}${more}`);
  });

  it("nothing was stored by any row", async () => {
    expect(await list(server, token, "", env)).toEqual([]);
  });
});
