import type { SegmentIndex } from "./intersects.js";
import type { BoundingBox, PolygonCoordinates, Position } from "./types.js";
import { countDistinctUpTo } from "./validity-structure.js";

/*
 * A large geometry cut down to a box in time that follows what lies near the box, not the size of
 * the geometry (clip.ts's Sutherland–Hodgman reads every position, ~6 ms for a field on a
 * 99,000-position boundary). Its boundary index (boundary-index.ts) gives the segments that meet
 * the box, in ring order. Each ring keeps its pieces inside the box, and each stretch between two
 * pieces, which lies outside the box, is replaced by a path along the box's sides that turns about
 * the box's centre by the same angle as the stretch. The two are then homotopic outside the box's
 * interior, so every point inside the box has the same winding number about the new ring as
 * about the old: other ∩ ring is unchanged for any other input inside the box. The angle of a
 * stretch comes from the index in O(log n) nodes when the stretch stays away from the centre
 * (SegmentIndex.sweptAngle). A ring that does not meet the box either goes around it (then it
 * becomes the box's outline, in its own direction) or leaves it out.
 *
 * The paths along the box's sides can run over one another: zero-width bridges, as the
 * Sutherland–Hodgman clip leaves, which only the engines that take bridges are given. The rings
 * must be simple (as a valid geometry's are): a ring that winds about the box more than once
 * would come out winding once.
 */

const TURN = 2 * Math.PI;

/** What clipping a geometry's parts to a box gave. */
export interface IndexedClip {
  /** The parts that reach into the box, each restricted to it (small parts whole). */
  near: PolygonCoordinates[];
  /** The same parts unclipped. */
  whole: PolygonCoordinates[];
  /** Whether any ring was clipped. */
  clipped: boolean;
}

/** A ring's segment that meets the box: its index in the ring, and the part of it inside. */
interface Piece {
  i: number;
  t0: number;
  t1: number;
  from: Position;
  to: Position;
}

/**
 * `parts`, indexed by `index`, restricted to `box`: every part with a ring meeting the box or a
 * shell around it. Parts of at most `wholeUpTo` positions are kept whole. Null when more than
 * `limit` segments meet the box or cross the ray from its centre: the box takes in so much of the
 * geometry that a pass over every position (clip.ts) costs less.
 */
export function clipIndexed(
  parts: PolygonCoordinates[],
  index: SegmentIndex,
  box: BoundingBox,
  wholeUpTo: number,
  limit = Infinity,
): IndexedClip | null {
  const [cx, cy] = centre(box);
  // Segments near the box, and the rings the ray from its centre crosses an odd number of times:
  // a ring with no segment near the box goes around it exactly when it is one of those.
  const nearSegments = index.segmentsNear(box, limit);
  const crossingSegments = nearSegments === null ? null : index.segmentsCrossingRay(cx, cy, limit);
  if (nearSegments === null || crossingSegments === null) return null;
  const near = new Map<number, Map<number, number[]>>();
  for (const segment of nearSegments) {
    const { part, ring } = index.ringOf(segment);
    const rings = near.get(part) ?? new Map<number, number[]>();
    near.set(part, rings);
    const segments = rings.get(ring);
    if (segments === undefined) rings.set(ring, [segment]);
    else segments.push(segment);
  }
  const around = new Map<number, Set<number>>();
  for (const segment of crossingSegments) {
    const { part, ring } = index.ringOf(segment);
    const rings = around.get(part) ?? new Set<number>();
    around.set(part, rings);
    if (rings.has(ring)) rings.delete(ring);
    else rings.add(ring);
  }

  const result: IndexedClip = { near: [], whole: [], clipped: false };
  const partNumbers = [...new Set([...near.keys(), ...around.keys()])].sort((a, b) => a - b);
  for (const p of partNumbers) {
    const rings = parts[p];
    const nearRings = near.get(p);
    const aroundRings = around.get(p);
    const reaches = (r: number) => nearRings?.has(r) === true || aroundRings?.has(r) === true;
    // A part reaches into the box only through its shell; a hole alone does not bring it in.
    if (!reaches(0)) continue;
    if (rings.reduce((n, ring) => n + ring.length, 0) <= wholeUpTo) {
      result.near.push(rings);
      result.whole.push(rings);
      continue;
    }
    const clipped = clipPolygon(rings, p, index, box, nearRings, aroundRings);
    if (clipped === null) continue;
    result.near.push(clipped);
    result.whole.push(rings);
    result.clipped = true;
  }
  return result;
}

function clipPolygon(
  rings: PolygonCoordinates,
  part: number,
  index: SegmentIndex,
  box: BoundingBox,
  nearRings: Map<number, number[]> | undefined,
  aroundRings: Set<number> | undefined,
): PolygonCoordinates | null {
  const clipped: Position[][] = [];
  // The shell first, then the holes that reach into the box, in their order.
  const ringNumbers = [...new Set([...(nearRings?.keys() ?? []), ...(aroundRings ?? [])])].sort((a, b) => a - b);
  for (const r of ringNumbers) {
    const { first } = index.ringSegments(part, r);
    const ring = clipRing(rings[r], first, nearRings?.get(r) ?? [], aroundRings?.has(r) === true, index, box);
    if (Array.isArray(ring)) {
      clipped.push(ring);
    } else if (ring.winding === 0) {
      if (r === 0) return null;
    } else {
      // A hole around the box: nothing of the polygon is in it. A shell around it: all of it is.
      if (r > 0) return null;
      clipped.push(outline(box, ring.winding > 0));
    }
  }
  return clipped.length === 0 ? null : clipped;
}

function centre(box: BoundingBox): [number, number] {
  return [(box.minX + box.maxX) / 2, (box.minY + box.maxY) / 2];
}

/**
 * One ring restricted to the box, given the ring's segments whose boxes meet it (`near`, in
 * order) and whether the ray from the box's centre crosses it an odd number of times (`around`):
 * the clipped ring; or, when no segment enters the box, how it winds about it (counter-clockwise
 * positive; 0 when nothing of the ring is in the box). The ray's parity says whether it winds,
 * exactly; the turn about the centre only which way.
 */
function clipRing(
  ring: readonly Position[],
  first: number,
  near: readonly number[],
  around: boolean,
  index: SegmentIndex,
  box: BoundingBox,
): Position[] | { winding: number } {
  const [cx, cy] = centre(box);
  const pieces: Piece[] = [];
  for (const segment of near) {
    const piece = pieceInside(ring, segment - first, box);
    if (piece !== null) pieces.push(piece);
  }
  if (pieces.length === 0) {
    // No segment reaches the box: the ring winds about the whole box, or not at all.
    if (!around) return { winding: 0 };
    return { winding: Math.sign(index.sweptAngle(first, first + ring.length - 1, cx, cy)) };
  }
  const segments = ring.length - 1;
  const out: Position[] = [];
  const push = (p: Position) => {
    const last = out[out.length - 1];
    if (last === undefined || last[0] !== p[0] || last[1] !== p[1]) out.push(p);
  };
  for (let k = 0; k < pieces.length; k++) {
    const piece = pieces[k];
    const next = pieces[(k + 1) % pieces.length];
    push(piece.from);
    push(piece.to);
    // Joined inside the box at a shared vertex: no stretch outside between them.
    if (piece.t1 === 1 && next.t0 === 0 && next.i === (piece.i + 1) % segments && pieces.length > 1) continue;
    // The stretch from where this piece leaves the box to where the next enters it: the rest of
    // this segment, the segments between, and the start of the next one.
    let angle = 0;
    const end = ring[piece.i + 1];
    const start = ring[next.i];
    angle += turn(piece.to, end, cx, cy);
    const from = piece.i + 1;
    const to = next.i;
    if (to > from) angle += index.sweptAngle(first + from, first + to, cx, cy);
    else if (to < from || pieces.length === 1) {
      angle += index.sweptAngle(first + from, first + segments, cx, cy) + index.sweptAngle(first, first + to, cx, cy);
    }
    angle += turn(start, next.from, cx, cy);
    for (const corner of cornersAlong(box, piece.to, next.from, angle)) push(corner);
  }
  push(out[0]);
  // Pieces that only touch the box, with no turn about it: nothing of the ring is in the box.
  if (countDistinctUpTo(out, 3) < 3) return { winding: 0 };
  return out;
}

/** The turn about (cx, cy) from a to b along the segment ab, which does not pass through it. */
function turn(a: Position, b: Position, cx: number, cy: number): number {
  const ax = a[0] - cx;
  const ay = a[1] - cy;
  const bx = b[0] - cx;
  const by = b[1] - cy;
  return Math.atan2(ax * by - ay * bx, ax * bx + ay * by);
}

/**
 * Liang–Barsky: the part of segment i of the ring inside the box (closed), or null when the
 * segment misses it. Where the part ends on a side of the box, that coordinate is the side's own,
 * so paths along the sides stay exactly on them.
 */
function pieceInside(ring: readonly Position[], i: number, box: BoundingBox): Piece | null {
  const a = ring[i];
  const b = ring[i + 1];
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  let t0 = 0;
  let t1 = 1;
  let side0 = -1;
  let side1 = -1;
  const checks: [number, number][] = [
    [-dx, a[0] - box.minX],
    [dx, box.maxX - a[0]],
    [-dy, a[1] - box.minY],
    [dy, box.maxY - a[1]],
  ];
  for (const [side, [p, q]] of checks.entries()) {
    if (p === 0) {
      if (q < 0) return null;
      continue;
    }
    const r = q / p;
    if (p < 0) {
      if (r > t1) return null;
      if (r > t0) {
        t0 = r;
        side0 = side;
      }
    } else {
      if (r < t0) return null;
      if (r < t1) {
        t1 = r;
        side1 = side;
      }
    }
  }
  return { i, t0, t1, from: pointAt(a, b, t0, side0, box), to: pointAt(a, b, t1, side1, box) };
}

/**
 * The point at t along the segment ab, on box side `side` (−1: not on a side, t is 0 or 1: an end,
 * kept, but clamped to the box, as Liang–Barsky's rounding can leave an end an ulp outside it).
 */
function pointAt(a: Position, b: Position, t: number, side: number, box: BoundingBox): Position {
  const clamp = (v: number, low: number, high: number) => Math.min(high, Math.max(low, v));
  if (side === -1) {
    const [x, y] = t === 0 ? a : b;
    const inside: Position = [clamp(x, box.minX, box.maxX), clamp(y, box.minY, box.maxY)];
    return inside[0] === x && inside[1] === y ? (t === 0 ? a : b) : inside;
  }
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  switch (side) {
    case 0:
      return [box.minX, clamp(a[1] + t * dy, box.minY, box.maxY)];
    case 1:
      return [box.maxX, clamp(a[1] + t * dy, box.minY, box.maxY)];
    case 2:
      return [clamp(a[0] + t * dx, box.minX, box.maxX), box.minY];
    default:
      return [clamp(a[0] + t * dx, box.minX, box.maxX), box.maxY];
  }
}

/**
 * The box's corners met on the way from `from` to `to` (both on its sides) along its outline,
 * turning `angle` about its centre: counter-clockwise when positive, and round again for every
 * whole turn in it. Where the points lie is read as their distance along the outline, which is
 * exact on every side, however thin the box; the angle gives only the number of whole turns,
 * taken as the nearest to it that brings `from` to `to`, so rounding in the stretch's sum cannot
 * add or lose a turn.
 */
function cornersAlong(box: BoundingBox, from: Position, to: Position, angle: number): Position[] {
  const width = box.maxX - box.minX;
  const height = box.maxY - box.minY;
  const perimeter = 2 * (width + height);
  const start = alongOutline(box, from);
  // How far on, counter-clockwise, `to` lies: less than half the outline exactly when it lies
  // less than half a turn on, since a box is symmetric about its centre.
  const ahead = modulo(alongOutline(box, to) - start, perimeter);
  const [cx, cy] = centre(box);
  let direct = modulo(Math.atan2(to[1] - cy, to[0] - cx) - Math.atan2(from[1] - cy, from[0] - cx), TURN);
  // Near the seam, atan2's rounding can put a point just past the other: the distance says which.
  if (ahead < perimeter / 2 && direct > 1.5 * Math.PI) direct -= TURN;
  if (ahead > perimeter / 2 && direct < 0.5 * Math.PI) direct += TURN;
  const travel = ahead + perimeter * Math.round((angle - direct) / TURN);
  if (travel === 0) return [];
  const corners: [number, Position][] = [
    [0, [box.minX, box.minY]],
    [width, [box.maxX, box.minY]],
    [width + height, [box.maxX, box.maxY]],
    [2 * width + height, [box.minX, box.maxY]],
  ];
  const met: { at: number; corner: Position }[] = [];
  for (const [position, corner] of corners) {
    // How far on, in the direction of travel, the corner first lies past `from`.
    let at = modulo(travel > 0 ? position - start : start - position, perimeter);
    if (at === 0) at = perimeter;
    for (; at < Math.abs(travel); at += perimeter) met.push({ at, corner });
  }
  return met.sort((a, b) => a.at - b.at).map(({ corner }) => corner);
}

/** How far along the box's outline, counter-clockwise from its lower-left corner, a point on it lies. */
function alongOutline(box: BoundingBox, [x, y]: Position): number {
  const width = box.maxX - box.minX;
  const height = box.maxY - box.minY;
  if (y === box.minY) return x - box.minX;
  if (x === box.maxX) return width + (y - box.minY);
  if (y === box.maxY) return width + height + (box.maxX - x);
  return 2 * width + height + (box.maxY - y);
}

function modulo(value: number, period: number): number {
  const r = value % period;
  return r < 0 ? r + period : r;
}

/** The box's outline as a closed ring, counter-clockwise or clockwise. */
function outline(box: BoundingBox, counterClockwise: boolean): Position[] {
  const ring: Position[] = [
    [box.minX, box.minY],
    [box.maxX, box.minY],
    [box.maxX, box.maxY],
    [box.minX, box.maxY],
    [box.minX, box.minY],
  ];
  return counterClockwise ? ring : ring.reverse();
}
