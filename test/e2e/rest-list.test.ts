/**
 * docs/api.md §4 over REST, GET /sources: each filter alone and combined, attribute_type's ANY
 * semantics, order, limit/offset, and 422 for malformed or unknown query parameters.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  altIds,
  collection,
  createOk,
  expectProblem,
  expectViolation,
  feature,
  flat,
  type Json,
  list,
  manyFeatures,
  type SourceRecord,
  unique,
} from "./rest-support.js";

let server: TestServer;
let token: string;
/** The seeded sources, in creation order. */
const seeded: SourceRecord[] = [];

const SPECIAL_METHODOLOGY = "VM0042 v2.0 & co/? #1 = ü";

/** Optional fields of the seeded sources s0 … s6 (s3 has none). */
const SEED: Json[] = [
  {
    methodology: "M1",
    steward_id: "S1",
    project_id: "P1",
    outcome_reporting_year: 2023,
    source_type: "FIELD",
    attribute_type: ["CARBON_REMOVAL"],
    geometry_source: "CUSTODIAN_DRAWN",
  },
  {
    methodology: "M1",
    steward_id: "S2",
    project_id: "P1",
    outcome_reporting_year: 2024,
    source_type: "FACILITY",
    attribute_type: ["BIODIVERSITY", "WATER_QUALITY"],
    geometry_source: "DERIVED",
  },
  {
    methodology: "M2",
    steward_id: "S1",
    project_id: "P2",
    outcome_reporting_year: 2024,
    source_type: "FIELD",
    attribute_type: [],
    geometry_source: "AUTHORITATIVE_GIS",
  },
  {},
  {
    methodology: "M2",
    steward_id: "S2",
    project_id: "P2",
    outcome_reporting_year: 2023,
    source_type: "SITE",
    attribute_type: ["WATER_QUALITY"],
    geometry_source: "CUSTODIAN_DRAWN",
  },
  {
    methodology: "M1",
    steward_id: "S1",
    project_id: "P2",
    outcome_reporting_year: 2025,
    source_type: "FIELD",
    attribute_type: ["CARBON_REMOVAL", "CI_SCORE"],
  },
  {
    methodology: SPECIAL_METHODOLOGY,
    source_type: "JURISDICTIONAL",
    geometry_source: "EXTERNAL_REGISTRY",
    attribute_type: ["WATER_QUANTITY"],
  },
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = await startTestServer();
  token = await server.userToken(unique("acct-list"));
  // Several requests a few milliseconds apart: created_at differs between them, not within one.
  const batches = [[0, 1], [2], [3, 4, 5], [6]];
  for (const batch of batches) {
    const features = batch.map((i) => feature(`s${i}`, SEED[i]));
    seeded.push(...(await createOk(server, token, collection(features))));
    await sleep(5);
  }
  // Another account's sources never show up.
  await createOk(
    server,
    await server.userToken(unique("acct-list-other")),
    collection(SEED.map((p, i) => feature(`s${i}`, p))),
  );
});

afterAll(async () => {
  await server?.close();
});

const names = (indexes: number[]) => indexes.map((i) => `s${i}`);

describe("filters", () => {
  const cases: [string, number[]][] = [
    ["", [0, 1, 2, 3, 4, 5, 6]],
    ["methodology=M1", [0, 1, 5]],
    ["methodology=M2", [2, 4]],
    ["methodology=m1", []],
    ["methodology=M", []],
    [`methodology=${encodeURIComponent(SPECIAL_METHODOLOGY)}`, [6]],
    ["steward_id=S1", [0, 2, 5]],
    ["steward_id=S2", [1, 4]],
    ["project_id=P1", [0, 1]],
    ["project_id=P2", [2, 4, 5]],
    ["outcome_reporting_year=2023", [0, 4]],
    ["outcome_reporting_year=2024", [1, 2]],
    ["outcome_reporting_year=1999", []],
    ["source_type=FIELD", [0, 2, 5]],
    ["source_type=SITE", [4]],
    ["source_type=DEVICE", []],
    ["geometry_source=CUSTODIAN_DRAWN", [0, 4]],
    ["geometry_source=DERIVED", [1]],
    ["geometry_source=EXTERNAL_REGISTRY", [6]],
    ["attribute_type=WATER_QUALITY", [1, 4]],
    ["attribute_type=CARBON_REMOVAL", [0, 5]],
    ["attribute_type=CARBON_REMOVAL&attribute_type=BIODIVERSITY", [0, 1, 5]],
    ["attribute_type=CI_SCORE&attribute_type=WATER_QUALITY&attribute_type=WATER_QUANTITY", [1, 4, 5, 6]],
    ["attribute_type=CARBON_REMOVAL&attribute_type=CARBON_REMOVAL", [0, 5]],
    ["attribute_type=RENEWABLE_ENERGY", []],
    ["methodology=M1&steward_id=S1", [0, 5]],
    ["source_type=FIELD&outcome_reporting_year=2024", [2]],
    ["methodology=M1&attribute_type=CARBON_REMOVAL&attribute_type=WATER_QUALITY", [0, 1, 5]],
    ["geometry_source=CUSTODIAN_DRAWN&project_id=P2", [4]],
    [
      "methodology=M1&steward_id=S1&project_id=P2&outcome_reporting_year=2025&source_type=FIELD&attribute_type=CI_SCORE",
      [5],
    ],
    ["methodology=M1&source_type=SITE", []],
    ["methodology=M1&limit=2", [0, 1]],
    ["methodology=M1&offset=1", [1, 5]],
    ["methodology=M1&limit=1&offset=2", [5]],
  ];

  it.each(cases)("GET /sources?%s", async (query, expected) => {
    const records = await list(server, token, query);
    expect(altIds(records)).toEqual(names(expected));
    for (const record of records) expect(record).toEqual(seeded.find((s) => s.id === record.id));
  });
});

describe("order", () => {
  it("is created_at, then id", async () => {
    const records = await list(server, token);
    expect(records).toEqual(seeded);
    const sorted = [...records].sort((a, b) =>
      a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1,
    );
    expect(records.map((r) => r.id)).toEqual(sorted.map((r) => r.id));
    // The seed spans several created_at values, and one request shares one.
    expect(new Set(records.map((r) => r.created_at)).size).toBe(4);
  });
});

describe("limit and offset", () => {
  let pageToken: string;
  let all: SourceRecord[];

  beforeAll(async () => {
    pageToken = await server.userToken(unique("acct-pages"));
    all = [];
    for (let batch = 0; batch < 3; batch++) {
      all.push(...(await createOk(server, pageToken, collection(manyFeatures(`p${batch}`, 50)))));
    }
  });

  it("the default limit is 100", async () => {
    expect(await list(server, pageToken)).toEqual(all.slice(0, 100));
  });

  it("limit=1000 returns all 150, in creation order", async () => {
    expect(await list(server, pageToken, "limit=1000")).toEqual(all);
  });

  it.each([
    ["limit=1", 0, 1],
    ["limit=10&offset=5", 5, 15],
    ["offset=100", 100, 150],
    ["offset=0&limit=150", 0, 150],
    ["offset=149", 149, 150],
    ["offset=150", 150, 150],
    ["offset=100000", 150, 150],
    ["limit=1000&offset=60", 60, 150],
  ])("%s", async (query, from, to) => {
    expect(await list(server, pageToken, query)).toEqual(all.slice(from, to));
  });

  it("pages of 40 walk the whole list exactly once", async () => {
    const pages: SourceRecord[] = [];
    for (let offset = 0; offset < 200; offset += 40)
      pages.push(...(await list(server, pageToken, `limit=40&offset=${offset}`)));
    expect(pages).toEqual(all);
  });
});

describe("malformed or unknown query parameters → 422 at /query/<name>", () => {
  const cases: [string, string, string][] = [
    ["limit=0", "/query/limit", "limit must be from 1 to 1000, got 0"],
    ["limit=1001", "/query/limit", "limit must be from 1 to 1000, got 1001"],
    ["limit=-1", "/query/limit", "limit must be from 1 to 1000"],
    ["limit=abc", "/query/limit", `limit must be an integer, got "abc"`],
    ["limit=1.5", "/query/limit", "must be an integer"],
    ["limit=", "/query/limit", "must be an integer"],
    ["limit=99999999999999", "/query/limit", "must be an integer"],
    ["limit=1&limit=2", "/query/limit", "limit must be given at most once"],
    ["offset=-1", "/query/offset", "offset must be 0 or more, got -1"],
    ["offset=x", "/query/offset", `offset must be an integer, got "x"`],
    ["outcome_reporting_year=abc", "/query/outcome_reporting_year", "must be an integer"],
    ["outcome_reporting_year=999", "/query/outcome_reporting_year", "from 1000 to 9999, got 999"],
    ["outcome_reporting_year=10000", "/query/outcome_reporting_year", "from 1000 to 9999, got 10000"],
    [
      "source_type=field",
      "/query/source_type",
      `source_type must be one of FIELD, FACILITY, DEVICE, PROGRAM, JURISDICTIONAL, SITE, got "field"`,
    ],
    ["source_type=", "/query/source_type", "source_type must be one of"],
    ["geometry_source=DRAWN", "/query/geometry_source", "geometry_source must be one of"],
    ["attribute_type=carbon_removal", "/query/attribute_type", `got "carbon_removal"`],
    ["attribute_type=BIODIVERSITY&attribute_type=NOPE", "/query/attribute_type", `got "NOPE"`],
    ["methodology=", "/query/methodology", "methodology must not be empty"],
    [`methodology=${"m".repeat(257)}`, "/query/methodology", "at most 256 characters, got 257"],
    ["methodology=a&methodology=b", "/query/methodology", "at most once"],
    ["steward_id=", "/query/steward_id", "steward_id must not be empty"],
    ["project_id=", "/query/project_id", "project_id must not be empty"],
    ["bogus=1", "/query/bogus", `unknown query parameter "bogus"`],
    ["LIMIT=10", "/query/LIMIT", `unknown query parameter "LIMIT"`],
    ["source_id=src_x", "/query/source_id", "unknown query parameter"],
    ["id=src_x", "/query/id", `unknown query parameter "id"`],
    // The name as one RFC 6901 reference token: ~ and / escaped.
    ["a%2Fb=1", "/query/a~1b", `unknown query parameter "a/b"`],
    ["c~d=1", "/query/c~0d", `unknown query parameter "c~d"`],
    ["conflict=yes", "/query/conflict", `conflict must be true or false, got "yes"`],
    ["active_at=2024-01-01", "/query/active_at", "active_at must be an RFC 3339 date-time with an offset"],
    ["bbox=1,2,3", "/query/bbox", `bbox must be 4 numbers minLon,minLat,maxLon,maxLat, got "1,2,3"`],
    ["bbox=1,2,3,NaN", "/query/bbox", "bbox must be 4 numbers"],
    ["bbox=3,0,1,1", "/query/bbox", "bbox: minLon 3 is greater than maxLon 1"],
    ["bbox=0,3,1,1", "/query/bbox", "bbox: minLat 3 is greater than maxLat 1"],
    ["bbox=0,0,181,1", "/query/bbox", "bbox (max corner): longitude must be from -180 to 180, got 181"],
    ["page_token=bogus", "/query/page_token", "page_token does not belong to this listing"],
  ];

  it.each(cases)("GET /sources?%s", async (query, pointer, detail) => {
    await expectViolation(await server.request("GET", `/sources?${query}`, { token }), pointer, detail);
  });

  it("every problem is listed", async () => {
    const body = await expectProblem(
      await server.request("GET", "/sources?limit=0&offset=-2&bogus=1&source_type=x", { token }),
      422,
      "invalid_argument",
    );
    expect(body.errors.map((e) => e.pointer).sort()).toEqual([
      "/query/bogus",
      "/query/limit",
      "/query/offset",
      "/query/source_type",
    ]);
  });

  it("limits 1 and 1000 are the bounds", async () => {
    expect(await list(server, token, "limit=1")).toHaveLength(1);
    expect(await list(server, token, "limit=1000")).toHaveLength(SEED.length);
  });

  it("a deleted source is no longer listed", async () => {
    const [doomed] = await createOk(server, token, flat("doomed", { methodology: "doomed-m" }));
    expect(altIds(await list(server, token, "methodology=doomed-m"))).toEqual(["doomed"]);
    expect((await server.request("DELETE", `/sources/${doomed.id}`, { token })).status).toBe(204);
    expect(await list(server, token, "methodology=doomed-m")).toEqual([]);
  });
});
