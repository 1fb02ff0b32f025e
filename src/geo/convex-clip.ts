import { directionTurn, orient } from "./intersects.js";
import { polygonsOf } from "./parts.js";
import type { Position, SourceGeometry } from "./types.js";

/*
 * The intersection of two convex polygons, walked along both boundaries at once in O(n + m).
 * Fields drawn as rectangles, circles round a pivot, a well or a device, many parcels: a large
 * share of the pairs a conflict scan measures are two convex rings, and for those this costs
 * ~10 µs where counting the overlay and running Clipper2 cost ~150–200 (docs/benchmarks.md).
 * Every side test is exact (orient, directionTurn); only the crossing points are rounded, by an
 * ulp of the coordinates. Whatever is not clear-cut is left to the overlay engines: a position
 * exactly on the line of an edge it is tested against (touching boundaries, shared edges and
 * vertices, collinear edges), and a result too thin to be more than rounding.
 */

/** A convex ring, counter-clockwise, without its closing position: x and y in turn. */
export interface ConvexRing {
  readonly xy: Float64Array;
  readonly n: number;
  /** Twice its planar area (lon/lat degrees²), positive. */
  readonly doubledArea: number;
}

/**
 * A result whose area is below this share of the smaller input's is taken as rounding around a
 * touch, not an overlap, and left to the exact engines (an overlap this thin, ~10 cm² of a
 * hectare, they measure).
 */
const THIN_RESULT_SHARE = 1e-9;

/**
 * `g` as a convex ring when it is one polygon of one strictly convex ring; null otherwise. O(n),
 * and a copy of its positions: overlap.ts keeps the answer per geometry. Strictly convex: every
 * turn the same way and none straight (exact orient; a repeated position makes a straight turn),
 * and the ring winds once. A ring turning one way reverses its x direction twice per winding, so
 * listed from any position it reverses at most twice when it winds once, at least three times when
 * it winds more (a pentagram turns one way too).
 */
export function convexRingOf(g: SourceGeometry): ConvexRing | null {
  const polygons = polygonsOf(g);
  if (polygons.length !== 1 || polygons[0].length !== 1) return null;
  const ring = polygons[0][0];
  const n = ring.length - 1;
  if (n < 3) return null;
  let turn = 0;
  let reversals = 0;
  let lastDx = 0;
  for (let i = 0; i < n; i++) {
    const a = ring[i === 0 ? n - 1 : i - 1];
    const b = ring[i];
    const c = ring[i + 1];
    const side = orient(a[0], a[1], b[0], b[1], c[0], c[1]);
    if (side === 0 || (turn !== 0 && side > 0 !== turn > 0)) return null;
    turn = side;
    const dx = c[0] - b[0];
    if (dx !== 0) {
      if (lastDx !== 0 && dx > 0 !== lastDx > 0 && ++reversals > 2) return null;
      lastDx = dx;
    }
  }
  const xy = new Float64Array(2 * n);
  for (let i = 0; i < n; i++) {
    const p = turn > 0 ? ring[i] : ring[n - 1 - i];
    xy[2 * i] = p[0];
    xy[2 * i + 1] = p[1];
  }
  return { xy, n, doubledArea: doubledArea(xy, n) };
}

/** Twice the signed planar area of the first n positions of `xy`, positive counter-clockwise. */
function doubledArea(xy: Float64Array, n: number): number {
  let sum = 0;
  const x0 = xy[0];
  const y0 = xy[1];
  for (let i = 1; i < n - 1; i++) {
    sum += (xy[2 * i] - x0) * (xy[2 * i + 3] - y0) - (xy[2 * i + 2] - x0) * (xy[2 * i + 1] - y0);
  }
  return sum;
}

/** The intersection's positions as the walk finds them (x and y in turn), grown as needed. */
let found = new Float64Array(1024);

/** Appends (x, y) to the walk's positions, `count` of them so far; answers the new count. */
function record(count: number, x: number, y: number): number {
  found[2 * count] = x;
  found[2 * count + 1] = y;
  return count + 1;
}

/** Where the walk is: which ring's boundary it follows inside the other, if it knows yet. */
const UNKNOWN = 0;
const P_INSIDE = 1;
const Q_INSIDE = 2;

/**
 * p ∩ q for two convex rings (convexRingOf): the polygon, or null when they do not overlap, or
 * undefined when it is not clear-cut (see above) and the overlay engines must decide. O(n + m):
 * O'Rourke, Chien, Olson and Naddor's walk ("A new linear algorithm for intersecting convex
 * polygons", 1982; O'Rourke, Computational Geometry in C, §7.6), which advances along whichever
 * boundary is behind the other and records each crossing and each position inside the other ring.
 * Its special cases for collinear edges never arise: every position on another edge's line is
 * left to the engines.
 */
export function convexIntersection(
  pGeometry: SourceGeometry,
  p: ConvexRing,
  qGeometry: SourceGeometry,
  q: ConvexRing,
): SourceGeometry | null | undefined {
  const n = p.n;
  const m = q.n;
  const pxy = p.xy;
  const qxy = q.xy;
  const capacity = 4 * (n + m) + 4;
  if (found.length < capacity) found = new Float64Array(capacity);
  let count = 0;
  let a = 0;
  let b = 0;
  let advancedA = 0;
  let advancedB = 0;
  let inside = UNKNOWN;
  let crossed = false;
  do {
    const a1 = a === 0 ? n - 1 : a - 1;
    const b1 = b === 0 ? m - 1 : b - 1;
    const pax = pxy[2 * a];
    const pay = pxy[2 * a + 1];
    const pa1x = pxy[2 * a1];
    const pa1y = pxy[2 * a1 + 1];
    const qbx = qxy[2 * b];
    const qby = qxy[2 * b + 1];
    const qb1x = qxy[2 * b1];
    const qb1y = qxy[2 * b1 + 1];
    // Where each edge's head lies against the other edge's line (> 0: inside), and its tail.
    const aHB = orient(qb1x, qb1y, qbx, qby, pax, pay);
    const bHA = orient(pa1x, pa1y, pax, pay, qbx, qby);
    const a1HB = orient(qb1x, qb1y, qbx, qby, pa1x, pa1y);
    const b1HA = orient(pa1x, pa1y, pax, pay, qb1x, qb1y);
    if (aHB === 0 || bHA === 0 || a1HB === 0 || b1HA === 0) return undefined;
    if (aHB > 0 !== a1HB > 0 && bHA > 0 !== b1HA > 0) {
      // The two edges cross strictly inside both.
      if (!crossed) {
        crossed = true;
        advancedA = 0;
        advancedB = 0;
      }
      const t = a1HB / (a1HB - aHB);
      count = record(count, pa1x + t * (pax - pa1x), pa1y + t * (pay - pa1y));
      if (aHB > 0) inside = P_INSIDE;
      else if (bHA > 0) inside = Q_INSIDE;
    }
    // The advance rule: when Q's edge turns left of P's (or runs parallel), advance P if Q's head
    // is inside P's edge, else Q; when it turns right, advance Q if P's head is inside Q's edge,
    // else P. The two agree unless both heads lie on the same side: only then is the turn read.
    let advanceP = bHA > 0;
    if (aHB > 0 === bHA > 0) {
      const cross = directionTurn(pa1x, pa1y, pax, pay, qb1x, qb1y, qbx, qby);
      // Parallel edges facing away, each outside the other's line: a line between them separates them.
      if (cross === 0 && aHB < 0) return null;
      if (cross < 0) advanceP = aHB < 0;
    }
    if (advanceP) {
      if (inside === P_INSIDE) count = record(count, pax, pay);
      advancedA++;
      a = a + 1 === n ? 0 : a + 1;
    } else {
      if (inside === Q_INSIDE) count = record(count, qbx, qby);
      advancedB++;
      b = b + 1 === m ? 0 : b + 1;
    }
    if (count > 2 * (n + m)) return undefined;
  } while ((advancedA < n || advancedB < m) && advancedA < 2 * n && advancedB < 2 * m);
  if (!crossed) {
    // The boundaries do not cross: one ring holds the other, or they are apart.
    const pInQ = insideConvex(pxy[0], pxy[1], q);
    if (pInQ === undefined) return undefined;
    if (pInQ) return pGeometry;
    const qInP = insideConvex(qxy[0], qxy[1], p);
    if (qInP === undefined) return undefined;
    return qInP ? qGeometry : null;
  }
  return polygonOf(count, Math.min(p.doubledArea, q.doubledArea));
}

/** Whether (x, y) is strictly inside the ring; undefined when it lies on an edge's line. */
function insideConvex(x: number, y: number, ring: ConvexRing): boolean | undefined {
  const xy = ring.xy;
  let inside = true;
  for (let i = 0; i < ring.n; i++) {
    const next = i + 1 === ring.n ? 0 : 2 * i + 2;
    const side = orient(xy[2 * i], xy[2 * i + 1], xy[next], xy[next + 1], x, y);
    if (side === 0) return undefined;
    if (side < 0) inside = false;
  }
  return inside;
}

/**
 * The walk's positions as a closed ring, repeats dropped; undefined unless it is a polygon larger
 * than rounding (THIN_RESULT_SHARE) and no larger than the smaller input (`smallerDoubledArea`).
 */
function polygonOf(count: number, smallerDoubledArea: number): SourceGeometry | undefined {
  let kept = 0;
  for (let i = 0; i < count; i++) {
    const x = found[2 * i];
    const y = found[2 * i + 1];
    if (kept > 0 && x === found[2 * kept - 2] && y === found[2 * kept - 1]) continue;
    found[2 * kept] = x;
    found[2 * kept + 1] = y;
    kept++;
  }
  while (kept > 1 && found[0] === found[2 * kept - 2] && found[1] === found[2 * kept - 1]) kept--;
  if (kept < 3) return undefined;
  const area = doubledArea(found, kept);
  if (!(area > THIN_RESULT_SHARE * smallerDoubledArea) || area > smallerDoubledArea * (1 + 1e-9)) return undefined;
  const ring: Position[] = new Array(kept + 1);
  for (let i = 0; i < kept; i++) ring[i] = [found[2 * i], found[2 * i + 1]];
  ring[kept] = [found[0], found[1]];
  return { type: "Polygon", coordinates: [ring] };
}
