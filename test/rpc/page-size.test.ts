/**
 * The 4 MiB cut of gRPC list and search answers (src/rpc/page-size.ts): sourceSizeBound is never
 * below what a Source really adds to an answer (its protobuf bytes and the repeated field's tag
 * and length), and not far above it when geometry dominates; cappedPage stops before
 * MAX_PAGE_BYTES, never sends zero sources, resumes after the last one sent, and passes the
 * ledger's token on when it does not cut.
 */
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { TimestampSchema, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  type Geometry,
  ListSourcesResponseSchema,
  SearchSourcesResponseSchema,
  type Source,
  SourceSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { PolygonCoordinates, Position, SourceGeometry } from "../../src/geo/types.js";
import type { ListPage } from "../../src/ledger/ledger.js";
import type { SourceRecord } from "../../src/model/records.js";
import { attributeTypes } from "../../src/model/vocabulary.js";
import { toProtoSource } from "../../src/rpc/messages.js";
import { cappedPage, MAX_PAGE_BYTES, sourceJsonSizeBound, sourceSizeBound } from "../../src/rpc/page-size.js";
import { prng } from "../support/geometry-fixtures.js";
import { NO_OPTIONAL_FIELDS } from "../support/source-records.js";

const FOUR_MIB = 4 * 1024 * 1024;

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    size += 1;
  }
  return size;
}

/** What a source adds to a ListSourcesResponse: its bytes, and field 1's tag and length. */
function framedSize(source: Source): number {
  const bytes = toBinary(SourceSchema, source).length;
  return 1 + varintSize(bytes) + bytes;
}

/** A closed ring of `n` positions (n ≥ 4) around (cx, cy), with coordinates of full precision. */
function ringOf(n: number, cx = 10.123456789, cy = 20.987654321, r = 0.5): Position[] {
  const positions: Position[] = [];
  for (let i = 0; i < n - 1; i++) {
    const angle = (2 * Math.PI * i) / (n - 1);
    positions.push([cx + r * Math.cos(angle), cy + r * Math.sin(angle)]);
  }
  positions.push(positions[0]);
  return positions;
}

function polygonOf(positions: number): SourceGeometry {
  return { type: "Polygon", coordinates: [ringOf(positions)] };
}

/** One exterior ring and holes of `holeSize` positions, `positions` in all (roughly). */
function holedOf(positions: number, holeSize: number): SourceGeometry {
  const holes = Math.max(0, Math.floor((positions - 100) / holeSize));
  const rings: Position[][] = [ringOf(100, 0, 0, 50)];
  for (let h = 0; h < holes; h++) rings.push(ringOf(holeSize, (h % 60) - 30, Math.floor(h / 60) - 30, 0.1));
  return { type: "Polygon", coordinates: rings };
}

function multiOf(parts: number, perPart: number): SourceGeometry {
  const coordinates: PolygonCoordinates[] = [];
  for (let p = 0; p < parts; p++) coordinates.push([ringOf(perPart, (p % 300) - 150, Math.floor(p / 300) - 80, 0.1)]);
  return { type: "MultiPolygon", coordinates };
}

let sequence = 0;
function record(overrides: Partial<SourceRecord> = {}): SourceRecord {
  sequence += 1;
  return {
    id: `src_${String(sequence).padStart(26, "0")}`,
    accountId: "acct-a",
    altId: `alt-${sequence}`,
    ...NO_OPTIONAL_FIELDS,
    geometry: polygonOf(5),
    startAt: Date.UTC(2024, 0, 1),
    endAt: Date.UTC(2025, 0, 1),
    createdBy: "client",
    updatedBy: "client",
    createdAt: Date.UTC(2025, 0, 1) + sequence,
    updatedAt: Date.UTC(2025, 0, 1) + sequence,
    ...overrides,
  };
}

const unicode = (n: number, character: string) => character.repeat(n);

/** Every optional set, at its largest: 64 tags of 128 characters, 20 protected areas, long names. */
function fullRecord(geometry: SourceGeometry, character = "✓"): SourceRecord {
  return record({
    altId: unicode(256, character),
    methodology: unicode(256, character),
    tags: Array.from({ length: 64 }, (_, i) => `${i}${unicode(127, character)}`),
    stewardId: unicode(256, character),
    projectId: unicode(256, character),
    outcomeReportingYear: 9999,
    sourceType: "FIELD",
    attributeType: [...attributeTypes.names],
    geometrySource: "DERIVED",
    geometry,
    startAt: Date.parse("0001-01-01T00:00:00Z"),
    endAt: Date.parse("9999-12-31T23:59:59.999Z"),
    accountId: unicode(256, character),
    createdBy: unicode(300, character),
    updatedBy: unicode(300, character),
    createdAt: Date.parse("9999-12-31T23:59:59.999Z"),
    updatedAt: Date.parse("9999-12-31T23:59:59.999Z"),
    conflict: true,
    unepOverlap: {
      dataset: unicode(200, character),
      overlaps: true,
      areaM2: 1.7976931348623157e308,
      fraction: 0.3333333333333333,
      areas: Array.from({ length: 20 }, (_, i) => ({
        id: `${i}${unicode(50, character)}`,
        name: unicode(250, character),
        designation: unicode(120, character),
        iucnCategory: unicode(20, character),
        areaM2: -1e-300,
      })),
    },
  });
}

describe("sourceSizeBound", () => {
  const smallGeometries: [string, SourceGeometry][] = [
    ["a square", polygonOf(5)],
    ["a polygon with a hole", holedOf(104, 4)],
    ["a MultiPolygon", multiOf(3, 4)],
  ];

  const cases: [string, () => Source][] = [
    ["every optional empty", () => toProtoSource(record())],
    [
      "empty strings where strings are required",
      () => toProtoSource(record({ id: "", altId: "", accountId: "", createdBy: "", updatedBy: "" })),
    ],
    ...smallGeometries.map(([name, g]): [string, () => Source] => [
      `every optional at its largest, ${name}, ✓`,
      () => toProtoSource(fullRecord(g)),
    ]),
    ["every optional at its largest, astral characters", () => toProtoSource(fullRecord(polygonOf(5), "😀"))],
    ["every optional at its largest, ASCII", () => toProtoSource(fullRecord(polygonOf(5), "x"))],
    ["lone surrogates (written as U+FFFD)", () => toProtoSource(fullRecord(polygonOf(5), "\ud800"))],
    ["2-byte UTF-8 characters", () => toProtoSource(fullRecord(polygonOf(5), "ñ"))],
    [
      "an overlap with no areas",
      () =>
        toProtoSource(record({ unepOverlap: { dataset: "WDPA", overlaps: false, areaM2: 0, fraction: 0, areas: [] } })),
    ],
    [
      "very long creator names",
      () => toProtoSource(record({ createdBy: unicode(100_000, "😀"), updatedBy: unicode(100_000, "✓") })),
    ],
    [
      "a negative year and times before 1970 (10-byte varints)",
      () => {
        const source = toProtoSource(record());
        source.outcomeReportingYear = -2_147_483_648;
        source.startAt = timestampFromMs(Date.parse("0001-01-01T00:00:00Z"));
        source.endAt = timestampFromMs(-1);
        source.createdAt = timestampFromMs(-62135596800000 + 999);
        source.updatedAt = create(TimestampSchema, { seconds: -62135596800n, nanos: 999_999_999 });
        return source;
      },
    ],
    ["no geometry at all", () => create(SourceSchema, { id: "src_x" })],
    [
      "a geometry with no kind, empty rings and empty polygons",
      () =>
        create(SourceSchema, {
          id: "src_y",
          geometry: {
            kind: {
              case: "multiPolygon",
              value: { polygons: [{ rings: [] }, { rings: [{ coordinates: [] }, { coordinates: [1, 2] }] }] },
            },
          },
        }),
    ],
    ["a Geometry without a kind", () => create(SourceSchema, { id: "src_z", geometry: {} as Geometry })],
  ];

  it.each(cases)("is at least the framed encoding: %s", (_label, make) => {
    const source = make();
    expect(sourceSizeBound(source)).toBeGreaterThanOrEqual(framedSize(source));
  });

  it.each(cases)("sourceJsonSizeBound is at least the JSON mapping's bytes and a comma: %s", (_label, make) => {
    const source = make();
    const json = Buffer.byteLength(toJsonString(SourceSchema, source)) + 1;
    expect(sourceJsonSizeBound(source)).toBeGreaterThanOrEqual(json);
  });

  const large: [string, () => SourceGeometry][] = [
    ["a ring of 100,000 positions", () => polygonOf(100_000)],
    ["a ring of 20,000 positions", () => polygonOf(20_000)],
    ["a polygon with 999 holes of 100 positions", () => holedOf(100_000, 100)],
    ["a polygon with 24,975 holes of 4 positions", () => holedOf(100_000, 4)],
    ["a MultiPolygon of 1,000 parts of 100 positions", () => multiOf(1_000, 100)],
    ["a MultiPolygon of 25,000 parts of 4 positions", () => multiOf(25_000, 4)],
    ["a MultiPolygon of 2 parts of 50,000 positions", () => multiOf(2, 50_000)],
    ["a ring of 8,000 positions (a 128 KB geometry)", () => polygonOf(8_000)],
  ];

  it.each(large)("is at least the framed encoding and less than 1.2× + 1 KiB of it: %s", (label, make) => {
    const geometry = make();
    for (const source of [toProtoSource(record({ geometry })), toProtoSource(fullRecord(geometry, "x"))]) {
      const real = framedSize(source);
      const bound = sourceSizeBound(source);
      expect(bound).toBeGreaterThanOrEqual(real);
      if (source.tags.length === 0) expect(bound).toBeLessThan(1.2 * real + 1024);
      const json = Buffer.byteLength(toJsonString(SourceSchema, source)) + 1;
      expect(sourceJsonSizeBound(source)).toBeGreaterThanOrEqual(json);
      // Full-precision doubles take ~18–20 characters, the bound counts 25 (short ones are looser).
      if (source.tags.length === 0 && label.startsWith("a ring")) {
        expect(sourceJsonSizeBound(source)).toBeLessThan(1.5 * json + 4096);
      }
    }
  });

  it("holds for 300 random sources", () => {
    const random = prng(99);
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
    const text = () =>
      Array.from({ length: Math.floor(random() * 300) }, () => pick(["a", "ñ", "✓", "😀", "\ud800", "\u0000"])).join(
        "",
      );
    const mismatches: string[] = [];
    for (let n = 0; n < 300; n++) {
      const geometry = pick([
        () => polygonOf(4 + Math.floor(random() * 2000)),
        () => holedOf(100 + Math.floor(random() * 3000), 4 + Math.floor(random() * 40)),
        () => multiOf(1 + Math.floor(random() * 40), 4 + Math.floor(random() * 60)),
      ])();
      const source = toProtoSource(
        record({
          altId: text(),
          methodology: random() < 0.5 ? null : text(),
          tags: Array.from({ length: Math.floor(random() * 64) }, text),
          stewardId: random() < 0.5 ? null : text(),
          projectId: random() < 0.5 ? null : text(),
          outcomeReportingYear: random() < 0.5 ? null : 1000 + Math.floor(random() * 9000),
          attributeType: attributeTypes.names.filter(() => random() < 0.5),
          geometry,
          createdBy: text(),
          updatedBy: text(),
          conflict: random() < 0.5,
          unepOverlap:
            random() < 0.5
              ? null
              : {
                  dataset: text(),
                  overlaps: random() < 0.5,
                  areaM2: random() * 1e9,
                  fraction: random(),
                  areas: Array.from({ length: Math.floor(random() * 21) }, () => ({
                    id: text(),
                    name: text(),
                    designation: text(),
                    iucnCategory: text(),
                    areaM2: random() * 1e7,
                  })),
                },
        }),
      );
      const [real, bound] = [framedSize(source), sourceSizeBound(source)];
      if (bound < real) mismatches.push(`source ${n}: bound ${bound} < encoded ${real}`);
    }
    expect(mismatches).toEqual([]);
  });
});

// ---- cappedPage ---------------------------------------------------------------------------------

/** A ledger page over `records`, whose tokens name the record they resume after. */
function pageOf(records: SourceRecord[], nextPageToken: string | null): ListPage {
  return { records, nextPageToken, tokenAfter: (r) => `after:${r.id}` };
}

/** The bytes of the answer the service would send: the sources and the token. */
function answerSize(sources: Source[], nextPageToken: string): number {
  return toBinary(ListSourcesResponseSchema, create(ListSourcesResponseSchema, { sources, nextPageToken })).length;
}

describe("cappedPage", () => {
  /** A source of about 1.6 MB: 100,000 positions, the most one geometry may have. */
  const huge = () => record({ geometry: polygonOf(100_000) });

  it("cuts before MAX_PAGE_BYTES and resumes after the last source sent", () => {
    const records = Array.from({ length: 5 }, huge);
    const { sources, nextPageToken } = cappedPage(pageOf(records, "ledger-token"), toProtoSource);
    expect(sources.map((s) => s.id)).toEqual(records.slice(0, 2).map((r) => r.id));
    expect(nextPageToken).toBe(`after:${records[1].id}`);
    expect(sources.reduce((sum, s) => sum + sourceSizeBound(s), 0)).toBeLessThanOrEqual(MAX_PAGE_BYTES);
    expect(answerSize(sources, nextPageToken)).toBeLessThan(FOUR_MIB);
    expect(SearchSourcesResponseSchema.fields.map((f) => f.number)).toEqual(
      ListSourcesResponseSchema.fields.map((f) => f.number),
    );
  });

  it("passes the ledger's token on when nothing is cut, and '' for none", () => {
    const records = Array.from({ length: 1000 }, () => record());
    const all = records.map((r) => r.id);
    const withToken = cappedPage(pageOf(records, "ledger-token"), toProtoSource);
    expect(withToken.sources.map((s) => s.id)).toEqual(all);
    expect(withToken.nextPageToken).toBe("ledger-token");
    const last = cappedPage(pageOf(records, null), toProtoSource);
    expect(last.sources).toHaveLength(1000);
    expect(last.nextPageToken).toBe("");
    expect(cappedPage(pageOf([], null), toProtoSource)).toEqual({ sources: [], nextPageToken: "" });
    expect(cappedPage(pageOf([], "t"), toProtoSource)).toEqual({ sources: [], nextPageToken: "t" });
  });

  it("never sends zero sources: a first source past the bound goes alone", () => {
    const giant = record({ geometry: polygonOf(300_000) });
    const records = [giant, record(), record()];
    const cut = cappedPage(pageOf(records, "ledger-token"), toProtoSource);
    expect(cut.sources.map((s) => s.id)).toEqual([giant.id]);
    expect(cut.nextPageToken).toBe(`after:${giant.id}`);
    const alone = cappedPage(pageOf([giant], null), toProtoSource);
    expect(alone.sources).toHaveLength(1);
    expect(alone.nextPageToken).toBe("");
  });

  it("sends sources whose bounds add up to exactly MAX_PAGE_BYTES, and cuts at one byte more", () => {
    const first = huge();
    const firstBound = sourceSizeBound(toProtoSource(first));
    /** A record of about 1.6 MB whose bound is exactly `target` (methodology adds 3 a character, attribute types 11 each). */
    const withBound = (target: number): SourceRecord => {
      const geometry = polygonOf(Math.floor((target - 2000) / 16));
      for (let types = 0; types <= 2; types++) {
        const base = record({ geometry, methodology: "", attributeType: Array(types).fill("BIODIVERSITY") });
        const rest = target - sourceSizeBound(toProtoSource(base));
        if (rest >= 0 && rest % 3 === 0) return { ...base, methodology: "m".repeat(rest / 3) };
      }
      throw new Error(`no record with bound ${target}`);
    };
    const exact = withBound(MAX_PAGE_BYTES - firstBound);
    const over = withBound(MAX_PAGE_BYTES - firstBound + 1);
    expect(firstBound + sourceSizeBound(toProtoSource(exact))).toBe(MAX_PAGE_BYTES);
    expect(firstBound + sourceSizeBound(toProtoSource(over))).toBe(MAX_PAGE_BYTES + 1);

    const fits = cappedPage(pageOf([first, exact], "ledger-token"), toProtoSource);
    expect(fits.sources).toHaveLength(2);
    expect(fits.nextPageToken).toBe("ledger-token");
    expect(answerSize(fits.sources, fits.nextPageToken)).toBeLessThan(FOUR_MIB);

    const cut = cappedPage(pageOf([first, over], "ledger-token"), toProtoSource);
    expect(cut.sources.map((s) => s.id)).toEqual([first.id]);
    expect(cut.nextPageToken).toBe(`after:${first.id}`);
  });

  it("walks a listing of mixed sizes answer by answer: each under 4 MiB, none empty, every record once", () => {
    const random = prng(2024);
    const records = Array.from({ length: 60 }, () =>
      random() < 0.3
        ? fullRecord(polygonOf(4 + Math.floor(random() * 100_000)), "✓")
        : record({ geometry: random() < 0.5 ? polygonOf(4 + Math.floor(random() * 100_000)) : multiOf(50, 400) }),
    );
    const indexOf = new Map(records.map((r, i) => [r.id, i]));
    const LIMIT = 25;
    const sent: string[] = [];
    let start = 0;
    let answers = 0;
    for (;;) {
      // What the ledger gives for a page starting at `start`: `limit` records and a token if more follow.
      const slice = records.slice(start, start + LIMIT);
      const ledgerToken = start + LIMIT < records.length ? `after:${slice[slice.length - 1].id}` : null;
      const { sources, nextPageToken } = cappedPage(pageOf(slice, ledgerToken), toProtoSource);
      answers += 1;
      expect(sources.length).toBeGreaterThan(0);
      expect(answerSize(sources, nextPageToken)).toBeLessThan(FOUR_MIB);
      expect(sources.map((s) => s.id)).toEqual(slice.slice(0, sources.length).map((r) => r.id));
      sent.push(...sources.map((s) => s.id));
      if (sources.length === slice.length) expect(nextPageToken).toBe(ledgerToken ?? "");
      if (nextPageToken === "") break;
      expect(nextPageToken).toBe(`after:${sources[sources.length - 1].id}`);
      start = (indexOf.get(nextPageToken.slice("after:".length)) as number) + 1;
    }
    expect(sent).toEqual(records.map((r) => r.id));
    expect(answers).toBeGreaterThan(records.length / LIMIT + 5);
  });
});
