import { describe, expect, it } from "vitest";
import { EARTH_RADIUS_M, geodesicAreaM2 } from "../../src/geo/area.js";
import { clipperEngine } from "../../src/geo/clipper-engine.js";
import { convexIntersection, convexRingOf } from "../../src/geo/convex-clip.js";
import { orient } from "../../src/geo/intersects.js";
import { intersection, intersectionAreaM2, OverlayAllowance } from "../../src/geo/overlap.js";
import { geometryFromPolygons, polygonsOf } from "../../src/geo/parts.js";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import { prng, ring } from "../support/geometry-fixtures.js";
import { multiPolygon, polygon, square } from "./fixtures.js";

/*
 * convex-clip.ts against Clipper2 (clipperEngine, exact integer orientation on the inputs' own
 * grid), the engine it stands in for. A convex result that disagrees with Clipper2 beyond rounding
 * would sell the same acre twice; `undefined` (left to the engines) is always allowed, but must be
 * rare on generic inputs or the fast path buys nothing.
 */

const RAD = Math.PI / 180;

/** Exact area of the lon/lat cell [lon1, lon2] × [lat1, lat2] on our sphere. */
function cellArea(lon1: number, lat1: number, lon2: number, lat2: number): number {
  return EARTH_RADIUS_M ** 2 * (lon2 - lon1) * RAD * (Math.sin(lat2 * RAD) - Math.sin(lat1 * RAD));
}

/** Signed planar (shoelace) area of a closed ring, taken about its first position; positive counter-clockwise. */
function ringArea(r: Position[]): number {
  let sum = 0;
  const [x0, y0] = r[0];
  for (let i = 1; i + 1 < r.length; i++) {
    sum += (r[i][0] - x0) * (r[i + 1][1] - y0) - (r[i + 1][0] - x0) * (r[i][1] - y0);
  }
  return sum / 2;
}

/** Planar lon/lat area (degrees²): exteriors less holes. */
function planarArea(g: SourceGeometry | null): number {
  if (g === null) return 0;
  let sum = 0;
  for (const rings of polygonsOf(g)) {
    rings.forEach((r, index) => {
      sum += index === 0 ? Math.abs(ringArea(r)) : -Math.abs(ringArea(r));
    });
  }
  return sum;
}

function perimeter(g: SourceGeometry): number {
  let sum = 0;
  for (const rings of polygonsOf(g)) {
    for (const r of rings) {
      for (let i = 0; i + 1 < r.length; i++) sum += Math.hypot(r[i + 1][0] - r[i][0], r[i + 1][1] - r[i][1]);
    }
  }
  return sum;
}

function maxAbsCoordinate(...geometries: SourceGeometry[]): number {
  let max = 0;
  for (const g of geometries) {
    for (const rings of polygonsOf(g))
      for (const r of rings) for (const [x, y] of r) max = Math.max(max, Math.abs(x), Math.abs(y));
  }
  return max;
}

/** Clipper2's intersection, straight from the engine (no convex path, no clipping, no plan). */
function clipperIntersection(a: SourceGeometry, b: SourceGeometry): SourceGeometry | null {
  return geometryFromPolygons(clipperEngine.intersection(polygonsOf(a), polygonsOf(b)));
}

/** The convex path alone; both inputs must be convex rings. */
function convexClip(a: SourceGeometry, b: SourceGeometry): SourceGeometry | null | undefined {
  const p = convexRingOf(a);
  const q = convexRingOf(b);
  if (p === null || q === null) throw new Error("convexClip needs two convex rings");
  return convexIntersection(a, p, b, q);
}

/**
 * How far two correct answers may differ (degrees²): 1e-9 of the smaller input, plus what rounding
 * alone can move. Every position, the inputs' own included, is only good to half an ulp of the
 * largest coordinate; moved that far, each edge sweeps ulp × its length. For fields this is below
 * the 1e-9 share; for slivers thinner than ~1e-6 of their length (1e-9° wide, 100 m long) it is
 * what bounds any double computation (exact rational areas put both Clipper2 and the convex path
 * ~1e-7 of the sliver off there, in opposite directions).
 */
function tolerance(a: SourceGeometry, b: SourceGeometry): number {
  const smaller = Math.min(planarArea(a), planarArea(b));
  const ulp = maxAbsCoordinate(a, b) * 2 ** -52;
  return 1e-9 * smaller + 16 * ulp * Math.min(perimeter(a), perimeter(b));
}

/** Square metres per degree² around the inputs, to carry a planar tolerance over to geodesicAreaM2. */
function metresPerDegree2(a: SourceGeometry, b: SourceGeometry): number {
  return Math.max(geodesicAreaM2(a) / planarArea(a), geodesicAreaM2(b) / planarArea(b));
}

type Outcome = "polygon" | "null" | "undefined";

/**
 * Checks one ordered pair against Clipper2 and returns what the convex path answered, or a
 * description of the disagreement (with the exact inputs, to replay) in `failures`.
 */
function checkAgainstClipper(a: SourceGeometry, b: SourceGeometry, failures: string[]): Outcome {
  const got = convexClip(a, b);
  if (got === undefined) return "undefined";
  const expected = clipperIntersection(a, b);
  const tol = tolerance(a, b);
  const expectedArea = planarArea(expected);
  const replay = () => JSON.stringify({ a: a.coordinates, b: b.coordinates });
  if (got === null) {
    // Exactly nothing: where the walk finds the rings apart, Clipper2 finds no polygon at all.
    if (expected !== null) failures.push(`null where Clipper2 has area ${expectedArea}: ${replay()}`);
    return "null";
  }
  const gotArea = planarArea(got);
  if (!(Math.abs(gotArea - expectedArea) <= tol)) {
    failures.push(`area ${gotArea} where Clipper2 has ${expectedArea} (± ${tol}): ${replay()}`);
  }
  const geodesicTol = 2 * tol * metresPerDegree2(a, b);
  const gotM2 = geodesicAreaM2(got);
  const expectedM2 = expected === null ? 0 : geodesicAreaM2(expected);
  if (!(Math.abs(gotM2 - expectedM2) <= geodesicTol)) {
    failures.push(`geodesic ${gotM2} m² where Clipper2 has ${expectedM2} (± ${geodesicTol}): ${replay()}`);
  }
  if (got === a || got === b) return "polygon"; // One holds the other: the input itself comes back.
  const rings = polygonsOf(got);
  const r = rings[0]?.[0];
  if (got.type !== "Polygon" || rings.length !== 1 || rings[0].length !== 1 || r === undefined) {
    failures.push(`not one polygon of one ring: ${replay()}`);
    return "polygon";
  }
  if (r.length < 4) failures.push(`ring of ${r.length} positions: ${replay()}`);
  if (r[0][0] !== r[r.length - 1][0] || r[0][1] !== r[r.length - 1][1]) failures.push(`ring not closed: ${replay()}`);
  if (!(ringArea(r) > 0)) failures.push(`ring not counter-clockwise: ${replay()}`);
  // Every position lies in both inputs' boxes (up to the rounding of a crossing point).
  const slack = 4 * maxAbsCoordinate(a, b) * 2 ** -52;
  const boxA = box(a);
  const boxB = box(b);
  for (const [x, y] of r) {
    if (
      x < Math.max(boxA.minX, boxB.minX) - slack ||
      x > Math.min(boxA.maxX, boxB.maxX) + slack ||
      y < Math.max(boxA.minY, boxB.minY) - slack ||
      y > Math.min(boxA.maxY, boxB.maxY) + slack
    ) {
      failures.push(`position ${x}, ${y} outside the inputs' boxes: ${replay()}`);
      break;
    }
  }
  return "polygon";
}

function box(g: SourceGeometry): { minX: number; minY: number; maxX: number; maxY: number } {
  let minX = Number.POSITIVE_INFINITY;
  let minY = Number.POSITIVE_INFINITY;
  let maxX = Number.NEGATIVE_INFINITY;
  let maxY = Number.NEGATIVE_INFINITY;
  for (const rings of polygonsOf(g)) {
    for (const [x, y] of rings[0]) {
      minX = Math.min(minX, x);
      minY = Math.min(minY, y);
      maxX = Math.max(maxX, x);
      maxY = Math.max(maxY, y);
    }
  }
  return { minX, minY, maxX, maxY };
}

function boxesOverlap(a: SourceGeometry, b: SourceGeometry): boolean {
  const [p, q] = [box(a), box(b)];
  return p.minX <= q.maxX && q.minX <= p.maxX && p.minY <= q.maxY && q.minY <= p.maxY;
}

/**
 * The strictly convex hull (Andrew's monotone chain, exact orient: collinear and repeated positions
 * dropped) as a closed counter-clockwise ring; null when fewer than three positions are left.
 */
function hull(points: Position[]): Position[] | null {
  const sorted = [...points].sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  const half = (list: Position[]) => {
    const chain: Position[] = [];
    for (const p of list) {
      while (chain.length >= 2) {
        const [o, a] = [chain[chain.length - 2], chain[chain.length - 1]];
        if (orient(o[0], o[1], a[0], a[1], p[0], p[1]) > 0) break;
        chain.pop();
      }
      chain.push(p);
    }
    return chain;
  };
  const lower = half(sorted);
  const upper = half([...sorted].reverse());
  const body = lower.slice(0, -1).concat(upper.slice(0, -1));
  if (body.length < 3) return null;
  return [...body, body[0]];
}

/** The ring started at another position and, when asked, turned clockwise. */
function restarted(r: Position[], start: number, clockwise: boolean): Position[] {
  const body = r.slice(0, -1);
  const k = start % body.length;
  const turned = body.slice(k).concat(body.slice(0, k));
  if (clockwise) turned.reverse();
  return [...turned, turned[0]];
}

/** Rounded to 7 decimals, as most submitted coordinates are. */
function round7(x: number): number {
  return Math.round(x * 1e7) / 1e7;
}

interface Scene {
  kind: string;
  a: Position[];
  b: Position[];
  /** Built to be degenerate or razor-thin: `undefined` is expected there, so not held to the rarity bound. */
  nearDegenerate: boolean;
  /** Every edge of b exactly parallel (or antiparallel) to its twin in a. */
  exactlyParallel: boolean;
}

/** Whether every edge of b is exactly ±(the same edge of a): the differences of positions kept exactly. */
function twinEdges(a: Position[], b: Position[], sign: 1 | -1): boolean {
  for (let i = 0; i + 1 < a.length; i++) {
    if (b[i + 1][0] - b[i][0] !== sign * (a[i + 1][0] - a[i][0])) return false;
    if (b[i + 1][1] - b[i][1] !== sign * (a[i + 1][1] - a[i][1])) return false;
  }
  return true;
}

/** Where the pairs are placed: a field in France, beside the antimeridian, by the poles, at 0°. */
const ANCHORS: Position[] = [
  [5.1234567, 45.7654321],
  [179.94, 12.5],
  [-179.94, -33.3],
  [21.5, 89.94],
  [-61.25, -89.94],
  [-120.5, 0.04],
];

/** Random convex pairs of every kind the brief names; each ring strictly convex by construction (hull). */
function scenes(seed: number, count: number): Scene[] {
  const rnd = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)];
  const out: Scene[] = [];
  /** Positions on an ellipse of radii r and r·squash, turned by `turn`, about (cx, cy). */
  const regularPoints = (cx: number, cy: number, r: number, k: number, squash: number, turn: number): Position[] => {
    const rotation = rnd() * 2 * Math.PI;
    const points: Position[] = [];
    for (let i = 0; i < k; i++) {
      const u = Math.cos(rotation + (2 * Math.PI * i) / k);
      const v = squash * Math.sin(rotation + (2 * Math.PI * i) / k);
      points.push([
        cx + r * (Math.cos(turn) * u - Math.sin(turn) * v),
        cy + r * (Math.sin(turn) * u + Math.cos(turn) * v),
      ]);
    }
    return points;
  };
  const randomPoints = (cx: number, cy: number, r: number, k: number, squash: number, turn: number): Position[] => {
    const points: Position[] = [];
    for (let i = 0; i < k; i++) {
      const u = 2 * rnd() - 1;
      const v = squash * (2 * rnd() - 1);
      points.push([
        cx + r * (Math.cos(turn) * u - Math.sin(turn) * v),
        cy + r * (Math.sin(turn) * u + Math.cos(turn) * v),
      ]);
    }
    return points;
  };
  const shape = (
    cx: number,
    cy: number,
    r: number,
    squash = 1,
    rounded = false,
    regular = false,
  ): Position[] | null => {
    const turn = rnd() * Math.PI;
    const points =
      regular || rnd() < 0.5
        ? regularPoints(cx, cy, r, 3 + Math.floor(rnd() * (rnd() < 0.5 ? 8 : 198)), squash, turn)
        : randomPoints(cx, cy, r, 3 + Math.floor(rnd() * 40), squash, turn);
    return hull(rounded ? points.map(([x, y]) => [round7(x), round7(y)]) : points);
  };
  const kinds = ["hulls", "slivers", "sizes", "inside", "apart", "touching", "translated", "mirrored"] as const;
  while (out.length < count) {
    const kind = pick(kinds);
    const [ax, ay] = pick(ANCHORS);
    const cx = ax + (rnd() - 0.5) * 0.08;
    const cy = ay + (rnd() - 0.5) * 0.08;
    const rounded = rnd() < 0.3;
    const r1 = 10 ** (-2 - 3.5 * rnd()); // 1e-2° (1 km) down to 3e-6° (30 cm)
    const direction = rnd() * 2 * Math.PI;
    let a: Position[] | null = null;
    let b: Position[] | null = null;
    let nearDegenerate = false;
    let exactlyParallel = false;
    if (kind === "hulls") {
      // Two shapes of like size, centres up to 1.5 radii apart: most overlap, some do not.
      const r2 = r1 * (0.3 + 1.4 * rnd());
      const d = 1.5 * (r1 + r2) * rnd();
      a = shape(cx, cy, r1, 1, rounded);
      b = shape(cx + d * Math.cos(direction), cy + d * Math.sin(direction), r2, 1, rounded);
    } else if (kind === "slivers") {
      // One or both squashed to 1e-1 .. 1e-6 of their length, crossing at any angle.
      const d = r1 * rnd();
      a = shape(cx, cy, r1, 10 ** (-1 - 5 * rnd()), rounded);
      b = shape(cx + d * Math.cos(direction), cy + d * Math.sin(direction), r1 * (0.2 + rnd()), rnd() < 0.5 ? 1 : 0.01);
    } else if (kind === "sizes") {
      // Up to 1e4 apart in size, the small one straddling the large one's boundary.
      const r2 = r1 * 10 ** (-4 * rnd());
      const d = r1 + (rnd() - 0.5) * 3 * r2;
      a = shape(cx, cy, r1, 1, rounded);
      b = shape(cx + d * Math.cos(direction), cy + d * Math.sin(direction), r2, rnd() < 0.2 ? 0.05 : 1, rounded);
    } else if (kind === "inside") {
      const r2 = r1 * 10 ** (-0.3 - 3 * rnd());
      const d = 0.5 * r1 * rnd();
      a = shape(cx, cy, r1, 1, rounded);
      b = shape(cx + d * Math.cos(direction), cy + d * Math.sin(direction), r2, 1, rounded);
    } else if (kind === "apart") {
      // Polygons inscribed in circles apart by 1e-9 .. 0.3 of the radii, towards a diagonal: the
      // boxes mostly overlap, the polygons never do.
      const r2 = r1 * (0.2 + rnd());
      const diagonal = Math.PI / 4 + (Math.floor(rnd() * 4) * Math.PI) / 2 + (rnd() - 0.5) * 0.5;
      const d = (r1 + r2) * (1 + 10 ** (-0.5 - 8.5 * rnd()));
      a = shape(cx, cy, r1, 1, false, true);
      b = shape(cx + d * Math.cos(diagonal), cy + d * Math.sin(diagonal), r2, 1, false, true);
    } else if (kind === "translated") {
      // A copy shifted by a multiple of 2⁻⁴⁰°: every difference of positions is kept exactly, so
      // each edge is exactly parallel to its twin.
      a = shape(cx, cy, r1, rnd() < 0.3 ? 0.01 : 1);
      const step = 2 ** -40;
      const dx = Math.round((r1 * 2 * (rnd() - 0.5)) / step) * step;
      const dy = Math.round((r1 * 2 * (rnd() - 0.5)) / step) * step;
      b = a === null ? null : a.map(([x, y]) => [x + dx, y + dy]);
      exactlyParallel = a !== null && b !== null && twinEdges(a, b, 1);
    } else if (kind === "mirrored") {
      // The point reflection of a through c = 2⁻⁴⁰-grid point: every edge of b exactly antiparallel
      // to one of a's. With c just outside the middle of an edge of a (by 1e-3 .. 1e-15 of r), the
      // twins face each other across a gap or overlap of that width: the parallel cases of the walk.
      a = shape(cx, cy, r1, rnd() < 0.3 ? 0.05 : 1);
      if (a !== null) {
        const i = Math.floor(rnd() * (a.length - 1));
        const [p, q] = [a[i], a[i + 1]];
        const length = Math.hypot(q[0] - p[0], q[1] - p[1]);
        const offset = (rnd() < 0.5 ? 1 : -1) * r1 * 10 ** (-3 - 12 * rnd());
        const step = 2 ** -40;
        const mx = Math.round(((p[0] + q[0]) / 2 + (offset * (q[1] - p[1])) / length) / step) * step;
        const my = Math.round(((p[1] + q[1]) / 2 - (offset * (q[0] - p[0])) / length) / step) * step;
        b = a.map(([x, y]) => [2 * mx - x, 2 * my - y]);
        exactlyParallel = twinEdges(a, b, -1);
        nearDegenerate = true;
      }
    } else {
      // touching: b's nearest vertex (or edge) within 1e-15 .. 1e-3 of r of a, either side.
      const r2 = r1 * (0.1 + rnd());
      a = shape(cx, cy, r1, 1, rounded);
      if (a !== null) {
        const vertex = a[Math.floor(rnd() * (a.length - 1))];
        const outward = Math.atan2(vertex[1] - cy, vertex[0] - cx) + (rnd() - 0.5) * 0.5;
        const gap = (rnd() < 0.5 ? 1 : -1) * r1 * 10 ** (-3 - 12 * rnd());
        const tip: Position = [vertex[0] + gap * Math.cos(outward), vertex[1] + gap * Math.sin(outward)];
        // A triangle with its tip at `tip`, opening away from a.
        const spread = 0.2 + rnd();
        b = hull([
          tip,
          [tip[0] + r2 * Math.cos(outward - spread), tip[1] + r2 * Math.sin(outward - spread)],
          [tip[0] + r2 * Math.cos(outward + spread), tip[1] + r2 * Math.sin(outward + spread)],
        ]);
        nearDegenerate = true;
      }
    }
    if (a === null || b === null) continue;
    const ringA = restarted(a, Math.floor(rnd() * a.length), rnd() < 0.25);
    const ringB = restarted(b, Math.floor(rnd() * b.length), rnd() < 0.25);
    out.push({ kind, a: ringA, b: ringB, nearDegenerate, exactlyParallel });
  }
  return out;
}

/** A one-part MultiPolygon now and then: convex-clip takes those too. */
function geometryOf(r: Position[], asMulti: boolean): SourceGeometry {
  return asMulti ? multiPolygon([r]) : polygon(r);
}

describe("convexIntersection against Clipper2 on random convex pairs", () => {
  it("never disagrees beyond rounding, in either order, and rarely declines generic pairs", () => {
    const all = scenes(20_240_611, 3_000);
    const failures: string[] = [];
    const counts: Record<string, Record<Outcome, number>> = {};
    let generic = 0;
    let genericUndefined = 0;
    let exactlyParallel = 0;
    let apartBoxesOverlap = 0;
    all.forEach((scene, index) => {
      const a = geometryOf(scene.a, index % 17 === 0);
      const b = geometryOf(scene.b, index % 23 === 0);
      // Every generated ring is strictly convex (an exact hull) and winds once.
      expect(convexRingOf(a), JSON.stringify(scene.a)).not.toBeNull();
      expect(convexRingOf(b), JSON.stringify(scene.b)).not.toBeNull();
      if (scene.exactlyParallel) exactlyParallel++;
      if (scene.kind === "apart" && boxesOverlap(a, b)) apartBoxesOverlap++;
      counts[scene.kind] ??= { polygon: 0, null: 0, undefined: 0 };
      const counted = counts[scene.kind];
      for (const [first, second] of [
        [a, b],
        [b, a],
      ]) {
        const outcome = checkAgainstClipper(first, second, failures);
        counted[outcome]++;
        if (!scene.nearDegenerate) {
          generic++;
          if (outcome === "undefined") genericUndefined++;
        }
      }
    });
    expect(failures.slice(0, 5)).toEqual([]);
    expect(generic).toBeGreaterThan(4_000);
    expect(genericUndefined / generic).toBeLessThan(0.01);
    // Every kind was met, and mostly answered rather than left to the engines.
    for (const kind of ["hulls", "slivers", "sizes", "inside", "apart", "touching", "translated", "mirrored"]) {
      expect(counts[kind].polygon + counts[kind].null, kind).toBeGreaterThan(50);
    }
    expect(counts.apart.polygon).toBe(0);
    expect(counts.apart.null).toBeGreaterThan(300);
    expect(apartBoxesOverlap).toBeGreaterThan((counts.apart.null + counts.apart.undefined) / 4);
    expect(counts.inside.polygon).toBeGreaterThan(100);
    expect(counts.hulls.polygon).toBeGreaterThan(100);
    expect(counts.hulls.null).toBeGreaterThan(10);
    // Most translated and mirrored copies have exactly parallel twins (the 2⁻⁴⁰ grid keeps them).
    expect(exactlyParallel).toBeGreaterThan((counts.translated.polygon + counts.translated.null) / 4);
  });
});

describe("convexIntersection on large rings", () => {
  it("walks two 2,000-gons crossing at every edge, and a 20,000-gon against a triangle", () => {
    const failures: string[] = [];
    const regular = (cx: number, cy: number, r: number, k: number, rotation: number): SourceGeometry => {
      const positions: Position[] = [];
      for (let i = 0; i < k; i++) {
        const angle = rotation + (2 * Math.PI * i) / k;
        positions.push([cx + r * Math.cos(angle), cy + r * Math.sin(angle)]);
      }
      positions.push(positions[0]);
      return polygon(positions);
    };
    // Same centre, one turned by half a step: 4,000 crossings, every vertex outside the other ring.
    const a = regular(5.1234567, 45.7654321, 0.01, 2_000, 0);
    const b = regular(5.1234567, 45.7654321, 0.01, 2_000, Math.PI / 2_000);
    expect(checkAgainstClipper(a, b, failures)).toBe("polygon");
    const both = convexClip(a, b);
    expect(both === null || both === undefined ? 0 : polygonsOf(both)[0][0].length).toBe(4_001);
    // A triangle cutting a 20,000-gon's edge near the far side of its first position.
    const big = regular(5.1234567, 45.7654321, 0.01, 20_000, 0.1234);
    const tip = polygon([
      [5.1234567 - 0.0105, 45.7654321 - 0.001],
      [5.1234567 - 0.0095, 45.7654321],
      [5.1234567 - 0.0105, 45.7654321 + 0.001],
      [5.1234567 - 0.0105, 45.7654321 - 0.001],
    ]);
    expect(checkAgainstClipper(big, tip, failures)).toBe("polygon");
    expect(checkAgainstClipper(tip, big, failures)).toBe("polygon");
    expect(failures).toEqual([]);
  });
});

/**
 * The convex path, in both orders, answers `undefined` or the area `expected` (planar degrees²,
 * Clipper2's when not given), and a zero area only as null; Clipper2 agrees with `expected`; and
 * intersectionAreaM2, whichever path it takes, gives Clipper2's geodesic area. The outcomes, for
 * the cases where the contract fixes one.
 */
function expectNoWrongAnswer(a: SourceGeometry, b: SourceGeometry, expected?: number): Outcome[] {
  const clipper = clipperIntersection(a, b);
  const tol = tolerance(a, b);
  const area = expected ?? planarArea(clipper);
  expect(Math.abs(planarArea(clipper) - area)).toBeLessThanOrEqual(tol);
  const outcomes: Outcome[] = [];
  for (const [p, q] of [
    [a, b],
    [b, a],
  ]) {
    const clipperM2 = clipper === null ? 0 : geodesicAreaM2(clipper);
    expect(Math.abs(intersectionAreaM2(p, q) - clipperM2)).toBeLessThanOrEqual(2 * tol * metresPerDegree2(a, b));
    const got = convexClip(p, q);
    if (got === undefined) {
      outcomes.push("undefined");
      continue;
    }
    if (area === 0) expect(got).toBeNull();
    expect(Math.abs(planarArea(got) - area)).toBeLessThanOrEqual(tol);
    if (got !== null && got !== p && got !== q) expect(ringArea(polygonsOf(got)[0][0])).toBeGreaterThan(0);
    outcomes.push(got === null ? "null" : "polygon");
  }
  return outcomes;
}

/** Rings at field scale by a point in France: (x, y) in units of 1e-3° from (5.1234567, 45.7654321), rounded to 7 decimals. */
function field(...positions: [number, number][]): SourceGeometry {
  return polygon(positions.map(([x, y]) => [round7(5.1234567 + x * 1e-3), round7(45.7654321 + y * 1e-3)]));
}

describe("convexIntersection on degenerate pairs", () => {
  it("gives no area to squares sharing an edge or a vertex, or touching at one vertex", () => {
    expectNoWrongAnswer(square(0, 0), square(1, 0), 0);
    expectNoWrongAnswer(square(0, 0), square(0, 1), 0);
    expectNoWrongAnswer(square(0, 0), square(1, 1), 0);
    expectNoWrongAnswer(square(0, 0), square(-1, 1), 0);
    // A triangle's vertex on the square's edge, from outside.
    expectNoWrongAnswer(
      square(0, 0),
      polygon([
        [1, 0.5],
        [2, 0],
        [2, 1],
        [1, 0.5],
      ]),
      0,
    );
    // A triangle's edge through the square's corner, from outside.
    expectNoWrongAnswer(
      square(0, 0, 2),
      polygon([
        [1, 3],
        [3, 1],
        [3, 3],
        [1, 3],
      ]),
      0,
    );
    // Fields sharing an edge, and a corner, at realistic coordinates.
    expectNoWrongAnswer(
      field([0, 0], [1, 0], [1, 1], [0, 1], [0, 0]),
      field([1, 0], [2, 0], [2, 1], [1, 1], [1, 0]),
      0,
    );
    expectNoWrongAnswer(
      field([0, 0], [1, 0], [1, 1], [0, 1], [0, 0]),
      field([1, 1], [2, 1], [2, 2], [1, 2], [1, 1]),
      0,
    );
  });

  it("measures a vertex on the other's edge from inside, and edges through the other's corners", () => {
    const triangle = polygon([
      [1, 0.5],
      [0.2, 0.8],
      [0.2, 0.2],
      [1, 0.5],
    ]);
    expectNoWrongAnswer(square(0, 0), triangle, 0.24);
    // The diamond's four vertices on the square's four edges.
    expectNoWrongAnswer(
      square(0, 0, 2),
      polygon([
        [1, 0],
        [2, 1],
        [1, 2],
        [0, 1],
        [1, 0],
      ]),
      2,
    );
    // The triangle's long edge runs through two corners of the square: no crossing strictly
    // inside both edges anywhere, yet half the square is shared.
    expectNoWrongAnswer(
      square(0, 0, 2),
      polygon([
        [-1, -1],
        [3, -1],
        [3, 3],
        [-1, -1],
      ]),
      2,
    );
    // Triangles sharing one vertex, overlapping beyond it.
    expectNoWrongAnswer(
      polygon([
        [0, 0],
        [2, 0],
        [0, 2],
        [0, 0],
      ]),
      polygon([
        [0, 0],
        [2, 1],
        [1, 2],
        [0, 0],
      ]),
      // (0, 0), (4/3, 2/3), (2/3, 4/3).
      2 / 3,
    );
  });

  it("gives identical polygons their own area, however they are started or turned", () => {
    const r = [
      [5.1234567, 45.7654321],
      [5.1244567, 45.7655321],
      [5.1241567, 45.7663321],
      [5.1233567, 45.7661321],
      [5.1234567, 45.7654321],
    ] as Position[];
    const a = polygon(r);
    const area = planarArea(a);
    expectNoWrongAnswer(a, a, area);
    expectNoWrongAnswer(a, polygon(r.map(([x, y]) => [x, y])), area);
    for (let start = 0; start < 4; start++) {
      expectNoWrongAnswer(a, polygon(restarted(r, start, false)), area);
      expectNoWrongAnswer(a, polygon(restarted(r, start, true)), area);
    }
    expectNoWrongAnswer(square(0, 0), multiPolygon([ring(0, 0, 1, 1)]), 1);
  });

  it("measures a polygon inside another that touches its boundary", () => {
    // Along part of an edge.
    expectNoWrongAnswer(square(0, 0), polygon(ring(0.25, 0, 0.75, 0.5)), 0.25);
    // Along a whole edge and at two corners.
    expectNoWrongAnswer(square(0, 0), polygon(ring(0, 0, 1, 0.5)), 0.5);
    // At one vertex only.
    expectNoWrongAnswer(
      square(0, 0),
      polygon([
        [0, 0],
        [0.5, 0.25],
        [0.25, 0.5],
        [0, 0],
      ]),
      0.09375,
    );
    expectNoWrongAnswer(
      field([0, 0], [4, 0], [4, 4], [0, 4], [0, 0]),
      field([1, 0], [3, 0], [3, 2], [1, 2], [1, 0]),
      planarArea(field([1, 0], [3, 0], [3, 2], [1, 2], [1, 0])),
    );
  });

  it("measures rectangles overlapping along collinear edges", () => {
    expectNoWrongAnswer(square(0, 0), square(0.5, 0), 0.5);
    expectNoWrongAnswer(polygon(ring(0, 0, 2, 1)), polygon(ring(1, 0, 3, 2)), 1);
    expectNoWrongAnswer(polygon(ring(0, 0, 2, 1)), polygon(ring(1, -1, 2, 2)), 1);
    // Collinear edges running opposite ways along one line, the polygons on either side: 0.
    expectNoWrongAnswer(polygon(ring(0, 0, 2, 1)), polygon(ring(1, -1, 3, 0)), 0);
    const a = field([0, 0], [2, 0], [2, 1], [0, 1], [0, 0]);
    const b = field([1, 0], [3, 0], [3, 2], [1, 2], [1, 0]);
    expectNoWrongAnswer(a, b, planarArea(field([1, 0], [2, 0], [2, 1], [1, 1], [1, 0])));
  });

  it("answers overlapping axis-aligned rectangles without shared coordinates exactly", () => {
    expect(expectNoWrongAnswer(polygon(ring(0, 0, 2, 1)), polygon(ring(1, 0.5, 3, 2)), 0.5)).toEqual([
      "polygon",
      "polygon",
    ]);
    // A cross: no vertex of either inside the other.
    expect(expectNoWrongAnswer(polygon(ring(0, 1, 3, 2)), polygon(ring(1, 0, 2, 3)), 1)).toEqual([
      "polygon",
      "polygon",
    ]);
    // Fields overlapping by 1e-7° (1 cm) along a 100 m edge: thin, but 1e-4 of a field, not rounding.
    const west = polygon(ring(5.1234567, 45.7654321, 5.1244567, 45.7664321));
    const east = polygon(ring(5.1244566, 45.7654322, 5.1254567, 45.7664322));
    const outcomes = expectNoWrongAnswer(west, east);
    expect(outcomes).toEqual(["polygon", "polygon"]);
    expect(intersectionAreaM2(west, east)).toBeCloseTo(cellArea(5.1244566, 45.7654322, 5.1244567, 45.7664321), 6);
    // Apart by 2⁻⁴⁰° across parallel edges: null, clear-cut.
    expect(expectNoWrongAnswer(square(0, 0), square(1 + 2 ** -40, 0.5), 0)).toEqual(["null", "null"]);
  });

  it("leaves a touch approached from both sides to the engines, or measures it", () => {
    // Two triangles tip to tip, the upper one pushed 2⁻⁴⁰ down into the lower: an overlap of ~1e-24,
    // each tip inside the other, no position on another's edge line. Too thin to be more than
    // rounding (THIN_RESULT_SHARE): left to the engines.
    const lower = polygon([
      [0, 0],
      [2, 0],
      [1, 1],
      [0, 0],
    ]);
    const upper = polygon([
      [1, 1 - 2 ** -40],
      [2.5, 2],
      [-0.5, 2],
      [1, 1 - 2 ** -40],
    ]);
    expect(expectNoWrongAnswer(lower, upper)).toEqual(["undefined", "undefined"]);
    // The same 2⁻⁴⁰ (~1e-12) apart instead: null or undefined, never area.
    const apart = polygon([
      [1, 1 + 2 ** -40],
      [2.5, 2],
      [-0.5, 2],
      [1, 1 + 2 ** -40],
    ]);
    expectNoWrongAnswer(lower, apart, 0);
  });
});

describe("convexIntersection on random pairs from a coarse grid", () => {
  /**
   * Hulls of random points of a (G + 1)² grid: shared vertices, shared and collinear edges,
   * vertices on edges, edges through vertices, all exactly. The grid's positions are exact doubles
   * (integers, or multiples of 2⁻¹⁴° ≈ 7 m by a point in France and by the antimeridian near the
   * pole), so Clipper2 is exact here too.
   */
  function gridPairs(seed: number, count: number, size: number, unit: number, origin: Position) {
    const rnd = prng(seed);
    const pairs: [SourceGeometry, SourceGeometry][] = [];
    const hullOnGrid = () => {
      const low = Math.floor((rnd() * size) / 2);
      const high = low + 1 + Math.floor(rnd() * (size - low));
      const points: Position[] = [];
      for (let i = 3 + Math.floor(rnd() * 12); i > 0; i--) {
        points.push([
          origin[0] + unit * (low + Math.floor(rnd() * (high - low + 1))),
          origin[1] + unit * (low + Math.floor(rnd() * (high - low + 1))),
        ]);
      }
      const h = hull(points);
      return h === null ? null : restarted(h, Math.floor(rnd() * h.length), rnd() < 0.3);
    };
    while (pairs.length < count) {
      const a = hullOnGrid();
      const b = hullOnGrid();
      if (a !== null && b !== null) pairs.push([polygon(a), polygon(b)]);
    }
    return pairs;
  }

  it("never gives a wrong area or null where the positions are exactly degenerate", () => {
    const failures: string[] = [];
    const counts: Record<Outcome, number> = { polygon: 0, null: 0, undefined: 0 };
    const grids: [number, number, Position][] = [
      [4, 1, [0, 0]],
      [8, 1, [0, 0]],
      [12, 2 ** -14, [5.5, 45.25]],
      [30, 2 ** -14, [-179.5, 89.25]],
    ];
    grids.forEach(([size, unit, origin], index) => {
      for (const [a, b] of gridPairs(99 + index, 700, size, unit, origin)) {
        counts[checkAgainstClipper(a, b, failures)]++;
        counts[checkAgainstClipper(b, a, failures)]++;
      }
    });
    expect(failures.slice(0, 5)).toEqual([]);
    // Degenerate pairs go to the engines, but not all pairs are degenerate.
    expect(counts.polygon).toBeGreaterThan(500);
    expect(counts.null).toBeGreaterThan(100);
    expect(counts.undefined).toBeGreaterThan(1_000);
  });
});

describe("convexRingOf", () => {
  const circle = (k: number, turns = 1): Position[] => {
    const positions: Position[] = [];
    for (let i = 0; i < k; i++) {
      const angle = Math.PI / 2 + (2 * Math.PI * turns * i) / k;
      positions.push([Math.cos(angle), Math.sin(angle)]);
    }
    positions.push(positions[0]);
    return positions;
  };

  it("rejects a pentagram and a triangle run round twice, which turn one way but wind twice", () => {
    const pentagram = circle(5, 2);
    // Every turn is the same way: only the winding tells it apart.
    const turns = pentagram
      .slice(0, 5)
      .map((_, i) => Math.sign(orient(...pentagram[(i + 4) % 5], ...pentagram[i], ...pentagram[i + 1])));
    expect(new Set(turns).size).toBe(1);
    expect(convexRingOf(polygon(pentagram))).toBeNull();
    expect(convexRingOf(polygon([...pentagram].reverse()))).toBeNull();
    expect(convexRingOf(polygon(circle(7, 2)))).toBeNull();
    expect(convexRingOf(polygon(circle(7, 3)))).toBeNull();
    const twice: Position[] = [
      [0, 0],
      [1, 0],
      [0, 1],
      [0, 0],
      [1, 0],
      [0, 1],
      [0, 0],
    ];
    expect(convexRingOf(polygon(twice))).toBeNull();
  });

  it("rejects repeated positions, three collinear positions, concave rings and degenerate rings", () => {
    const rejected: [string, Position[]][] = [
      [
        "a repeated position",
        [
          [0, 0],
          [1, 0],
          [1, 0],
          [1, 1],
          [0, 1],
          [0, 0],
        ],
      ],
      ["the closing position repeated once more", [...ring(0, 0, 1, 1), [0, 0]]],
      [
        "three collinear positions",
        [
          [0, 0],
          [0.5, 0],
          [1, 0],
          [1, 1],
          [0, 1],
          [0, 0],
        ],
      ],
      [
        "collinear across the closing position",
        [
          [0.5, 0],
          [1, 0],
          [1, 1],
          [0, 1],
          [0, 0],
          [0.5, 0],
        ],
      ],
      [
        "a notch",
        [
          [0, 0],
          [1, 0],
          [1, 1],
          [0.5, 0.5],
          [0, 1],
          [0, 0],
        ],
      ],
      [
        "concave by 1e-12 only",
        [
          [0, 0],
          [0.5, 1e-12],
          [1, 0],
          [1, 1],
          [0, 1],
          [0, 0],
        ],
      ],
      [
        "two positions",
        [
          [0, 0],
          [1, 0],
          [0, 0],
        ],
      ],
      [
        "a line",
        [
          [0, 0],
          [1, 1],
          [2, 2],
          [0, 0],
        ],
      ],
    ];
    for (const [why, positions] of rejected) expect(convexRingOf(polygon(positions)), why).toBeNull();
  });

  it("rejects a polygon with a hole and a MultiPolygon of two parts", () => {
    expect(convexRingOf(polygon(ring(0, 0, 4, 4), ring(1, 1, 2, 2).reverse()))).toBeNull();
    expect(convexRingOf(multiPolygon([ring(0, 0, 1, 1)], [ring(2, 0, 3, 1)]))).toBeNull();
  });

  it("accepts convex rings either way round, from any position, and a one-part MultiPolygon", () => {
    const r = ring(5.1234567, 45.7654321, 5.1244567, 45.7664321);
    for (let start = 0; start < 4; start++) {
      const ccw = convexRingOf(polygon(restarted(r, start, false)));
      const cw = convexRingOf(polygon(restarted(r, start, true)));
      expect(ccw).not.toBeNull();
      expect(cw).not.toBeNull();
      expect(cw?.n).toBe(4);
      expect(cw?.doubledArea).toBeCloseTo(2e-6, 15);
    }
    expect(convexRingOf(multiPolygon([r]))).not.toBeNull();
    expect(convexRingOf(polygon(circle(3)))).not.toBeNull();
    expect(convexRingOf(polygon(circle(200)))).not.toBeNull();
    expect(convexRingOf(polygon([...circle(200)].reverse()))).not.toBeNull();
    // A sliver 1e-9° (0.1 mm) wide and 100 m long, at realistic coordinates.
    expect(
      convexRingOf(
        polygon([
          [5.1234567, 45.7654321],
          [5.1244567, 45.7654321],
          [5.1239567, 45.765432101],
          [5.1234567, 45.7654321],
        ]),
      ),
    ).not.toBeNull();
  });

  it("intersects clockwise rings into a counter-clockwise ring of the right area", () => {
    const a = polygon(ring(0, 0, 2, 2).reverse());
    const b = polygon(
      [
        [1, 0.5],
        [3, 1],
        [2.5, 3],
        [1, 0.5],
      ].reverse() as Position[],
    );
    expect(ringArea(a.coordinates[0])).toBeLessThan(0);
    expect(ringArea(b.coordinates[0])).toBeLessThan(0);
    for (const [p, q] of [
      [a, b],
      [b, a],
    ]) {
      const got = convexClip(p, q);
      if (got === null || got === undefined) throw new Error("expected a polygon");
      expect(ringArea(polygonsOf(got)[0][0])).toBeGreaterThan(0);
      expect(planarArea(got)).toBeCloseTo(planarArea(clipperIntersection(p, q)), 12);
    }
  });

  it("hands back a clockwise ring held by the other as it was given", () => {
    // Contract as it stands: containment returns the input geometry itself, its orientation
    // unchanged (as settledIntersection does in overlap.ts); its area is right.
    const inner = polygon(ring(0.25, 0.25, 0.5, 0.75).reverse());
    expect(convexClip(square(0, 0), inner)).toBe(inner);
    expect(convexClip(inner, square(0, 0))).toBe(inner);
    expect(intersectionAreaM2(square(0, 0), inner)).toBeCloseTo(cellArea(0.25, 0.25, 0.5, 0.75), 3);
  });
});

describe("intersection() and intersectionAreaM2() on convex pairs", () => {
  it("take the convex path when it answers, and give Clipper2's area either way", () => {
    const all = scenes(7_777, 400);
    let answered = 0;
    const failures: string[] = [];
    for (const scene of all) {
      const a = polygon(scene.a);
      const b = polygon(scene.b);
      const clipper = clipperIntersection(a, b);
      const clipperM2 = clipper === null ? 0 : geodesicAreaM2(clipper);
      const tolM2 = 2 * tolerance(a, b) * metresPerDegree2(a, b);
      const direct = convexClip(a, b);
      const got = intersection(a, b);
      if (direct !== undefined) {
        answered++;
        // The same answer as the convex path (overlap.ts wires it in).
        expect(got).toEqual(direct);
      }
      const m2 = intersectionAreaM2(a, b);
      for (const [label, value] of [
        ["intersectionAreaM2()", m2],
        ["intersection()", got === null ? 0 : geodesicAreaM2(got)],
      ] as const) {
        if (!(Math.abs(value - clipperM2) <= tolM2)) {
          failures.push(`${label}: ${value} m² where Clipper2 has ${clipperM2}: ${JSON.stringify([scene.a, scene.b])}`);
        }
      }
    }
    expect(failures.slice(0, 5)).toEqual([]);
    expect(answered).toBeGreaterThan(300);
  });

  it("spends only the two rings' positions from an allowance, no meeting edge pairs or scan-beam work (docs/api.md §8.5)", () => {
    // Two squares crossing at two points: counted as an overlay, 2 meeting edge pairs each time.
    const allowance = new OverlayAllowance({ positions: 30, edgePairs: 1, beamWork: 1 });
    const west = polygon(ring(0, 0, 1, 1));
    const crossing = polygon(ring(0.5, 0.25, 1.5, 1.25));
    for (let i = 0; i < 3; i++) expect(intersectionAreaM2(west, crossing, undefined, allowance)).toBeGreaterThan(0);
    expect(allowance.exhausted).toBe(false);
    // 3 × 10 positions spent: the fourth passes the 30 allowed.
    expect(() => intersectionAreaM2(west, crossing, undefined, allowance)).toThrow(
      "came to 40 positions, more than 30",
    );
  });

  it("measures fields overlapping by half, sharing an edge, and nested, to the exact cell area", () => {
    const west = polygon(ring(5.1234567, 45.7654321, 5.1244567, 45.7664321));
    const half = polygon(ring(5.1239567, 45.7654321, 5.1249567, 45.7664321));
    const neighbour = polygon(ring(5.1244567, 45.7654321, 5.1254567, 45.7664321));
    const inner = polygon(ring(5.1236, 45.7656, 5.1238, 45.7659));
    const shifted = polygon(ring(5.1239567, 45.7659321, 5.1249567, 45.7669321));
    expect(intersectionAreaM2(west, half)).toBeCloseTo(cellArea(5.1239567, 45.7654321, 5.1244567, 45.7664321), 6);
    expect(intersectionAreaM2(west, neighbour)).toBe(0);
    expect(intersection(west, neighbour)).toBeNull();
    expect(intersectionAreaM2(west, inner)).toBeCloseTo(cellArea(5.1236, 45.7656, 5.1238, 45.7659), 6);
    expect(intersectionAreaM2(inner, west)).toBeCloseTo(cellArea(5.1236, 45.7656, 5.1238, 45.7659), 6);
    // No shared coordinate: the convex path answers, with the exact cell.
    expect(convexClip(west, shifted)).not.toBeUndefined();
    expect(intersectionAreaM2(west, shifted)).toBeCloseTo(cellArea(5.1239567, 45.7659321, 5.1244567, 45.7664321), 6);
  });
});
