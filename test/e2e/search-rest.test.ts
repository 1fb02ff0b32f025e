/**
 * Search over REST (contract §11, docs/api.md §11) in both environments: the `bbox` list filter
 * and POST /sources/search with a Point, a Polygon (with and without holes) and a MultiPolygon;
 * touching counts, a source in a hole of the area is not found; combined with methodology,
 * attribute_type, source_type, conflict, active_at, alt_id and bbox; account scoping; paging
 * through search results by the Link header; every malformed input a 422 with its exact pointer.
 * Every record found equals what GET /sources/{id} returns for it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  createAll,
  FIXTURE_ALT_IDS,
  featureOf,
  geojsonArea,
  isLineBox,
  type Json,
  nextLink,
  OTHER_ACCOUNT_PERIOD,
  problemPointers,
  queryString,
  rect,
  type SearchCase,
  searchCases,
  searchFixture,
  tokenOf,
  UNIT,
  walkRest,
} from "./paging-support.js";
import { type Environment, expectJson, pathOf, type SourceRecord } from "./rest-support.js";

const [LON, LAT] = [20, 10];
const CASES = searchCases(LON, LAT);
const EVERYTHING = geojsonArea({ kind: "box", box: [LON - UNIT, LAT - UNIT, LON + 101 * UNIT, LAT + 71 * UNIT] });

let server: TestServer;
let tokenA: string;
let tokenB: string;

/** Per environment: account A's fixture ids by alt_id, in list order; account B's ids. */
const ids: Record<Environment, Map<string, string>> = { production: new Map(), sandbox: new Map() };
const order: Record<Environment, Map<string, number>> = { production: new Map(), sandbox: new Map() };
const otherIds: Record<Environment, Set<string>> = { production: new Set(), sandbox: new Set() };
/** Every record a search answered, to compare with GET /sources/{id}. */
const answered: Record<Environment, Map<string, SourceRecord>> = { production: new Map(), sandbox: new Map() };

beforeAll(async () => {
  server = await startTestServer();
  tokenA = await server.userToken("acct-search-a");
  tokenB = await server.userToken("acct-search-b");
  for (const env of ["production", "sandbox"] as const) {
    const fixture = searchFixture(LON, LAT);
    await createAll(
      server,
      tokenA,
      fixture.map((s) => featureOf(s.altId, s.geometry, s.properties)),
      env,
    );
    // Account B: the same geometries and alt_ids, in 2010 (so production finds no conflict across accounts).
    const other = await createAll(
      server,
      tokenB,
      fixture.map((s) => featureOf(s.altId, s.geometry, { ...s.properties, ...OTHER_ACCOUNT_PERIOD })),
      env,
    );
    for (const record of other) otherIds[env].add(record.id);
    const listed = await expectJson<SourceRecord[]>(
      await server.request("GET", pathOf(env, "?limit=1000"), { token: tokenA }),
      200,
    );
    expect(listed.map((r) => r.alt_id).sort()).toEqual([...FIXTURE_ALT_IDS].sort());
    listed.forEach((record, i) => {
      ids[env].set(record.alt_id, record.id);
      order[env].set(record.id, i);
    });
  }
});

afterAll(async () => {
  await server?.close();
});

/** The records' alt_ids after checking they are account A's fixture records, in list order. */
function foundAltIds(env: Environment, records: SourceRecord[]): string[] {
  for (const record of records) {
    expect(record.account_id).toBe("acct-search-a");
    expect(otherIds[env].has(record.id), "another account's source").toBe(false);
    expect(ids[env].get(record.alt_id)).toBe(record.id);
    answered[env].set(record.id, record);
  }
  const positions = records.map((r) => order[env].get(r.id) as number);
  expect(
    positions.every((p, i) => i === 0 || positions[i - 1] < p),
    "list order",
  ).toBe(true);
  return records.map((r) => r.alt_id).sort();
}

function expectedFor(env: Environment, c: SearchCase): string[] {
  return [...(env === "sandbox" && c.sandboxExpected ? c.sandboxExpected : c.expected)].sort();
}

function searchBody(c: SearchCase): Json {
  return { intersects: geojsonArea(c.area), ...c.filters };
}

describe.each(["production", "sandbox"] as const)("%s", (env) => {
  const search = (body: unknown, token = tokenA) =>
    server.request("POST", pathOf(env, "/search"), { token, json: body });

  describe("POST /sources/search", () => {
    // Line boxes are searched by the bbox member and GET ?bbox= below.
    it.each(CASES.filter((c) => !isLineBox(c.area)).map((c) => [c.name, c] as const))("%s", async (_, c) => {
      const walk = await walkRest(server, tokenA, pathOf(env, "/search"), { body: searchBody(c) });
      expect(walk.pageSizes).toHaveLength(1);
      expect(foundAltIds(env, walk.records)).toEqual(expectedFor(env, c));
    });
  });

  const boxCases = CASES.filter((c) => c.area.kind === "box");

  describe("GET /sources?bbox=", () => {
    it.each(boxCases.map((c) => [c.name, c] as const))("%s", async (_, c) => {
      const box = c.area.kind === "box" ? c.area.box : [];
      const query = queryString({ ...c.filters, bbox: box as [number, number, number, number] });
      const walk = await walkRest(server, tokenA, pathOf(env, `?${query}`));
      expect(foundAltIds(env, walk.records)).toEqual(expectedFor(env, c));
    });
  });

  describe("the bbox member of a search body, with an area over everything", () => {
    it.each(boxCases.map((c) => [c.name, c] as const))("%s", async (_, c) => {
      const box = c.area.kind === "box" ? c.area.box : [];
      const walk = await walkRest(server, tokenA, pathOf(env, "/search"), {
        body: { intersects: EVERYTHING, ...c.filters, bbox: box },
      });
      expect(foundAltIds(env, walk.records)).toEqual(expectedFor(env, c));
    });
  });

  it("another account's sources at the same places never appear, and it sees only its own", async () => {
    const in2010 = { intersects: EVERYTHING, active_at: "2010-06-01T00:00:00Z" };
    expect(await expectJson<SourceRecord[]>(await search(in2010), 200)).toEqual([]);
    const theirs = await expectJson<SourceRecord[]>(await search(in2010, tokenB), 200);
    expect(new Set(theirs.map((r) => r.id))).toEqual(otherIds[env]);
    const all = await expectJson<SourceRecord[]>(await search({ intersects: EVERYTHING }, tokenB), 200);
    expect(new Set(all.map((r) => r.id))).toEqual(otherIds[env]);
    const boxed = await expectJson<SourceRecord[]>(
      await server.request("GET", pathOf(env, `?bbox=${LON - 1},${LAT - 1},${LON + 1},${LAT + 1}`), { token: tokenB }),
      200,
    );
    expect(new Set(boxed.map((r) => r.id))).toEqual(otherIds[env]);
  });

  it("an admin searches every account, or the one its account_id names", async () => {
    const admin = await server.adminToken();
    const both = await expectJson<SourceRecord[]>(await search({ intersects: EVERYTHING }, admin), 200);
    expect(new Set(both.map((r) => r.id))).toEqual(new Set([...ids[env].values(), ...otherIds[env]]));
    const scoped = await expectJson<SourceRecord[]>(
      await search({ intersects: EVERYTHING, account_id: "acct-search-b" }, admin),
      200,
    );
    expect(new Set(scoped.map((r) => r.id))).toEqual(otherIds[env]);
  });

  describe("paging through search results", () => {
    const body = { intersects: EVERYTHING, limit: 3 };
    let pages: SourceRecord[][];
    let links: string[];

    beforeAll(async () => {
      pages = [];
      links = [];
      let target: string | null = pathOf(env, "/search");
      while (target !== null) {
        const res: Response = await server.request("POST", target, { token: tokenA, json: body });
        target = nextLink(res);
        if (target !== null) links.push(target);
        pages.push(await expectJson<SourceRecord[]>(res, 200));
      }
    });

    it("follows the Link with the same body: pages of 3, 3, 3, 1, every record once, in list order", async () => {
      expect(pages.map((p) => p.length)).toEqual([3, 3, 3, 1]);
      expect(foundAltIds(env, pages.flat())).toEqual([...FIXTURE_ALT_IDS].sort());
      const unpaged = await expectJson<SourceRecord[]>(await search({ intersects: EVERYTHING }), 200);
      expect(pages.flat()).toEqual(unpaged);
      for (const link of links) {
        expect(link.startsWith(`${pathOf(env, "/search")}?`), link).toBe(true);
        expect([...new URL(link, server.baseUrl).searchParams.keys()]).toEqual(["page_token"]);
      }
    });

    it("the token may travel in the body instead; the same token in both is fine", async () => {
      const token = tokenOf(links[0]);
      expect(await expectJson(await search({ ...body, page_token: token }), 200)).toEqual(pages[1]);
      expect(
        await expectJson(
          await server.request("POST", links[0], { token: tokenA, json: { ...body, page_token: token } }),
          200,
        ),
      ).toEqual(pages[1]);
    });

    it("the next link posted with another body, another account or in the other environment → 422 at /query/page_token", async () => {
      const other: Environment = env === "production" ? "sandbox" : "production";
      const replays: [string, Json, string][] = [
        [links[0], { ...body, methodology: "M-A" }, tokenA],
        [links[0], { ...body, intersects: { type: "Point", coordinates: [LON, LAT] } }, tokenA],
        [links[0], { ...body, active_at: "2024-06-01T00:00:00Z" }, tokenA],
        [links[0], { intersects: EVERYTHING, limit: 3, bbox: [-180, -90, 180, 90] }, tokenA],
        [links[0], body, tokenB],
        [`${pathOf(other, "/search")}?page_token=${tokenOf(links[0])}`, body, tokenA],
      ];
      for (const [link, replayed, token] of replays) {
        const res = await server.request("POST", link, { token, json: replayed });
        expect(await problemPointers(res), JSON.stringify(replayed)).toEqual(["/query/page_token"]);
      }
    });

    it("a search token is not a list token and vice versa; tampered tokens are refused", async () => {
      const searchToken = tokenOf(links[0]);
      expect(
        await problemPointers(
          await server.request("GET", pathOf(env, `?limit=3&page_token=${searchToken}`), { token: tokenA }),
        ),
      ).toEqual(["/query/page_token"]);
      const listLink = nextLink(await server.request("GET", pathOf(env, "?limit=3"), { token: tokenA }));
      expect(listLink).not.toBeNull();
      expect(await problemPointers(await search({ ...body, page_token: tokenOf(listLink as string) }))).toEqual([
        "/page_token",
      ]);
      const flipped = `${searchToken.slice(0, 5)}${searchToken[5] === "A" ? "B" : "A"}${searchToken.slice(6)}`;
      expect(await problemPointers(await search({ ...body, page_token: flipped }))).toEqual(["/page_token"]);
    });

    it("page tokens in the query and the body that differ → 422 at /query/page_token", async () => {
      const res = await server.request("POST", links[0], {
        token: tokenA,
        json: { ...body, page_token: tokenOf(links[1]) },
      });
      expect(await problemPointers(res)).toEqual(["/query/page_token"]);
    });

    it("page_token with offset → 422 at /page_token (body) or /query/page_token (query)", async () => {
      const token = tokenOf(links[0]);
      expect(await problemPointers(await search({ ...body, page_token: token, offset: 0 }))).toEqual(["/page_token"]);
      expect(await problemPointers(await search({ ...body, page_token: token, offset: 3 }))).toEqual(["/page_token"]);
      const res = await server.request("POST", links[0], { token: tokenA, json: { ...body, offset: 0 } });
      expect(await problemPointers(res)).toEqual(["/query/page_token"]);
    });
  });

  describe("malformed input: 422 with the exact pointer, never 5xx", () => {
    const point = { type: "Point", coordinates: [LON, LAT] };
    const bodies: [string, unknown, string[]][] = [
      ["bbox of 3 numbers", { intersects: point, bbox: [1, 2, 3] }, ["/bbox"]],
      ["bbox of 5 numbers", { intersects: point, bbox: [1, 2, 3, 4, 5] }, ["/bbox"]],
      ["bbox empty", { intersects: point, bbox: [] }, ["/bbox"]],
      ["bbox as a string", { intersects: point, bbox: "0,0,1,1" }, ["/bbox"]],
      ["bbox with a string (NaN)", { intersects: point, bbox: ["NaN", 0, 1, 1] }, ["/bbox"]],
      ["bbox with null", { intersects: point, bbox: [null, 0, 1, 1] }, ["/bbox"]],
      ["bbox minLon > maxLon", { intersects: point, bbox: [3, 0, 1, 1] }, ["/bbox"]],
      ["bbox minLat > maxLat", { intersects: point, bbox: [0, 3, 1, 1] }, ["/bbox"]],
      ["bbox longitude 181", { intersects: point, bbox: [0, 0, 181, 1] }, ["/bbox"]],
      ["bbox longitude -181", { intersects: point, bbox: [-181, 0, 0, 1] }, ["/bbox"]],
      ["bbox latitude -91", { intersects: point, bbox: [0, -91, 1, 0] }, ["/bbox"]],
      ["bbox latitude 91", { intersects: point, bbox: [0, 0, 1, 91] }, ["/bbox"]],
      [
        "self-intersecting polygon",
        {
          intersects: {
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
          },
        },
        ["/intersects/coordinates/0"],
      ],
      [
        "unclosed ring",
        {
          intersects: {
            type: "Polygon",
            coordinates: [
              [
                [0, 0],
                [1, 0],
                [1, 1],
                [0, 1],
              ],
            ],
          },
        },
        ["/intersects/coordinates/0"],
      ],
      ["hole outside its shell", { intersects: rect(0, 0, 4, 4, [5, 5, 6, 6]) }, ["/intersects/coordinates/1"]],
      [
        "multipolygon parts sharing an edge",
        {
          intersects: {
            type: "MultiPolygon",
            coordinates: [rect(0, 0, 1, 1).coordinates, rect(1, 0, 2, 1).coordinates],
          },
        },
        ["/intersects/coordinates/1"],
      ],
      [
        "polygon position out of range",
        {
          intersects: {
            type: "Polygon",
            coordinates: [
              [
                [0, 0],
                [400, 0],
                [4, 4],
                [0, 4],
                [0, 0],
              ],
            ],
          },
        },
        ["/intersects/coordinates/0/1"],
      ],
      ["polygon without rings", { intersects: { type: "Polygon", coordinates: [] } }, ["/intersects/coordinates"]],
      ["polygon without coordinates", { intersects: { type: "Polygon" } }, ["/intersects/coordinates"]],
      [
        "LineString",
        {
          intersects: {
            type: "LineString",
            coordinates: [
              [0, 0],
              [1, 1],
            ],
          },
        },
        ["/intersects/type"],
      ],
      ["Feature instead of a geometry", { intersects: { type: "Feature", geometry: point } }, ["/intersects/type"]],
      ["point of one number", { intersects: { type: "Point", coordinates: [1] } }, ["/intersects/coordinates"]],
      ["point with null (NaN)", { intersects: { type: "Point", coordinates: [null, 0] } }, ["/intersects/coordinates"]],
      ["point without coordinates", { intersects: { type: "Point" } }, ["/intersects/coordinates"]],
      ["intersects missing", {}, ["/intersects"]],
      ["intersects missing, with filters", { methodology: "M-A", limit: 5 }, ["/intersects"]],
      ["intersects null", { intersects: null }, ["/intersects"]],
      ["intersects as WKT", { intersects: "POINT(0 0)" }, ["/intersects"]],
      ["unknown member", { intersects: point, foo: 1 }, ["/foo"]],
      ["member in the wrong case", { intersects: point, Limit: 5 }, ["/Limit"]],
      ["misspelt intersects", { intersect: point }, ["/intersect", "/intersects"]],
      ["limit 0", { intersects: point, limit: 0 }, ["/limit"]],
      ["limit 1001", { intersects: point, limit: 1001 }, ["/limit"]],
      ["limit as a string", { intersects: point, limit: "10" }, ["/limit"]],
      ["offset -1", { intersects: point, offset: -1 }, ["/offset"]],
      ["attribute_type unknown", { intersects: point, attribute_type: "NOPE" }, ["/attribute_type"]],
      [
        "attribute_type unknown in an array",
        { intersects: point, attribute_type: ["BIODIVERSITY", "NOPE"] },
        ["/attribute_type/1"],
      ],
      ["source_type lower case", { intersects: point, source_type: "field" }, ["/source_type"]],
      ["conflict as a string", { intersects: point, conflict: "true" }, ["/conflict"]],
      ["active_at without a time", { intersects: point, active_at: "2024-01-01" }, ["/active_at"]],
      ["active_at as a number", { intersects: point, active_at: 1704067200 }, ["/active_at"]],
      ["methodology as a number", { intersects: point, methodology: 5 }, ["/methodology"]],
      ["methodology empty", { intersects: point, methodology: "" }, ["/methodology"]],
      ["alt_id empty", { intersects: point, alt_id: "" }, ["/alt_id"]],
      ["page_token that is no token", { intersects: point, page_token: "bogus" }, ["/page_token"]],
      ["account_id from a non-admin", { intersects: point, account_id: "acct-search-b" }, ["/account_id"]],
      ["a body that is an array", [], [""]],
      ["a body that is a string", "intersects", [""]],
      [
        "everything at once",
        { intersects: { type: "Point", coordinates: [1] }, bbox: [1, 2, 3], limit: 0, conflict: 1, foo: true },
        ["/bbox", "/conflict", "/foo", "/intersects/coordinates", "/limit"],
      ],
    ];
    if (env === "production") bodies.push(["id (a sandbox-only filter)", { intersects: point, id: "x" }, ["/id"]]);

    it.each(bodies)("%s", async (_, body, pointers) => {
      const res = await search(body);
      expect(await problemPointers(res)).toEqual([...pointers].sort());
    });

    it("a body that is not JSON → 422 at the root", async () => {
      const res = await server.request("POST", pathOf(env, "/search"), {
        token: tokenA,
        body: "{intersects:",
        headers: { "content-type": "application/json" },
      });
      expect(await problemPointers(res)).toEqual([""]);
    });

    // Every problem with a position points at it (a Polygon's at /intersects/coordinates/0/1, a
    // create's at /geometry/coordinates/…), so an out-of-range Point's is at its coordinates, not
    // at /intersects (the whole area), where 15c16ad put it.
    it.each([
      [200, 0],
      [-180.5, 0],
      [0, -90.5],
      [0, 91],
    ])("a point out of range (%d, %d) → 422 at /intersects/coordinates", async (lon, lat) => {
      const res = await search({ intersects: { type: "Point", coordinates: [lon, lat] } });
      expect(await problemPointers(res)).toEqual(["/intersects/coordinates"]);
    });

    const queries: [string, string][] = [
      ["3 numbers", "bbox=1,2,3"],
      ["5 numbers", "bbox=1,2,3,4,5"],
      ["min > max longitude", "bbox=3,0,1,1"],
      ["min > max latitude", "bbox=0,3,1,1"],
      ["longitude 181", "bbox=0,0,181,1"],
      ["longitude -181", "bbox=-181,0,0,1"],
      ["latitude 91", "bbox=0,0,1,91"],
      ["latitude -91", "bbox=0,-91,1,0"],
      ["NaN", "bbox=1,2,3,NaN"],
      ["all NaN", "bbox=NaN,NaN,NaN,NaN"],
      ["Infinity", "bbox=Infinity,0,1,1"],
      ["an overflowing number", "bbox=1e999,0,1,1"],
      ["words", "bbox=a,b,c,d"],
      ["an empty number", "bbox=1,2,,4"],
      ["empty", "bbox="],
      ["hex", "bbox=0x1,0,1,1"],
      ["given twice", "bbox=0,0,1,1&bbox=0,0,1,1"],
    ];
    it.each(queries)("GET /sources?bbox with %s → 422 at /query/bbox", async (_, query) => {
      const res = await server.request("GET", pathOf(env, `?${query}`), { token: tokenA });
      expect(await problemPointers(res)).toEqual(["/query/bbox"]);
    });

    it("GET /sources: other malformed new filters → 422 at their pointers", async () => {
      const res = await server.request(
        "GET",
        pathOf(env, "?conflict=TRUE&active_at=2024-01-01T00:00:00&alt_id=&bbox=1,2,3"),
        { token: tokenA },
      );
      expect(await problemPointers(res)).toEqual([
        "/query/active_at",
        "/query/alt_id",
        "/query/bbox",
        "/query/conflict",
      ]);
    });
  });

  describe("noise at the range limits (contract §13: within 1e-9° beyond ±180/±90 lies on the limit)", () => {
    // As in Natural Earth's Russia: a longitude of 180.00000000000006, accepted on create.
    const EAST = 180.00000000000006;
    let russia: SourceRecord;

    beforeAll(async () => {
      const geometry = {
        type: "Polygon",
        coordinates: [
          [
            [179, 60],
            [EAST, 60],
            [EAST, 61],
            [179, 61],
            [179, 60],
          ],
        ],
      };
      const [record] = await expectJson<SourceRecord[]>(
        await server.request("POST", pathOf(env), { token: tokenA, json: featureOf("russia", geometry as never) }),
        201,
      );
      russia = record;
    });

    it("a search Polygon with the source's own vertices finds it", async () => {
      const res = await search({ intersects: russia.geometry });
      expect((await expectJson<SourceRecord[]>(res, 200)).map((r) => r.id)).toEqual([russia.id]);
    });

    // A GeoJSON Point is GeoJSON input like a Polygon's positions, and a box "as for create"
    // (contract §11): both accept the floating-point noise past ±180 / ±90 a create accepts
    // (docs/api.md §5.4), so a client can search with a stored source's vertex or bounding box.
    it("a search Point on the source's east edge finds it", async () => {
      const res = await search({ intersects: { type: "Point", coordinates: [EAST, 60.5] } });
      expect((await expectJson<SourceRecord[]>(res, 200)).map((r) => r.id)).toEqual([russia.id]);
    });

    it("the source's own bounding box as bbox finds it (GET and search body)", async () => {
      const listed = await server.request("GET", pathOf(env, `?bbox=179,60,${EAST},61`), { token: tokenA });
      expect((await expectJson<SourceRecord[]>(listed, 200)).map((r) => r.id)).toEqual([russia.id]);
      const found = await search({ intersects: russia.geometry, bbox: [179, 60, EAST, 61] });
      expect((await expectJson<SourceRecord[]>(found, 200)).map((r) => r.id)).toEqual([russia.id]);
    });
  });

  it("every record a search answered equals what GET /sources/{id} returns", async () => {
    expect(answered[env].size).toBe(FIXTURE_ALT_IDS.length);
    for (const [id, record] of answered[env]) {
      const got = await expectJson<SourceRecord>(
        await server.request("GET", pathOf(env, `/${id}`), { token: tokenA }),
        200,
      );
      expect(record).toEqual(got);
    }
    // The conflict flags the searches filtered on are the records' own.
    const conflicting = [...answered[env].values()]
      .filter((r) => r.conflict)
      .map((r) => r.alt_id)
      .sort();
    expect(conflicting).toEqual(env === "production" ? ["conf1", "conf2"] : []);
  });
});
