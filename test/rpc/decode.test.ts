/**
 * Request messages → the ledger's commands (src/rpc/decode.ts): only what the wire form can get
 * wrong is reported here; the rules of docs/api.md §5 are the ledger's.
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  AttributeType,
  DeleteSourceRequestSchema,
  type GeometrySchema,
  GeometrySource,
  ListSourcesRequestSchema,
  type SourceInput,
  SourceInputSchema,
  SourceType,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { validateSourceDraft } from "../../src/ledger/validate.js";
import { mergeViolations, type Violation } from "../../src/ledger/violation.js";
import { deleteKeyOf, draftOf, listFiltersOf } from "../../src/rpc/decode.js";
import { fieldPath } from "../../src/rpc/errors.js";

const SOURCE_TYPES = "FIELD, FACILITY, DEVICE, PROGRAM, JURISDICTIONAL, SITE";
const ATTRIBUTE_TYPES =
  "CARBON_REMOVAL, CARBON_AVOIDANCE, CI_SCORE, BIODIVERSITY, RENEWABLE_ENERGY, WATER_QUALITY, WATER_QUANTITY";
const GEOMETRY_SOURCES = "CUSTODIAN_DRAWN, AUTHORITATIVE_GIS, EXTERNAL_REGISTRY, DERIVED";

const SQUARE = [10, 10, 10.01, 10, 10.01, 10.01, 10, 10.01, 10, 10];

const ts = (seconds: bigint, nanos = 0): Timestamp => create(TimestampSchema, { seconds, nanos });

type SourceInit = Exclude<MessageInitShape<typeof SourceInputSchema>, SourceInput>;

/** A valid SourceInput (a 0.01° square in 2024), with `init` over it. */
function input(init: SourceInit = {}): SourceInput {
  const defaults: SourceInit = {
    altId: "plot-1",
    geometry: { kind: { case: "polygon", value: { rings: [{ coordinates: SQUARE }] } } },
    startAt: ts(1_704_067_200n),
    endAt: ts(1_735_689_600n),
  };
  return create(SourceInputSchema, { ...defaults, ...init });
}

/** An enum number no value of the enum has, as the wire can carry it. */
const noSuchValue = <E>(n: number) => n as E;

function decode(message: SourceInput, source = 0) {
  const issues: Violation[] = [];
  const draft = draftOf(message, source, issues);
  return { draft, issues };
}

describe("draftOf", () => {
  it("reads a full SourceInput into a draft of upper-case names, epoch milliseconds and GeoJSON", () => {
    const { draft, issues } = decode(
      input({
        altId: "north-40",
        methodology: "VM0042",
        tags: ["a", "a"],
        stewardId: "st",
        projectId: "prj",
        outcomeReportingYear: 2024,
        sourceType: SourceType.JURISDICTIONAL,
        attributeType: [AttributeType.CARBON_REMOVAL, AttributeType.WATER_QUANTITY],
        geometrySource: GeometrySource.EXTERNAL_REGISTRY,
        startAt: ts(1_704_067_200n, 500_999_999),
      }),
    );
    expect(issues).toEqual([]);
    expect(draft).toStrictEqual({
      altId: "north-40",
      methodology: "VM0042",
      tags: ["a", "a"],
      stewardId: "st",
      projectId: "prj",
      outcomeReportingYear: 2024,
      sourceType: "JURISDICTIONAL",
      attributeType: ["CARBON_REMOVAL", "WATER_QUANTITY"],
      geometrySource: "EXTERNAL_REGISTRY",
      geometry: {
        type: "Polygon",
        coordinates: [
          [
            [10, 10],
            [10.01, 10],
            [10.01, 10.01],
            [10, 10.01],
            [10, 10],
          ],
        ],
      },
      startAt: Date.UTC(2024, 0, 1) + 500,
      endAt: Date.UTC(2025, 0, 1),
    });
  });

  it("reads unset optional fields and enum 0 (UNSPECIFIED) as null, and keeps an explicit empty text or year 0", () => {
    const bare = decode(create(SourceInputSchema, {})).draft;
    expect(bare).toStrictEqual({
      altId: "",
      methodology: null,
      tags: [],
      stewardId: null,
      projectId: null,
      outcomeReportingYear: null,
      sourceType: null,
      attributeType: [],
      geometrySource: null,
      geometry: null,
      startAt: null,
      endAt: null,
    });
    const explicit = decode(input({ methodology: "", outcomeReportingYear: 0, sourceType: 0, geometrySource: 0 }));
    expect(explicit.issues).toEqual([]);
    expect([
      explicit.draft.methodology,
      explicit.draft.outcomeReportingYear,
      explicit.draft.sourceType,
      explicit.draft.geometrySource,
    ]).toEqual(["", 0, null, null]);
  });

  it("refuses an unknown enum number with the 'X N is not one of …' text, and 0 in attribute_type", () => {
    const { draft, issues } = decode(
      input({
        sourceType: noSuchValue<SourceType>(99),
        attributeType: [AttributeType.BIODIVERSITY, 0, noSuchValue<AttributeType>(42)],
        geometrySource: noSuchValue<GeometrySource>(7),
      }),
      3,
    );
    expect(issues).toStrictEqual([
      { source: 3, field: "source_type", detail: `source_type 99 is not one of ${SOURCE_TYPES}` },
      { source: 3, field: "attribute_type", index: 1, detail: `attribute_type 0 is not one of ${ATTRIBUTE_TYPES}` },
      { source: 3, field: "attribute_type", index: 2, detail: `attribute_type 42 is not one of ${ATTRIBUTE_TYPES}` },
      { source: 3, field: "geometry_source", detail: `geometry_source 7 is not one of ${GEOMETRY_SOURCES}` },
    ]);
    // A list with an unknown number is dropped whole, so the ledger's indexes keep matching the request's.
    expect([draft.sourceType, draft.attributeType, draft.geometrySource]).toEqual([null, [], null]);
  });

  it("drops the whole list when one number is unknown, so no index the ledger reports can shift", () => {
    const { draft, issues } = decode(
      input({
        attributeType: [noSuchValue<AttributeType>(99), AttributeType.BIODIVERSITY, AttributeType.BIODIVERSITY],
      }),
    );
    expect(issues).toStrictEqual([
      { source: 0, field: "attribute_type", index: 0, detail: `attribute_type 99 is not one of ${ATTRIBUTE_TYPES}` },
    ]);
    expect(draft.attributeType).toEqual([]);
  });

  it("accepts the Timestamp range's ends and truncates nanos to the millisecond", () => {
    const { draft, issues } = decode(
      input({ startAt: ts(-62_135_596_800n), endAt: ts(253_402_300_799n, 999_999_999) }),
    );
    expect(issues).toEqual([]);
    expect(draft.startAt).toBe(-62_135_596_800_000);
    expect(new Date(draft.startAt as number).toISOString()).toBe("0001-01-01T00:00:00.000Z");
    expect(new Date(draft.endAt as number).toISOString()).toBe("9999-12-31T23:59:59.999Z");
    expect(decode(input({ startAt: ts(-1n, 999_999_999) })).draft.startAt).toBe(-1);
  });

  it.each([
    ["seconds one below the minimum", ts(-62_135_596_801n)],
    ["seconds one above the maximum", ts(253_402_300_800n)],
    ["negative nanos", ts(0n, -1)],
    ["nanos of a whole second", ts(0n, 1_000_000_000)],
  ])("refuses a Timestamp out of range: %s", (_name, at) => {
    const { draft, issues } = decode(input({ startAt: at, endAt: at }), 1);
    expect(issues).toStrictEqual([
      { source: 1, field: "start_at", detail: "start_at is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z" },
      { source: 1, field: "end_at", detail: "end_at is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z" },
    ]);
    expect([draft.startAt, draft.endAt]).toEqual([null, null]);
  });

  it("reads -0 as 0, as every store answers it (a JSON text cannot hold -0)", () => {
    const { draft } = decode(
      input({
        geometry: {
          kind: {
            case: "polygon",
            value: { rings: [{ coordinates: [-0, -0, 0.01, -0, 0.01, 0.01, -0, 0.01, -0, -0] }] },
          },
        },
      }),
    );
    const ring = draft.geometry?.type === "Polygon" ? draft.geometry.coordinates[0] : [];
    expect(ring).toHaveLength(5);
    for (const [x, y] of ring) {
      expect(Object.is(x, -0) || Object.is(y, -0)).toBe(false);
    }
    expect(ring[0]).toEqual([0, 0]);
  });

  it("reports a ring with an odd coordinate count at the ring, and leaves the geometry null", () => {
    const odd = [...SQUARE, 10];
    const polygon = decode(
      input({
        geometry: { kind: { case: "polygon", value: { rings: [{ coordinates: SQUARE }, { coordinates: odd }] } } },
      }),
      2,
    );
    expect(polygon.issues).toStrictEqual([
      {
        source: 2,
        field: "geometry",
        geometryKind: "polygon",
        coordinates: [1],
        detail: "ring has an odd number of coordinates (11); expected packed longitude, latitude pairs",
      },
    ]);
    expect(polygon.draft.geometry).toBeNull();
    expect(fieldPath(polygon.issues[0])).toBe("sources[2].geometry.polygon.rings[1]");

    const multi = decode(
      input({
        geometry: {
          kind: {
            case: "multiPolygon",
            value: { polygons: [{ rings: [{ coordinates: SQUARE }] }, { rings: [{ coordinates: [1] }] }] },
          },
        },
      }),
    );
    expect(multi.issues).toStrictEqual([
      {
        source: 0,
        field: "geometry",
        geometryKind: "multi_polygon",
        coordinates: [1, 0],
        detail: "ring has an odd number of coordinates (1); expected packed longitude, latitude pairs",
      },
    ]);
    expect(multi.draft.geometry).toBeNull();
    expect(fieldPath(multi.issues[0])).toBe("sources[0].geometry.multi_polygon.polygons[1].rings[0]");
  });

  it("leaves a geometry without a kind null, for the ledger to call missing", () => {
    const init: MessageInitShape<typeof GeometrySchema> = {};
    const { draft, issues } = decode(input({ geometry: init }));
    expect(issues).toEqual([]);
    expect(draft.geometry).toBeNull();
    expect(validateSourceDraft(draft, 0).violations).toStrictEqual([
      { source: 0, field: "geometry", detail: "geometry is required: a Polygon or a MultiPolygon" },
    ]);
  });

  it("lets the odd-count report stand alone: the ledger's 'geometry is required' merges away", () => {
    const { draft, issues } = decode(
      input({ geometry: { kind: { case: "polygon", value: { rings: [{ coordinates: [0, 0, 1] }] } } } }),
    );
    const merged = mergeViolations(issues, validateSourceDraft(draft, 0).violations);
    expect(merged.map((v) => v.detail)).toEqual([
      "ring has an odd number of coordinates (3); expected packed longitude, latitude pairs",
    ]);
  });
});

describe("listFiltersOf", () => {
  it("reads the set filters into domain form and leaves unset ones out", () => {
    const issues: Violation[] = [];
    const filters = listFiltersOf(
      create(ListSourcesRequestSchema, {
        methodology: "VM0042",
        outcomeReportingYear: 2024,
        sourceType: SourceType.SITE,
        attributeType: [AttributeType.CI_SCORE, AttributeType.CI_SCORE],
        geometrySource: GeometrySource.DERIVED,
        id: "sandbox_1",
        altId: "",
        limit: 5,
        offset: 2,
        accountId: "acct",
      }),
      issues,
    );
    expect(issues).toEqual([]);
    expect(filters).toStrictEqual({
      methodology: "VM0042",
      outcomeReportingYear: 2024,
      sourceType: "SITE",
      attributeTypes: ["CI_SCORE", "CI_SCORE"],
      geometrySource: "DERIVED",
      id: "sandbox_1",
      altId: "",
    });
  });

  it("reads an empty request as no filter: enums at 0 and an empty attribute_type", () => {
    const issues: Violation[] = [];
    expect(listFiltersOf(create(ListSourcesRequestSchema, {}), issues)).toStrictEqual({});
    expect(issues).toEqual([]);
  });

  it("refuses unknown enum numbers, with the element's index for attribute_type", () => {
    const issues: Violation[] = [];
    const filters = listFiltersOf(
      create(ListSourcesRequestSchema, {
        sourceType: noSuchValue<SourceType>(12),
        attributeType: [AttributeType.BIODIVERSITY, noSuchValue<AttributeType>(8)],
        geometrySource: noSuchValue<GeometrySource>(5),
      }),
      issues,
    );
    expect(issues).toEqual([
      { field: "source_type", detail: `source_type 12 is not one of ${SOURCE_TYPES}` },
      { field: "attribute_type", index: 1, detail: `attribute_type 8 is not one of ${ATTRIBUTE_TYPES}` },
      { field: "geometry_source", detail: `geometry_source 5 is not one of ${GEOMETRY_SOURCES}` },
    ]);
    expect(issues.map(fieldPath)).toEqual(["source_type", "attribute_type[1]", "geometry_source"]);
    expect(filters).toStrictEqual({});
  });
});

describe("deleteKeyOf", () => {
  it("names the id, the alt_id, or nothing", () => {
    expect(deleteKeyOf(create(DeleteSourceRequestSchema, { key: { case: "id", value: "src_1" } }))).toEqual({
      by: "id",
      value: "src_1",
    });
    expect(deleteKeyOf(create(DeleteSourceRequestSchema, { key: { case: "altId", value: "plot-1" } }))).toEqual({
      by: "alt_id",
      value: "plot-1",
    });
    expect(deleteKeyOf(create(DeleteSourceRequestSchema, { key: { case: "altId", value: "" } }))).toEqual({
      by: "alt_id",
      value: "",
    });
    expect(deleteKeyOf(create(DeleteSourceRequestSchema, { accountId: "acct" }))).toBeNull();
  });
});
