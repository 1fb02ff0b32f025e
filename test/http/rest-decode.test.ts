/**
 * decodeCreateBody (src/http/rest-decode.ts): the REST create body in its three shapes
 * (docs/api.md §4.3) → CreateSourcesRequest, the JSON pointer of every field of every source, and
 * the JSON-level violations (§5) with their exact pointers and texts.
 */
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { GeometrySchema, SourceInputSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { decodeCreateBody } from "../../src/http/rest-decode.js";
import { ring } from "../support/geometry-fixtures.js";

type Json = Record<string, unknown>;

const START = "2024-01-01T00:00:00Z";
const END = "2025-01-01T00:00:00Z";
/** 2024-01-01T00:00:00Z in epoch seconds. */
const START_SECONDS = 1_704_067_200n;
const END_SECONDS = 1_735_689_600n;

const UNIT = ring(0, 0, 1, 1);
const UNIT_PACKED = [0, 0, 1, 0, 1, 1, 0, 1, 0, 0];
const POLYGON = { type: "Polygon", coordinates: [UNIT] };

const SOURCE_TYPES = "FIELD, FACILITY, DEVICE, PROGRAM, JURISDICTIONAL, SITE";
const ATTRIBUTE_TYPES =
  "CARBON_REMOVAL, CARBON_AVOIDANCE, CI_SCORE, BIODIVERSITY, RENEWABLE_ENERGY, WATER_QUALITY, WATER_QUANTITY";
const GEOMETRY_SOURCES = "CUSTODIAN_DRAWN, AUTHORITATIVE_GIS, EXTERNAL_REGISTRY, DERIVED";
const DATE_TIME_EXPECTED = "must be an RFC 3339 date-time with a time zone offset, like 2024-01-01T00:00:00Z";
const NOT_REAL = "is not a real date and time (check the day of the month, hours, minutes and offset)";
const POSITION = "a position must be an array of 2 or 3 numbers (longitude, latitude[, altitude])";

/** A valid Feature with `properties` start_at, end_at and `fields`. */
function feature(altId: unknown, fields: Json = {}, geometry: unknown = POLYGON, extra: Json = {}): Json {
  return { type: "Feature", id: altId, properties: { start_at: START, end_at: END, ...fields }, geometry, ...extra };
}

/** A valid flat source with `fields` at the top level. */
function flat(altId: unknown, fields: Json = {}, geometry: unknown = POLYGON): Json {
  return { alt_id: altId, start_at: START, end_at: END, geometry, ...fields };
}

function collection(features: unknown[], defaults: Json = {}): Json {
  return { type: "FeatureCollection", ...defaults, features };
}

/** The map of source `i` as a plain object, for exact comparison. */
function pointersOf(body: unknown, i = 0): Record<string, string> {
  return Object.fromEntries(decodeCreateBody(body).map.fields[i]);
}

function timestamp(seconds: bigint, nanos = 0) {
  return create(TimestampSchema, { seconds, nanos });
}

function polygonGeometry(...rings: number[][]) {
  return create(GeometrySchema, {
    kind: { case: "polygon", value: { rings: rings.map((coordinates) => ({ coordinates })) } },
  });
}

/**
 * The same source in each of the three shapes. Optional fields, start_at and end_at go where the
 * shape keeps them (`fieldBase`); the geometry at `geometryBase`. In the collection the source
 * under test is the second feature, so its index shows in the pointers and in `source`.
 */
interface Shape {
  name: string;
  source: number;
  fieldBase: string;
  geometryBase: string;
  body(fields: Json, geometry?: unknown): Json;
}

const SHAPES: Shape[] = [
  {
    name: "flat source",
    source: 0,
    fieldBase: "",
    geometryBase: "/geometry",
    body: (fields, geometry = POLYGON) => flat("src-1", fields, geometry),
  },
  {
    name: "Feature",
    source: 0,
    fieldBase: "/properties",
    geometryBase: "/geometry",
    body: (fields, geometry = POLYGON) => feature("src-1", fields, geometry),
  },
  {
    name: "FeatureCollection member",
    source: 1,
    fieldBase: "/features/1/properties",
    geometryBase: "/features/1/geometry",
    body: (fields, geometry = POLYGON) => collection([feature("src-0"), feature("src-1", fields, geometry)]),
  },
];

describe("decodeCreateBody: body shapes", () => {
  it("decodes a flat source", () => {
    const { request, map, violations } = decodeCreateBody(flat("trial-1", { methodology: "VM0042" }));
    expect(violations).toEqual([]);
    expect(map.sourcesPointer).toBe("");
    expect(request.sources).toEqual([
      create(SourceInputSchema, {
        altId: "trial-1",
        methodology: "VM0042",
        geometry: polygonGeometry(UNIT_PACKED),
        startAt: timestamp(START_SECONDS),
        endAt: timestamp(END_SECONDS),
      }),
    ]);
  });

  it("decodes a single Feature, its id as alt_id", () => {
    const { request, map, violations } = decodeCreateBody(feature("plot-9", { tags: ["storage"] }));
    expect(violations).toEqual([]);
    expect(map.sourcesPointer).toBe("");
    expect(request.sources).toEqual([
      create(SourceInputSchema, {
        altId: "plot-9",
        tags: ["storage"],
        geometry: polygonGeometry(UNIT_PACKED),
        startAt: timestamp(START_SECONDS),
        endAt: timestamp(END_SECONDS),
      }),
    ]);
  });

  it("decodes every feature of a FeatureCollection, in order", () => {
    const { request, map, violations } = decodeCreateBody(
      collection([
        feature("a", { project_id: "p-a" }),
        feature("b", {}, { type: "Polygon", coordinates: [ring(2, 2, 3, 3)] }),
      ]),
    );
    expect(violations).toEqual([]);
    expect(map.sourcesPointer).toBe("/features");
    expect(map.fields).toHaveLength(2);
    expect(request.sources.map((s) => s.altId)).toEqual(["a", "b"]);
    expect(request.sources[0].projectId).toBe("p-a");
    expect(request.sources[1].projectId).toBeUndefined();
    expect(request.sources[1].geometry).toEqual(polygonGeometry([2, 2, 3, 2, 3, 3, 2, 3, 2, 2]));
  });

  it("says which shape the body has, none for a body of no shape it takes", () => {
    expect(decodeCreateBody(flat("trial-1")).shape).toBe("flat");
    expect(decodeCreateBody(feature("plot-9")).shape).toBe("Feature");
    expect(decodeCreateBody(collection([feature("a")])).shape).toBe("FeatureCollection");
    expect(decodeCreateBody([]).shape).toBeNull();
    expect(decodeCreateBody({ type: "Point" }).shape).toBeNull();
    expect(decodeCreateBody(flat("trial-1"), "geojson").shape).toBeNull();
  });

  it("decodes an empty FeatureCollection to no sources, leaving 'at least one' to the ledger", () => {
    const { request, map, violations } = decodeCreateBody(collection([]));
    expect(violations).toEqual([]);
    expect(request.sources).toEqual([]);
    expect(map).toEqual({ sourcesPointer: "/features", fields: [] });
  });

  it("applies the collection's optional fields to features that do not set them (docs/api.md §4.3 example)", () => {
    const body = collection(
      [
        feature("north-40", { source_type: "FIELD", attribute_type: ["CARBON_REMOVAL"] }),
        feature("mill", { methodology: "ISCC" }),
      ],
      { methodology: "VM0042", project_id: "prj-7" },
    );
    const { request, violations } = decodeCreateBody(body);
    expect(violations).toEqual([]);
    expect(request.sources.map((s) => [s.altId, s.methodology, s.projectId])).toEqual([
      ["north-40", "VM0042", "prj-7"],
      ["mill", "ISCC", "prj-7"],
    ]);
    expect(request.sources[0].sourceType).toBe(1);
    expect(request.sources[0].attributeType).toEqual([1]);
  });

  it("applies all eight collection defaults, a feature's own value (or null) winning field by field", () => {
    const defaults = {
      methodology: "VM0042",
      tags: ["default"],
      steward_id: "steward-d",
      project_id: "prj-d",
      outcome_reporting_year: 2030,
      source_type: "FIELD",
      attribute_type: ["BIODIVERSITY"],
      geometry_source: "DERIVED",
    };
    const own = {
      methodology: "ISCC",
      tags: null,
      steward_id: null,
      project_id: "prj-own",
      outcome_reporting_year: 2031,
      source_type: "SITE",
      attribute_type: [],
      geometry_source: null,
    };
    const body = collection([feature("inherits"), feature("overrides", own)], defaults);
    const { request, map, violations } = decodeCreateBody(body);
    expect(violations).toEqual([]);
    const [inherits, overrides] = request.sources;
    expect(inherits).toEqual(
      create(SourceInputSchema, {
        altId: "inherits",
        methodology: "VM0042",
        tags: ["default"],
        stewardId: "steward-d",
        projectId: "prj-d",
        outcomeReportingYear: 2030,
        sourceType: 1,
        attributeType: [4],
        geometrySource: 4,
        geometry: polygonGeometry(UNIT_PACKED),
        startAt: timestamp(START_SECONDS),
        endAt: timestamp(END_SECONDS),
      }),
    );
    expect(overrides).toEqual(
      create(SourceInputSchema, {
        altId: "overrides",
        methodology: "ISCC",
        projectId: "prj-own",
        outcomeReportingYear: 2031,
        sourceType: 6,
        geometry: polygonGeometry(UNIT_PACKED),
        startAt: timestamp(START_SECONDS),
        endAt: timestamp(END_SECONDS),
      }),
    );
    expect(overrides.stewardId).toBeUndefined();
    expect(overrides.tags).toEqual([]);
    expect(overrides.geometrySource).toBe(0);
    // An inherited field points at the collection's member; an own one (null included) at the feature's.
    const optional = Object.keys(defaults);
    expect(optional.map((f) => map.fields[0].get(f))).toEqual(optional.map((f) => `/${f}`));
    expect(optional.map((f) => map.fields[1].get(f))).toEqual(optional.map((f) => `/features/1/properties/${f}`));
  });

  it("ignores collection-level members that are not the eight optional fields", () => {
    const body = collection([{ type: "Feature", geometry: null }], {
      alt_id: "from-collection",
      start_at: START,
      end_at: END,
      geometry: POLYGON,
      name: "export",
      crs: { type: "name", properties: { name: "urn:ogc:def:crs:OGC:1.3:CRS84" } },
      bbox: [0, 0, 1, 1],
    });
    const { request, violations } = decodeCreateBody(body);
    expect(violations).toEqual([]);
    expect(request.sources).toEqual([create(SourceInputSchema)]);
    expect(pointersOf(body)).toEqual({
      alt_id: "/features/0/id",
      geometry: "/features/0/geometry",
      start_at: "/features/0/properties/start_at",
      end_at: "/features/0/properties/end_at",
    });
  });

  it.each([
    ["on the collection", { crs: { type: "name", properties: { name: "EPSG:3857" } } }, "/crs", undefined],
    ["malformed", { crs: "EPSG:4326" }, "/crs", undefined],
  ])("refuses a crs member that is not WGS 84 longitude/latitude (%s) at its pointer", (_, extra, pointer, source) => {
    const { violations } = decodeCreateBody(collection([feature("f")], extra));
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatchObject({ field: "crs", pointer, source });
    expect(violations[0].detail).toMatch(/coordinates must be WGS 84 longitude\/latitude \(CRS84 \/ EPSG:4326\)/);
  });

  it("accepts the names of CRS84 and EPSG:4326 in any case, on a feature or a flat source", () => {
    for (const name of ["EPSG:4326", "urn:ogc:def:crs:epsg::4326", "http://www.opengis.net/def/crs/OGC/1.3/CRS84"]) {
      const crs = { type: "name", properties: { name } };
      expect(decodeCreateBody({ ...feature("f"), crs }).violations).toEqual([]);
    }
    const flatWithCrs = { ...feature("f"), type: undefined, crs: { type: "name", properties: { name: "EPSG:2263" } } };
    expect(decodeCreateBody(flatWithCrs).violations.map((v) => v.pointer)).toContain("/crs");
  });

  it("does not treat optional fields beside a single Feature's properties as defaults", () => {
    const body = { ...feature("f"), methodology: "VM0042", tags: [1] };
    const { request, violations } = decodeCreateBody(body);
    expect(violations).toEqual([]);
    expect(request.sources[0].methodology).toBeUndefined();
    expect(request.sources[0].tags).toEqual([]);
  });

  it("ignores unknown members at every level", () => {
    const geometry = { type: "Polygon", coordinates: [UNIT], bbox: [0, 0, 1, 1], crs: null };
    const serverSet = { id: "src_X", account_id: "acct-other", conflict: true, created_by: "me", OBJECTID: 7 };
    const bodies = [
      { ...flat("u", {}, geometry), ...serverSet, properties: "not looked at", type: undefined },
      feature("u", serverSet, geometry, { bbox: [0, 0, 1, 1], foreign: { deep: [1] } }),
      collection([feature("u", serverSet, geometry, { bbox: [0, 0, 1, 1] })], { bbox: [0, 0, 1, 1], foreign: 1 }),
    ];
    for (const body of bodies) {
      const { request, violations } = decodeCreateBody(body);
      expect(violations).toEqual([]);
      expect(request.sources).toEqual([
        create(SourceInputSchema, {
          altId: "u",
          geometry: polygonGeometry(UNIT_PACKED),
          startAt: timestamp(START_SECONDS),
          endAt: timestamp(END_SECONDS),
        }),
      ]);
    }
  });

  it("reads alt_id from properties.alt_id when the Feature has no id", () => {
    for (const id of [undefined, null]) {
      const body = feature(id, { alt_id: "from-properties" });
      const { request, violations } = decodeCreateBody(body);
      expect(violations).toEqual([]);
      expect(request.sources[0].altId).toBe("from-properties");
      expect(pointersOf(body).alt_id).toBe("/properties/alt_id");
    }
  });

  it("accepts an id equal to properties.alt_id, pointing at the id", () => {
    const body = collection([feature("same", { alt_id: "same" })]);
    const { request, violations } = decodeCreateBody(body);
    expect(violations).toEqual([]);
    expect(request.sources[0].altId).toBe("same");
    expect(pointersOf(body).alt_id).toBe("/features/0/id");
  });

  it("refuses an id and a properties.alt_id that differ, as JSON values", () => {
    expect(decodeCreateBody(feature("one", { alt_id: "two" })).violations).toEqual([
      {
        source: 0,
        field: "alt_id",
        pointer: "/properties/alt_id",
        detail: `the feature's id ("one") and properties.alt_id ("two") differ; give one alt_id`,
      },
    ]);
    const { request, violations } = decodeCreateBody(collection([feature("ok"), feature(5, { alt_id: "5" })]));
    expect(violations).toEqual([
      {
        source: 1,
        field: "alt_id",
        pointer: "/features/1/properties/alt_id",
        detail: `the feature's id (5) and properties.alt_id ("5") differ; give one alt_id`,
      },
    ]);
    expect(request.sources[1].altId).toBe("");
  });

  it("refuses a numeric id instead of converting it", () => {
    expect(decodeCreateBody(feature(5)).violations).toEqual([
      { source: 0, field: "alt_id", pointer: "/id", detail: "alt_id must be a string, got a number" },
    ]);
    const { request, violations } = decodeCreateBody(collection([feature("ok"), feature(0)]));
    expect(violations).toEqual([
      { source: 1, field: "alt_id", pointer: "/features/1/id", detail: "alt_id must be a string, got a number" },
    ]);
    expect(request.sources[1].altId).toBe("");
  });

  it("refuses a non-string properties.alt_id at properties/alt_id", () => {
    expect(decodeCreateBody(feature(undefined, { alt_id: ["a"] })).violations).toEqual([
      { source: 0, field: "alt_id", pointer: "/properties/alt_id", detail: "alt_id must be a string, got an array" },
    ]);
  });

  it("refuses a non-string flat alt_id at /alt_id", () => {
    expect(decodeCreateBody(flat(true)).violations).toEqual([
      { source: 0, field: "alt_id", pointer: "/alt_id", detail: "alt_id must be a string, got a boolean" },
    ]);
  });

  it("leaves a missing alt_id to the ledger, its pointer at the id or /alt_id", () => {
    for (const [body, pointer] of [
      [feature(undefined), "/id"],
      [feature(null, { alt_id: null }), "/id"],
      [flat(undefined), "/alt_id"],
      [flat(null), "/alt_id"],
    ] as const) {
      const { request, map, violations } = decodeCreateBody(body);
      expect(violations).toEqual([]);
      expect(request.sources[0].altId).toBe("");
      expect(map.fields[0].get("alt_id")).toBe(pointer);
    }
  });

  it.each([
    [null, "null"],
    [[collection([])], "an array"],
    ["{}", "a string"],
    [42, "a number"],
    [true, "a boolean"],
  ])("refuses a body that is not an object: %j", (body, described) => {
    const { request, map, violations } = decodeCreateBody(body);
    expect(violations).toEqual([
      {
        field: "sources",
        pointer: "",
        detail: `the body must be a GeoJSON FeatureCollection, a Feature, or a source object, got ${described}`,
      },
    ]);
    expect(request.sources).toEqual([]);
    expect(map).toEqual({ sourcesPointer: "", fields: [] });
  });

  it.each([
    ["Polygon", '"Polygon"'],
    ["featurecollection", '"featurecollection"'],
    ["feature", '"feature"'],
    [7, "7"],
    [null, "null"],
  ])("refuses an unknown top-level type %j", (type, rendered) => {
    const { request, map, violations } = decodeCreateBody({ ...flat("x"), type });
    expect(violations).toEqual([
      {
        field: "sources",
        pointer: "/type",
        detail: `type must be "FeatureCollection" or "Feature", or absent for a flat source; got ${rendered}`,
      },
    ]);
    expect(request.sources).toEqual([]);
    expect(map).toEqual({ sourcesPointer: "", fields: [] });
  });

  it("taking GeoJSON only (OGC API), refuses a flat source object and names the shapes it takes", () => {
    const flatBody = decodeCreateBody(flat("x"), "geojson");
    expect(flatBody.violations).toEqual([
      {
        field: "sources",
        pointer: "/type",
        detail:
          "the body must be a GeoJSON Feature or FeatureCollection, got an object without type (POST /sources also takes a flat source object)",
      },
    ]);
    expect(flatBody.request.sources).toEqual([]);
    expect(decodeCreateBody({ ...flat("x"), type: "Polygon" }, "geojson").violations).toEqual([
      { field: "sources", pointer: "/type", detail: 'type must be "FeatureCollection" or "Feature"; got "Polygon"' },
    ]);
    expect(decodeCreateBody([], "geojson").violations).toEqual([
      {
        field: "sources",
        pointer: "",
        detail: "the body must be a GeoJSON Feature or FeatureCollection, got an array",
      },
    ]);
    const features = decodeCreateBody(collection([feature("a"), feature("b")]), "geojson");
    expect(features.violations).toEqual([]);
    expect(features.request.sources.map((s) => s.altId)).toEqual(["a", "b"]);
    expect(decodeCreateBody(feature("c"), "geojson").request.sources.map((s) => s.altId)).toEqual(["c"]);
  });

  it.each([
    [undefined, "nothing (the member is missing)"],
    [null, "null"],
    [{ 0: feature("a") }, "an object"],
    ["[]", "a string"],
  ])("refuses features that are not an array: %j", (features, described) => {
    const { request, map, violations } = decodeCreateBody({ type: "FeatureCollection", features });
    expect(violations).toEqual([
      {
        field: "sources",
        pointer: "/features",
        detail: `features must be an array of Feature objects, got ${described}`,
      },
    ]);
    expect(request.sources).toEqual([]);
    expect(map).toEqual({ sourcesPointer: "/features", fields: [] });
  });

  it("decodes 1,000 features", () => {
    const features = Array.from({ length: 1000 }, (_, i) => feature(`f-${i}`));
    const { request, map, violations } = decodeCreateBody(collection(features));
    expect(violations).toEqual([]);
    expect(request.sources).toHaveLength(1000);
    expect(request.sources[999].altId).toBe("f-999");
    expect(map.fields[999].get("alt_id")).toBe("/features/999/id");
  });

  it("refuses 1,001 features without examining any of them", () => {
    const features: unknown[] = Array.from({ length: 1000 }, (_, i) => feature(`f-${i}`));
    features.push("not even a feature");
    const { request, map, violations } = decodeCreateBody(collection(features, { source_type: "nope" }));
    expect(violations).toEqual([
      { field: "sources", pointer: "/features", detail: "at most 1000 sources are allowed in one request, got 1001" },
    ]);
    expect(request.sources).toEqual([]);
    expect(map).toEqual({ sourcesPointer: "/features", fields: [] });
  });

  it.each([
    ["a string", "north-40"],
    ["null", null],
    ["an array", [feature("a")]],
    ["a number", 3],
  ])("reports a member that is %s once, as the whole source, and nothing else about it", (described, member) => {
    const body = collection([feature("ok"), member, feature("also-ok")], { tags: [1] });
    const { request, map, violations } = decodeCreateBody(body);
    expect(violations).toEqual([
      { source: 0, field: "tags", pointer: "/tags/0", detail: "a tag must be a string, got a number" },
      {
        source: 1,
        field: "source",
        pointer: "/features/1",
        detail: `a feature must be a GeoJSON Feature object, got ${described}`,
      },
      { source: 2, field: "tags", pointer: "/tags/0", detail: "a tag must be a string, got a number" },
    ]);
    expect(request.sources).toHaveLength(3);
    expect(request.sources[1]).toEqual(create(SourceInputSchema));
    expect(Object.fromEntries(map.fields[1])).toEqual({
      alt_id: "/features/1/id",
      geometry: "/features/1/geometry",
      start_at: "/features/1/properties/start_at",
      end_at: "/features/1/properties/end_at",
    });
  });

  it.each([
    [undefined, "null"],
    ["Polygon", '"Polygon"'],
    ["feature", '"feature"'],
  ])("refuses a collection member whose type is %j, and still decodes it", (type, rendered) => {
    const member = { ...feature("typed"), type };
    const { request, violations } = decodeCreateBody(collection([feature("ok"), member]));
    expect(violations).toEqual([
      { source: 1, field: "type", pointer: "/features/1/type", detail: `type must be "Feature", got ${rendered}` },
    ]);
    expect(request.sources[1].altId).toBe("typed");
    expect(request.sources[1].geometry).toEqual(polygonGeometry(UNIT_PACKED));
  });

  it.each([
    ["a string", "start_at"],
    ["an array", [START, END]],
    ["a number", 1],
    ["a boolean", false],
  ])("refuses properties that are %s, reading the feature without them", (described, properties) => {
    const body = { type: "Feature", id: "p", properties, geometry: POLYGON };
    const { request, violations } = decodeCreateBody(body);
    expect(violations).toEqual([
      {
        source: 0,
        field: "properties",
        pointer: "/properties",
        detail: `properties must be an object, got ${described}`,
      },
    ]);
    expect(request.sources[0].altId).toBe("p");
    expect(request.sources[0].startAt).toBeUndefined();
    const inCollection = decodeCreateBody(collection([feature("ok"), body], { methodology: "M" }));
    expect(inCollection.violations).toEqual([
      {
        source: 1,
        field: "properties",
        pointer: "/features/1/properties",
        detail: `properties must be an object, got ${described}`,
      },
    ]);
    // The collection's defaults still apply to it.
    expect(inCollection.request.sources[1].methodology).toBe("M");
  });

  it("accepts absent or null properties", () => {
    for (const properties of [undefined, null]) {
      const { request, map, violations } = decodeCreateBody({
        type: "Feature",
        id: "p",
        properties,
        geometry: POLYGON,
      });
      expect(violations).toEqual([]);
      expect(request.sources[0].altId).toBe("p");
      expect(map.fields[0].get("start_at")).toBe("/properties/start_at");
    }
  });
});

describe("decodeCreateBody: a bad collection-level default", () => {
  it("is reported at the collection's pointer once per feature that inherits it", () => {
    const body = collection([feature("a"), feature("b"), feature("c", { source_type: "FIELD", tags: [] })], {
      source_type: "field",
      tags: ["ok", 2],
    });
    const { request, map, violations } = decodeCreateBody(body);
    const sourceType = `source_type must be one of ${SOURCE_TYPES} (exact, upper case), got "field"`;
    expect(violations).toEqual([
      { source: 0, field: "tags", pointer: "/tags/1", detail: "a tag must be a string, got a number" },
      { source: 0, field: "source_type", pointer: "/source_type", detail: sourceType },
      { source: 1, field: "tags", pointer: "/tags/1", detail: "a tag must be a string, got a number" },
      { source: 1, field: "source_type", pointer: "/source_type", detail: sourceType },
    ]);
    expect(request.sources.map((s) => s.sourceType)).toEqual([0, 0, 1]);
    expect(map.fields[0].get("source_type")).toBe("/source_type");
    expect(map.fields[2].get("source_type")).toBe("/features/2/properties/source_type");
  });
});

describe.each(SHAPES)("decodeCreateBody: violations of a $name", (shape) => {
  const decode = (fields: Json, geometry?: unknown) => decodeCreateBody(shape.body(fields, geometry));
  const at = (field: string, suffix: string, detail: string) => ({
    source: shape.source,
    field,
    pointer: `${shape.fieldBase}${suffix}`,
    detail,
  });
  const geometryAt = (suffix: string, detail: string) => ({
    source: shape.source,
    field: "geometry",
    pointer: `${shape.geometryBase}${suffix}`,
    detail,
  });

  it("decodes the valid source without violations", () => {
    expect(decode({}).violations).toEqual([]);
  });

  it.each([
    ["methodology", 5, "a number"],
    ["methodology", ["VM0042"], "an array"],
    ["steward_id", true, "a boolean"],
    ["steward_id", { id: "s" }, "an object"],
    ["project_id", 7.5, "a number"],
    ["project_id", ["p"], "an array"],
  ])("refuses %s = %j", (field, value, described) => {
    const { request, violations } = decode({ [field]: value });
    expect(violations).toEqual([at(field, `/${field}`, `${field} must be a string, got ${described}`)]);
    const input = request.sources[shape.source];
    expect([input.methodology, input.stewardId, input.projectId]).toEqual([undefined, undefined, undefined]);
  });

  it("keeps text fields as sent, empty strings included (length is the ledger's rule)", () => {
    const input = decode({ methodology: "", steward_id: " s 🌾 ", project_id: "p" }).request.sources[shape.source];
    expect([input.methodology, input.stewardId, input.projectId]).toEqual(["", " s 🌾 ", "p"]);
  });

  it.each([
    ["storage", "a string"],
    [{ 0: "a" }, "an object"],
    [3, "a number"],
  ])("refuses tags = %j", (tags, described) => {
    const { request, violations } = decode({ tags });
    expect(violations).toEqual([at("tags", "/tags", `tags must be an array of strings, got ${described}`)]);
    expect(request.sources[shape.source].tags).toEqual([]);
  });

  it.each([
    [
      ["a", 2, null],
      [
        ["/tags/1", "a number"],
        ["/tags/2", "null"],
      ],
    ],
    [[null], [["/tags/0", "null"]]],
    [["a", "b", ["c"]], [["/tags/2", "an array"]]],
  ])("refuses every non-string tag of %j at its index", (tags, expected) => {
    const { request, violations } = decode({ tags });
    expect(violations).toEqual(
      expected.map(([suffix, described]) => at("tags", suffix, `a tag must be a string, got ${described}`)),
    );
    expect(request.sources[shape.source].tags).toEqual([]);
  });

  it("with a non-string tag, also reports the other tags' problems and their number, by the ledger's rules", () => {
    const tags: unknown[] = ["", 1, "x".repeat(129), ...Array.from({ length: 62 }, (_, i) => `t${i}`)];
    const { request, violations } = decode({ tags });
    expect(violations).toEqual([
      at("tags", "/tags", "at most 64 tags are allowed, got 65"),
      at("tags", "/tags/0", "a tag must be 1 to 128 characters, got 0"),
      at("tags", "/tags/1", "a tag must be a string, got a number"),
      at("tags", "/tags/2", "a tag must be 1 to 128 characters, got 129"),
    ]);
    expect(request.sources[shape.source].tags).toEqual([]);
  });

  it("keeps tags in order, duplicates and empty strings included", () => {
    expect(decode({ tags: ["b", "a", "b", ""] }).request.sources[shape.source].tags).toEqual(["b", "a", "b", ""]);
  });

  it.each([
    ["2024", '"2024"'],
    [2024.5, "2024.5"],
    [2 ** 31, "2147483648"],
    [-(2 ** 31), "-2147483648"],
    [1e300, "1e+300"],
    [true, "true"],
    [[2024], "[2024]"],
  ])("refuses outcome_reporting_year = %j", (year, rendered) => {
    const { request, violations } = decode({ outcome_reporting_year: year });
    expect(violations).toEqual([
      at(
        "outcome_reporting_year",
        "/outcome_reporting_year",
        `outcome_reporting_year must be an integer year, got ${rendered}`,
      ),
    ]);
    expect(request.sources[shape.source].outcomeReportingYear).toBeUndefined();
  });

  it("passes any int32 year on (its range is the ledger's rule)", () => {
    for (const year of [2024, 999, 2 ** 31 - 1, -(2 ** 31 - 1), 0]) {
      const { request, violations } = decode({ outcome_reporting_year: year });
      expect(violations).toEqual([]);
      expect(request.sources[shape.source].outcomeReportingYear).toBe(year);
    }
  });

  it.each([
    ["source_type", "field", SOURCE_TYPES, '"field"'],
    ["source_type", "Field", SOURCE_TYPES, '"Field"'],
    ["source_type", "SOURCE_TYPE_FIELD", SOURCE_TYPES, '"SOURCE_TYPE_FIELD"'],
    ["source_type", "UNSPECIFIED", SOURCE_TYPES, '"UNSPECIFIED"'],
    ["source_type", 1, SOURCE_TYPES, "1"],
    ["source_type", ["FIELD"], SOURCE_TYPES, '["FIELD"]'],
    ["geometry_source", "derived", GEOMETRY_SOURCES, '"derived"'],
    ["geometry_source", "SURVEYED", GEOMETRY_SOURCES, '"SURVEYED"'],
    ["geometry_source", 4, GEOMETRY_SOURCES, "4"],
  ])("refuses %s = %j", (field, value, names, rendered) => {
    const { request, violations } = decode({ [field]: value });
    expect(violations).toEqual([
      at(field, `/${field}`, `${field} must be one of ${names} (exact, upper case), got ${rendered}`),
    ]);
    const input = request.sources[shape.source];
    expect([input.sourceType, input.geometrySource]).toEqual([0, 0]);
  });

  it.each([
    ["BIODIVERSITY", "a string"],
    [{ 0: "BIODIVERSITY" }, "an object"],
    [4, "a number"],
  ])("refuses attribute_type = %j", (value, described) => {
    const { request, violations } = decode({ attribute_type: value });
    expect(violations).toEqual([
      at("attribute_type", "/attribute_type", `attribute_type must be an array of strings, got ${described}`),
    ]);
    expect(request.sources[shape.source].attributeType).toEqual([]);
  });

  it("refuses every unknown attribute_type element at its index, dropping the whole list", () => {
    const { request, violations } = decode({ attribute_type: ["BIODIVERSITY", "water_quality", 3, "CI_SCORE", null] });
    const unknown = (rendered: string) =>
      `attribute_type must be one of ${ATTRIBUTE_TYPES} (exact, upper case), got ${rendered}`;
    expect(violations).toEqual([
      at("attribute_type", "/attribute_type/1", unknown('"water_quality"')),
      at("attribute_type", "/attribute_type/2", unknown("3")),
      at("attribute_type", "/attribute_type/4", unknown("null")),
    ]);
    expect(request.sources[shape.source].attributeType).toEqual([]);
  });

  it("with an unknown attribute_type, also reports the repeats, in order", () => {
    const { request, violations } = decode({
      attribute_type: ["BIODIVERSITY", "BIODIVERSITY", "X", null, "BIODIVERSITY"],
    });
    const unknown = (rendered: string) =>
      `attribute_type must be one of ${ATTRIBUTE_TYPES} (exact, upper case), got ${rendered}`;
    expect(violations).toEqual([
      at("attribute_type", "/attribute_type/1", "attribute_type BIODIVERSITY is repeated"),
      at("attribute_type", "/attribute_type/2", unknown('"X"')),
      at("attribute_type", "/attribute_type/3", unknown("null")),
      at("attribute_type", "/attribute_type/4", "attribute_type BIODIVERSITY is repeated"),
    ]);
    expect(request.sources[shape.source].attributeType).toEqual([]);
  });

  it("keeps attribute_type in order, repeats included (they are the ledger's rule), and accepts []", () => {
    const listed = decode({ attribute_type: ["WATER_QUANTITY", "CARBON_REMOVAL", "WATER_QUANTITY"] });
    expect(listed.violations).toEqual([]);
    expect(listed.request.sources[shape.source].attributeType).toEqual([7, 1, 7]);
    const empty = decode({ attribute_type: [] });
    expect(empty.violations).toEqual([]);
    expect(empty.request.sources[shape.source].attributeType).toEqual([]);
  });

  it.each([
    ["start_at", 20240101, `${DATE_TIME_EXPECTED}; got 20240101`],
    ["start_at", { at: START }, `${DATE_TIME_EXPECTED}; got {"at"}`],
    ["end_at", [END], `${DATE_TIME_EXPECTED}; got ["2025-01-01T00:00:00Z"]`],
    ["end_at", true, `${DATE_TIME_EXPECTED}; got true`],
    ["start_at", "2024-01-01", `${DATE_TIME_EXPECTED}; got "2024-01-01"`],
    ["start_at", "2024-01-01 00:00:00Z", `${DATE_TIME_EXPECTED}; got "2024-01-01 00:00:00Z"`],
    ["start_at", "2024-01-01T00:00Z", `${DATE_TIME_EXPECTED}; got "2024-01-01T00:00Z"`],
    ["end_at", "2024-01-01T00:00:00+0100", `${DATE_TIME_EXPECTED}; got "2024-01-01T00:00:00+0100"`],
    ["end_at", "", `${DATE_TIME_EXPECTED}; got ""`],
    [
      "start_at",
      "2024-01-01T00:00:00",
      `${DATE_TIME_EXPECTED}; "2024-01-01T00:00:00" has no offset (add Z for UTC or +hh:mm)`,
    ],
    [
      "end_at",
      "2024-01-01t00:00:00.250",
      `${DATE_TIME_EXPECTED}; "2024-01-01t00:00:00.250" has no offset (add Z for UTC or +hh:mm)`,
    ],
    ["start_at", "2023-02-29T00:00:00Z", `"2023-02-29T00:00:00Z" ${NOT_REAL}`],
    ["start_at", "2024-04-31T00:00:00Z", `"2024-04-31T00:00:00Z" ${NOT_REAL}`],
    ["start_at", "2024-13-01T00:00:00Z", `"2024-13-01T00:00:00Z" ${NOT_REAL}`],
    ["end_at", "2024-01-01T24:00:00Z", `"2024-01-01T24:00:00Z" ${NOT_REAL}`],
    ["end_at", "2024-01-01T00:60:00Z", `"2024-01-01T00:60:00Z" ${NOT_REAL}`],
    ["end_at", "2016-12-31T23:59:60Z", `"2016-12-31T23:59:60Z" ${NOT_REAL}`],
    ["start_at", "2024-01-01T00:00:00+24:00", `"2024-01-01T00:00:00+24:00" ${NOT_REAL}`],
    ["start_at", "2024-01-01T00:00:00-00:60", `"2024-01-01T00:00:00-00:60" ${NOT_REAL}`],
  ])("refuses %s = %j", (field, value, detail) => {
    const { request, violations } = decode({ [field]: value });
    expect(violations).toEqual([at(field, `/${field}`, `${field} ${detail}`)]);
    const input = request.sources[shape.source];
    expect(field === "start_at" ? input.startAt : input.endAt).toBeUndefined();
  });

  it("leaves missing or null times to the ledger", () => {
    const { request, violations } = decode({ start_at: null, end_at: undefined });
    expect(violations).toEqual([]);
    expect(request.sources[shape.source].startAt).toBeUndefined();
    expect(request.sources[shape.source].endAt).toBeUndefined();
  });

  it("reports every JSON-level problem of a source at once", () => {
    const { violations } = decode({ methodology: 1, tags: "t", source_type: "x", start_at: "soon" }, "square");
    expect(violations.map((v) => v.pointer)).toEqual([
      `${shape.fieldBase}/methodology`,
      `${shape.fieldBase}/tags`,
      `${shape.fieldBase}/source_type`,
      shape.geometryBase,
      `${shape.fieldBase}/start_at`,
    ]);
  });

  const ok = UNIT;
  it.each([
    ["a string", "square", "", "geometry must be a GeoJSON Polygon or MultiPolygon object, got a string"],
    ["an array", [[ok]], "", "geometry must be a GeoJSON Polygon or MultiPolygon object, got an array"],
    ["a number", 0, "", "geometry must be a GeoJSON Polygon or MultiPolygon object, got a number"],
    [
      "a LineString",
      { type: "LineString", coordinates: ok },
      "/type",
      'geometry type must be "Polygon" or "MultiPolygon", got "LineString"',
    ],
    [
      "a lower-case type",
      { type: "polygon", coordinates: [ok] },
      "/type",
      'geometry type must be "Polygon" or "MultiPolygon", got "polygon"',
    ],
    ["no type", { coordinates: [ok] }, "/type", 'geometry type must be "Polygon" or "MultiPolygon", got null'],
    [
      "a Feature",
      { type: "Feature", geometry: POLYGON },
      "/type",
      'geometry type must be "Polygon" or "MultiPolygon", got "Feature"',
    ],
    [
      "a Polygon without coordinates",
      { type: "Polygon" },
      "/coordinates",
      "polygon coordinates must be an array of linear rings, got nothing (the member is missing)",
    ],
    [
      "Polygon coordinates as an object",
      { type: "Polygon", coordinates: { 0: ok } },
      "/coordinates",
      "polygon coordinates must be an array of linear rings, got an object",
    ],
    [
      "a ring that is not an array",
      { type: "Polygon", coordinates: [ok, 5] },
      "/coordinates/1",
      "a linear ring must be an array of positions, got a number",
    ],
    [
      "a ring that is null",
      { type: "Polygon", coordinates: [null] },
      "/coordinates/0",
      "a linear ring must be an array of positions, got null",
    ],
    [
      "flat coordinates",
      { type: "Polygon", coordinates: [0, 0, 1, 0, 1, 1, 0, 0] },
      "/coordinates/0",
      "a linear ring must be an array of positions, got a number",
    ],
    [
      "a position of 1 number",
      { type: "Polygon", coordinates: [[[0, 0], [1, 0], [1], [0, 1], [0, 0]]] },
      "/coordinates/0/2",
      `${POSITION}, got [1]`,
    ],
    [
      "a position of 4 numbers",
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0, 0, 0],
            [1, 0],
            [1, 1],
            [0, 0],
          ],
        ],
      },
      "/coordinates/0/0",
      `${POSITION}, got [0,0,0,0]`,
    ],
    [
      "an infinite altitude (1e400)",
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0, 5],
            [1, 0, Number.POSITIVE_INFINITY],
            [1, 1],
            [0, 0],
          ],
        ],
      },
      "/coordinates/0/1/2",
      "an altitude must be a finite number (altitudes are accepted and dropped), got Infinity",
    ],
    [
      "a NaN altitude",
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0, Number.NaN],
            [1, 0],
            [1, 1],
            [0, 0],
          ],
        ],
      },
      "/coordinates/0/0/2",
      "an altitude must be a finite number (altitudes are accepted and dropped), got NaN",
    ],
    [
      "an empty position",
      { type: "Polygon", coordinates: [ok, [[], [1, 0]]] },
      "/coordinates/1/0",
      `${POSITION}, got []`,
    ],
    [
      "a position that is a string",
      { type: "Polygon", coordinates: [[[0, 0], "1,0", [1, 1], [0, 0]]] },
      "/coordinates/0/1",
      `${POSITION}, got "1,0"`,
    ],
    [
      "a position holding a string",
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [1, "0"],
            [1, 1],
            [0, 0],
          ],
        ],
      },
      "/coordinates/0/1",
      `${POSITION}, got [1,"0"]`,
    ],
    [
      "a position holding null",
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [1, 0, null],
            [1, 1],
            [0, 0],
          ],
        ],
      },
      "/coordinates/0/1",
      `${POSITION}, got [1,0,null]`,
    ],
    [
      "a position nested too deep",
      { type: "Polygon", coordinates: [[[[0, 0]], [1, 0], [1, 1], [0, 0]]] },
      "/coordinates/0/0",
      `${POSITION}, got [[0,0]]`,
    ],
    [
      "several bad positions (only the first is reported)",
      { type: "Polygon", coordinates: [[[0, 0], [1], ["x"], [0]], "not a ring"] },
      "/coordinates/0/1",
      `${POSITION}, got [1]`,
    ],
    [
      "MultiPolygon coordinates that are not an array",
      { type: "MultiPolygon", coordinates: "x" },
      "/coordinates",
      "MultiPolygon coordinates must be an array of polygons, got a string",
    ],
    [
      "a MultiPolygon without coordinates",
      { type: "MultiPolygon" },
      "/coordinates",
      "MultiPolygon coordinates must be an array of polygons, got nothing (the member is missing)",
    ],
    [
      "a MultiPolygon given Polygon coordinates",
      { type: "MultiPolygon", coordinates: [ok] },
      "/coordinates/0/0/0",
      `${POSITION}, got 0`,
    ],
    [
      "a MultiPolygon part that is not an array",
      { type: "MultiPolygon", coordinates: [[ok], 7] },
      "/coordinates/1",
      "polygon coordinates must be an array of linear rings, got a number",
    ],
    [
      "a MultiPolygon hole that is not an array",
      { type: "MultiPolygon", coordinates: [[ok], [ok, "hole"]] },
      "/coordinates/1/1",
      "a linear ring must be an array of positions, got a string",
    ],
    [
      "a bad position in a MultiPolygon part",
      { type: "MultiPolygon", coordinates: [[ok], [ring(5, 5, 6, 6).map((p, i) => (i === 3 ? [p[0]] : p))]] },
      "/coordinates/1/0/3",
      `${POSITION}, got [5]`,
    ],
  ])("refuses a geometry that is %s", (_, geometry, suffix, detail) => {
    const { request, violations } = decode({}, geometry);
    expect(violations).toEqual([geometryAt(suffix, detail)]);
    expect(request.sources[shape.source].geometry).toBeUndefined();
  });

  it("leaves a null geometry to the ledger", () => {
    const { request, violations } = decode({}, null);
    expect(violations).toEqual([]);
    expect(request.sources[shape.source].geometry).toBeUndefined();
  });
});

describe("decodeCreateBody: the produced message", () => {
  it("maps every enum name to its proto number", () => {
    const sourceTypes = ["FIELD", "FACILITY", "DEVICE", "PROGRAM", "JURISDICTIONAL", "SITE"];
    const geometrySources = ["CUSTODIAN_DRAWN", "AUTHORITATIVE_GIS", "EXTERNAL_REGISTRY", "DERIVED"];
    const features = [
      ...sourceTypes.map((name, i) => feature(`st-${i}`, { source_type: name })),
      ...geometrySources.map((name, i) => feature(`gs-${i}`, { geometry_source: name })),
    ];
    const { request, violations } = decodeCreateBody(collection(features));
    expect(violations).toEqual([]);
    expect(request.sources.slice(0, 6).map((s) => s.sourceType)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(request.sources.slice(6).map((s) => s.geometrySource)).toEqual([1, 2, 3, 4]);
    const attributes = ATTRIBUTE_TYPES.split(", ");
    const all = decodeCreateBody(flat("at", { attribute_type: attributes }));
    expect(all.violations).toEqual([]);
    expect(all.request.sources[0].attributeType).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("decodes every field of a flat source", () => {
    const body = flat("everything", {
      methodology: "VM0042",
      tags: ["storage", "soil"],
      steward_id: "steward-1",
      project_id: "prj-1",
      outcome_reporting_year: 2026,
      source_type: "FACILITY",
      attribute_type: ["BIODIVERSITY", "CARBON_REMOVAL"],
      geometry_source: "AUTHORITATIVE_GIS",
      start_at: "2024-01-01T02:00:00+02:00",
      end_at: "2024-12-31T19:00:00-05:00",
    });
    const { request, violations } = decodeCreateBody(body);
    expect(violations).toEqual([]);
    expect(request.sources).toEqual([
      create(SourceInputSchema, {
        altId: "everything",
        methodology: "VM0042",
        tags: ["storage", "soil"],
        stewardId: "steward-1",
        projectId: "prj-1",
        outcomeReportingYear: 2026,
        sourceType: 2,
        attributeType: [4, 1],
        geometrySource: 2,
        geometry: polygonGeometry(UNIT_PACKED),
        startAt: timestamp(START_SECONDS),
        endAt: timestamp(END_SECONDS),
      }),
    ]);
    expect(request.accountId).toBeUndefined();
  });

  it.each([
    ["2024-01-01T00:00:00Z", START_SECONDS, 0],
    ["2024-01-01t00:00:00z", START_SECONDS, 0],
    ["2024-01-01T02:00:00+02:00", START_SECONDS, 0],
    ["2023-12-31T19:00:00-05:00", START_SECONDS, 0],
    ["2024-01-01T05:30:00+05:30", START_SECONDS, 0],
    ["2024-01-01T00:00:00-00:00", START_SECONDS, 0],
    ["2024-01-01T00:00:00.5Z", START_SECONDS, 500_000_000],
    ["2024-01-01T00:00:00.000001+00:00", START_SECONDS, 1_000],
    ["2024-02-29T12:00:01.123456789Z", 1_709_208_001n, 123_456_789],
    ["2024-02-29T12:00:01.1234567899999Z", 1_709_208_001n, 123_456_789],
    ["2024-02-29T14:00:01.123+02:00", 1_709_208_001n, 123_000_000],
    ["1970-01-01T00:00:00Z", 0n, 0],
    ["1969-12-31T23:59:59.250Z", -1n, 250_000_000],
    ["0001-01-01T00:00:00Z", -62_135_596_800n, 0],
    ["9999-12-31T23:59:59.999Z", 253_402_300_799n, 999_000_000],
    ["2000-02-29T23:59:59Z", 951_868_799n, 0],
  ])("decodes %s to a Timestamp (seconds %d, nanos %d)", (text, seconds, nanos) => {
    const { request, violations } = decodeCreateBody(feature("t", { start_at: text, end_at: text }));
    expect(violations).toEqual([]);
    expect(request.sources[0].startAt).toEqual(timestamp(seconds, nanos));
    expect(request.sources[0].endAt).toEqual(timestamp(seconds, nanos));
  });

  it("packs each ring's positions as lon, lat pairs, in order, duplicates kept and altitudes dropped", () => {
    const exterior = [
      [10, 20, 300],
      [10.5, 20],
      [10.5, 20],
      [10.5, 20.5, -4],
      [10, 20.5],
      [10, 20, 300],
    ];
    const hole = [
      [10.1, 20.1],
      [10.1, 20.2],
      [10.2, 20.2],
      [10.1, 20.1],
    ];
    const { request, violations } = decodeCreateBody(flat("g", {}, { type: "Polygon", coordinates: [exterior, hole] }));
    expect(violations).toEqual([]);
    expect(request.sources[0].geometry).toEqual(
      polygonGeometry(
        [10, 20, 10.5, 20, 10.5, 20, 10.5, 20.5, 10, 20.5, 10, 20],
        [10.1, 20.1, 10.1, 20.2, 10.2, 20.2, 10.1, 20.1],
      ),
    );
  });

  it("decodes a MultiPolygon part by part, a one-part MultiPolygon staying one", () => {
    const two = {
      type: "MultiPolygon",
      coordinates: [[ring(0, 0, 1, 1)], [ring(5, 5, 6, 6), ring(5.2, 5.2, 5.4, 5.4)]],
    };
    const { request, violations } = decodeCreateBody(feature("m", {}, two));
    expect(violations).toEqual([]);
    expect(request.sources[0].geometry).toEqual(
      create(GeometrySchema, {
        kind: {
          case: "multiPolygon",
          value: {
            polygons: [
              { rings: [{ coordinates: UNIT_PACKED }] },
              {
                rings: [
                  { coordinates: [5, 5, 6, 5, 6, 6, 5, 6, 5, 5] },
                  { coordinates: [5.2, 5.2, 5.4, 5.2, 5.4, 5.4, 5.2, 5.4, 5.2, 5.2] },
                ],
              },
            ],
          },
        },
      }),
    );
    const one = decodeCreateBody(feature("m1", {}, { type: "MultiPolygon", coordinates: [[UNIT]] }));
    expect(one.request.sources[0].geometry?.kind.case).toBe("multiPolygon");
  });

  it("passes empty coordinate arrays on for the ledger's structure rules", () => {
    const polygon = decodeCreateBody(flat("e", {}, { type: "Polygon", coordinates: [] }));
    expect(polygon.violations).toEqual([]);
    expect(polygon.request.sources[0].geometry).toEqual(polygonGeometry());
    const multi = decodeCreateBody(flat("e", {}, { type: "MultiPolygon", coordinates: [[], [[]]] }));
    expect(multi.violations).toEqual([]);
    expect(multi.request.sources[0].geometry).toEqual(
      create(GeometrySchema, {
        kind: { case: "multiPolygon", value: { polygons: [{ rings: [] }, { rings: [{ coordinates: [] }] }] } },
      }),
    );
  });

  it("keeps every coordinate as the same double", () => {
    const odd = [
      [-73.98765432109876, 40.12345678901234],
      [-0, 1e-300],
      [180, -90],
      [-73.98765432109876, 40.12345678901234],
    ];
    const { request } = decodeCreateBody(flat("d", {}, { type: "Polygon", coordinates: [odd] }));
    const geometry = request.sources[0].geometry;
    expect(geometry).toEqual(polygonGeometry(odd.flat()));
    const packed = geometry?.kind.case === "polygon" ? geometry.kind.value.rings[0].coordinates : [];
    expect(Object.is(packed[2], -0)).toBe(true);
  });
});

describe("decodeCreateBody: where each field came from", () => {
  const all = {
    methodology: "m",
    tags: [],
    steward_id: "s",
    project_id: "p",
    outcome_reporting_year: 2024,
    source_type: "FIELD",
    attribute_type: [],
    geometry_source: "DERIVED",
  };

  it("points into a Feature's properties, alt_id at the id", () => {
    expect(pointersOf(feature("f", all))).toEqual({
      alt_id: "/id",
      geometry: "/geometry",
      start_at: "/properties/start_at",
      end_at: "/properties/end_at",
      methodology: "/properties/methodology",
      tags: "/properties/tags",
      steward_id: "/properties/steward_id",
      project_id: "/properties/project_id",
      outcome_reporting_year: "/properties/outcome_reporting_year",
      source_type: "/properties/source_type",
      attribute_type: "/properties/attribute_type",
      geometry_source: "/properties/geometry_source",
    });
  });

  it("points at a flat source's top-level members", () => {
    expect(pointersOf(flat("f", all))).toEqual({
      alt_id: "/alt_id",
      geometry: "/geometry",
      start_at: "/start_at",
      end_at: "/end_at",
      methodology: "/methodology",
      tags: "/tags",
      steward_id: "/steward_id",
      project_id: "/project_id",
      outcome_reporting_year: "/outcome_reporting_year",
      source_type: "/source_type",
      attribute_type: "/attribute_type",
      geometry_source: "/geometry_source",
    });
  });

  it("points into the collection member, or at the collection for an inherited default", () => {
    const body = collection([feature("a"), feature(undefined, { alt_id: "b", tags: ["t"], steward_id: null })], {
      methodology: "m",
      tags: ["default"],
    });
    expect(pointersOf(body, 1)).toEqual({
      alt_id: "/features/1/properties/alt_id",
      geometry: "/features/1/geometry",
      start_at: "/features/1/properties/start_at",
      end_at: "/features/1/properties/end_at",
      methodology: "/methodology",
      tags: "/features/1/properties/tags",
      steward_id: "/features/1/properties/steward_id",
    });
    expect(pointersOf(body, 0)).toEqual({
      alt_id: "/features/0/id",
      geometry: "/features/0/geometry",
      start_at: "/features/0/properties/start_at",
      end_at: "/features/0/properties/end_at",
      methodology: "/methodology",
      tags: "/tags",
    });
  });

  it("points a missing required field where it belongs; a missing optional field has no pointer", () => {
    expect(pointersOf({ type: "Feature" })).toEqual({
      alt_id: "/id",
      geometry: "/geometry",
      start_at: "/properties/start_at",
      end_at: "/properties/end_at",
    });
    expect(pointersOf({})).toEqual({
      alt_id: "/alt_id",
      geometry: "/geometry",
      start_at: "/start_at",
      end_at: "/end_at",
    });
    expect(pointersOf(collection([feature("a"), {}, { type: "Feature", properties: null }]), 2)).toEqual({
      alt_id: "/features/2/id",
      geometry: "/features/2/geometry",
      start_at: "/features/2/properties/start_at",
      end_at: "/features/2/properties/end_at",
    });
    const { request } = decodeCreateBody({ type: "Feature" });
    expect(request.sources).toEqual([create(SourceInputSchema)]);
  });

  it("gives a field set to null the pointer of where it was sent", () => {
    expect(pointersOf(flat("n", { methodology: null, attribute_type: null })).methodology).toBe("/methodology");
    expect(pointersOf(feature("n", { geometry_source: null })).geometry_source).toBe("/properties/geometry_source");
  });
});
