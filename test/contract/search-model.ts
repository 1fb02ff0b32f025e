/**
 * A seeded brute-force model of spatial listing for the store contract: thousands of random
 * sources (boxes, triangles, diamonds, L-shapes, polygons with holes, stars, MultiPolygons, long
 * strips; most on an integer grid so that many touch a query area exactly) and hundreds of random
 * queries (boxes, degenerate boxes, points, polygons, MultiPolygons, bbox AND intersects, with and
 * without other filters), each answered by brute force with JSTS's intersects(): what a store's
 * list must return, in list order.
 */
import Coordinate from "jsts/org/locationtech/jts/geom/Coordinate.js";
import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";
import RelateOp from "jsts/org/locationtech/jts/operation/relate/RelateOp.js";
import { jstsFactory, polygonsToJsts, polygonToJsts } from "../../src/geo/jsts-convert.js";
import type {
  BoundingBox,
  MultiPolygonGeometry,
  PolygonCoordinates,
  PolygonGeometry,
  Position,
  SearchArea,
  SourceGeometry,
} from "../../src/geo/types.js";
import type { ListQuery } from "../../src/model/list-query.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { prng, ring } from "../support/geometry-fixtures.js";
import { BASE_TIME, makeRecord } from "./fixtures.js";

// ---- JSTS as the oracle -------------------------------------------------------------------------

/** The parts of JSTS the shared typings (src/types/jsts.d.ts) leave undeclared. */
interface JstsLineFactory {
  createPoint(coordinate: Coordinate): Geometry;
  createLineString(coordinates: Coordinate[]): Geometry;
}
interface JstsMatrix {
  isTouches(dimensionA: number, dimensionB: number): boolean;
}
const lineFactory = jstsFactory as unknown as JstsLineFactory;

export function sourceToJsts(g: SourceGeometry): Geometry {
  return g.type === "Polygon" ? polygonToJsts(g.coordinates) : polygonsToJsts(g.coordinates);
}

/** A box is a point, a line or a rectangle, as JTS's GeometryFactory.toGeometry(Envelope) builds it. */
function boxToJsts({ minX, minY, maxX, maxY }: BoundingBox): Geometry {
  if (minX === maxX && minY === maxY) return lineFactory.createPoint(new Coordinate(minX, minY));
  if (minX === maxX || minY === maxY) {
    return lineFactory.createLineString([new Coordinate(minX, minY), new Coordinate(maxX, maxY)]);
  }
  return polygonToJsts([ring(minX, minY, maxX, maxY)]);
}

export function areaToJsts(area: SearchArea): Geometry {
  if (area.type === "Point") return lineFactory.createPoint(new Coordinate(...area.coordinates));
  if (area.type === "Box") return boxToJsts(area.box);
  return sourceToJsts(area);
}

/** The planar box of any geometry's positions (computed here, not by the code under test). */
export function envelopeOf(area: SearchArea): BoundingBox {
  if (area.type === "Point") {
    const [x, y] = area.coordinates;
    return { minX: x, minY: y, maxX: x, maxY: y };
  }
  if (area.type === "Box") return area.box;
  const box = { minX: Infinity, minY: Infinity, maxX: -Infinity, maxY: -Infinity };
  const parts = area.type === "Polygon" ? [area.coordinates] : area.coordinates;
  for (const rings of parts) {
    for (const positions of rings) {
      for (const [x, y] of positions) {
        box.minX = Math.min(box.minX, x);
        box.minY = Math.min(box.minY, y);
        box.maxX = Math.max(box.maxX, x);
        box.maxY = Math.max(box.maxY, y);
      }
    }
  }
  return box;
}

const boxesMeet = (a: BoundingBox, b: BoundingBox) =>
  a.minX <= b.maxX && b.minX <= a.maxX && a.minY <= b.maxY && b.minY <= a.maxY;

function areaDimension(area: SearchArea): number {
  if (area.type === "Point") return 0;
  if (area.type !== "Box") return 2;
  const { minX, minY, maxX, maxY } = area.box;
  return (minX < maxX ? 1 : 0) + (minY < maxY ? 1 : 0);
}

/** A source prepared for the oracle: its JSTS geometry (built once) and its box. */
interface OracleSource {
  geometry: SourceGeometry;
  jsts: Geometry;
  box: BoundingBox;
}

function oracleSource(geometry: SourceGeometry): OracleSource {
  return { geometry, jsts: sourceToJsts(geometry), box: envelopeOf(geometry) };
}

/** JSTS's intersects(), after the envelope test every exact answer implies. */
function jstsIntersects(source: OracleSource, areaJsts: Geometry, areaBox: BoundingBox): boolean {
  return boxesMeet(source.box, areaBox) && (RelateOp.intersects(source.jsts, areaJsts) as boolean);
}

/** Whether a source and an area that intersect meet on boundaries only (where an inexact test goes wrong). */
function jstsTouchesOnly(source: OracleSource, area: SearchArea, areaJsts: Geometry): boolean {
  return (RelateOp.relate(source.jsts, areaJsts) as JstsMatrix).isTouches(2, areaDimension(area));
}

// ---- random geometry ----------------------------------------------------------------------------

type Random = () => number;
const between = (random: Random, low: number, high: number): number => low + (high - low) * random();
const integer = (random: Random, low: number, high: number): number => low + Math.floor(random() * (high - low + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];

/** Sources and areas live in [0, GRID]², mostly on integer positions. */
const GRID = 48;

const polygon = (...rings: Position[][]): PolygonGeometry => ({ type: "Polygon", coordinates: rings });
const multiPolygon = (...parts: PolygonCoordinates[]): MultiPolygonGeometry => ({
  type: "MultiPolygon",
  coordinates: parts,
});

/** Star-shaped around (cx, cy), hence simple: one vertex per angle step, radius in [inner·r, r]. */
function starRing(random: Random, cx: number, cy: number, radius: number, vertices: number, inner = 0.5): Position[] {
  const positions: Position[] = [];
  const turn = random() * 2 * Math.PI;
  for (let i = 0; i < vertices; i++) {
    const angle = turn + (2 * Math.PI * i) / vertices;
    const r = radius * between(random, inner, 1);
    positions.push([cx + r * Math.cos(angle), cy + r * Math.sin(angle)]);
  }
  positions.push(positions[0]);
  return positions;
}

/** A right triangle with its right angle at (x, y), its legs along the axes in the directions given. */
function rightTriangle(x: number, y: number, dx: number, dy: number): Position[] {
  return [
    [x, y],
    [x + dx, y],
    [x, y + dy],
    [x, y],
  ];
}

/** An L: the square [x, x+2s]×[y, y+2s] without its quarter [x+s, x+2s]×[y+s, y+2s]. */
function lShape(x: number, y: number, s: number): Position[] {
  return [
    [x, y],
    [x + 2 * s, y],
    [x + 2 * s, y + s],
    [x + s, y + s],
    [x + s, y + 2 * s],
    [x, y + 2 * s],
    [x, y],
  ];
}

function diamond(cx: number, cy: number, r: number): Position[] {
  return [
    [cx, cy - r],
    [cx + r, cy],
    [cx, cy + r],
    [cx - r, cy],
    [cx, cy - r],
  ];
}

/** A square with a square hole strictly inside it, all on integer positions. */
function holedSquare(x: number, y: number, size: number, random: Random): Position[][] {
  const holeSize = integer(random, 1, size - 2);
  const hx = x + integer(random, 1, size - 1 - holeSize);
  const hy = y + integer(random, 1, size - 1 - holeSize);
  return [ring(x, y, x + size, y + size), ring(hx, hy, hx + holeSize, hy + holeSize)];
}

const corner = (random: Random, margin: number) => integer(random, 0, GRID - margin);
const sign = (random: Random) => (random() < 0.5 ? -1 : 1);

/** Each kind of source, with its weight. */
const SOURCE_KINDS: readonly [number, (random: Random) => SourceGeometry][] = [
  [
    4,
    (random) =>
      polygon(ring(...box(corner(random, 4), corner(random, 4), integer(random, 1, 3), integer(random, 1, 3)))),
  ],
  [
    2,
    (random) => {
      const [x, y] = [corner(random, 3) + 0.5 * integer(random, 0, 1), corner(random, 3) + 0.5 * integer(random, 0, 1)];
      return polygon(ring(x, y, x + 0.5 * integer(random, 1, 4), y + 0.5 * integer(random, 1, 4)));
    },
  ],
  [
    4,
    (random) => {
      const [dx, dy] = [sign(random) * integer(random, 1, 4), sign(random) * integer(random, 1, 4)];
      return polygon(rightTriangle(4 + corner(random, 8), 4 + corner(random, 8), dx, dy));
    },
  ],
  [2, (random) => polygon(diamond(2 + corner(random, 4), 2 + corner(random, 4), integer(random, 1, 2)))],
  [2, (random) => polygon(lShape(corner(random, 4), corner(random, 4), integer(random, 1, 2)))],
  [3, (random) => polygon(...holedSquare(corner(random, 6), corner(random, 6), integer(random, 3, 6), random))],
  [
    2,
    (random) =>
      polygon(
        starRing(
          random,
          between(random, 3, GRID - 3),
          between(random, 3, GRID - 3),
          between(random, 0.5, 2.5),
          integer(random, 3, 16),
        ),
      ),
  ],
  [
    1,
    (random) => {
      const [cx, cy, radius] = [between(random, 4, GRID - 4), between(random, 4, GRID - 4), between(random, 1, 3)];
      // The shell's radii are at least 0.7·r, so with ≥ 8 vertices it holds the disc of radius 0.64·r.
      return polygon(
        starRing(random, cx, cy, radius, integer(random, 8, 20), 0.7),
        starRing(random, cx, cy, radius * 0.35, integer(random, 3, 8)),
      );
    },
  ],
  [
    1,
    // Two squares meeting at one vertex: parts of a MultiPolygon may touch at points.
    (random) => {
      const [x, y] = [corner(random, 2), corner(random, 2)];
      return multiPolygon([ring(x, y, x + 1, y + 1)], [ring(x + 1, y + 1, x + 2, y + 2)]);
    },
  ],
  [
    2,
    // Two or three parts in separate columns, with room between them.
    (random) => {
      const [x, y] = [corner(random, 12), corner(random, 3)];
      const parts: PolygonCoordinates[] = [];
      const count = integer(random, 2, 3);
      for (let part = 0; part < count; part++) {
        const left = x + part * 4;
        const bottom = y + integer(random, 0, 1);
        parts.push(
          random() < 0.5
            ? [ring(left, bottom, left + integer(random, 1, 2), bottom + integer(random, 1, 2))]
            : random() < 0.5
              ? [rightTriangle(left, bottom, 2, 2)]
              : holedSquare(left, bottom, 3, random),
        );
      }
      return multiPolygon(...parts);
    },
  ],
  [
    1,
    // A long strip, across many areas whose envelopes do not meet.
    (random) => {
      const length = integer(random, 10, 30);
      const [a, b] = [integer(random, 0, GRID - length), integer(random, 0, GRID - 1)];
      return random() < 0.5 ? polygon(ring(a, b, a + length, b + 1)) : polygon(ring(b, a, b + 1, a + length));
    },
  ],
];

function box(x: number, y: number, w: number, h: number): [number, number, number, number] {
  return [x, y, x + w, y + h];
}

/** Sometimes reversed rings (orientation is not a validity rule) or a position repeated (a zero-length edge). */
function perturbed(random: Random, g: SourceGeometry): SourceGeometry {
  const parts = (g.type === "Polygon" ? [g.coordinates] : g.coordinates).map((rings) =>
    rings.map((positions) => (random() < 0.15 ? [...positions].reverse() : [...positions])),
  );
  if (random() < 0.08) {
    const positions = pick(random, pick(random, parts));
    const i = integer(random, 0, positions.length - 2);
    positions.splice(i, 0, positions[i]);
  }
  return g.type === "Polygon" ? polygon(...parts[0]) : multiPolygon(...parts);
}

function weighted<T>(random: Random, kinds: readonly [number, T][]): T {
  const total = kinds.reduce((sum, [weight]) => sum + weight, 0);
  let at = random() * total;
  for (const [weight, kind] of kinds) {
    at -= weight;
    if (at < 0) return kind;
  }
  return kinds[kinds.length - 1][1];
}

function vertexOf(random: Random, g: SourceGeometry): Position {
  const parts = g.type === "Polygon" ? [g.coordinates] : g.coordinates;
  const positions = pick(random, pick(random, parts));
  return positions[integer(random, 0, positions.length - 2)];
}

function edgeMidpointOf(random: Random, g: SourceGeometry): Position {
  const parts = g.type === "Polygon" ? [g.coordinates] : g.coordinates;
  const positions = pick(random, pick(random, parts));
  const i = integer(random, 1, positions.length - 1);
  const [[ax, ay], [bx, by]] = [positions[i - 1], positions[i]];
  return [(ax + bx) / 2, (ay + by) / 2];
}

const boxArea = (x1: number, y1: number, x2: number, y2: number): SearchArea => ({
  type: "Box",
  box: { minX: Math.min(x1, x2), minY: Math.min(y1, y2), maxX: Math.max(x1, x2), maxY: Math.max(y1, y2) },
});
const pointArea = (x: number, y: number): SearchArea => ({ type: "Point", coordinates: [x, y] });

type AreaMaker = (random: Random, near: SourceGeometry) => SearchArea;

/** Boxes: the only areas a `bbox` filter takes. Many touch a source exactly, or are degenerate. */
const BOX_MAKERS: readonly [number, AreaMaker][] = [
  [4, (random) => boxArea(...box(corner(random, 6), corner(random, 6), integer(random, 0, 6), integer(random, 0, 6)))],
  [
    2,
    (random) => {
      const [x, y] = [corner(random, 4) + 0.5, corner(random, 4) + 0.5];
      return boxArea(x, y, x + 0.5 * integer(random, 0, 6), y + 0.5 * integer(random, 0, 6));
    },
  ],
  [
    2,
    (random) => {
      const [x, y] = [between(random, 0, GRID - 8), between(random, 0, GRID - 8)];
      return boxArea(x, y, x + between(random, 0, 8), y + between(random, 0, 8));
    },
  ],
  [
    1,
    (random) => boxArea(...box(corner(random, 20), corner(random, 20), integer(random, 8, 20), integer(random, 8, 20))),
  ],
  // Its west edge on the source's east extreme: touches at the extreme vertex or edge, or misses.
  [
    3,
    (random, near) => {
      const b = envelopeOf(near);
      const span = integer(random, 0, 2);
      if (random() < 0.5) {
        const low = integer(random, Math.floor(b.minY) - 1, Math.ceil(b.maxY));
        return boxArea(b.maxX, low, b.maxX + integer(random, 0, 2), low + span);
      }
      const low = integer(random, Math.floor(b.minX) - 1, Math.ceil(b.maxX));
      return boxArea(low, b.minY - integer(random, 0, 2), low + span, b.minY);
    },
  ],
  [
    3,
    (random, near) => {
      const [x, y] = vertexOf(random, near);
      return boxArea(x, y, x + sign(random) * integer(random, 0, 2), y + sign(random) * integer(random, 0, 2));
    },
  ],
  // Inside the source's box, in a corner its geometry may leave empty (a triangle's, an L's, a diamond's).
  [
    3,
    (random, near) => {
      const b = envelopeOf(near);
      const [w, h] = [(b.maxX - b.minX) / 4, (b.maxY - b.minY) / 4];
      const [x, y] = [random() < 0.5 ? b.minX : b.maxX - w, random() < 0.5 ? b.minY : b.maxY - h];
      return boxArea(x, y, x + w, y + h);
    },
  ],
  [
    2,
    (random, near) => {
      const [x, y] = edgeMidpointOf(random, near);
      return pick(random, [boxArea(x, y, x, y), boxArea(x - 1, y, x + 1, y), boxArea(x, y - 1, x, y + 1)]);
    },
  ],
];

const POINT_MAKERS: readonly [number, AreaMaker][] = [
  [2, (random) => pointArea(integer(random, 0, GRID), integer(random, 0, GRID))],
  [1, (random) => pointArea(integer(random, 0, 2 * GRID) / 2, integer(random, 0, 2 * GRID) / 2)],
  [1, (random) => pointArea(between(random, 0, GRID), between(random, 0, GRID))],
  [2, (random, near) => pointArea(...vertexOf(random, near))],
  [2, (random, near) => pointArea(...edgeMidpointOf(random, near))],
];

const POLYGON_MAKERS: readonly [number, AreaMaker][] = [
  [
    2,
    (random) =>
      polygon(
        rightTriangle(
          4 + corner(random, 8),
          4 + corner(random, 8),
          sign(random) * integer(random, 1, 4),
          sign(random) * integer(random, 1, 4),
        ),
      ),
  ],
  [
    2,
    (random) =>
      polygon(
        starRing(
          random,
          between(random, 2, GRID - 2),
          between(random, 2, GRID - 2),
          between(random, 0.5, 5),
          integer(random, 3, 40),
        ),
      ),
  ],
  [2, (random) => polygon(...holedSquare(corner(random, 10), corner(random, 10), integer(random, 4, 10), random))],
  [1, (random) => polygon(lShape(corner(random, 8), corner(random, 8), integer(random, 1, 4)))],
  [1, (random) => polygon(diamond(4 + corner(random, 8), 4 + corner(random, 8), integer(random, 1, 4)))],
  // A frame whose hole is a source's box, touching it or around it.
  [
    2,
    (random, near) => {
      const b = envelopeOf(near);
      const margin = pick(random, [0, 0, 0.5]);
      return polygon(
        ring(b.minX - margin - 1, b.minY - margin - 1, b.maxX + margin + 1, b.maxY + margin + 1),
        ring(b.minX - margin, b.minY - margin, b.maxX + margin, b.maxY + margin),
      );
    },
  ],
  // A triangle with its right angle at a source's vertex.
  [
    2,
    (random, near) => {
      const [x, y] = vertexOf(random, near);
      return polygon(rightTriangle(x, y, sign(random) * integer(random, 1, 3), sign(random) * integer(random, 1, 3)));
    },
  ],
  // Two parts far apart: an envelope that is mostly empty.
  [
    4,
    (random) => {
      const [x1, y1, x2, y2] = [corner(random, 3), corner(random, 3), corner(random, 3), corner(random, 3)];
      if (Math.abs(x1 - x2) < 4 && Math.abs(y1 - y2) < 4) {
        return multiPolygon([ring(0, 0, 2, 2)], [ring(GRID - 2, GRID - 2, GRID, GRID)]);
      }
      return multiPolygon(
        [ring(x1, y1, x1 + integer(random, 1, 3), y1 + integer(random, 1, 3))],
        [rightTriangle(x2, y2, 3, 3)],
      );
    },
  ],
  [
    4,
    (random) => {
      const [cx, cy] = [between(random, 3, GRID - 12), between(random, 3, GRID - 3)];
      return multiPolygon(
        [starRing(random, cx, cy, between(random, 0.5, 2.5), integer(random, 3, 30))],
        holedSquare(Math.round(cx) + 4, Math.round(cy) - 2, integer(random, 3, 5), random),
      );
    },
  ],
  [1, (_random, near) => near],
];

// ---- the model ----------------------------------------------------------------------------------

export const MODEL_ACCOUNTS = ["acct_m1", "acct_m2", "acct_m3"] as const;
const METHODOLOGIES = ["M0", "M1"] as const;
const MODEL_T0 = BASE_TIME + 10_000_000;
const DAY = 86_400_000;

/** A query of the model: what a store is asked, besides limit, offset and after. */
export type ModelQuery = Omit<ListQuery, "limit" | "offset" | "after">;

export interface ModelCase {
  label: string;
  query: ModelQuery;
  /** The ids a store must list, in list order. */
  expected: string[];
}

export interface SearchModel {
  records: NewSourceRecord[];
  cases: ModelCase[];
  /** Matches (source, area) that meet on boundaries only, over every case. */
  touchingOnly: number;
  /** Source geometries meeting an area's envelope but not the area, over every case. */
  envelopeOnly: number;
}

/** List order: createdAt, then id (ASCII ids, so code-unit order is byte order). */
function byListOrder(a: NewSourceRecord, b: NewSourceRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function queryAreas(query: ModelQuery): SearchArea[] {
  const areas: SearchArea[] = [];
  if (query.bbox !== undefined) areas.push({ type: "Box", box: query.bbox });
  if (query.intersects !== undefined) areas.push(query.intersects);
  return areas;
}

function plainMatch(record: NewSourceRecord, query: ModelQuery): boolean {
  return (
    (query.accountId === null || record.accountId === query.accountId) &&
    (query.methodology === undefined || record.methodology === query.methodology) &&
    (query.conflict === undefined || record.conflict === query.conflict) &&
    (query.activeAt === undefined || (record.startAt <= query.activeAt && query.activeAt < record.endAt))
  );
}

/**
 * The model for `seed`: `sources` records and `queries` cases with their brute-force answers.
 * Built once per seed and size (the oracle's work is the slow part).
 */
export function searchModel(seed = 20_250_301, sources = 2_000, queries = 320): SearchModel {
  const key = `${seed}/${sources}/${queries}`;
  let model = built.get(key);
  if (model === undefined) {
    model = buildSearchModel(seed, sources, queries);
    built.set(key, model);
  }
  return model;
}
const built = new Map<string, SearchModel>();

/** The model for `seed`, built afresh: the same seed and sizes always give the same model. */
export function buildSearchModel(seed: number, sourceCount: number, queryCount: number): SearchModel {
  const random = prng(seed);
  const usedIds = new Set<string>();
  const records: NewSourceRecord[] = [];
  for (let i = 0; i < sourceCount; i++) {
    let id: string;
    do
      id = `src_m${Math.floor(random() * 0xffffff)
        .toString(16)
        .padStart(6, "0")}`;
    while (usedIds.has(id));
    usedIds.add(id);
    const start = MODEL_T0 + integer(random, 0, 20) * DAY;
    records.push(
      makeRecord({
        id,
        altId: `model-${i}`,
        accountId: pick(random, MODEL_ACCOUNTS),
        methodology: random() < 0.8 ? pick(random, METHODOLOGIES) : null,
        conflict: random() < 0.3,
        startAt: start,
        endAt: start + integer(random, 1, 20) * DAY,
        // Three or so sources share each created time: ties are broken by id.
        createdAt: MODEL_T0 + Math.floor(i / 3),
        geometry: perturbed(random, weighted(random, SOURCE_KINDS)(random)),
      }),
    );
  }
  const oracle = records.map((record) => oracleSource(record.geometry));
  const ordered = records.map((record, index) => ({ record, index })).sort((a, b) => byListOrder(a.record, b.record));
  const strips = records.filter((r) => {
    const b = envelopeOf(r.geometry);
    return Math.max(b.maxX - b.minX, b.maxY - b.minY) >= 10 && Math.min(b.maxX - b.minX, b.maxY - b.minY) <= 1;
  });

  const cases: ModelCase[] = [];
  let touchingOnly = 0;
  let envelopeOnly = 0;
  for (let n = 0; n < queryCount; n++) {
    const near = pick(random, records).geometry;
    const anyArea = () =>
      weighted(random, [
        [3, BOX_MAKERS],
        [2, POINT_MAKERS],
        [3, POLYGON_MAKERS],
      ] as [number, readonly [number, AreaMaker][]][]);
    const query: ModelQuery = { accountId: random() < 0.35 ? pick(random, MODEL_ACCOUNTS) : null, attributeTypes: [] };
    const shape = random();
    let label: string;
    if (shape < 0.35) {
      const area = weighted(random, BOX_MAKERS)(random, near);
      query.bbox = (area as { box: BoundingBox }).box;
      label = "bbox";
    } else if (shape < 0.75) {
      query.intersects = weighted(random, anyArea())(random, near);
      label = `intersects ${query.intersects.type}`;
    } else if (shape < 0.9) {
      query.bbox = (weighted(random, BOX_MAKERS)(random, near) as { box: BoundingBox }).box;
      query.intersects = weighted(random, anyArea())(random, near);
      label = `bbox and intersects ${query.intersects.type}`;
    } else {
      // Both ends of a long strip: the two envelopes need not meet, the strip meets both.
      const strip = envelopeOf(pick(random, strips).geometry);
      const wide = strip.maxX - strip.minX > strip.maxY - strip.minY;
      const [w, h] = wide ? [1, strip.maxY - strip.minY] : [strip.maxX - strip.minX, 1];
      query.bbox = {
        minX: strip.minX - integer(random, 0, 1),
        minY: strip.minY,
        maxX: strip.minX + w,
        maxY: strip.minY + h,
      };
      const [ex, ey] = wide ? [strip.maxX - 1, strip.minY] : [strip.minX, strip.maxY - 1];
      query.intersects = random() < 0.5 ? polygon(ring(ex, ey, ex + w, ey + h)) : pointArea(ex + w / 2, ey + h / 2);
      label = "bbox and intersects at both ends of a long strip";
    }
    const filter = random();
    if (filter < 0.15) query.methodology = pick(random, METHODOLOGIES);
    else if (filter < 0.27) query.conflict = random() < 0.5;
    else if (filter < 0.37) query.activeAt = MODEL_T0 + integer(random, 0, 40) * DAY;

    const areas = queryAreas(query).map((area) => ({ area, jsts: areaToJsts(area), box: envelopeOf(area) }));
    const expected: string[] = [];
    for (const { record, index } of ordered) {
      if (!plainMatch(record, query)) continue;
      let all = true;
      for (const area of areas) {
        if (!jstsIntersects(oracle[index], area.jsts, area.box)) {
          if (boxesMeet(oracle[index].box, area.box)) envelopeOnly += 1;
          all = false;
          break;
        }
        if (jstsTouchesOnly(oracle[index], area.area, area.jsts)) touchingOnly += 1;
      }
      if (all) expected.push(record.id);
    }
    cases.push({ label: `#${n} ${label}${query.accountId ? ` in ${query.accountId}` : ""}`, query, expected });
  }
  return { records, cases, touchingOnly, envelopeOnly };
}

/** What a case is, for a failure message. */
export function describeCase(c: ModelCase): string {
  return `${c.label}: ${JSON.stringify(c.query)}`;
}
