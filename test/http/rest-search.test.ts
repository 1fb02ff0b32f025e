/**
 * decodeSearchBody (src/http/rest-search.ts): a POST /sources/search body (docs/api.md §13) →
 * SearchSourcesRequest. The area (Point, Polygon, MultiPolygon; anything else refused at its
 * pointer), every listing field as a member in its JSON type with every error text and pointer,
 * null as absent, unknown members, and bodies that are not objects.
 */
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  BoundingBoxSchema,
  GeometrySchema,
  ListSourcesRequestSchema,
  PointSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { decodeSearchBody } from "../../src/http/rest-search.js";
import type { Violation } from "../../src/ledger/violation.js";
import { attributeTypes, geometrySources, sourceTypes } from "../../src/model/vocabulary.js";
import { ring } from "../support/geometry-fixtures.js";

type Json = Record<string, unknown>;

const UNIT = ring(0, 0, 1, 1);
const UNIT_PACKED = [0, 0, 1, 0, 1, 1, 0, 1, 0, 0];
const POINT = { type: "Point", coordinates: [1.5, -2.25] };
const POLYGON = { type: "Polygon", coordinates: [UNIT] };

const PRODUCTION_MEMBERS =
  "intersects, methodology, steward_id, project_id, outcome_reporting_year, source_type, attribute_type, " +
  "geometry_source, limit, offset, account_id, alt_id, page_token, conflict, active_at, bbox, as_of, active_during";
const SANDBOX_MEMBERS =
  "intersects, methodology, steward_id, project_id, outcome_reporting_year, source_type, attribute_type, " +
  "geometry_source, limit, offset, account_id, id, alt_id, page_token, conflict, active_at, bbox, as_of, active_during";
const POINT_COORDINATES = "a Point's coordinates must be 2 or 3 numbers (longitude, latitude[, altitude])";
const POSITION = "a position must be an array of 2 or 3 numbers (longitude, latitude[, altitude])";
const AREA_REQUIRED = "intersects is required: a GeoJSON Point, Polygon or MultiPolygon geometry";

/** A search body with a valid area and `members`. */
const body = (members: Json = {}, intersects: unknown = POINT): Json => ({ intersects, ...members });

const violationsOf = (value: unknown, environment: "production" | "sandbox" = "production") =>
  decodeSearchBody(value, environment).violations;

const at = (field: string, pointer: string, detail: string): Violation => ({ field, pointer, detail });

describe("decodeSearchBody: the area", () => {
  it("reads a Point as the request's point", () => {
    const { request, violations } = decodeSearchBody(body(), "production");
    expect(violations).toEqual([]);
    expect(request.intersects).toEqual({ case: "point", value: create(PointSchema, { lon: 1.5, lat: -2.25 }) });
    expect(request.query).toEqual(create(ListSourcesRequestSchema));
  });

  it("drops a Point's altitude, and leaves ranges to the ledger", () => {
    expect(decodeSearchBody(body({}, { type: "Point", coordinates: [1, 2, 300] }), "production")).toMatchObject({
      request: { intersects: { case: "point", value: { lon: 1, lat: 2 } } },
      violations: [],
    });
    expect(decodeSearchBody(body({}, { type: "Point", coordinates: [200, -95] }), "sandbox")).toMatchObject({
      request: { intersects: { case: "point", value: { lon: 200, lat: -95 } } },
      violations: [],
    });
  });

  it.each<[string, unknown, string]>([
    ["one number", [1], "[1]"],
    ["four numbers", [1, 2, 3, 4], "[1,2,3,4]"],
    ["a string among them", [1, "2"], '[1,"2"]'],
    ["a text", "1,2", '"1,2"'],
    ["null", null, "null"],
    ["nothing", undefined, "nothing"],
    ["an object", { lon: 1, lat: 2 }, '{"lon","lat"}'],
    ["an empty array", [], "[]"],
    ["nested arrays", [[1, 2]], "[[1,2]]"],
  ])("refuses a Point whose coordinates are %s, at /intersects/coordinates", (_label, coordinates, shown) => {
    const point: Json = { type: "Point" };
    if (coordinates !== undefined) point.coordinates = coordinates;
    const { request, violations } = decodeSearchBody(body({}, point), "production");
    expect(violations).toEqual([at("intersects", "/intersects/coordinates", `${POINT_COORDINATES}, got ${shown}`)]);
    expect(request.intersects.case).toBeUndefined();
  });

  it("refuses a Point whose altitude is not finite, at /intersects/coordinates/2", () => {
    const { request, violations } = decodeSearchBody(
      body({}, { type: "Point", coordinates: [1, 2, Number.NEGATIVE_INFINITY] }),
      "production",
    );
    expect(violations).toEqual([
      at(
        "intersects",
        "/intersects/coordinates/2",
        "an altitude must be a finite number (altitudes are accepted and dropped), got -Infinity",
      ),
    ]);
    expect(request.intersects.case).toBeUndefined();
  });

  it("reads a Polygon as the request's geometry, altitudes dropped", () => {
    const withAltitude = [...UNIT.slice(0, 4).map(([x, y]) => [x, y, 12]), UNIT[4]];
    for (const coordinates of [[UNIT], [withAltitude]]) {
      const { request, violations } = decodeSearchBody(body({}, { type: "Polygon", coordinates }), "production");
      expect(violations).toEqual([]);
      expect(request.intersects).toEqual({
        case: "geometry",
        value: create(GeometrySchema, { kind: { case: "polygon", value: { rings: [{ coordinates: UNIT_PACKED }] } } }),
      });
    }
  });

  it("reads a MultiPolygon with holes as the request's geometry", () => {
    const hole = ring(0.25, 0.25, 0.75, 0.75);
    const { request, violations } = decodeSearchBody(
      body({}, { type: "MultiPolygon", coordinates: [[UNIT, hole], [ring(5, 5, 6, 6)]] }),
      "sandbox",
    );
    expect(violations).toEqual([]);
    expect(request.intersects).toEqual({
      case: "geometry",
      value: create(GeometrySchema, {
        kind: {
          case: "multiPolygon",
          value: {
            polygons: [
              { rings: [{ coordinates: UNIT_PACKED }, { coordinates: hole.flat() }] },
              { rings: [{ coordinates: ring(5, 5, 6, 6).flat() }] },
            ],
          },
        },
      }),
    });
  });

  it("leaves a geometry's validity (closing, crossing, ranges) to the ledger", () => {
    const bowtie = [
      [0, 0],
      [1, 1],
      [1, 0],
      [0, 1],
      [0, 0],
    ];
    expect(violationsOf(body({}, { type: "Polygon", coordinates: [bowtie] }))).toEqual([]);
    expect(violationsOf(body({}, { type: "Polygon", coordinates: [[[500, 0]]] }))).toEqual([]);
    expect(violationsOf(body({}, { type: "Polygon", coordinates: [] }))).toEqual([]);
  });

  it.each<[string, unknown, Violation[]]>([
    [
      "Polygon coordinates that are not an array",
      { type: "Polygon", coordinates: { ring: 1 } },
      [
        at(
          "intersects",
          "/intersects/coordinates",
          "polygon coordinates must be an array of linear rings, got an object",
        ),
      ],
    ],
    [
      "a Polygon without coordinates",
      { type: "Polygon" },
      [
        at(
          "intersects",
          "/intersects/coordinates",
          "polygon coordinates must be an array of linear rings, got nothing (the member is missing)",
        ),
      ],
    ],
    [
      "a ring that is not an array",
      { type: "Polygon", coordinates: [UNIT, 7] },
      [at("intersects", "/intersects/coordinates/1", "a linear ring must be an array of positions, got a number")],
    ],
    [
      "a position of one number",
      { type: "Polygon", coordinates: [[[0, 0], [1, 0], [1], [0, 0]]] },
      [at("intersects", "/intersects/coordinates/0/2", `${POSITION}, got [1]`)],
    ],
    [
      "a position of four numbers",
      { type: "Polygon", coordinates: [[[0, 0, 0, 0]]] },
      [at("intersects", "/intersects/coordinates/0/0", `${POSITION}, got [0,0,0,0]`)],
    ],
    [
      "a position with a string",
      { type: "Polygon", coordinates: [[[0, "0"]]] },
      [at("intersects", "/intersects/coordinates/0/0", `${POSITION}, got [0,"0"]`)],
    ],
    [
      "MultiPolygon coordinates that are not an array",
      { type: "MultiPolygon", coordinates: "none" },
      [
        at(
          "intersects",
          "/intersects/coordinates",
          "MultiPolygon coordinates must be an array of polygons, got a string",
        ),
      ],
    ],
    [
      "a MultiPolygon part that is not an array",
      { type: "MultiPolygon", coordinates: [[UNIT], null] },
      [at("intersects", "/intersects/coordinates/1", "polygon coordinates must be an array of linear rings, got null")],
    ],
    [
      "a bad position in a MultiPolygon's second part",
      {
        type: "MultiPolygon",
        coordinates: [
          [UNIT],
          [
            [
              [0, 0],
              [true, 1],
            ],
          ],
        ],
      },
      [at("intersects", "/intersects/coordinates/1/0/1", `${POSITION}, got [true,1]`)],
    ],
    [
      "a LineString",
      {
        type: "LineString",
        coordinates: [
          [0, 0],
          [1, 1],
        ],
      },
      [
        at(
          "intersects",
          "/intersects/type",
          'intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type "LineString"',
        ),
      ],
    ],
    [
      "a MultiPoint",
      { type: "MultiPoint", coordinates: [[0, 0]] },
      [
        at(
          "intersects",
          "/intersects/type",
          'intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type "MultiPoint"',
        ),
      ],
    ],
    [
      "a Feature",
      { type: "Feature", geometry: POLYGON },
      [
        at(
          "intersects",
          "/intersects/type",
          'intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type "Feature"',
        ),
      ],
    ],
    [
      "a lower-case type",
      { type: "polygon", coordinates: [UNIT] },
      [
        at(
          "intersects",
          "/intersects/type",
          'intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type "polygon"',
        ),
      ],
    ],
    [
      "no type",
      { coordinates: [UNIT] },
      [
        at(
          "intersects",
          "/intersects/type",
          "intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type null",
        ),
      ],
    ],
    [
      "a numeric type",
      { type: 7 },
      [at("intersects", "/intersects/type", "intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type 7")],
    ],
    [
      "a text",
      "POINT(1 2)",
      [
        at(
          "intersects",
          "/intersects",
          'intersects must be a GeoJSON geometry object (Point, Polygon or MultiPolygon), got "POINT(1 2)"',
        ),
      ],
    ],
    [
      "an array",
      [1, 2],
      [
        at(
          "intersects",
          "/intersects",
          "intersects must be a GeoJSON geometry object (Point, Polygon or MultiPolygon), got [1,2]",
        ),
      ],
    ],
    [
      "a number",
      0,
      [
        at(
          "intersects",
          "/intersects",
          "intersects must be a GeoJSON geometry object (Point, Polygon or MultiPolygon), got 0",
        ),
      ],
    ],
    ["null", null, [at("intersects", "/intersects", AREA_REQUIRED)]],
  ])("refuses %s", (_label, intersects, violations) => {
    const { request } = decodeSearchBody(body({}, intersects), "production");
    expect(violationsOf(body({}, intersects))).toEqual(violations);
    expect(request.intersects.case).toBeUndefined();
  });

  it("requires the area", () => {
    expect(violationsOf({})).toEqual([at("intersects", "/intersects", AREA_REQUIRED)]);
    expect(violationsOf({ limit: 5 }, "sandbox")).toEqual([at("intersects", "/intersects", AREA_REQUIRED)]);
  });
});

describe("decodeSearchBody: the body", () => {
  it.each<[string, unknown, string]>([
    ["null", null, "null"],
    ["an array", [{ intersects: POINT }], '[{"intersects"}]'],
    ["a text", "intersects", '"intersects"'],
    ["a number", 42, "42"],
    ["true", true, "true"],
    ["nothing", undefined, "nothing"],
  ])("refuses %s, at the root, and reads nothing else", (_label, value, shown) => {
    const { request, violations } = decodeSearchBody(value, "production");
    expect(violations).toEqual([
      { field: "intersects", pointer: "", detail: `the body must be a JSON object, got ${shown}` },
    ]);
    expect(request.intersects.case).toBeUndefined();
    expect(request.query).toBeUndefined();
  });

  it("refuses unknown members at their escaped pointers, listing what is allowed in each environment", () => {
    const value = body({ bogus: 1, "a/b~c": 2, "": 3, Methodology: "x", intersect: POINT });
    expect(violationsOf(value)).toEqual([
      at("bogus", "/bogus", `unknown member "bogus"; allowed here: ${PRODUCTION_MEMBERS}`),
      at("a/b~c", "/a~1b~0c", `unknown member "a/b~c"; allowed here: ${PRODUCTION_MEMBERS}`),
      at("", "/", `unknown member ""; allowed here: ${PRODUCTION_MEMBERS}`),
      at("Methodology", "/Methodology", `unknown member "Methodology"; allowed here: ${PRODUCTION_MEMBERS}`),
      at("intersect", "/intersect", `unknown member "intersect"; allowed here: ${PRODUCTION_MEMBERS}`),
    ]);
    expect(violationsOf(body({ bogus: 1 }), "sandbox")).toEqual([
      at("bogus", "/bogus", `unknown member "bogus"; allowed here: ${SANDBOX_MEMBERS}`),
    ]);
  });

  it("refuses the id member in production only", () => {
    expect(violationsOf(body({ id: "src_1" }))).toEqual([
      at("id", "/id", `unknown member "id"; allowed here: ${PRODUCTION_MEMBERS}`),
    ]);
    const { request, violations } = decodeSearchBody(body({ id: "sandbox_1" }), "sandbox");
    expect(violations).toEqual([]);
    expect(request.query?.id).toBe("sandbox_1");
  });

  it("refuses a member JSON.parse made of __proto__, and is not fooled by it", () => {
    const parsed = JSON.parse('{"intersects":{"type":"Point","coordinates":[1,2]},"__proto__":{"limit":5}}');
    const { request, violations } = decodeSearchBody(parsed, "production");
    expect(violations).toEqual([
      at("__proto__", "/__proto__", `unknown member "__proto__"; allowed here: ${PRODUCTION_MEMBERS}`),
    ]);
    expect(request.query?.limit).toBeUndefined();
  });

  it("reads every member into the query, in its JSON type", () => {
    const { request, violations } = decodeSearchBody(
      body({
        methodology: "VM0042",
        steward_id: "steward-1",
        project_id: "prj-7",
        outcome_reporting_year: 2025,
        source_type: "FIELD",
        attribute_type: ["CARBON_REMOVAL", "BIODIVERSITY"],
        geometry_source: "DERIVED",
        limit: 1e1,
        offset: 0,
        account_id: "acct-x",
        alt_id: "north-40",
        page_token: "abc_-",
        conflict: false,
        active_at: "2024-01-01T00:00:00.5+01:00",
        bbox: [-1.5, -2, 3, 4e1],
      }),
      "production",
    );
    expect(violations).toEqual([]);
    expect(request.query).toEqual(
      create(ListSourcesRequestSchema, {
        methodology: "VM0042",
        stewardId: "steward-1",
        projectId: "prj-7",
        outcomeReportingYear: 2025,
        sourceType: sourceTypes.valueOf("FIELD"),
        attributeType: [attributeTypes.valueOf("CARBON_REMOVAL") ?? 0, attributeTypes.valueOf("BIODIVERSITY") ?? 0],
        geometrySource: geometrySources.valueOf("DERIVED"),
        limit: 10,
        offset: 0,
        accountId: "acct-x",
        altId: "north-40",
        pageToken: "abc_-",
        conflict: false,
        activeAt: create(TimestampSchema, { seconds: 1_704_067_200n - 3600n, nanos: 500_000_000 }),
        bbox: create(BoundingBoxSchema, { minLon: -1.5, minLat: -2, maxLon: 3, maxLat: 40 }),
      }),
    );
  });

  it("reads one attribute_type name as a list of one, and an empty array as none", () => {
    expect(
      decodeSearchBody(body({ attribute_type: "WATER_QUALITY" }), "production").request.query?.attributeType,
    ).toEqual([attributeTypes.valueOf("WATER_QUALITY")]);
    expect(decodeSearchBody(body({ attribute_type: [] }), "production").request.query?.attributeType).toEqual([]);
  });

  it("counts null members as absent", () => {
    const members = Object.fromEntries(
      PRODUCTION_MEMBERS.split(", ")
        .slice(1)
        .map((name) => [name, null]),
    );
    const { request, violations } = decodeSearchBody(body(members), "production");
    expect(violations).toEqual([]);
    expect(request.query).toEqual(create(ListSourcesRequestSchema));
  });

  const SOURCE_TYPES = sourceTypes.names.join(", ");
  const ATTRIBUTE_TYPES = attributeTypes.names.join(", ");
  const GEOMETRY_SOURCES = geometrySources.names.join(", ");
  const INSTANT = "an RFC 3339 date-time with an offset, e.g. 2024-01-01T00:00:00Z";
  const BOX = "an array of 4 numbers minLon,minLat,maxLon,maxLat";

  it.each<[string, Json, Violation[]]>([
    [
      "a number for a text",
      { methodology: 5 },
      [at("methodology", "/methodology", "methodology must be a string, got 5")],
    ],
    [
      "an array for a text",
      { steward_id: ["a"] },
      [at("steward_id", "/steward_id", 'steward_id must be a string, got ["a"]')],
    ],
    [
      "an object for a text",
      { page_token: { t: 1 } },
      [at("page_token", "/page_token", 'page_token must be a string, got {"t"}')],
    ],
    [
      "a boolean for a text",
      { account_id: true },
      [at("account_id", "/account_id", "account_id must be a string, got true")],
    ],
    ["a fraction for an integer", { limit: 1.5 }, [at("limit", "/limit", "limit must be an integer, got 1.5")]],
    ["a text for an integer", { limit: "10" }, [at("limit", "/limit", 'limit must be an integer, got "10"')]],
    [
      "an integer past int32",
      { offset: 2 ** 31 },
      [at("offset", "/offset", "offset must be an integer, got 2147483648")],
    ],
    [
      "a year that is not an integer",
      { outcome_reporting_year: 2024.5 },
      [
        at(
          "outcome_reporting_year",
          "/outcome_reporting_year",
          "outcome_reporting_year must be an integer, got 2024.5",
        ),
      ],
    ],
    [
      "an unknown enum name",
      { source_type: "field" },
      [at("source_type", "/source_type", `source_type must be one of ${SOURCE_TYPES}, got "field"`)],
    ],
    [
      "an enum number",
      { geometry_source: 1 },
      [at("geometry_source", "/geometry_source", `geometry_source must be one of ${GEOMETRY_SOURCES}, got 1`)],
    ],
    [
      "an unknown name alone",
      { attribute_type: "CARBON" },
      [at("attribute_type", "/attribute_type", `attribute_type must be one of ${ATTRIBUTE_TYPES}, got "CARBON"`)],
    ],
    [
      "unknown names in an array, at their index",
      { attribute_type: ["BIODIVERSITY", "CARBON", 3] },
      [
        at("attribute_type", "/attribute_type/1", `attribute_type must be one of ${ATTRIBUTE_TYPES}, got "CARBON"`),
        at("attribute_type", "/attribute_type/2", `attribute_type must be one of ${ATTRIBUTE_TYPES}, got 3`),
      ],
    ],
    [
      "a text for a boolean",
      { conflict: "true" },
      [at("conflict", "/conflict", 'conflict must be true or false, got "true"')],
    ],
    ["a number for a boolean", { conflict: 1 }, [at("conflict", "/conflict", "conflict must be true or false, got 1")]],
    [
      "a date without a time",
      { active_at: "2024-01-01" },
      [at("active_at", "/active_at", `active_at must be ${INSTANT}, got "2024-01-01"`)],
    ],
    [
      "a time without an offset",
      { active_at: "2024-01-01T00:00:00" },
      [at("active_at", "/active_at", `active_at must be ${INSTANT}, got "2024-01-01T00:00:00"`)],
    ],
    [
      "an impossible date",
      { active_at: "2024-02-30T00:00:00Z" },
      [at("active_at", "/active_at", `active_at must be ${INSTANT}, got "2024-02-30T00:00:00Z"`)],
    ],
    [
      "epoch milliseconds for an instant",
      { active_at: 1704067200000 },
      [at("active_at", "/active_at", `active_at must be ${INSTANT}, got 1704067200000`)],
    ],
    ["a box of three numbers", { bbox: [1, 2, 3] }, [at("bbox", "/bbox", `bbox must be ${BOX}, got [1,2,3]`)]],
    ["a box of five numbers", { bbox: [1, 2, 3, 4, 5] }, [at("bbox", "/bbox", `bbox must be ${BOX}, got [1,2,3,4,…]`)]],
    ["a box as text", { bbox: "1,2,3,4" }, [at("bbox", "/bbox", `bbox must be ${BOX}, got "1,2,3,4"`)]],
    ["a box with a text", { bbox: [1, 2, 3, "4"] }, [at("bbox", "/bbox", `bbox must be ${BOX}, got [1,2,3,"4"]`)]],
    [
      "a box as an object",
      { bbox: { minLon: 1, minLat: 2, maxLon: 3, maxLat: 4 } },
      [at("bbox", "/bbox", `bbox must be ${BOX}, got {"minLon","minLat","maxLon","maxLat"}`)],
    ],
  ])("refuses %s at the member", (_label, members, violations) => {
    expect(violationsOf(body(members))).toEqual(violations);
    expect(violationsOf(body(members), "sandbox")).toEqual(violations);
  });

  it("accepts out-of-range values the ledger refuses (a box across the antimeridian, limit 0, a year 1)", () => {
    const { request, violations } = decodeSearchBody(
      body({ bbox: [170, 0, -170, 1], limit: 0, outcome_reporting_year: 1, offset: -(2 ** 31 - 1) }),
      "production",
    );
    expect(violations).toEqual([]);
    expect(request.query).toMatchObject({
      bbox: { minLon: 170, minLat: 0, maxLon: -170, maxLat: 1 },
      limit: 0,
      outcomeReportingYear: 1,
      offset: -(2 ** 31 - 1),
    });
  });

  it("reports everything at once: unknown members, then the area, then the members in proto order", () => {
    expect(
      violationsOf({
        bbox: "x",
        extra: true,
        conflict: "no",
        intersects: { type: "LineString" },
        methodology: 1,
        limit: "ten",
      }),
    ).toEqual([
      at("extra", "/extra", `unknown member "extra"; allowed here: ${PRODUCTION_MEMBERS}`),
      at(
        "intersects",
        "/intersects/type",
        'intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type "LineString"',
      ),
      at("methodology", "/methodology", "methodology must be a string, got 1"),
      at("limit", "/limit", 'limit must be an integer, got "ten"'),
      at("conflict", "/conflict", 'conflict must be true or false, got "no"'),
      at("bbox", "/bbox", `bbox must be ${BOX}, got "x"`),
    ]);
  });
});
