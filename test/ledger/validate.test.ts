/**
 * docs/api.md §5 over drafts (src/ledger/validate.ts): a valid draft in domain form, every
 * violation with where it is, and the request-level rules of §5.2. Also how an adapter's
 * violations merge with the ledger's (src/ledger/violation.ts).
 */
import { describe, expect, it } from "vitest";
import type { MultiPolygonGeometry, PolygonGeometry, Position } from "../../src/geo/types.js";
import type { SourceDraft } from "../../src/ledger/commands.js";
import { validateSourceDraft, validateSourceDrafts } from "../../src/ledger/validate.js";
import { mergeViolations, type Violation, violationKey, WHOLE_SOURCE } from "../../src/ledger/violation.js";
import { NO_OPTIONAL_DRAFT_FIELDS } from "../support/source-records.js";

const START = Date.UTC(2024, 0, 1);
const END = Date.UTC(2025, 0, 1);

function ring(x: number, y: number, size = 0.01): Position[] {
  return [
    [x, y],
    [x + size, y],
    [x + size, y + size],
    [x, y + size],
    [x, y],
  ];
}

function square(x = 10, y = 10): PolygonGeometry {
  return { type: "Polygon", coordinates: [ring(x, y)] };
}

function draft(overrides: Partial<SourceDraft> = {}): SourceDraft {
  return {
    altId: "plot-1",
    ...NO_OPTIONAL_DRAFT_FIELDS,
    geometry: square(),
    startAt: START,
    endAt: END,
    ...overrides,
  };
}

const SOURCE_TYPES = "FIELD, FACILITY, DEVICE, PROGRAM, JURISDICTIONAL, SITE";
const ATTRIBUTE_TYPES =
  "CARBON_REMOVAL, CARBON_AVOIDANCE, CI_SCORE, BIODIVERSITY, RENEWABLE_ENERGY, WATER_QUALITY, WATER_QUANTITY";
const GEOMETRY_SOURCES = "CUSTODIAN_DRAWN, AUTHORITATIVE_GIS, EXTERNAL_REGISTRY, DERIVED";

describe("validateSourceDraft", () => {
  it("passes a draft with every field set and hands it back in domain form", () => {
    const geometry: MultiPolygonGeometry = {
      type: "MultiPolygon",
      coordinates: [[ring(10, 10)], [ring(20, 20)]],
    };
    const input = draft({
      altId: "north-40",
      methodology: "VM0042",
      tags: ["storage", "storage", "🌾"],
      stewardId: "steward-1",
      projectId: "prj-7",
      outcomeReportingYear: 2024,
      sourceType: "FIELD",
      attributeType: ["CARBON_REMOVAL", "BIODIVERSITY"],
      geometrySource: "AUTHORITATIVE_GIS",
      geometry,
    });

    const { valid, violations } = validateSourceDraft(input, 0);

    expect(violations).toEqual([]);
    expect(valid).toStrictEqual({
      altId: "north-40",
      methodology: "VM0042",
      tags: ["storage", "storage", "🌾"],
      stewardId: "steward-1",
      projectId: "prj-7",
      outcomeReportingYear: 2024,
      sourceType: "FIELD",
      attributeType: ["CARBON_REMOVAL", "BIODIVERSITY"],
      geometrySource: "AUTHORITATIVE_GIS",
      geometry,
      startAt: START,
      endAt: END,
    });
    // Its own arrays: a later change to the draft does not reach the valid source.
    expect(valid?.tags).not.toBe(input.tags);
    expect(valid?.attributeType).not.toBe(input.attributeType);
  });

  it("passes a draft with only the required fields, the optional ones null or empty", () => {
    expect(validateSourceDraft(draft(), 5)).toStrictEqual({
      valid: {
        altId: "plot-1",
        methodology: null,
        tags: [],
        stewardId: null,
        projectId: null,
        outcomeReportingYear: null,
        sourceType: null,
        attributeType: [],
        geometrySource: null,
        geometry: square(),
        startAt: START,
        endAt: END,
      },
      violations: [],
    });
  });

  it("reports every violation of a source, in field order, with its source index, element index and detail", () => {
    const tags = Array.from({ length: 65 }, (_, i) => `tag-${i}`);
    tags[3] = "";
    tags[64] = "t".repeat(129);
    const input = draft({
      altId: "",
      methodology: "",
      stewardId: "s".repeat(257),
      projectId: "",
      tags,
      outcomeReportingYear: 999,
      sourceType: "field",
      attributeType: ["BIODIVERSITY", "Biodiversity", "BIODIVERSITY"],
      geometrySource: "DRAWN",
      geometry: null,
      startAt: null,
      endAt: null,
    });

    const { valid, violations } = validateSourceDraft(input, 2);

    expect(valid).toBeNull();
    expect(violations).toStrictEqual([
      { source: 2, field: "alt_id", detail: "alt_id is required" },
      { source: 2, field: "methodology", detail: "methodology must not be empty" },
      { source: 2, field: "steward_id", detail: "steward_id must be at most 256 characters, got 257" },
      { source: 2, field: "project_id", detail: "project_id must not be empty" },
      { source: 2, field: "tags", detail: "at most 64 tags are allowed, got 65" },
      { source: 2, field: "tags", index: 3, detail: "a tag must be 1 to 128 characters, got 0" },
      { source: 2, field: "tags", index: 64, detail: "a tag must be 1 to 128 characters, got 129" },
      {
        source: 2,
        field: "outcome_reporting_year",
        detail: "outcome_reporting_year must be a year from 1000 to 9999, got 999",
      },
      {
        source: 2,
        field: "source_type",
        detail: `source_type must be one of ${SOURCE_TYPES} (exact, upper case), got "field"`,
      },
      {
        source: 2,
        field: "attribute_type",
        index: 1,
        detail: `attribute_type must be one of ${ATTRIBUTE_TYPES} (exact, upper case), got "Biodiversity"`,
      },
      { source: 2, field: "attribute_type", index: 2, detail: "attribute_type BIODIVERSITY is repeated" },
      {
        source: 2,
        field: "geometry_source",
        detail: `geometry_source must be one of ${GEOMETRY_SOURCES} (exact, upper case), got "DRAWN"`,
      },
      { source: 2, field: "geometry", detail: "geometry is required: a Polygon or a MultiPolygon" },
      { source: 2, field: "start_at", detail: "start_at is required" },
      { source: 2, field: "end_at", detail: "end_at is required" },
    ]);
  });

  it("quotes an unknown name as JSON, so a quote or a control character in it stays readable", () => {
    const { violations } = validateSourceDraft(draft({ sourceType: 'FIELD"\n' }), 0);
    expect(violations).toStrictEqual([
      {
        source: 0,
        field: "source_type",
        detail: `source_type must be one of ${SOURCE_TYPES} (exact, upper case), got "FIELD\\"\\n"`,
      },
    ]);
  });

  it("reports each geometry issue with the geometry kind and its coordinates path", () => {
    const polygon: PolygonGeometry = {
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [181, 0],
          [1, 1],
          [0, 1],
        ],
      ],
    };
    expect(validateSourceDraft(draft({ geometry: polygon }), 1)).toStrictEqual({
      valid: null,
      violations: [
        {
          source: 1,
          field: "geometry",
          geometryKind: "polygon",
          coordinates: [0, 1],
          detail: "position 1 of the exterior ring is out of range at (181, 0): longitude must be within -180..180",
        },
        {
          source: 1,
          field: "geometry",
          geometryKind: "polygon",
          coordinates: [0],
          detail: "the exterior ring is not closed: its last position (0, 1) differs from its first (0, 0)",
        },
      ],
    });

    const open = ring(5, 5, 1).slice(0, 4);
    const multi: MultiPolygonGeometry = { type: "MultiPolygon", coordinates: [[ring(0, 0, 1)], [open]] };
    expect(validateSourceDraft(draft({ geometry: multi }), 0).violations).toStrictEqual([
      {
        source: 0,
        field: "geometry",
        geometryKind: "multi_polygon",
        coordinates: [1, 0],
        detail: "the exterior ring of polygon 1 is not closed: its last position (5, 6) differs from its first (5, 5)",
      },
    ]);

    expect(
      validateSourceDraft(draft({ geometry: { type: "MultiPolygon", coordinates: [] } }), 0).violations,
    ).toStrictEqual([
      {
        source: 0,
        field: "geometry",
        geometryKind: "multi_polygon",
        coordinates: [],
        detail: "MultiPolygon has no polygons; at least one is required",
      },
    ]);
  });

  it("reports an OGC-invalid geometry once", () => {
    const bowtie: PolygonGeometry = {
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
    };
    expect(validateSourceDraft(draft({ geometry: bowtie }), 0).violations).toStrictEqual([
      {
        source: 0,
        field: "geometry",
        geometryKind: "polygon",
        coordinates: [0],
        detail: "the exterior ring self-intersects near (0.5, 0.5)",
      },
    ]);
  });

  it("refuses an end_at equal to start_at or before it, and accepts one millisecond after", () => {
    const detail = "end_at must be after start_at (times are kept to the millisecond)";
    expect(validateSourceDraft(draft({ endAt: START }), 0).violations).toStrictEqual([
      { source: 0, field: "end_at", detail },
    ]);
    expect(validateSourceDraft(draft({ endAt: START - 1 }), 0).violations).toStrictEqual([
      { source: 0, field: "end_at", detail },
    ]);
    expect(validateSourceDraft(draft({ endAt: START + 1 }), 0).violations).toEqual([]);
  });

  it("accepts times before 1970", () => {
    const result = validateSourceDraft(draft({ startAt: Date.UTC(1900, 0, 1), endAt: Date.UTC(1950, 0, 1) }), 0);
    expect(result.violations).toEqual([]);
    expect(result.valid?.startAt).toBe(Date.UTC(1900, 0, 1));
  });

  it("reports only start_at when end_at is there, and no order violation without both", () => {
    expect(validateSourceDraft(draft({ startAt: null }), 0).violations).toStrictEqual([
      { source: 0, field: "start_at", detail: "start_at is required" },
    ]);
  });

  it("reports an unknown attribute type repeated at both places, as unknown", () => {
    expect(validateSourceDraft(draft({ attributeType: ["X", "X"] }), 0).violations).toStrictEqual([
      {
        source: 0,
        field: "attribute_type",
        index: 0,
        detail: `attribute_type must be one of ${ATTRIBUTE_TYPES} (exact, upper case), got "X"`,
      },
      {
        source: 0,
        field: "attribute_type",
        index: 1,
        detail: `attribute_type must be one of ${ATTRIBUTE_TYPES} (exact, upper case), got "X"`,
      },
    ]);
  });

  it("accepts the edges: 64 tags of 128 characters, 256-character texts, years 1000 and 9999", () => {
    const edge = draft({
      altId: "🌾".repeat(256),
      methodology: "m".repeat(256),
      tags: Array.from({ length: 64 }, () => "t".repeat(128)),
      outcomeReportingYear: 1000,
    });
    expect(validateSourceDraft(edge, 0).violations).toEqual([]);
    expect(validateSourceDraft(draft({ outcomeReportingYear: 9999 }), 0).violations).toEqual([]);
  });
});

describe("validateSourceDrafts", () => {
  it("refuses an empty request", () => {
    expect(validateSourceDrafts([])).toStrictEqual({
      valid: [],
      violations: [{ field: "sources", detail: "at least one source is required" }],
    });
  });

  it("accepts 1,000 sources", () => {
    const drafts = Array.from({ length: 1000 }, (_, i) => draft({ altId: `plot-${i}` }));
    const { valid, violations } = validateSourceDrafts(drafts);
    expect(violations).toEqual([]);
    expect(valid).toHaveLength(1000);
    expect(valid[999].altId).toBe("plot-999");
  });

  it("refuses 1,001 sources with one violation and examines none of them", () => {
    // Every draft is invalid and they all repeat one alt_id: none of that is reported.
    const drafts = Array.from({ length: 1001 }, () => draft({ altId: "same", methodology: "" }));
    expect(validateSourceDrafts(drafts)).toStrictEqual({
      valid: [],
      violations: [{ field: "sources", detail: "at most 1000 sources are allowed in one request, got 1001" }],
    });
  });

  it("returns the valid sources in request order", () => {
    const { valid, violations } = validateSourceDrafts([draft({ altId: "b" }), draft({ altId: "a" })]);
    expect(violations).toEqual([]);
    expect(valid.map((v) => v.altId)).toEqual(["b", "a"]);
  });

  it("reports an alt_id repeated within the request at each later repeat, naming the first", () => {
    const drafts = [
      draft({ altId: "a" }),
      draft({ altId: "b" }),
      draft({ altId: "a" }),
      draft({ altId: "b", methodology: "" }),
      draft({ altId: "a" }),
    ];
    expect(validateSourceDrafts(drafts)).toStrictEqual({
      valid: [],
      violations: [
        { source: 2, field: "alt_id", detail: 'alt_id "a" repeats source 0 of this request' },
        { source: 3, field: "methodology", detail: "methodology must not be empty" },
        { source: 3, field: "alt_id", detail: 'alt_id "b" repeats source 1 of this request' },
        { source: 4, field: "alt_id", detail: 'alt_id "a" repeats source 0 of this request' },
      ],
    });
  });

  it("does not call two missing alt_ids a repeat", () => {
    expect(validateSourceDrafts([draft({ altId: "" }), draft({ altId: "" })]).violations).toStrictEqual([
      { source: 0, field: "alt_id", detail: "alt_id is required" },
      { source: 1, field: "alt_id", detail: "alt_id is required" },
    ]);
  });

  it("compares alt_ids exactly: case and Unicode form differ", () => {
    const drafts = [
      draft({ altId: "Plot" }),
      draft({ altId: "plot" }),
      draft({ altId: "é" }),
      draft({ altId: "e\u0301" }),
    ];
    expect(validateSourceDrafts(drafts).violations).toEqual([]);
  });

  it("returns no valid source when any source has a violation", () => {
    const { valid, violations } = validateSourceDrafts([draft({ altId: "ok" }), draft({ altId: "bad", endAt: START })]);
    expect(valid).toEqual([]);
    expect(violations).toStrictEqual([
      { source: 1, field: "end_at", detail: "end_at must be after start_at (times are kept to the millisecond)" },
    ]);
  });
});

describe("mergeViolations", () => {
  const read: Violation[] = [
    { source: 0, field: "source_type", detail: "source_type 99 is not one of …" },
    { source: 1, field: WHOLE_SOURCE, detail: "a feature must be a GeoJSON Feature object, got a string" },
  ];

  it("returns the ledger's violations when the adapter found none", () => {
    const found: Violation[] = [{ field: "sources", detail: "x" }];
    const merged = mergeViolations([], found);
    expect(merged).toStrictEqual(found);
    expect(merged).not.toBe(found);
  });

  it("puts the adapter's first and drops the ledger's about the same value or an unreadable source", () => {
    const found: Violation[] = [
      { source: 0, field: "source_type", detail: "source_type must be one of …" },
      { source: 0, field: "end_at", detail: "end_at is required" },
      { source: 1, field: "alt_id", detail: "alt_id is required" },
      { source: 2, field: "alt_id", detail: "alt_id is required" },
      { field: "account_id", detail: "account_id is accepted only from admin tokens" },
    ];
    expect(mergeViolations(read, found)).toStrictEqual([
      read[0],
      read[1],
      { source: 0, field: "end_at", detail: "end_at is required" },
      { source: 2, field: "alt_id", detail: "alt_id is required" },
      { field: "account_id", detail: "account_id is accepted only from admin tokens" },
    ]);
  });

  it("tells elements of a repeated field apart by index", () => {
    const tag0: Violation = { source: 0, field: "tags", index: 0, detail: "a tag must be a string, got a number" };
    const tag1: Violation = { source: 0, field: "tags", index: 1, detail: "a tag must be 1 to 128 characters, got 0" };
    const sameTag0: Violation = { ...tag0, detail: "a tag must be 1 to 128 characters, got 0" };
    expect(mergeViolations([tag0], [sameTag0, tag1])).toStrictEqual([tag0, tag1]);
    expect(violationKey(tag0)).toBe("0|tags|0");
    expect(violationKey({ field: "limit", detail: "" })).toBe("|limit|");
  });
});
