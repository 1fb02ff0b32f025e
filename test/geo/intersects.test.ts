import Coordinate from "jsts/org/locationtech/jts/geom/Coordinate.js";
import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";
import RelateOp from "jsts/org/locationtech/jts/operation/relate/RelateOp.js";
import { describe, expect, it } from "vitest";
import { prepareSearchArea } from "../../src/geo/intersects.js";
import { jstsFactory, polygonsToJsts, polygonToJsts } from "../../src/geo/jsts-convert.js";
import { polygonsOf } from "../../src/geo/parts.js";
import type { BoundingBox, PolygonCoordinates, Position, SearchArea, SourceGeometry } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { prng, ring } from "../support/geometry-fixtures.js";
import { multiPolygon, polygon, square, squareRing } from "./fixtures.js";

// prepareSearchArea is held to JSTS's intersects() (JTS's relate, with double-double orientation):
// first on named cases where touching decides, then on thousands of random pairs built to touch on
// purpose.

// ---- JSTS as the oracle -------------------------------------------------------------------------

/** The parts of JSTS the shared typings (src/types/jsts.d.ts) leave undeclared. */
interface JstsLineFactory {
  createPoint(coordinate: Coordinate): Geometry;
  createLineString(coordinates: Coordinate[]): Geometry;
}
interface JstsMatrix {
  isIntersects(): boolean;
  isTouches(dimensionA: number, dimensionB: number): boolean;
}
const lineFactory = jstsFactory as unknown as JstsLineFactory;
const AREA_DIMENSION = 2;

function sourceToJsts(g: SourceGeometry): Geometry {
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

function areaToJsts(area: SearchArea): Geometry {
  if (area.type === "Point") return lineFactory.createPoint(new Coordinate(...area.coordinates));
  if (area.type === "Box") return boxToJsts(area.box);
  return sourceToJsts(area);
}

function areaDimension(area: SearchArea): number {
  if (area.type === "Point") return 0;
  if (area.type !== "Box") return AREA_DIMENSION;
  // A box's dimension is how many of its sides have length: a point, a line or a rectangle.
  const { minX, minY, maxX, maxY } = area.box;
  return (minX < maxX ? 1 : 0) + (minY < maxY ? 1 : 0);
}

interface Verdict {
  intersects: boolean;
  /** They meet only on boundaries: the cases an inexact predicate gets wrong. */
  touchesOnly: boolean;
}

/** JSTS's Geometry.intersects() is RelateOp.intersects (JTS's relate, with its rectangle fast path). */
function jstsVerdict(source: SourceGeometry, area: SearchArea): Verdict {
  const [a, b] = [sourceToJsts(source), areaToJsts(area)];
  const intersects: boolean = RelateOp.intersects(a, b);
  const matrix: JstsMatrix | null = intersects ? RelateOp.relate(a, b) : null;
  return { intersects, touchesOnly: matrix?.isTouches(AREA_DIMENSION, areaDimension(area)) ?? false };
}

/** Our answer, after checking that JSTS gives the same one. */
function meets(area: SearchArea, source: SourceGeometry): boolean {
  const ours = prepareSearchArea(area).intersects(source);
  expect(ours, "prepareSearchArea agrees with JSTS").toBe(jstsVerdict(source, area).intersects);
  return ours;
}

// ---- named cases --------------------------------------------------------------------------------

const point = (x: number, y: number): SearchArea => ({ type: "Point", coordinates: [x, y] });
const box = (minX: number, minY: number, maxX: number, maxY: number): SearchArea => ({
  type: "Box",
  box: { minX, minY, maxX, maxY },
});

/** The unit square [0, 1]², the source of most named cases. */
const unit = square(0, 0);
/** [0, 10]² with the hole [2, 6]². */
const holed = polygon(squareRing(0, 0, 10), squareRing(2, 2, 4));
/** Right triangle whose long edge runs from (2, 0) to (0, 2) through (1, 1). */
const triangle = polygon([
  [0, 0],
  [2, 0],
  [0, 2],
  [0, 0],
]);

describe("prepareSearchArea: boxes", () => {
  it("meets a source whose edge it touches, or whose vertex only", () => {
    expect(meets(box(1, 0.2, 2, 0.8), unit)).toBe(true);
    expect(meets(box(1, 1, 2, 2), unit)).toBe(true);
    expect(meets(box(-1, -1, 0, 0), unit)).toBe(true);
    expect(meets(box(1 + 2 ** -52, 0, 2, 1), unit)).toBe(false);
  });

  it("meets a diagonal edge at exactly one corner, and misses it by one ulp", () => {
    expect(meets(box(1, 1, 3, 3), triangle)).toBe(true);
    expect(meets(box(1, 1 + 2 ** -52, 3, 3), triangle)).toBe(false);
  });

  it("meets a source it lies inside, and a source inside it", () => {
    expect(meets(box(0.25, 0.25, 0.75, 0.75), unit)).toBe(true);
    expect(meets(box(-5, -5, 5, 5), unit)).toBe(true);
  });

  it("misses a source when it lies in the source's hole, unless it touches the hole's ring", () => {
    expect(meets(box(3, 3, 5, 5), holed)).toBe(false);
    expect(meets(box(3, 3, 6, 5), holed)).toBe(true);
    expect(meets(box(2, 2, 6, 6), holed)).toBe(true);
  });

  it("works when degenerate: a point or a line", () => {
    expect(meets(box(0.5, 0.5, 0.5, 0.5), unit)).toBe(true);
    expect(meets(box(1, 1, 1, 1), unit)).toBe(true);
    expect(meets(box(1, 0.5, 1, 0.5), unit)).toBe(true);
    expect(meets(box(1.5, 0.5, 1.5, 0.5), unit)).toBe(false);
    expect(meets(box(0.5, -1, 0.5, 2), unit)).toBe(true);
    expect(meets(box(-1, 1, 0, 1), unit)).toBe(true);
    expect(meets(box(-1, 1.5, 2, 1.5), unit)).toBe(false);
    expect(meets(box(1, 1, 1, 1), triangle)).toBe(true);
    expect(meets(box(3, 4, 5, 4), holed)).toBe(false);
    expect(meets(box(3, 4, 6, 4), holed)).toBe(true);
  });

  it("treats lon ±180 as ordinary planar edges (no wrapping)", () => {
    const east = square(179, 0);
    const west = square(-180, 0);
    expect(meets(box(180, 0.5, 180, 0.5), east)).toBe(true);
    expect(meets(box(180, -10, 180, 10), east)).toBe(true);
    expect(meets(box(-180, 0, -179.5, 1), east)).toBe(false);
    expect(meets(box(-180, 0, -180, 1), west)).toBe(true);
    expect(meets(box(179.5, 0, 180, 1), west)).toBe(false);
    expect(meets(box(-180, -90, 180, 90), east)).toBe(true);
    expect(meets(box(-180, -90, 180, 90), west)).toBe(true);
  });

  it("gives the box as the envelope", () => {
    expect(prepareSearchArea(box(1, 2, 3, 4)).envelope).toEqual({ minX: 1, minY: 2, maxX: 3, maxY: 4 });
  });
});

describe("prepareSearchArea: points", () => {
  it("meets a source at a vertex, on an edge or inside", () => {
    expect(meets(point(0, 0), unit)).toBe(true);
    expect(meets(point(1, 0.5), unit)).toBe(true);
    expect(meets(point(0.5, 1), unit)).toBe(true);
    expect(meets(point(1, 1), triangle)).toBe(true);
    expect(meets(point(0.5, 0.5), unit)).toBe(true);
  });

  it("misses a source outside it, even by one ulp", () => {
    expect(meets(point(2, 0.5), unit)).toBe(false);
    expect(meets(point(1 + 2 ** -52, 0.5), unit)).toBe(false);
    expect(meets(point(1, 1 + 2 ** -52), triangle)).toBe(false);
    expect(meets(point(1, 1.5), triangle)).toBe(false);
  });

  it("misses a source when in its hole, and meets it on the hole's ring", () => {
    expect(meets(point(4, 4), holed)).toBe(false);
    expect(meets(point(6, 4), holed)).toBe(true);
    expect(meets(point(2, 2), holed)).toBe(true);
  });

  it("gives the point as the envelope", () => {
    expect(prepareSearchArea(point(3, 4)).envelope).toEqual({ minX: 3, minY: 4, maxX: 3, maxY: 4 });
  });
});

describe("prepareSearchArea: polygons", () => {
  /** [0, 10]² with the hole [2, 8]², as a query area. */
  const frame = polygon(squareRing(0, 0, 10), squareRing(2, 2, 6));

  it("misses a source in the area's hole, and meets one touching the hole's ring", () => {
    expect(meets(frame, square(4, 4))).toBe(false);
    expect(meets(frame, square(7, 4))).toBe(true);
    expect(meets(frame, square(7, 7))).toBe(true);
    expect(meets(frame, polygon(squareRing(2, 2, 6)))).toBe(true);
  });

  it("meets a source sharing only a vertex or an edge, and misses it by one ulp", () => {
    expect(meets(square(1, 1), unit)).toBe(true);
    expect(meets(square(1, 0), unit)).toBe(true);
    expect(meets(square(1 + 2 ** -52, 0), unit)).toBe(false);
    const onDiagonal = polygon([
      [1, 1],
      [2, 1],
      [2, 2],
      [1, 1],
    ]);
    expect(meets(onDiagonal, triangle)).toBe(true);
  });

  it("meets a source it contains or lies inside, and crosses", () => {
    expect(meets(polygon(squareRing(-1, -1, 3)), unit)).toBe(true);
    expect(meets(triangle, square(0.1, 0.1, 0.2))).toBe(true);
    expect(meets(triangle, square(0.5, -0.5))).toBe(true);
  });

  it("misses a source in a concavity of the area", () => {
    const cup = polygon([
      [0, 0],
      [3, 0],
      [3, 3],
      [2, 3],
      [2, 1],
      [1, 1],
      [1, 3],
      [0, 3],
      [0, 0],
    ]);
    expect(meets(cup, square(1.25, 1.5, 0.5))).toBe(false);
    expect(meets(cup, square(1, 1.5, 0.5))).toBe(true);
  });

  it("handles repeated positions (zero-length edges), which valid polygons may have", () => {
    const repeated = polygon([
      [1.5, 1.5],
      [1.5, 1.5],
      [2.5, 1.5],
      [2.5, 2.5],
      [1.5, 2.5],
      [1.5, 1.5],
    ]);
    expect(meets(triangle, repeated)).toBe(false);
    expect(meets(repeated, triangle)).toBe(false);
    expect(meets(square(1.5, 1.5), repeated)).toBe(true);
    expect(meets(point(1.5, 1.5), repeated)).toBe(true);
    expect(meets(box(0, 0, 1.5, 1.5), repeated)).toBe(true);
  });

  it("meets a MultiPolygon source when one part does, and a MultiPolygon area likewise", () => {
    const parts = multiPolygon([squareRing(5, 5)], [squareRing(0, 0)]);
    expect(meets(box(0.5, 0.5, 0.6, 0.6), parts)).toBe(true);
    expect(meets(point(1, 1), parts)).toBe(true);
    expect(meets(square(2, 2), parts)).toBe(false);
    expect(meets(multiPolygon([squareRing(20, 20)], [squareRing(6, 6)]), parts)).toBe(true);
    expect(meets(multiPolygon([squareRing(20, 20)], [squareRing(3, 3)]), parts)).toBe(false);
  });

  it("answers a rectangle polygon like the same box", () => {
    for (const source of [unit, holed, triangle]) {
      for (const [x, y, size] of [
        [1, 1, 1],
        [3, 3, 2],
        [1 + 2 ** -52, 0, 1],
        [-3, -3, 1],
      ]) {
        expect(meets(square(x, y, size), source)).toBe(meets(box(x, y, x + size, y + size), source));
      }
    }
  });

  it("gives the bounding box of all parts as the envelope", () => {
    expect(prepareSearchArea(multiPolygon([squareRing(5, 5)], [squareRing(-1, 0, 2)])).envelope).toEqual({
      minX: -1,
      minY: 0,
      maxX: 6,
      maxY: 6,
    });
  });
});

// ---- random comparison --------------------------------------------------------------------------

type Random = () => number;
const between = (random: Random, low: number, high: number): number => low + (high - low) * random();
const integer = (random: Random, low: number, high: number): number => low + Math.floor(random() * (high - low + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];

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

function rotatedRectangleRing(random: Random, cx: number, cy: number): Position[] {
  const halfWidth = between(random, 0.3, 2);
  const halfHeight = between(random, 0.3, 2);
  const angle = random() * Math.PI;
  const [cos, sin] = [Math.cos(angle), Math.sin(angle)];
  const corners: Position[] = [
    [-halfWidth, -halfHeight],
    [halfWidth, -halfHeight],
    [halfWidth, halfHeight],
    [-halfWidth, halfHeight],
  ].map(([x, y]): Position => [cx + x * cos - y * sin, cy + x * sin + y * cos]);
  return [...corners, corners[0]];
}

/** Grid-aligned square with one or two grid-aligned holes. */
function gridHoled(random: Random): PolygonCoordinates {
  const [x, y] = [integer(random, 0, 6), integer(random, 0, 6)];
  const rings = [squareRing(x, y, 6), squareRing(x + 1, y + 1, integer(random, 1, 2))];
  if (random() < 0.5) rings.push(squareRing(x + 4, y + 4, 1));
  return rings;
}

function starHoled(random: Random): PolygonCoordinates {
  const [cx, cy, radius] = [between(random, 2, 10), between(random, 2, 10), between(random, 1, 3)];
  // The shell's radii are at least 0.7·r, so with ≥ 8 vertices it holds the disc of radius 0.64·r.
  return [
    starRing(random, cx, cy, radius, integer(random, 8, 40), 0.7),
    starRing(random, cx, cy, radius * 0.35, integer(random, 3, 12)),
  ];
}

/** Two or three parts in separate 4°-wide columns, so they never meet. */
function multiSource(random: Random): SourceGeometry {
  const parts: PolygonCoordinates[] = [];
  const count = integer(random, 2, 3);
  for (let part = 0; part < count; part++) {
    const left = part * 4;
    parts.push(
      random() < 0.5
        ? [squareRing(left + integer(random, 0, 1), integer(random, 0, 9), integer(random, 1, 2))]
        : [starRing(random, left + 2, between(random, 2, 10), between(random, 0.5, 1.8), integer(random, 3, 20))],
    );
  }
  return multiPolygon(...parts);
}

const SOURCE_KINDS: readonly ((random: Random) => SourceGeometry)[] = [
  (random) => square(integer(random, 0, 9), integer(random, 0, 9), integer(random, 1, 3)),
  (random) => polygon(rotatedRectangleRing(random, between(random, 1, 11), between(random, 1, 11))),
  (random) =>
    polygon(
      starRing(random, between(random, 1, 11), between(random, 1, 11), between(random, 0.5, 3), integer(random, 3, 40)),
    ),
  (random) => polygon(...(random() < 0.5 ? gridHoled(random) : starHoled(random))),
  multiSource,
];

function vertexOf(random: Random, source: SourceGeometry): Position {
  const rings = pick(random, polygonsOf(source));
  const positions = pick(random, rings);
  return positions[integer(random, 0, positions.length - 2)];
}

function edgeMidpointOf(random: Random, source: SourceGeometry): Position {
  const positions = pick(random, pick(random, polygonsOf(source)));
  const i = integer(random, 1, positions.length - 1);
  const [[ax, ay], [bx, by]] = [positions[i - 1], positions[i]];
  return [(ax + bx) / 2, (ay + by) / 2];
}

function sourceBox(source: SourceGeometry): BoundingBox {
  const box = { minX: Infinity, minY: Infinity, maxX: -Infinity, maxY: -Infinity };
  for (const rings of polygonsOf(source)) {
    for (const [x, y] of rings[0]) {
      box.minX = Math.min(box.minX, x);
      box.minY = Math.min(box.minY, y);
      box.maxX = Math.max(box.maxX, x);
      box.maxY = Math.max(box.maxY, y);
    }
  }
  return box;
}

const boxArea = (minX: number, minY: number, maxX: number, maxY: number): SearchArea => ({
  type: "Box",
  box: {
    minX: Math.min(minX, maxX),
    minY: Math.min(minY, maxY),
    maxX: Math.max(minX, maxX),
    maxY: Math.max(minY, maxY),
  },
});

type AreaMaker = (random: Random, source: SourceGeometry) => SearchArea;

const POINT_MAKERS: readonly AreaMaker[] = [
  (random) => point(between(random, 0, 13), between(random, 0, 13)),
  (random) => point(integer(random, 0, 13), integer(random, 0, 13)),
  (random, source) => point(...vertexOf(random, source)),
  (random, source) => point(...edgeMidpointOf(random, source)),
];

const BOX_MAKERS: readonly AreaMaker[] = [
  (random) => boxArea(between(random, 0, 13), between(random, 0, 13), between(random, 0, 13), between(random, 0, 13)),
  (random) => boxArea(integer(random, 0, 13), integer(random, 0, 13), integer(random, 0, 13), integer(random, 0, 13)),
  // Edge on the source's extreme x or y: touches at the extreme vertex or edge, or misses.
  (random, source) => {
    const b = sourceBox(source);
    const [low, high] = [between(random, b.minY - 1, b.maxY), between(random, b.minY, b.maxY + 1)];
    return random() < 0.5 ? boxArea(b.maxX, low, b.maxX + 1, high) : boxArea(low, b.minY - 1, high, b.minY);
  },
  (random, source) => {
    const [x, y] = vertexOf(random, source);
    return boxArea(x, y, x + pick(random, [-1, 1]) * between(random, 0.1, 2), y + pick(random, [-1, 1]) * random());
  },
  (random, source) => {
    const [x, y] = vertexOf(random, source);
    return pick(random, [boxArea(x, y, x, y), boxArea(x, y - random(), x, y + random()), boxArea(x - 1, y, x, y)]);
  },
  (random, source) => {
    const b = sourceBox(source);
    const [x, y] = [between(random, b.minX, b.maxX), between(random, b.minY, b.maxY)];
    return boxArea(x, y, between(random, x, b.maxX), between(random, y, b.maxY));
  },
];

/** A valid ring with a right angle at `corner`, its legs along the axes. */
function cornerTriangle(random: Random, [x, y]: Position): Position[] {
  const [dx, dy] = [pick(random, [-1, 1]) * between(random, 0.2, 2), pick(random, [-1, 1]) * between(random, 0.2, 2)];
  return [
    [x, y],
    [x + dx, y],
    [x, y + dy],
    [x, y],
  ];
}

const POLYGON_MAKERS: readonly AreaMaker[] = [
  (random) =>
    polygon(
      starRing(random, between(random, 0, 12), between(random, 0, 12), between(random, 0.5, 4), integer(random, 3, 60)),
    ),
  (random) => square(integer(random, 0, 11), integer(random, 0, 11), integer(random, 1, 3)),
  (random) => {
    const [x, y] = [integer(random, 0, 11), integer(random, 0, 11)];
    return polygon([
      [x, y],
      [x + 2, y],
      [x + 2, y + 1],
      [x + 1, y + 1],
      [x + 1, y + 2],
      [x, y + 2],
      [x, y],
    ]);
  },
  (random, source) => polygon(cornerTriangle(random, vertexOf(random, source))),
  (random, source) => polygon(cornerTriangle(random, edgeMidpointOf(random, source))),
  // A frame whose hole is the source's box, grown by a margin: touching it when 0, around it when > 0.
  (random, source) => {
    const b = sourceBox(source);
    const margin = pick(random, [0, 0, 0.25, -0.1]);
    return polygon(
      ring(b.minX - 2, b.minY - 2, b.maxX + 2, b.maxY + 2),
      ring(b.minX - margin, b.minY - margin, b.maxX + margin, b.maxY + margin),
    );
  },
  (_random, source) => {
    const b = sourceBox(source);
    const shift = b.maxX - b.minX;
    return multiPolygon(
      ...polygonsOf(source).map((rings) =>
        rings.map((positions) => positions.map(([x, y]): Position => [x + shift, y])),
      ),
    );
  },
  (random) => {
    const [cx, cy] = [between(random, 0, 8), between(random, 0, 12)];
    return multiPolygon(
      [starRing(random, cx, cy, between(random, 0.5, 1.9), integer(random, 3, 30))],
      // Radii ≥ 0.7 · 1.2 with ≥ 8 vertices keep the small square hole well inside.
      [
        starRing(random, cx + 4, cy, between(random, 1.2, 1.9), integer(random, 8, 30), 0.7),
        squareRing(cx + 3.8, cy - 0.2, 0.4),
      ],
    );
  },
  (_random, source) => source,
];

/** Sometimes one position twice in a row (a zero-length edge), as valid input may have. */
function sometimesRepeatingAPosition(random: Random, g: SourceGeometry): SourceGeometry {
  if (random() >= 0.15) return g;
  const parts = polygonsOf(g).map((rings) => rings.map((positions) => [...positions]));
  const positions = pick(random, pick(random, parts));
  const i = integer(random, 0, positions.length - 2);
  positions.splice(i, 0, positions[i]);
  return g.type === "Polygon" ? polygon(...parts[0]) : multiPolygon(...parts);
}

interface Tally {
  pairs: number;
  hits: number;
  touchesOnly: number;
}

describe("prepareSearchArea agrees with JSTS intersects()", () => {
  const kinds = { point: POINT_MAKERS, box: BOX_MAKERS, polygon: POLYGON_MAKERS };

  it("on 2,500 random sources against random points, boxes and polygons, touching ones included", () => {
    const random = prng(20_240_611);
    const tallies = new Map<string, Tally>(
      Object.keys(kinds).map((kind) => [kind, { pairs: 0, hits: 0, touchesOnly: 0 }]),
    );
    const mismatches: string[] = [];
    for (let n = 0; n < 2500; n++) {
      const source = sometimesRepeatingAPosition(random, SOURCE_KINDS[n % SOURCE_KINDS.length](random));
      expect(checkGeometry(source), JSON.stringify(source)).toEqual([]);
      for (const [kind, makers] of Object.entries(kinds)) {
        for (let k = 0; k < 2; k++) {
          const made = pick(random, makers)(random, source);
          const area = made.type === "Point" || made.type === "Box" ? made : sometimesRepeatingAPosition(random, made);
          if (area.type !== "Point" && area.type !== "Box") {
            expect(checkGeometry(area), JSON.stringify(area)).toEqual([]);
          }
          const expected = jstsVerdict(source, area);
          const tally = tallies.get(kind)!;
          tally.pairs++;
          if (expected.intersects) tally.hits++;
          if (expected.touchesOnly) tally.touchesOnly++;
          if (prepareSearchArea(area).intersects(source) !== expected.intersects) {
            mismatches.push(JSON.stringify({ source, area, jsts: expected.intersects }));
          }
        }
      }
    }
    expect(mismatches.slice(0, 3)).toEqual([]);
    // Each kind of area both hits and misses often, and touches (where exactness matters) often.
    for (const [kind, tally] of tallies) {
      expect(tally.hits, kind).toBeGreaterThan(tally.pairs * 0.2);
      expect(tally.pairs - tally.hits, kind).toBeGreaterThan(tally.pairs * 0.2);
      expect(tally.touchesOnly, kind).toBeGreaterThan(tally.pairs * 0.1);
    }
  });

  it("for one prepared area against many sources, as a search uses it", () => {
    const random = prng(7);
    const area = polygon(starRing(random, 6, 6, 6, 1000), starRing(random, 6, 6, 1.5, 50));
    const prepared = prepareSearchArea(area);
    const mismatches: string[] = [];
    for (let n = 0; n < 500; n++) {
      const source = SOURCE_KINDS[n % SOURCE_KINDS.length](random);
      if (prepared.intersects(source) !== jstsVerdict(source, area).intersects) {
        mismatches.push(JSON.stringify(source));
      }
    }
    expect(mismatches.slice(0, 3)).toEqual([]);
  });
});
