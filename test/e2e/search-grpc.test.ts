/**
 * Search over gRPC (grpc-js + proto-loader, an independent client) on both services:
 * SearchSources with a point, a box (degenerate ones included), a Polygon (with holes) and a
 * MultiPolygon, and ListSources' bbox filter; touching counts, a source in a hole of the area is
 * not found; combined with the other filters; account scoping; paging by next_page_token; every
 * malformed request INVALID_ARGUMENT with the exact field path (`point`, `box`, `geometry…`,
 * `query.<field>`), never INTERNAL. Every source found equals what GetSource returns for it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { fieldViolations, grpc, LedgerGrpc, type ServiceName, ts } from "./grpc-support.js";
import {
  FIXTURE_ALT_IDS,
  type Json,
  OTHER_ACCOUNT_PERIOD,
  protoArea,
  protoBox,
  protoFilters,
  protoGeometry,
  type RpcSource,
  rect,
  rpc,
  rpcOk,
  type SearchCase,
  searchCases,
  searchFixture,
  UNIT,
  walkRpc,
} from "./paging-support.js";
import { END, START } from "./rest-support.js";

const [LON, LAT] = [-30, -20];
const CASES = searchCases(LON, LAT);
const EVERYTHING = { box: protoBox([LON - UNIT, LAT - UNIT, LON + 101 * UNIT, LAT + 71 * UNIT]) };
const ACCOUNT_A = "acct-rpc-search-a";

let server: TestServer;
let client: LedgerGrpc;
let tokenA: string;
let tokenB: string;

type Env = "production" | "sandbox";
const SERVICE: Record<Env, ServiceName> = {
  production: "SourceLedgerService",
  sandbox: "SandboxSourceLedgerService",
};
const ids: Record<Env, Map<string, string>> = { production: new Map(), sandbox: new Map() };
const order: Record<Env, Map<string, number>> = { production: new Map(), sandbox: new Map() };
const otherIds: Record<Env, Set<string>> = { production: new Set(), sandbox: new Set() };
const answered: Record<Env, Map<string, RpcSource>> = { production: new Map(), sandbox: new Map() };

/** A fixture source as a SourceInput: REST-style properties in proto form. */
function sourceInput(altId: string, geometry: Parameters<typeof protoGeometry>[0], properties: Json): Json {
  const input: Json = {
    alt_id: altId,
    geometry: protoGeometry(geometry),
    start_at: ts((properties.start_at as string | undefined) ?? START),
    end_at: ts((properties.end_at as string | undefined) ?? END),
  };
  if (properties.methodology !== undefined) input.methodology = properties.methodology;
  if (properties.source_type !== undefined) input.source_type = `SOURCE_TYPE_${properties.source_type}`;
  if (properties.attribute_type !== undefined) {
    input.attribute_type = (properties.attribute_type as string[]).map((t) => `ATTRIBUTE_TYPE_${t}`);
  }
  return input;
}

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
  tokenA = await server.userToken(ACCOUNT_A);
  tokenB = await server.userToken("acct-rpc-search-b");
  for (const env of ["production", "sandbox"] as const) {
    const service = SERVICE[env];
    const fixture = searchFixture(LON, LAT);
    const mine = fixture.map((s) => sourceInput(s.altId, s.geometry, s.properties));
    await rpcOk(client, service, "CreateSources", { sources: mine }, tokenA);
    const theirs = fixture.map((s) => sourceInput(s.altId, s.geometry, { ...s.properties, ...OTHER_ACCOUNT_PERIOD }));
    const created = await rpcOk<{ sources: RpcSource[] }>(
      client,
      service,
      "CreateSources",
      { sources: theirs },
      tokenB,
    );
    for (const source of created.sources) otherIds[env].add(source.id);
    const listed = await rpcOk<{ sources: RpcSource[] }>(client, service, "ListSources", { limit: 1000 }, tokenA);
    expect(listed.sources.map((s) => s.alt_id).sort()).toEqual([...FIXTURE_ALT_IDS].sort());
    listed.sources.forEach((source, i) => {
      ids[env].set(source.alt_id, source.id);
      order[env].set(source.id, i);
    });
  }
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

function foundAltIds(env: Env, sources: RpcSource[]): string[] {
  for (const source of sources) {
    expect(source.account_id).toBe(ACCOUNT_A);
    expect(otherIds[env].has(source.id), "another account's source").toBe(false);
    expect(ids[env].get(source.alt_id)).toBe(source.id);
    answered[env].set(source.id, source);
  }
  const positions = sources.map((s) => order[env].get(s.id) as number);
  expect(
    positions.every((p, i) => i === 0 || positions[i - 1] < p),
    "list order",
  ).toBe(true);
  return sources.map((s) => s.alt_id).sort();
}

function expectedFor(env: Env, c: SearchCase): string[] {
  return [...(env === "sandbox" && c.sandboxExpected ? c.sandboxExpected : c.expected)].sort();
}

/** The field paths of an INVALID_ARGUMENT answer's BadRequest, sorted. */
async function refusedFields(service: ServiceName, method: "SearchSources" | "ListSources", request: object) {
  const outcome = await rpc(client, service, method, request, tokenA);
  expect(outcome.code, outcome.details).toBe(grpc.status.INVALID_ARGUMENT);
  return fieldViolations(outcome)
    .map((v) => v.field)
    .sort();
}

describe.each(["production", "sandbox"] as const)("%s", (env) => {
  const service = SERVICE[env];
  const search = (request: object, token = tokenA) => walkRpc(client, service, "SearchSources", request as Json, token);

  describe("SearchSources", () => {
    it.each(CASES.map((c) => [c.name, c] as const))("%s", async (_, c) => {
      const walk = await search({ ...protoArea(c.area), query: protoFilters(c.filters) });
      expect(walk.pageSizes).toHaveLength(1);
      expect(foundAltIds(env, walk.sources)).toEqual(expectedFor(env, c));
    });
  });

  describe("ListSources with bbox", () => {
    const boxCases = CASES.filter((c) => c.area.kind === "box");
    it.each(boxCases.map((c) => [c.name, c] as const))("%s", async (_, c) => {
      const box = c.area.kind === "box" ? c.area.box : ([0, 0, 0, 0] as [number, number, number, number]);
      const walk = await walkRpc(
        client,
        service,
        "ListSources",
        { ...protoFilters(c.filters), bbox: protoBox(box) },
        tokenA,
      );
      expect(foundAltIds(env, walk.sources)).toEqual(expectedFor(env, c));
    });
  });

  it("another account's sources at the same places never appear, and it sees only its own", async () => {
    const in2010 = { query: { active_at: ts("2010-06-01T00:00:00Z") } };
    expect((await search({ ...EVERYTHING, ...in2010 })).sources).toEqual([]);
    const theirs = await search({ ...EVERYTHING, ...in2010 }, tokenB);
    expect(new Set(theirs.sources.map((s) => s.id))).toEqual(otherIds[env]);
    const all = await search({ ...EVERYTHING }, tokenB);
    expect(new Set(all.sources.map((s) => s.id))).toEqual(otherIds[env]);
    const point = await search({ point: { lon: LON + 5 * UNIT, lat: LAT + 5 * UNIT } }, tokenB);
    expect(point.sources.map((s) => [s.alt_id, s.account_id])).toEqual([["a", "acct-rpc-search-b"]]);
    expect(otherIds[env].has(point.sources[0].id)).toBe(true);
  });

  describe("paging by next_page_token", () => {
    const request = { ...EVERYTHING, query: { limit: 3 } };
    let walk: Awaited<ReturnType<typeof search>>;

    beforeAll(async () => {
      walk = await search(request);
    });

    it("pages of 3, 3, 3, 1, every source once, in list order; the last token is empty", async () => {
      expect(walk.pageSizes).toEqual([3, 3, 3, 1]);
      expect(walk.tokens).toHaveLength(3);
      expect(foundAltIds(env, walk.sources)).toEqual([...FIXTURE_ALT_IDS].sort());
      const unpaged = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        service,
        "SearchSources",
        EVERYTHING,
        tokenA,
      );
      expect(unpaged.next_page_token).toBe("");
      expect(walk.sources).toEqual(unpaged.sources);
    });

    it("a token replayed with another area, other filters, by another account or in the other environment → query.page_token", async () => {
      const token = walk.tokens[0];
      const replays: [ServiceName, object, string][] = [
        [service, { point: { lon: LON, lat: LAT }, query: { limit: 3, page_token: token } }, tokenA],
        [service, { box: protoBox([LON, LAT, LON + 1, LAT + 1]), query: { limit: 3, page_token: token } }, tokenA],
        [service, { ...EVERYTHING, query: { limit: 3, methodology: "M-A", page_token: token } }, tokenA],
        [service, { ...EVERYTHING, query: { limit: 3, conflict: false, page_token: token } }, tokenA],
        [service, { ...EVERYTHING, query: { limit: 3, page_token: token } }, tokenB],
        [
          SERVICE[env === "production" ? "sandbox" : "production"],
          { ...EVERYTHING, query: { limit: 3, page_token: token } },
          tokenA,
        ],
      ];
      for (const [target, replay, caller] of replays) {
        const outcome = await rpc(client, target, "SearchSources", replay, caller);
        expect(outcome.code, outcome.details).toBe(grpc.status.INVALID_ARGUMENT);
        expect(fieldViolations(outcome).map((v) => v.field)).toEqual(["query.page_token"]);
      }
    });

    it("a search token is no list token and vice versa; with offset → query.page_token", async () => {
      expect(await refusedFields(service, "ListSources", { limit: 3, page_token: walk.tokens[0] })).toEqual([
        "page_token",
      ]);
      const list = await rpcOk<{ next_page_token: string }>(client, service, "ListSources", { limit: 3 }, tokenA);
      expect(list.next_page_token).not.toBe("");
      expect(
        await refusedFields(service, "SearchSources", {
          ...EVERYTHING,
          query: { limit: 3, page_token: list.next_page_token },
        }),
      ).toEqual(["query.page_token"]);
      for (const offset of [0, 2]) {
        expect(
          await refusedFields(service, "SearchSources", {
            ...EVERYTHING,
            query: { limit: 3, page_token: walk.tokens[0], offset },
          }),
        ).toEqual(["query.page_token"]);
      }
    });
  });

  describe("malformed requests: INVALID_ARGUMENT with the exact field", () => {
    const point = { point: { lon: LON, lat: LAT } };
    const ring = (coordinates: number[]) => ({ polygon: { rings: [{ coordinates }] } });
    const cases: [string, object, string[]][] = [
      ["box minLon > maxLon", { box: protoBox([3, 0, 1, 1]) }, ["box"]],
      ["box minLat > maxLat", { box: protoBox([0, 3, 1, 1]) }, ["box"]],
      ["box longitude 181", { box: protoBox([0, 0, 181, 1]) }, ["box"]],
      ["box latitude -91", { box: protoBox([0, -91, 1, 0]) }, ["box"]],
      ["box NaN", { box: protoBox([Number.NaN, 0, 1, 1]) }, ["box"]],
      ["box -Infinity", { box: protoBox([Number.NEGATIVE_INFINITY, 0, 1, 1]) }, ["box"]],
      ["point latitude 91", { point: { lon: 0, lat: 91 } }, ["point"]],
      ["point longitude -181", { point: { lon: -181, lat: 0 } }, ["point"]],
      ["point NaN", { point: { lon: Number.NaN, lat: 0 } }, ["point"]],
      ["self-intersecting polygon", { geometry: ring([0, 0, 1, 1, 1, 0, 0, 1, 0, 0]) }, ["geometry.polygon.rings[0]"]],
      ["unclosed ring", { geometry: ring([0, 0, 1, 0, 1, 1, 0, 1]) }, ["geometry.polygon.rings[0]"]],
      ["odd coordinate count", { geometry: ring([0, 0, 1, 0, 1, 1, 0, 1, 0]) }, ["geometry.polygon.rings[0]"]],
      [
        "hole outside its shell",
        { geometry: protoGeometry(rect(0, 0, 4, 4, [5, 5, 6, 6])) },
        ["geometry.polygon.rings[1]"],
      ],
      [
        "multipolygon parts sharing an edge",
        {
          geometry: protoGeometry({
            type: "MultiPolygon",
            coordinates: [rect(0, 0, 1, 1).coordinates as never, rect(1, 0, 2, 1).coordinates as never],
          }),
        },
        ["geometry.multi_polygon.polygons[1]"],
      ],
      [
        "position out of range",
        { geometry: ring([0, 0, 400, 0, 4, 4, 0, 4, 0, 0]) },
        ["geometry.polygon.rings[0].coordinates[2]"],
      ],
      ["polygon without rings", { geometry: { polygon: { rings: [] } } }, ["geometry.polygon"]],
      ["geometry without a kind", { geometry: {} }, ["geometry"]],
      ["no area", {}, ["intersects"]],
      ["no area, with a query", { query: { limit: 5 } }, ["intersects"]],
      ["query.bbox minLon > maxLon", { ...point, query: { bbox: protoBox([3, 0, 1, 1]) } }, ["query.bbox"]],
      ["query.bbox NaN", { ...point, query: { bbox: protoBox([0, Number.NaN, 1, 1]) } }, ["query.bbox"]],
      ["query.limit 0", { ...point, query: { limit: 0 } }, ["query.limit"]],
      ["query.limit 1001", { ...point, query: { limit: 1001 } }, ["query.limit"]],
      ["query.offset -1", { ...point, query: { offset: -1 } }, ["query.offset"]],
      ["query.page_token bogus", { ...point, query: { page_token: "bogus" } }, ["query.page_token"]],
      ["query.attribute_type 0", { ...point, query: { attribute_type: [0] } }, ["query.attribute_type[0]"]],
      [
        "query.active_at out of range",
        { ...point, query: { active_at: { seconds: "-99999999999", nanos: 0 } } },
        ["query.active_at"],
      ],
      ["query.methodology empty", { ...point, query: { methodology: "" } }, ["query.methodology"]],
      ["query.alt_id empty", { ...point, query: { alt_id: "" } }, ["query.alt_id"]],
      ["query.account_id from a non-admin", { ...point, query: { account_id: "x" } }, ["query.account_id"]],
      [
        "everything at once",
        { box: protoBox([3, 0, 1, 1]), query: { limit: 0, bbox: protoBox([Number.NaN, 0, 1, 1]) } },
        ["box", "query.bbox", "query.limit"],
      ],
    ];
    if (env === "production") cases.push(["query.id (sandbox only)", { ...point, query: { id: "x" } }, ["query.id"]]);

    it.each(cases)("SearchSources: %s", async (_, request, fields) => {
      expect(await refusedFields(service, "SearchSources", request)).toEqual(fields);
    });

    const listCases: [string, object, string[]][] = [
      ["bbox minLon > maxLon", { bbox: protoBox([3, 0, 1, 1]) }, ["bbox"]],
      ["bbox minLat > maxLat", { bbox: protoBox([0, 3, 1, 1]) }, ["bbox"]],
      ["bbox out of range", { bbox: protoBox([0, 0, 1, 91]) }, ["bbox"]],
      ["bbox NaN", { bbox: protoBox([Number.NaN, 0, 1, 1]) }, ["bbox"]],
      ["page_token with offset", { page_token: "x", offset: 0 }, ["page_token"]],
    ];
    it.each(listCases)("ListSources: %s", async (_, request, fields) => {
      expect(await refusedFields(service, "ListSources", request)).toEqual(fields);
    });

    it("Connect JSON with an unknown field → invalid_argument, not a server error", async () => {
      const res = await fetch(`${server.baseUrl}/sourceledger.v2.${service}/SearchSources`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${tokenA}` },
        body: JSON.stringify({ point: { lon: 0, lat: 0 }, bogus: 1 }),
      });
      expect(res.status).toBe(400);
      expect((await res.json()).code).toBe("invalid_argument");
    });
  });

  describe("noise at the range limits (contract §13)", () => {
    const EAST = 180.00000000000006;
    let russia: RpcSource;

    beforeAll(async () => {
      const geometry = { polygon: { rings: [{ coordinates: [179, 60, EAST, 60, EAST, 61, 179, 61, 179, 60] }] } };
      const input = { alt_id: "russia", geometry, start_at: ts(START), end_at: ts(END) };
      const created = await rpcOk<{ sources: RpcSource[] }>(
        client,
        service,
        "CreateSources",
        { sources: [input] },
        tokenA,
      );
      russia = created.sources[0];
    });

    it("a search geometry with the source's own vertices finds it", async () => {
      const walk = await search({ geometry: russia.geometry });
      expect(walk.sources.map((s) => s.id)).toEqual([russia.id]);
    });

    // As over REST (search-rest.test.ts): the noise a geometry may carry is accepted here too.
    it("a point on the source's east edge, or its bounding box, finds it", async () => {
      expect((await search({ point: { lon: EAST, lat: 60.5 } })).sources.map((s) => s.id)).toEqual([russia.id]);
      expect((await search({ box: protoBox([179, 60, EAST, 61]) })).sources.map((s) => s.id)).toEqual([russia.id]);
    });
  });

  it("every source a search answered equals what GetSource returns", async () => {
    expect(answered[env].size).toBe(FIXTURE_ALT_IDS.length);
    for (const [id, source] of answered[env]) {
      const got = await rpcOk<{ source: RpcSource }>(client, service, "GetSource", { id }, tokenA);
      expect(source).toEqual(got.source);
    }
    const conflicting = [...answered[env].values()]
      .filter((s) => s.conflict)
      .map((s) => s.alt_id)
      .sort();
    expect(conflicting).toEqual(env === "production" ? ["conf1", "conf2"] : []);
  });
});
