/**
 * QueryReader (src/http/rest-query.ts), the readers of the list filters' new kinds from a query
 * string: `bool` (conflict), `instant` (active_at) and `box` (bbox), with what each accepts and
 * the exact text and pointer of what each refuses; and readListRequest putting them in the
 * ListSourcesRequest, in both environments.
 */
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { BoundingBoxSchema, TimeRangeSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { parseQueryString } from "../../src/http/querystring.js";
import {
  boxOf,
  instantOf,
  listParametersOf,
  QueryReader,
  RANGE_FORMAT,
  rangeOf,
  readListRequest,
} from "../../src/http/rest-query.js";
import type { Violation } from "../../src/ledger/violation.js";

const INSTANT = "an RFC 3339 date-time with an offset, e.g. 2024-01-01T00:00:00Z";
const BOX = "4 numbers minLon,minLat,maxLon,maxLat";
/** 2024-01-01T00:00:00Z in epoch seconds. */
const Y2024 = 1_704_067_200n;

const reader = (query: Record<string, string | string[]>, allowed = ["conflict", "active_at", "bbox"]) =>
  new QueryReader(query, allowed);
const at = (name: string, detail: string): Violation => ({ field: name, pointer: `/query/${name}`, detail });
const box = (minLon: number, minLat: number, maxLon: number, maxLat: number) =>
  create(BoundingBoxSchema, { minLon, minLat, maxLon, maxLat });

describe("QueryReader.bool", () => {
  it.each([
    ["true", true],
    ["false", false],
  ])("reads %s", (text, value) => {
    const query = reader({ conflict: text });
    expect(query.bool("conflict")).toBe(value);
    expect(query.violations).toEqual([]);
  });

  it("reads an absent parameter as undefined", () => {
    const query = reader({});
    expect(query.bool("conflict")).toBeUndefined();
    expect(query.violations).toEqual([]);
  });

  it.each(["", "TRUE", "True", "1", "0", "yes", "on", " true", "true ", "false\n", "t", "null"])(
    "refuses %j",
    (text) => {
      const query = reader({ conflict: text });
      expect(query.bool("conflict")).toBeUndefined();
      // Quoted as a preview: JSON-escaped ("false\n" shows its newline as \n).
      expect(query.violations).toEqual([at("conflict", `conflict must be true or false, got ${JSON.stringify(text)}`)]);
    },
  );

  it("refuses a repeat, and reads the first value", () => {
    const query = reader({ conflict: ["true", "false"] });
    expect(query.bool("conflict")).toBe(true);
    expect(query.violations).toEqual([at("conflict", "conflict must be given at most once")]);
  });
});

describe("QueryReader.instant", () => {
  it.each<[string, bigint, number]>([
    ["2024-01-01T00:00:00Z", Y2024, 0],
    ["2024-01-01t00:00:00z", Y2024, 0],
    ["2024-01-01T01:00:00+01:00", Y2024, 0],
    ["2023-12-31T19:00:00-05:00", Y2024, 0],
    ["2024-01-01T00:00:00.5Z", Y2024, 500_000_000],
    ["2024-01-01T00:00:00.123456789Z", Y2024, 123_456_789],
    ["2024-01-01T00:00:00.1234567891Z", Y2024, 123_456_789],
    ["1970-01-01T00:00:00Z", 0n, 0],
    ["0001-01-01T00:00:00Z", -62_135_596_800n, 0],
    ["9999-12-31T23:59:59.999Z", 253_402_300_799n, 999_000_000],
    ["2024-02-29T12:00:00Z", Y2024 + 59n * 86_400n + 43_200n, 0],
  ])("reads %s", (text, seconds, nanos) => {
    const query = reader({ active_at: text });
    expect(query.instant("active_at")).toEqual(create(TimestampSchema, { seconds, nanos }));
    expect(query.violations).toEqual([]);
    expect(instantOf(text)).toEqual(create(TimestampSchema, { seconds, nanos }));
  });

  it.each([
    "",
    "2024-01-01",
    "2024-01-01T00:00:00",
    "2024-01-01 00:00:00Z",
    "2024-01-01T00:00Z",
    "2024-1-1T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2024-04-31T00:00:00Z",
    "2024-13-01T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T00:60:00Z",
    "2024-01-01T23:59:60Z",
    "2024-01-01T00:00:00+24:00",
    "2024-01-01T00:00:00+01:60",
    "2024-01-01T00:00:00+0100",
    "2024-01-01T00:00:00.Z",
    " 2024-01-01T00:00:00Z",
    "2024-01-01T00:00:00Z ",
    "1704067200000",
    "now",
  ])("refuses %j", (text) => {
    const query = reader({ active_at: text });
    expect(query.instant("active_at")).toBeUndefined();
    expect(query.violations).toEqual([at("active_at", `active_at must be ${INSTANT}, got "${text}"`)]);
    expect(instantOf(text)).toBeUndefined();
  });

  it("reads an absent parameter as undefined, and refuses a repeat", () => {
    expect(reader({}).instant("active_at")).toBeUndefined();
    const query = reader({ active_at: ["2024-01-01T00:00:00Z", "x"] });
    expect(query.instant("active_at")).toEqual(create(TimestampSchema, { seconds: Y2024, nanos: 0 }));
    expect(query.violations).toEqual([at("active_at", "active_at must be given at most once")]);
  });
});

describe("QueryReader.range (active_during, OGC's datetime)", () => {
  const t = (seconds: bigint) => create(TimestampSchema, { seconds, nanos: 0 });
  const DAY = 86_400n;
  it.each<[string, ReturnType<typeof t> | undefined, ReturnType<typeof t> | undefined]>([
    ["2024-01-01T00:00:00Z", t(Y2024), t(Y2024)],
    ["2024-01-01T00:00:00Z/2024-01-02T00:00:00Z", t(Y2024), t(Y2024 + DAY)],
    ["2024-01-01T00:00:00Z/..", t(Y2024), undefined],
    ["../2024-01-02T00:00:00Z", undefined, t(Y2024 + DAY)],
    ["2024-01-01T00:00:00Z/", t(Y2024), undefined],
    ["/2024-01-02T00:00:00Z", undefined, t(Y2024 + DAY)],
    ["../..", undefined, undefined],
    // Upside down: read as given, refused by the ledger.
    ["2024-01-02T00:00:00Z/2024-01-01T00:00:00Z", t(Y2024 + DAY), t(Y2024)],
  ])("reads %j", (text, start, end) => {
    const query = reader({ active_during: text }, ["active_during"]);
    const expected = create(TimeRangeSchema, { start, end });
    expect(query.range("active_during")).toEqual(expected);
    expect(query.violations).toEqual([]);
    expect(rangeOf(text)).toEqual(expected);
  });

  it.each(["", "..", "2024-01-01", "2024-01-01T00:00:00Z/2024-01-02", "a/b", "2024-01-01T00:00:00Z/x/..", "/"])(
    "refuses %j",
    (text) => {
      const query = reader({ active_during: text }, ["active_during"]);
      expect(query.range("active_during")).toBeUndefined();
      expect(query.violations).toEqual([at("active_during", `active_during must be ${RANGE_FORMAT}, got "${text}"`)]);
    },
  );
});

describe("QueryReader.box", () => {
  it.each<[string, ReturnType<typeof box>]>([
    ["1,2,3,4", box(1, 2, 3, 4)],
    ["-180,-90,180,90", box(-180, -90, 180, 90)],
    ["1e1,2E0,3e+0,4e-1", box(10, 2, 3, 0.4)],
    ["-0.5,-.5,+0.5,.5", box(-0.5, -0.5, 0.5, 0.5)],
    ["1.,2.,3.,4.", box(1, 2, 3, 4)],
    [" 1 , 2,3 ,4 ", box(1, 2, 3, 4)],
    ["\t1,2\n,3,4", box(1, 2, 3, 4)],
    ["0,0,0,0", box(0, 0, 0, 0)],
    ["-0,0,0,0", box(-0, 0, 0, 0)],
    ["00001,2,3,4", box(1, 2, 3, 4)],
    // Out of range and upside down: read as given, refused by the ledger (rules.ts boxProblem).
    ["200,95,-200,-95", box(200, 95, -200, -95)],
    ["0.1234567890123456789,1,2,3", box(Number("0.1234567890123456789"), 1, 2, 3)],
  ])("reads %j", (text, expected) => {
    const query = reader({ bbox: text });
    expect(query.box("bbox")).toEqual(expected);
    expect(query.violations).toEqual([]);
  });

  it.each([
    "",
    "1,2,3",
    "1,2,3,4,5",
    "a,b,c,d",
    "1,2,3,a",
    "NaN,0,0,0",
    "0,0,0,NaN",
    "Infinity,0,0,0",
    "-Infinity,0,0,0",
    "1e400,0,0,0",
    "0,0,0,-1e309",
    "0x10,0,0,0",
    "0b1,0,0,0",
    "1_000,0,0,0",
    "1,,3,4",
    ",1,2,3",
    "1,2,3,4,",
    "1;2;3;4",
    "1 2 3 4",
    "1.2.3,0,0,0",
    "1e,0,0,0",
    "e1,0,0,0",
    ".,0,0,0",
    "--1,0,0,0",
    "[1,2,3,4]",
    " , , , ",
  ])("refuses %j", (text) => {
    const query = reader({ bbox: text });
    expect(query.box("bbox")).toBeUndefined();
    expect(query.violations).toEqual([at("bbox", `bbox must be ${BOX}, got "${text}"`)]);
  });

  it("reads an absent parameter as undefined, and refuses a repeat", () => {
    expect(reader({}).box("bbox")).toBeUndefined();
    const query = reader({ bbox: ["1,2,3,4", "5,6,7,8"] });
    expect(query.box("bbox")).toEqual(box(1, 2, 3, 4));
    expect(query.violations).toEqual([at("bbox", "bbox must be given at most once")]);
  });
});

describe("boxOf", () => {
  it("takes exactly four finite numbers", () => {
    expect(boxOf([1, 2, 3, 4])).toEqual(box(1, 2, 3, 4));
    for (const numbers of [
      [],
      [1, 2, 3],
      [1, 2, 3, 4, 5],
      [1, 2, 3, Number.NaN],
      [1, 2, 3, Infinity],
      [1, 2, 3, "4"],
      [1, 2, 3, null],
    ]) {
      expect(boxOf(numbers)).toBeUndefined();
    }
  });
});

describe("readListRequest with a QueryReader", () => {
  it("reads conflict, active_at and bbox into the request, in both environments", () => {
    for (const environment of ["production", "sandbox"] as const) {
      const query = new QueryReader(
        parseQueryString("conflict=false&active_at=2024-01-01T00%3A00%3A00%2B00%3A00&bbox=1,2,3,4&alt_id=a%2Fb"),
        listParametersOf(environment),
      );
      const request = readListRequest(query, environment);
      expect(query.violations).toEqual([]);
      expect(request.conflict).toBe(false);
      expect(request.activeAt).toEqual(create(TimestampSchema, { seconds: Y2024, nanos: 0 }));
      expect(request.bbox).toEqual(box(1, 2, 3, 4));
      expect(request.altId).toBe("a/b");
    }
  });

  it("leaves absent filters unset (conflict is not false when absent)", () => {
    const request = readListRequest(new QueryReader({}, listParametersOf("production")), "production");
    expect(request.conflict).toBeUndefined();
    expect(request.activeAt).toBeUndefined();
    expect(request.bbox).toBeUndefined();
  });

  it("reports each malformed filter at its parameter, in proto order, after unknown and malformed ones", () => {
    const query = new QueryReader(
      parseQueryString("bbox=1,2,3&conflict=yes&active_at=soon&id=x&alt_id=%zz"),
      listParametersOf("production"),
    );
    readListRequest(query, "production");
    expect(query.violations).toEqual([
      at("alt_id", "alt_id has a malformed percent-encoding"),
      at(
        "id",
        'unknown query parameter "id"; allowed here: methodology, steward_id, project_id, outcome_reporting_year, ' +
          "source_type, attribute_type, geometry_source, limit, offset, account_id, alt_id, page_token, conflict, " +
          "active_at, bbox, as_of, active_during",
      ),
      at("conflict", 'conflict must be true or false, got "yes"'),
      at("active_at", `active_at must be ${INSTANT}, got "soon"`),
      at("bbox", `bbox must be ${BOX}, got "1,2,3"`),
    ]);
  });

  it("offers the id filter in the sandbox only", () => {
    expect(listParametersOf("sandbox")).toContain("id");
    expect(listParametersOf("production")).not.toContain("id");
    expect(listParametersOf("production")).toEqual(
      expect.arrayContaining(["conflict", "active_at", "bbox", "alt_id", "page_token"]),
    );
  });
});
