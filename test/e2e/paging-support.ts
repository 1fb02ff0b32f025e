/**
 * Shared helpers for the paging and search end-to-end tests (test/e2e/paging-*.test.ts,
 * test/e2e/search-*.test.ts): bulk creates, walking every page of a REST listing by its `Link`
 * header or of an RPC listing by `next_page_token` (docs/api.md §10), GeoJSON and proto geometry
 * builders, and a unary gRPC call for SearchSources (grpc-support.ts's `call` names the four
 * original methods only).
 */
import { expect } from "vitest";
import { circleRing } from "../geo/fixtures.js";
import type { TestServer } from "../support/server.js";
import { grpc, type LedgerGrpc, type ServiceName, ts, type UnaryOutcome } from "./grpc-support.js";
import { END, type Environment, expectJson, expectProblem, pathOf, type SourceRecord, START } from "./rest-support.js";

export type Json = Record<string, unknown>;
export type Position = [number, number];
export type PolygonCoords = Position[][];
export type Geometry =
  | { type: "Polygon"; coordinates: PolygonCoords }
  | { type: "MultiPolygon"; coordinates: PolygonCoords[] };

// ---- geometry builders -----------------------------------------------------------------------------

/** A closed counter-clockwise rectangle ring. */
export function rectRing(x1: number, y1: number, x2: number, y2: number): Position[] {
  return [
    [x1, y1],
    [x2, y1],
    [x2, y2],
    [x1, y2],
    [x1, y1],
  ];
}

/** A rectangle Polygon, optionally with holes (rings given as [x1, y1, x2, y2], wound clockwise). */
export function rect(x1: number, y1: number, x2: number, y2: number, ...holes: number[][]): Geometry {
  return {
    type: "Polygon",
    coordinates: [
      rectRing(x1, y1, x2, y2),
      ...holes.map(([hx1, hy1, hx2, hy2]) => rectRing(hx1, hy1, hx2, hy2).reverse()),
    ],
  };
}

/**
 * A circle of `positions` positions (the last closing it), coordinates to 7 decimals so a request
 * carries three of 100,000 positions under the 10 MiB body limit.
 */
export function roundedCircle(x: number, y: number, radius: number, positions: number): Geometry {
  const round7 = (value: number) => Number(value.toFixed(7));
  const ring = circleRing(x, y, radius, positions - 1).map(([lon, lat]): Position => [round7(lon), round7(lat)]);
  return { type: "Polygon", coordinates: [ring] };
}

/** A closed ring through `points`, closed here. */
export function closed(points: Position[]): Position[] {
  return [...points, points[0]];
}

/** A proto Geometry (proto-loader plain object, packed lon/lat pairs) for a GeoJSON geometry. */
export function protoGeometry(geometry: Geometry): object {
  const polygon = (rings: PolygonCoords) => ({ rings: rings.map((r) => ({ coordinates: r.flat() })) });
  return geometry.type === "Polygon"
    ? { polygon: polygon(geometry.coordinates) }
    : { multi_polygon: { polygons: geometry.coordinates.map(polygon) } };
}

/**
 * Fresh cells for sources that must not overlap anything else of the file (production's conflict
 * analysis is ledger-wide, docs/api.md §8): a square of `size` degrees in a `cell`-degree grid of
 * `columns` columns from (lon, lat).
 */
export function cellAllocator(lon: number, lat: number, columns = 200, cell = 0.01, size = 0.004): () => Geometry {
  let next = 0;
  return () => {
    const n = next++;
    const x = lon + (n % columns) * cell;
    const y = lat + Math.floor(n / columns) * cell;
    return rect(x, y, x + size, y + size);
  };
}

/** A Feature with `id` = altId, the default period and `properties`. */
export function featureOf(altId: string, geometry: Geometry, properties: Json = {}): Json {
  return { type: "Feature", id: altId, geometry, properties: { start_at: START, end_at: END, ...properties } };
}

/**
 * A square "donut" search area from (x, y): [x-1, x+20] × [y-1, y+20] with a hole
 * [x+0.01, x+19] × [y+0.01, y+19]. Sources inside the hole have boxes meeting its envelope and
 * geometry that never meets it: each costs an exact test (docs/api.md §13).
 */
export function donutAt(x: number, y: number): Geometry {
  return rect(x - 1, y - 1, x + 20, y + 20, [x + 0.01, y + 0.01, x + 19, y + 19]);
}

/** The `i`-th decoy inside donutAt(x, y)'s hole: a circle of `positions` positions, 7 to a row. */
export function decoyInHole(x: number, y: number, i: number, positions = 100_000): Geometry {
  return roundedCircle(x + 1 + (i % 7) * 0.5, y + 1 + Math.floor(i / 7) * 0.5, 0.2, positions);
}

/**
 * The `i`-th decoy around (x, y) for a bbox list: an annulus centred there, 0.02° wide, outer radius
 * 0.3° + 0.05° i, `positions` positions over its two rings (7 decimals, as roundedCircle). Its box
 * holds any box within 0.2° of (x, y) that its geometry never meets, and no two decoys meet: each
 * costs a bbox list an exact test (docs/api.md §13).
 */
export function annulusAround(x: number, y: number, i: number, positions = 100_000): Geometry {
  const outer = 0.3 + 0.05 * i;
  const [shell] = roundedCircle(x, y, outer, positions / 2).coordinates as Position[][];
  const [hole] = roundedCircle(x, y, outer - 0.02, positions / 2).coordinates as Position[][];
  return { type: "Polygon", coordinates: [shell, hole.reverse()] };
}

// ---- REST ------------------------------------------------------------------------------------------

/** Creates `features` in requests of at most `chunk` (1,000 is the limit), in order; returns the records. */
export async function createAll(
  server: TestServer,
  token: string,
  features: Json[],
  env: Environment = "production",
  chunk = 1_000,
): Promise<SourceRecord[]> {
  const records: SourceRecord[] = [];
  for (let i = 0; i < features.length; i += chunk) {
    const res = await server.request("POST", pathOf(env), {
      token,
      json: { type: "FeatureCollection", features: features.slice(i, i + chunk) },
    });
    records.push(...(await expectJson<SourceRecord[]>(res, 201)));
  }
  return records;
}

/** The target of a `Link: <…>; rel="next"` header, or null when there is none (the last page). */
export function nextLink(res: Response): string | null {
  const header = res.headers.get("link");
  if (header === null) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(header);
  expect(match, `Link header ${header}`).not.toBeNull();
  return (match as RegExpExecArray)[1];
}

/** The page_token of a next link. */
export function tokenOf(link: string): string {
  const token = new URL(link, "http://x").searchParams.get("page_token");
  expect(token).toBeTruthy();
  return token as string;
}

export interface RestWalk {
  records: SourceRecord[];
  /** Records per page, in order. */
  pageSizes: number[];
  /** The next links followed, in order. */
  links: string[];
}

/**
 * Every page of a REST listing: GET `path` (or POST `body` to it, for a search) and then to each
 * `Link` target, until a page has no Link. Fails on a non-200 or on more than `maxPages` pages.
 */
export async function walkRest(
  server: TestServer,
  token: string,
  path: string,
  options: { body?: unknown; maxPages?: number } = {},
): Promise<RestWalk> {
  const walk: RestWalk = { records: [], pageSizes: [], links: [] };
  let target: string | null = path;
  const maxPages = options.maxPages ?? 1_000;
  while (target !== null) {
    expect(walk.pageSizes.length, `more than ${maxPages} pages`).toBeLessThan(maxPages);
    const res: Response =
      options.body === undefined
        ? await server.request("GET", target, { token })
        : await server.request("POST", target, { token, json: options.body });
    const link = nextLink(res);
    const page = await expectJson<SourceRecord[]>(res, 200);
    expect(Array.isArray(page)).toBe(true);
    walk.records.push(...page);
    walk.pageSizes.push(page.length);
    if (link !== null) walk.links.push(link);
    target = link;
  }
  return walk;
}

/** The pointers of a 422 problem, sorted. Also asserts the problem's shape. */
export async function problemPointers(res: Response): Promise<string[]> {
  const body = await expectProblem(res, 422, "invalid_argument");
  return body.errors.map((e) => e.pointer).sort();
}

// ---- gRPC ------------------------------------------------------------------------------------------

export type RpcMethod = "CreateSources" | "ListSources" | "GetSource" | "DeleteSource" | "SearchSources";

/** A unary call of any method (SearchSources included) that never rejects. */
export function rpc<T = any>(
  client: LedgerGrpc,
  service: ServiceName,
  method: RpcMethod,
  request: object,
  token: string,
): Promise<UnaryOutcome<T>> {
  // LedgerGrpc.call looks the method up by name on the proto-loader client, which has every method.
  return client.call<T>(service, method as "ListSources", request, token);
}

/** As `rpc`, but expects OK. */
export async function rpcOk<T = any>(
  client: LedgerGrpc,
  service: ServiceName,
  method: RpcMethod,
  request: object,
  token: string,
): Promise<T> {
  const outcome = await rpc<T>(client, service, method, request, token);
  expect(outcome.code, `${service}/${method}: ${outcome.details}`).toBe(grpc.status.OK);
  return outcome.response as T;
}

export type RpcSource = Record<string, any> & { id: string; alt_id: string };

export interface RpcWalk {
  sources: RpcSource[];
  pageSizes: number[];
  tokens: string[];
}

/**
 * Every page of ListSources or SearchSources: the request, then again with each next_page_token
 * (in `page_token`, or `query.page_token` for a search), until it is empty.
 */
export async function walkRpc(
  client: LedgerGrpc,
  service: ServiceName,
  method: "ListSources" | "SearchSources",
  request: Json,
  token: string,
  maxPages = 1_000,
): Promise<RpcWalk> {
  const walk: RpcWalk = { sources: [], pageSizes: [], tokens: [] };
  let pageToken = "";
  do {
    expect(walk.pageSizes.length, `more than ${maxPages} pages`).toBeLessThan(maxPages);
    const paged =
      method === "ListSources"
        ? { ...request, page_token: pageToken }
        : { ...request, query: { ...((request.query as Json | undefined) ?? {}), page_token: pageToken } };
    const response = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
      client,
      service,
      method,
      paged,
      token,
    );
    walk.sources.push(...response.sources);
    walk.pageSizes.push(response.sources.length);
    pageToken = response.next_page_token;
    if (pageToken !== "") walk.tokens.push(pageToken);
  } while (pageToken !== "");
  return walk;
}

/** A SourceInput (proto-loader form) with the default period. */
export function rpcSourceInput(altId: string, geometry: Geometry, extra: Json = {}): Json {
  return { alt_id: altId, geometry: protoGeometry(geometry), start_at: ts(START), end_at: ts(END), ...extra };
}

/** The gRPC service of an environment. */
export function serviceOf(env: Environment): ServiceName {
  return env === "production" ? "SourceLedgerService" : "SandboxSourceLedgerService";
}

/** Every id listed once at most; returns the ids. */
export function expectDistinct(ids: readonly string[]): string[] {
  const seen = new Set<string>();
  const twice: string[] = [];
  for (const id of ids) {
    if (seen.has(id)) twice.push(id);
    seen.add(id);
  }
  expect(twice, "ids listed more than once").toEqual([]);
  return [...ids];
}

// ---- the search fixture (search-rest and search-grpc) ------------------------------------------------

/**
 * The fixture's unit: 1/128° is a power of two, so every coordinate below (origin + k·UNIT, k a
 * multiple of 0.5) is an exact double and a touch at an edge or a vertex is exact.
 */
export const UNIT = 1 / 128;

/** The search fixture's period for sources other than `past`, and the other account's period. */
export const OTHER_ACCOUNT_PERIOD = { start_at: "2010-01-01T00:00:00Z", end_at: "2011-01-01T00:00:00Z" };

export type SearchArea =
  | { kind: "point"; x: number; y: number }
  | { kind: "box"; box: [number, number, number, number] }
  | { kind: "geometry"; geometry: Geometry };

export interface SearchFilters {
  methodology?: string;
  attribute_type?: string[];
  source_type?: string;
  conflict?: boolean;
  active_at?: string;
  alt_id?: string;
  /** minLon, minLat, maxLon, maxLat in degrees. */
  bbox?: [number, number, number, number];
}

export interface SearchCase {
  name: string;
  area: SearchArea;
  filters: SearchFilters;
  /** The alt_ids found, in production. */
  expected: string[];
  /** The alt_ids found in the sandbox, when they differ (conflict is always false there). */
  sandboxExpected?: string[];
}

export const FIXTURE_ALT_IDS = ["a", "b", "c", "holed", "inhole", "multi", "tri", "past", "conf1", "conf2"];

/**
 * The search fixture at (lon, lat), in units of UNIT:
 *
 * - `a` [0,10]² and `b` [10,20]×[0,10] share the edge x = 10; `c` [20,30]×[10,20] meets `b` only
 *   at the corner (20, 10);
 * - `holed` [40,70]×[0,30] with the hole [50,60]×[10,20]; `inhole` [52,58]×[12,18] lies in it;
 * - `multi`: [0,10]×[40,50] and [20,30]×[40,50]; `tri`: (80,0), (100,0), (80,20);
 * - `past` [0,10]×[60,70], active in 2020 only; `conf1` [40,50]×[60,70] and `conf2`
 *   [45,55]×[60,70] overlap by half (production flags both as conflicting).
 */
export function searchFixture(lon: number, lat: number): { altId: string; geometry: Geometry; properties: Json }[] {
  const r = (x1: number, y1: number, x2: number, y2: number, ...holes: number[][]) =>
    scaled(lon, lat, rect(x1, y1, x2, y2, ...holes));
  return [
    {
      altId: "a",
      geometry: r(0, 0, 10, 10),
      properties: { methodology: "M-A", attribute_type: ["CARBON_REMOVAL"], source_type: "FIELD" },
    },
    {
      altId: "b",
      geometry: r(10, 0, 20, 10),
      properties: { methodology: "M-B", attribute_type: ["BIODIVERSITY", "WATER_QUALITY"], source_type: "SITE" },
    },
    { altId: "c", geometry: r(20, 10, 30, 20), properties: { methodology: "M-A" } },
    { altId: "holed", geometry: r(40, 0, 70, 30, [50, 10, 60, 20]), properties: { methodology: "M-H" } },
    { altId: "inhole", geometry: r(52, 12, 58, 18), properties: { methodology: "M-H" } },
    {
      altId: "multi",
      geometry: scaled(lon, lat, {
        type: "MultiPolygon",
        coordinates: [
          rect(0, 40, 10, 50).coordinates as PolygonCoords,
          rect(20, 40, 30, 50).coordinates as PolygonCoords,
        ],
      }),
      properties: { attribute_type: ["BIODIVERSITY"] },
    },
    {
      altId: "tri",
      geometry: scaled(lon, lat, {
        type: "Polygon",
        coordinates: [
          closed([
            [80, 0],
            [100, 0],
            [80, 20],
          ]),
        ],
      }),
      properties: {},
    },
    {
      altId: "past",
      geometry: r(0, 60, 10, 70),
      properties: { start_at: "2020-01-01T00:00:00Z", end_at: "2021-01-01T00:00:00Z" },
    },
    { altId: "conf1", geometry: r(40, 60, 50, 70), properties: {} },
    { altId: "conf2", geometry: r(45, 60, 55, 70), properties: {} },
  ];
}

/** A geometry given in units, moved to (lon, lat) in degrees. */
export function scaled(lon: number, lat: number, geometry: Geometry): Geometry {
  const ring = (points: Position[]) => points.map(([x, y]): Position => [lon + x * UNIT, lat + y * UNIT]);
  return geometry.type === "Polygon"
    ? { type: "Polygon", coordinates: geometry.coordinates.map(ring) }
    : { type: "MultiPolygon", coordinates: geometry.coordinates.map((rings) => rings.map(ring)) };
}

/** The search cases over the fixture at (lon, lat): areas alone, then combined with filters. */
export function searchCases(lon: number, lat: number): SearchCase[] {
  const x = (k: number) => lon + k * UNIT;
  const y = (k: number) => lat + k * UNIT;
  const point = (px: number, py: number): SearchArea => ({ kind: "point", x: x(px), y: y(py) });
  const box = (x1: number, y1: number, x2: number, y2: number): SearchArea => ({
    kind: "box",
    box: [x(x1), y(y1), x(x2), y(y2)],
  });
  const geometry = (g: Geometry): SearchArea => ({ kind: "geometry", geometry: scaled(lon, lat, g) });
  const poly = (x1: number, y1: number, x2: number, y2: number, ...holes: number[][]) =>
    geometry(rect(x1, y1, x2, y2, ...holes));
  const multi = (...parts: Geometry[]) =>
    geometry({ type: "MultiPolygon", coordinates: parts.map((p) => p.coordinates as PolygonCoords) });
  const everything = box(-1, -1, 101, 71);
  const all = FIXTURE_ALT_IDS;
  const but = (...out: string[]) => all.filter((id) => !out.includes(id));
  const cases: [string, SearchArea, SearchFilters, string[], string[]?][] = [
    ["point inside a", point(5, 5), {}, ["a"]],
    ["point on the edge a and b share", point(10, 5), {}, ["a", "b"]],
    ["point on the corner b and c share", point(20, 10), {}, ["b", "c"]],
    ["point on a's outer corner", point(0, 0), {}, ["a"]],
    ["point in inhole (in holed's hole)", point(55, 15), {}, ["inhole"]],
    ["point in holed's hole, outside inhole", point(51, 11), {}, []],
    ["point on holed's hole boundary", point(50, 15), {}, ["holed"]],
    ["point on tri's long edge", point(90, 10), {}, ["tri"]],
    ["point just off tri's long edge", point(90.5, 10), {}, []],
    ["polygon whose edge b's top edge and a's and c's corners touch", poly(10, 10, 20, 20), {}, ["a", "b", "c"]],
    ["polygon in the gap between a, b and c", poly(10.5, 10.5, 19.5, 19.5), {}, []],
    ["polygon with a hole that holds inhole", poly(45, 5, 65, 25, [51, 11, 59, 19]), {}, ["holed"]],
    [
      "polygon whose hole is inhole's outline (touching)",
      poly(45, 5, 65, 25, [52, 12, 58, 18]),
      {},
      ["holed", "inhole"],
    ],
    ["polygon inside holed's hole around inhole", poly(51, 11, 59, 19), {}, ["inhole"]],
    ["polygon touching tri's long edge at a corner", poly(90, 10, 95, 15), {}, ["tri"]],
    [
      "triangle touching tri at a vertex",
      geometry({
        type: "Polygon",
        coordinates: [
          closed([
            [100, 0],
            [110, 0],
            [100, 10],
          ]),
        ],
      }),
      {},
      ["tri"],
    ],
    [
      "multipolygon with a part in multi and one in tri",
      multi(rect(4, 44, 6, 46), rect(81, 1, 82, 2)),
      {},
      ["multi", "tri"],
    ],
    ["multipolygon in the gaps", multi(rect(12, 42, 18, 48), rect(95, 15, 99, 19)), {}, []],
    [
      "multipolygon: a frame around a, b, c and multi (all in its hole) and a part in tri",
      multi(rect(-5, -5, 35, 55, [-4, -4, 34, 54]), rect(85, 2, 86, 3)),
      {},
      ["tri"],
    ],
    ["box touching a's edge and inside b", box(10, 2, 12, 4), {}, ["a", "b"]],
    ["box inside b only", box(10.5, 2, 12, 4), {}, ["b"]],
    ["box touching c's corner and holed's edge", box(30, 20, 40, 25), {}, ["c", "holed"]],
    ["degenerate box: the point b and c share", box(20, 10, 20, 10), {}, ["b", "c"]],
    ["degenerate box: a horizontal line through nothing", box(0, 35, 100, 35), {}, []],
    ["degenerate box: a vertical line through a, multi and past", box(5, -5, 5, 100), {}, ["a", "multi", "past"]],
    ["box in holed's hole, off inhole", box(50.5, 10.5, 51.5, 11.5), {}, []],
    ["box exactly holed's hole", box(50, 10, 60, 20), {}, ["holed", "inhole"]],
    ["box touching conf2 at a corner", box(55, 55, 60, 60), {}, ["conf2"]],
    ["box far away", box(200, 200, 210, 210), {}, []],
    ["box over everything", everything, {}, all],
    ["everything, methodology", everything, { methodology: "M-A" }, ["a", "c"]],
    ["everything, attribute_type", everything, { attribute_type: ["BIODIVERSITY"] }, ["b", "multi"]],
    [
      "everything, attribute_type (any of two)",
      everything,
      { attribute_type: ["WATER_QUALITY", "CARBON_REMOVAL"] },
      ["a", "b"],
    ],
    ["everything, source_type", everything, { source_type: "SITE" }, ["b"]],
    ["everything, conflict=true", everything, { conflict: true }, ["conf1", "conf2"], []],
    ["everything, conflict=false", everything, { conflict: false }, but("conf1", "conf2"), all],
    ["everything, active_at inside past's period", everything, { active_at: "2020-06-01T00:00:00Z" }, ["past"]],
    ["everything, active_at = past's start_at (included)", everything, { active_at: "2020-01-01T00:00:00Z" }, ["past"]],
    ["everything, active_at = past's end_at (excluded)", everything, { active_at: "2021-01-01T00:00:00Z" }, []],
    ["everything, active_at with an offset", everything, { active_at: "2024-06-01T02:00:00+02:00" }, but("past")],
    ["everything, alt_id", everything, { alt_id: "b" }, ["b"]],
    ["point inside a, alt_id b", point(5, 5), { alt_id: "b" }, []],
    ["point on a|b, alt_id a", point(10, 5), { alt_id: "a" }, ["a"]],
    ["point on a|b, source_type", point(10, 5), { source_type: "SITE" }, ["b"]],
    ["point on a|b and a bbox over a only", point(10, 5), { bbox: [x(0), y(0), x(9), y(9)] }, ["a"]],
    // The point's and the bbox's envelopes do not meet: c reaches from one to the other, b does not.
    ["point on b|c and a bbox apart from it inside c", point(20, 10), { bbox: [x(20), y(15), x(25), y(16)] }, ["c"]],
    [
      "polygon touching a, b, c with methodology and attribute_type",
      poly(10, 10, 20, 20),
      { methodology: "M-A", attribute_type: ["CARBON_REMOVAL"] },
      ["a"],
    ],
    [
      "point on b|c with conflict=false, methodology, active_at",
      point(20, 10),
      { conflict: false, methodology: "M-A", active_at: "2024-06-01T00:00:00Z" },
      ["c"],
    ],
    ["vertical line with active_at in 2020", box(5, -5, 5, 100), { active_at: "2020-06-01T00:00:00Z" }, ["past"]],
    [
      "polygon with inhole on its hole's outline, methodology and alt_id",
      poly(45, 5, 65, 25, [52, 12, 58, 18]),
      { methodology: "M-H", alt_id: "inhole" },
      ["inhole"],
    ],
  ];
  return cases.map(([name, area, filters, expected, sandboxExpected]) => ({
    name,
    area,
    filters,
    expected,
    sandboxExpected,
  }));
}

/** A box of zero width or height: a line, which GeoJSON `intersects` cannot say (a point box can). */
export function isLineBox(area: SearchArea): boolean {
  if (area.kind !== "box") return false;
  const [x1, y1, x2, y2] = area.box;
  return (x1 === x2) !== (y1 === y2);
}

/** A search area as the GeoJSON `intersects` of a REST search (a box as its rectangle, or its point). */
export function geojsonArea(area: SearchArea): Json {
  if (area.kind === "point") return { type: "Point", coordinates: [area.x, area.y] };
  if (area.kind === "box") {
    const [x1, y1, x2, y2] = area.box;
    if (x1 === x2 && y1 === y2) return { type: "Point", coordinates: [x1, y1] };
    if (isLineBox(area)) throw new Error("a line has no GeoJSON search area here");
    return { type: "Polygon", coordinates: [rectRing(x1, y1, x2, y2)] };
  }
  return area.geometry;
}

/** A search area as SearchSourcesRequest's oneof (proto-loader form). */
export function protoArea(area: SearchArea): Json {
  if (area.kind === "point") return { point: { lon: area.x, lat: area.y } };
  if (area.kind === "box") return { box: protoBox(area.box) };
  return { geometry: protoGeometry(area.geometry) };
}

export function protoBox([min_lon, min_lat, max_lon, max_lat]: [number, number, number, number]): Json {
  return { min_lon, min_lat, max_lon, max_lat };
}

/** Search filters as ListSourcesRequest fields (proto-loader form: enum names, Timestamps). */
export function protoFilters(filters: SearchFilters): Json {
  const query: Json = {};
  if (filters.methodology !== undefined) query.methodology = filters.methodology;
  if (filters.attribute_type !== undefined)
    query.attribute_type = filters.attribute_type.map((t) => `ATTRIBUTE_TYPE_${t}`);
  if (filters.source_type !== undefined) query.source_type = `SOURCE_TYPE_${filters.source_type}`;
  if (filters.conflict !== undefined) query.conflict = filters.conflict;
  if (filters.active_at !== undefined) query.active_at = ts(filters.active_at);
  if (filters.alt_id !== undefined) query.alt_id = filters.alt_id;
  if (filters.bbox !== undefined) query.bbox = protoBox(filters.bbox);
  return query;
}

/** Search filters as a list query string (without `?`). */
export function queryString(filters: SearchFilters): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) {
    if (Array.isArray(value) && name !== "bbox") for (const item of value) params.append(name, String(item));
    else params.append(name, Array.isArray(value) ? value.join(",") : String(value));
  }
  return params.toString();
}
