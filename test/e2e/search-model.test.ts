/**
 * Search against a brute-force model (contract §11): one account holds 5,500 sources built by a
 * seeded PRNG (squares, rectangles, triangles, rectangles with holes, star-shaped polygons with
 * arbitrary doubles, MultiPolygons, rows of rectangles sharing edges exactly, rectangles meeting at
 * corners, and tiny filler squares), sizes from 1/256° to 1°. For hundreds of random query boxes
 * (degenerate ones and ones snapped to sources' edges included), points and polygons, the ids the
 * API returns, following every page, must equal in content and order the sources whose JSTS
 * geometry intersects() the area: GET /sources?bbox=, POST /sources/search (with and without a
 * bbox member), SearchSources and ListSources over gRPC, in production (SQLite, both of its R*Tree
 * plans: over 5,000 candidates it walks the list order) and, for a subset, in the sandbox.
 */
import Coordinate from "jsts/org/locationtech/jts/geom/Coordinate.js";
import type JstsGeometry from "jsts/org/locationtech/jts/geom/Geometry.js";
import GeometryFactory from "jsts/org/locationtech/jts/geom/GeometryFactory.js";
import "jsts/org/locationtech/jts/monkey.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prng } from "../support/geometry-fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc, ts } from "./grpc-support.js";
import {
  closed,
  createAll,
  type Geometry,
  geojsonArea,
  isLineBox,
  type Json,
  type PolygonCoords,
  type Position,
  protoArea,
  protoBox,
  queryString,
  rect,
  type SearchArea,
  walkRest,
  walkRpc,
} from "./paging-support.js";
import type { Environment } from "./rest-support.js";

// ---- the region and its grid ----------------------------------------------------------------------

/** The grid: 1/256°, a power of two, so grid coordinates are exact and touches are exact. */
const G = 1 / 256;
const [LON0, LAT0] = [40, -10];
/** The region is SPAN grid units (2°) square. */
const SPAN = 512;
const gx = (k: number) => LON0 + k * G;
const gy = (k: number) => LAT0 + k * G;

const random = prng(20261126);
const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
const chance = (p: number) => random() < p;

/** A size in grid units: mostly tiny and small, some medium, a few up to half the region. */
function size(): number {
  const r = random();
  if (r < 0.4) return int(1, 2);
  if (r < 0.75) return int(3, 16);
  if (r < 0.95) return int(17, 64);
  return int(65, 256);
}

/** A rectangle in grid units, moved into the region. */
function gridRect(x: number, y: number, w: number, h: number, ...holes: number[][]): Geometry {
  const g = rect(gx(x), gy(y), gx(x + w), gy(y + h), ...holes.map(([a, b, c, d]) => [gx(a), gy(b), gx(c), gy(d)]));
  return g;
}

/** An origin so that a w × h shape stays inside the region. */
function origin(w: number, h: number): [number, number] {
  return [int(0, SPAN - w), int(0, SPAN - h)];
}

function square(): Geometry[] {
  const s = size();
  return [gridRect(...origin(s, s), s, s)];
}

function rectangle(): Geometry[] {
  const [w, h] = [size(), size()];
  return [gridRect(...origin(w, h), w, h)];
}

function triangle(): Geometry[] {
  const s = Math.max(2, size());
  const [x, y] = origin(s, s);
  for (;;) {
    const p: Position[] = [
      [int(0, s), int(0, s)],
      [int(0, s), int(0, s)],
      [int(0, s), int(0, s)],
    ];
    const cross = (p[1][0] - p[0][0]) * (p[2][1] - p[0][1]) - (p[1][1] - p[0][1]) * (p[2][0] - p[0][0]);
    if (cross !== 0) {
      return [{ type: "Polygon", coordinates: [closed(p.map(([a, b]): Position => [gx(x + a), gy(y + b)]))] }];
    }
  }
}

/** A rectangle with one or two rectangular holes strictly inside it, apart from each other. */
function holed(): Geometry[] {
  const [w, h] = [int(6, 96), int(6, 96)];
  const [x, y] = origin(w, h);
  const half = Math.floor(w / 2);
  const hole = (x1: number, x2: number) => {
    const a = int(x1, x2 - 2);
    const b = int(a + 1, x2 - 1);
    const c = int(y + 1, y + h - 2);
    return [a, c, b, int(c + 1, y + h - 1)];
  };
  const holes = [hole(x + 1, x + half)];
  if (chance(0.5)) holes.push(hole(x + half + 1, x + w));
  return [gridRect(x, y, w, h, ...holes)];
}

/** A star-shaped polygon with arbitrary doubles: simple, since its angles increase around the centre. */
function star(): Geometry[] {
  const radius = (0.5 + random() * 30) * G;
  const [cx, cy] = [
    LON0 + radius + random() * (SPAN * G - 2 * radius),
    LAT0 + radius + random() * (SPAN * G - 2 * radius),
  ];
  const n = int(5, 12);
  const points: Position[] = [];
  for (let i = 0; i < n; i++) {
    const angle = (2 * Math.PI * (i + 0.1 + 0.8 * random())) / n;
    const r = radius * (0.3 + 0.7 * random());
    points.push([cx + r * Math.cos(angle), cy + r * Math.sin(angle)]);
  }
  return [{ type: "Polygon", coordinates: [closed(points)] }];
}

/** Two rectangles at least one unit apart, as one MultiPolygon. */
function multi(): Geometry[] {
  const [w1, h1, w2, h2] = [int(1, 24), int(1, 24), int(1, 24), int(1, 24)];
  const gap = int(1, 16);
  const [x, y] = origin(w1 + gap + w2, Math.max(h1, h2) + 8);
  const dy = int(0, 8);
  const parts = [gridRect(x, y, w1, h1), gridRect(x + w1 + gap, y + dy, w2, h2)];
  return [{ type: "MultiPolygon", coordinates: parts.map((p) => p.coordinates as PolygonCoords) }];
}

/** A row of 2–5 rectangles, each sharing (part of) a vertical edge with the next. */
function row(): Geometry[] {
  const n = int(2, 5);
  const widths = Array.from({ length: n }, () => int(1, 20));
  const total = widths.reduce((a, b) => a + b, 0);
  const [x, y] = origin(total, 40);
  const out: Geometry[] = [];
  let at = x;
  for (const w of widths) {
    const dy = int(0, 10);
    out.push(gridRect(at, y + dy, w, int(1, 30)));
    at += w;
  }
  return out;
}

/** Two rectangles meeting at one corner only. */
function corners(): Geometry[] {
  const [w1, h1, w2, h2] = [int(1, 20), int(1, 20), int(1, 20), int(1, 20)];
  const [x, y] = origin(w1 + w2, h1 + h2);
  return [gridRect(x, y, w1, h1), gridRect(x + w1, y + h1, w2, h2)];
}

const SHAPES: [number, () => Geometry[]][] = [
  [0.22, square],
  [0.18, rectangle],
  [0.14, triangle],
  [0.1, holed],
  [0.1, star],
  [0.06, multi],
  [0.14, row],
  [0.06, corners],
];

function shapes(): Geometry[] {
  let r = random();
  for (const [weight, make] of SHAPES) {
    r -= weight;
    if (r < 0) return make();
  }
  return square();
}

const DIVERSE = 2_000;
const FILLERS = 3_500;

interface ModelSource {
  altId: string;
  geometry: Geometry;
  jsts: JstsGeometry;
  box: [number, number, number, number];
  /** Deleted through the API (in both environments): no longer in the model. */
  deleted: boolean;
}

function modelSource(geometry: Geometry): ModelSource {
  return { altId: `m-${sources.length}`, geometry, jsts: toJsts(geometry), box: envelope(geometry), deleted: false };
}

const sources: ModelSource[] = [];

// ---- JSTS, built here from the coordinates (independent of src/) -----------------------------------

interface Intersecting {
  intersects(other: JstsGeometry): boolean;
}
interface PointFactory {
  createPoint(c: Coordinate): JstsGeometry;
  createLineString(cs: Coordinate[]): JstsGeometry;
}
const factory = new GeometryFactory();
const pointFactory = factory as unknown as PointFactory;

function jstsPolygon(rings: PolygonCoords) {
  const [shell, ...holes] = rings.map((r) => factory.createLinearRing(r.map(([x, y]) => new Coordinate(x, y))));
  return factory.createPolygon(shell, holes);
}

function toJsts(g: Geometry): JstsGeometry {
  return g.type === "Polygon" ? jstsPolygon(g.coordinates) : factory.createMultiPolygon(g.coordinates.map(jstsPolygon));
}

function envelope(g: Geometry): [number, number, number, number] {
  const polygons = g.type === "Polygon" ? [g.coordinates] : g.coordinates;
  let [minX, minY, maxX, maxY] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const rings of polygons) {
    for (const [x, y] of rings.flat()) {
      minX = Math.min(minX, x);
      minY = Math.min(minY, y);
      maxX = Math.max(maxX, x);
      maxY = Math.max(maxY, y);
    }
  }
  return [minX, minY, maxX, maxY];
}

/** An area in JSTS: a box is a point, a line or a rectangle, as JTS's toGeometry(Envelope) makes it. */
function areaJsts(area: SearchArea): JstsGeometry {
  if (area.kind === "point") return pointFactory.createPoint(new Coordinate(area.x, area.y));
  if (area.kind === "geometry") return toJsts(area.geometry);
  const [x1, y1, x2, y2] = area.box;
  if (x1 === x2 && y1 === y2) return pointFactory.createPoint(new Coordinate(x1, y1));
  if (x1 === x2 || y1 === y2) return pointFactory.createLineString([new Coordinate(x1, y1), new Coordinate(x2, y2)]);
  return toJsts(rect(x1, y1, x2, y2));
}

function areaEnvelope(area: SearchArea): [number, number, number, number] {
  if (area.kind === "point") return [area.x, area.y, area.x, area.y];
  if (area.kind === "box") return area.box;
  return envelope(area.geometry);
}

const meets = (a: number[], b: number[]) => a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];

/** The model's answer: the alt_ids, in creation order, of the sources whose geometry intersects every area. */
function model(areas: SearchArea[]): string[] {
  const prepared = areas.map((area) => ({ env: areaEnvelope(area), geometry: areaJsts(area) }));
  return sources
    .filter(
      (s) =>
        !s.deleted &&
        prepared.every((a) => meets(s.box, a.env) && (s.jsts as unknown as Intersecting).intersects(a.geometry)),
    )
    .map((s) => s.altId);
}

// ---- queries ------------------------------------------------------------------------------------

/** A random double coordinate in the region, widened a little past it. */
const anyX = () => LON0 - 0.05 + random() * (SPAN * G + 0.1);
const anyY = () => LAT0 - 0.05 + random() * (SPAN * G + 0.1);

function randomBox(): SearchArea {
  const r = random();
  if (r < 0.35) {
    const [w, h] = [size(), size()];
    const [x, y] = origin(w, h);
    return { kind: "box", box: [gx(x), gy(y), gx(x + w), gy(y + h)] };
  }
  if (r < 0.55) {
    // Snapped to a source's box: an edge of the query on an edge of the source.
    const [minX, minY, maxX, maxY] = sources[int(0, sources.length - 1)].box;
    const w = size() * G;
    const h = size() * G;
    const side = int(0, 3);
    const box: [number, number, number, number] =
      side === 0
        ? [maxX, minY, maxX + w, minY + h]
        : side === 1
          ? [minX - w, minY, minX, minY + h]
          : side === 2
            ? [minX, maxY, minX + w, maxY + h]
            : [minX, minY - h, minX + w, minY];
    return { kind: "box", box };
  }
  if (r < 0.67) {
    // Degenerate: a point or a line on the grid.
    const [x, y] = [int(0, SPAN), int(0, SPAN)];
    const kind = int(0, 2);
    const l = size();
    const box: [number, number, number, number] =
      kind === 0
        ? [gx(x), gy(y), gx(x), gy(y)]
        : kind === 1
          ? [gx(x), gy(y), gx(x + l), gy(y)]
          : [gx(x), gy(y), gx(x), gy(y + l)];
    return { kind: "box", box };
  }
  if (r < 0.92) {
    const [x1, x2] = [anyX(), anyX()].sort((a, b) => a - b);
    const [y1, y2] = [anyY(), anyY()].sort((a, b) => a - b);
    const shrink = chance(0.7) ? random() * 0.1 : 1;
    return { kind: "box", box: [x1, y1, x1 + (x2 - x1) * shrink, y1 + (y2 - y1) * shrink] };
  }
  // Over (nearly) everything: more than 5,000 candidates, so SQLite walks the list order instead.
  return { kind: "box", box: [LON0 - random() * 0.1, LAT0 - random() * 0.1, gx(SPAN) + random() * 0.1, gy(SPAN)] };
}

function randomPointOrPolygon(): SearchArea {
  const r = random();
  if (r < 0.15) return { kind: "point", x: gx(int(0, SPAN)), y: gy(int(0, SPAN)) };
  if (r < 0.25) {
    // A vertex of a source.
    const g = sources[int(0, sources.length - 1)].geometry;
    const ring = g.type === "Polygon" ? g.coordinates[0] : g.coordinates[0][0];
    const [x, y] = ring[int(0, ring.length - 1)];
    return { kind: "point", x, y };
  }
  if (r < 0.33) return { kind: "point", x: anyX(), y: anyY() };
  if (r < 0.45) return { kind: "geometry", geometry: sources[int(0, sources.length - 1)].geometry };
  const makers = [triangle, holed, star, multi, rectangle, () => [rotated()]];
  return { kind: "geometry", geometry: makers[int(0, makers.length - 1)]()[0] };
}

/** A quadrilateral with arbitrary doubles (a rotated rectangle). */
function rotated(): Geometry {
  const [cx, cy] = [anyX(), anyY()];
  const [a, b] = [(0.5 + random() * 40) * G, (0.5 + random() * 40) * G];
  const t = random() * Math.PI;
  const [c, s] = [Math.cos(t), Math.sin(t)];
  const corner = (u: number, v: number): Position => [cx + u * c - v * s, cy + u * s + v * c];
  return { type: "Polygon", coordinates: [closed([corner(-a, -b), corner(a, -b), corner(a, b), corner(-a, b)])] };
}

const LIMITS = [37, 100, 1000];
const limit = () => LIMITS[int(0, LIMITS.length - 1)];

// ---- the server, the sources ------------------------------------------------------------------

let server: TestServer;
let client: LedgerGrpc;
let token: string;
/** alt_id → id, per environment. */
const idOf: Record<Environment, Map<string, string>> = { production: new Map(), sandbox: new Map() };
/** Creation order is list order in production (one request at a time, monotonic ids); the sandbox's is worked out. */
const listIndex: Record<Environment, Map<string, number>> = { production: new Map(), sandbox: new Map() };

/**
 * Creates `added` (already in `sources`) in both environments; each gets an hour of its own, so
 * production's conflict analysis never compares geometries. New records list after every earlier one.
 */
async function createInBoth(added: ModelSource[]): Promise<void> {
  const features = added.map((s) => {
    const start = Date.UTC(2000, 0, 1) + sources.indexOf(s) * 3_600_000;
    return {
      type: "Feature",
      id: s.altId,
      geometry: s.geometry,
      properties: { start_at: new Date(start).toISOString(), end_at: new Date(start + 3_600_000).toISOString() },
    };
  });
  for (const env of ["production", "sandbox"] as const) {
    const records = await createAll(server, token, features, env);
    const ordered = [...records].sort(
      (a, b) => a.created_at.localeCompare(b.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
    const base = listIndex[env].size;
    ordered.forEach((r, i) => {
      idOf[env].set(r.alt_id, r.id);
      listIndex[env].set(r.alt_id, base + i);
    });
  }
}

beforeAll(async () => {
  while (sources.length < DIVERSE) {
    for (const geometry of shapes()) {
      if (sources.length === DIVERSE) break;
      sources.push(modelSource(geometry));
    }
  }
  for (let i = 0; i < FILLERS; i++) sources.push(modelSource(gridRect(int(0, SPAN - 1), int(0, SPAN - 1), 1, 1)));
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
  token = await server.userToken("acct-model");
  await createInBoth(sources);
}, 120_000);

afterAll(async () => {
  client?.close();
  await server?.close();
});

/** The model's ids for `areas`, in the environment's list order. */
function expectedIds(env: Environment, areas: SearchArea[]): string[] {
  return model(areas)
    .sort((a, b) => (listIndex[env].get(a) as number) - (listIndex[env].get(b) as number))
    .map((altId) => idOf[env].get(altId) as string);
}

const altOf = (env: Environment) => {
  const byId = new Map([...idOf[env]].map(([alt, id]) => [id, alt]));
  return (id: string) => byId.get(id) ?? id;
};

/** The API's ids equal the model's, in order; on a mismatch the message names the sources and the query. */
function expectSame(env: Environment, got: string[], areas: SearchArea[], what: string): void {
  const want = expectedIds(env, areas);
  if (got.length === want.length && got.every((id, i) => id === want[i])) return;
  const alt = altOf(env);
  const missing = want.filter((id) => !got.includes(id)).map(alt);
  const extra = got.filter((id) => !want.includes(id)).map(alt);
  const geometryOf = (altId: string) => JSON.stringify(sources.find((s) => s.altId === altId)?.geometry);
  const message = [
    `${what} differs from the model`,
    `query: ${JSON.stringify(areas)}`,
    `missing (${missing.length}): ${missing.slice(0, 5).join(", ")}`,
    `extra (${extra.length}): ${extra.slice(0, 5).join(", ")}`,
    ...[...missing, ...extra].slice(0, 3).map((a) => `${a}: ${geometryOf(a)}`),
  ].join("\n");
  expect(got.map(alt), message).toEqual(want.map(alt));
}

// ---- the checks ---------------------------------------------------------------------------------

const BOXES = 220;
const AREAS = 110;
const COMBINED = 30;

describe("production over REST", () => {
  it(`GET /sources?bbox= for ${BOXES} random boxes equals the model`, { timeout: 120_000 }, async () => {
    let nonEmpty = 0;
    for (let q = 0; q < BOXES; q++) {
      const area = randomBox();
      if (area.kind !== "box") continue;
      const walk = await walkRest(server, token, `/sources?${queryString({ bbox: area.box })}&limit=${limit()}`);
      const got = walk.records.map((r) => r.id);
      expectSame("production", got, [area], `bbox #${q}`);
      if (got.length > 0) nonEmpty++;
    }
    // Most boxes find something; the fixture is dense.
    expect(nonEmpty).toBeGreaterThan(BOXES / 2);
  });

  it(`POST /sources/search for ${AREAS} random points and polygons equals the model`, {
    timeout: 120_000,
  }, async () => {
    let nonEmpty = 0;
    for (let q = 0; q < AREAS; q++) {
      const area = randomPointOrPolygon();
      const walk = await walkRest(server, token, "/sources/search", {
        body: { intersects: geojsonArea(area), limit: limit() },
      });
      const got = walk.records.map((r) => r.id);
      expectSame("production", got, [area], `search #${q}`);
      if (got.length > 0) nonEmpty++;
    }
    expect(nonEmpty).toBeGreaterThan(AREAS / 3);
  });

  it(`POST /sources/search with a bbox member, ${COMBINED} times, equals the model of both`, {
    timeout: 120_000,
  }, async () => {
    for (let q = 0; q < COMBINED; q++) {
      const area = randomPointOrPolygon();
      // Half the boxes around the area (overlapping envelopes), half anywhere (maybe apart from it).
      let box = randomBox();
      if (chance(0.5) && box.kind === "box") {
        const [x1, y1, x2, y2] = areaEnvelope(area);
        const grow = random() * 0.05;
        box = { kind: "box", box: [x1 - grow, y1 - grow * random(), x2 - (x2 - x1) * random(), y2 + grow] };
      }
      if (box.kind !== "box") continue;
      const walk = await walkRest(server, token, "/sources/search", {
        body: { intersects: geojsonArea(area), bbox: box.box, limit: limit() },
      });
      expectSame(
        "production",
        walk.records.map((r) => r.id),
        [box, area],
        `search with bbox #${q}`,
      );
    }
  });
});

describe("production over gRPC", () => {
  it("SearchSources with boxes (degenerate ones too), and ListSources with bbox, equal the model", {
    timeout: 120_000,
  }, async () => {
    for (let q = 0; q < 60; q++) {
      const area = randomBox();
      if (area.kind !== "box") continue;
      const method = q % 3 === 0 ? "ListSources" : "SearchSources";
      const request =
        method === "ListSources"
          ? { bbox: protoBox(area.box), limit: limit() }
          : { ...protoArea(area), query: { limit: limit() } };
      const walk = await walkRpc(client, "SourceLedgerService", method, request, token);
      expectSame(
        "production",
        walk.sources.map((s) => s.id),
        [area],
        `${method} #${q}`,
      );
    }
  });

  it("SearchSources with points and polygons, some with a bbox and a period, equal the model", {
    timeout: 120_000,
  }, async () => {
    for (let q = 0; q < 40; q++) {
      const area = randomPointOrPolygon();
      const box = q % 4 === 0 ? randomBox() : null;
      const query: Json = { limit: limit() };
      if (box?.kind === "box") query.bbox = protoBox(box.box);
      const walk = await walkRpc(client, "SourceLedgerService", "SearchSources", { ...protoArea(area), query }, token);
      expectSame(
        "production",
        walk.sources.map((s) => s.id),
        box ? [box, area] : [area],
        `SearchSources #${q}`,
      );
    }
    // active_at picks one source's hour: the model narrowed to that source.
    for (let q = 0; q < 10; q++) {
      const i = int(0, sources.length - 1);
      const at = new Date(Date.UTC(2000, 0, 1) + i * 3_600_000 + 1_800_000).toISOString();
      const area: SearchArea = { kind: "box", box: sources[i].box };
      const walk = await walkRpc(
        client,
        "SourceLedgerService",
        "SearchSources",
        { ...protoArea(area), query: { active_at: ts(at) } },
        token,
      );
      expect(walk.sources.map((s) => s.alt_id)).toEqual([sources[i].altId]);
    }
  });
});

describe("sandbox over REST", () => {
  it("bbox lists and searches of a random subset equal the model", { timeout: 120_000 }, async () => {
    for (let q = 0; q < 60; q++) {
      const area = randomBox();
      if (area.kind !== "box") continue;
      const walk = await walkRest(
        server,
        token,
        `/sandbox/sources?${queryString({ bbox: area.box })}&limit=${limit()}`,
      );
      expectSame(
        "sandbox",
        walk.records.map((r) => r.id),
        [area],
        `sandbox bbox #${q}`,
      );
    }
    for (let q = 0; q < 40; q++) {
      const area = randomPointOrPolygon();
      if (isLineBox(area)) continue;
      const walk = await walkRest(server, token, "/sandbox/sources/search", {
        body: { intersects: geojsonArea(area), limit: limit() },
      });
      expectSame(
        "sandbox",
        walk.records.map((r) => r.id),
        [area],
        `sandbox search #${q}`,
      );
    }
  });
});

describe("offset paging over a spatial list (the store skips matches, not candidates)", () => {
  it("GET /sources?bbox=…&offset=k&limit=l is the model's slice, in both environments", {
    timeout: 60_000,
  }, async () => {
    for (let q = 0; q < 30; q++) {
      const area = randomBox();
      if (area.kind !== "box") continue;
      const env: Environment = q % 2 === 0 ? "production" : "sandbox";
      const want = expectedIds(env, [area]);
      const offset = int(0, want.length + 2);
      const pageLimit = int(1, 50);
      const res = await server.request(
        "GET",
        `${env === "sandbox" ? "/sandbox" : ""}/sources?${queryString({ bbox: area.box })}&limit=${pageLimit}&offset=${offset}`,
        { token },
      );
      const page = (await res.json()) as { id: string }[];
      expect(res.status).toBe(200);
      const alt = altOf(env);
      expect(
        page.map((r) => alt(r.id)),
        `offset ${offset} limit ${pageLimit} of ${JSON.stringify(area)}`,
      ).toEqual(want.slice(offset, offset + pageLimit).map(alt));
    }
  });
});

describe("after deleting 500 sources and creating 300 more (the spatial indexes kept up to date)", () => {
  beforeAll(async () => {
    const live = sources.filter((s) => !s.deleted);
    const doomed = new Set<ModelSource>();
    while (doomed.size < 500) doomed.add(live[int(0, live.length - 1)]);
    const queue = [...doomed];
    for (const env of ["production", "sandbox"] as const) {
      const prefix = env === "sandbox" ? "/sandbox" : "";
      // Ten at a time.
      for (let i = 0; i < queue.length; i += 10) {
        await Promise.all(
          queue.slice(i, i + 10).map(async (s) => {
            const res = await server.request("DELETE", `${prefix}/sources/${idOf[env].get(s.altId)}`, { token });
            expect(res.status).toBe(204);
          }),
        );
      }
    }
    for (const s of doomed) s.deleted = true;
    const added: ModelSource[] = [];
    while (added.length < 300) {
      for (const geometry of shapes()) {
        const s = modelSource(geometry);
        sources.push(s);
        added.push(s);
      }
    }
    await createInBoth(added);
  }, 120_000);

  it("REST boxes and searches equal the model, in both environments", { timeout: 120_000 }, async () => {
    for (const env of ["production", "sandbox"] as const) {
      const prefix = env === "sandbox" ? "/sandbox" : "";
      for (let q = 0; q < 50; q++) {
        const area = randomBox();
        if (area.kind !== "box") continue;
        const walk = await walkRest(
          server,
          token,
          `${prefix}/sources?${queryString({ bbox: area.box })}&limit=${limit()}`,
        );
        expectSame(
          env,
          walk.records.map((r) => r.id),
          [area],
          `${env} bbox after deletes #${q}`,
        );
      }
      for (let q = 0; q < 30; q++) {
        const area = randomPointOrPolygon();
        const walk = await walkRest(server, token, `${prefix}/sources/search`, {
          body: { intersects: geojsonArea(area), limit: limit() },
        });
        expectSame(
          env,
          walk.records.map((r) => r.id),
          [area],
          `${env} search after deletes #${q}`,
        );
      }
    }
  });

  it("SearchSources over gRPC equals the model", { timeout: 60_000 }, async () => {
    for (let q = 0; q < 30; q++) {
      const area = q % 2 === 0 ? randomBox() : randomPointOrPolygon();
      const walk = await walkRpc(
        client,
        "SourceLedgerService",
        "SearchSources",
        { ...protoArea(area), query: { limit: limit() } },
        token,
      );
      expectSame(
        "production",
        walk.sources.map((s) => s.id),
        [area],
        `SearchSources after deletes #${q}`,
      );
    }
  });
});
