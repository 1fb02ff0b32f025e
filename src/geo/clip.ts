import { boxesIntersect } from "./bbox.js";
import { clipIndexed } from "./indexed-clip.js";
import type { SegmentIndex } from "./intersects.js";
import { ringBox } from "./planar.js";
import type { BoundingBox, PolygonCoordinates, Position } from "./types.js";
import { countDistinctUpTo } from "./validity-structure.js";

/**
 * Rings with more positions than this are cut down to the box around the other input before the
 * overlay. The overlay engines cost O(n log n) in the vertices of both inputs (polyclip-ts took
 * 5 s, JSTS 0.5 s, for a field against a 200,000-vertex coastline; JTS 0.25 s for a field against
 * a 99,000-position jurisdiction), while a field meets only the few hundred vertices near it;
 * smaller rings go to the overlay whole.
 */
export const CLIP_MIN_POSITIONS = 1_000;

type Edge = (p: Position) => number;

/**
 * Sutherland–Hodgman: `ring` clipped to the inside of `box`, one box side at a time, in linear
 * time. For a concave ring the result can hold zero-width "bridges" along the box's sides (where
 * the ring leaves the box and comes back); they enclose no area, and since the caller's box is
 * the other input's box grown by a margin they lie strictly outside it, so they cannot change
 * other ∩ ring. Returns null when nothing of the ring lies in the box.
 */
function clipRing(ring: readonly Position[], box: BoundingBox): Position[] | null {
  // Signed distance inside each side: positive inside.
  const sides: Edge[] = [
    (p) => p[0] - box.minX,
    (p) => box.maxX - p[0],
    (p) => p[1] - box.minY,
    (p) => box.maxY - p[1],
  ];
  // The input is closed; work on the open ring and close at the end.
  let points: Position[] = ring.slice(0, -1) as Position[];
  for (const inside of sides) {
    if (points.length === 0) break;
    const output: Position[] = [];
    let previous = points[points.length - 1];
    let previousInside = inside(previous);
    for (const current of points) {
      const currentInside = inside(current);
      if (currentInside >= 0) {
        if (previousInside < 0) output.push(crossing(previous, current, previousInside, currentInside));
        output.push(current);
      } else if (previousInside >= 0) {
        output.push(crossing(previous, current, previousInside, currentInside));
      }
      previous = current;
      previousInside = currentInside;
    }
    points = output;
  }
  if (countDistinctUpTo(points, 3) < 3) return null;
  return [...points, points[0]];
}

function crossing(a: Position, b: Position, da: number, db: number): Position {
  const t = da / (da - db);
  return [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])];
}

/**
 * One polygon (shell, holes) restricted to `box`: large rings clipped, holes outside the box
 * dropped. Null when the shell does not reach into the box.
 */
export function clipPolygon(rings: PolygonCoordinates, box: BoundingBox): PolygonCoordinates | null {
  const total = rings.reduce((n, ring) => n + ring.length, 0);
  if (total <= CLIP_MIN_POSITIONS) return rings;
  const [shell, ...holes] = rings;
  const clippedShell = clipRing(shell, box);
  if (clippedShell === null) return null;
  const clippedHoles: Position[][] = [];
  for (const hole of holes) {
    if (!boxesIntersect(ringBox(hole), box)) continue;
    // A hole inside the clipped shell must be clipped too, or it could stick out of it.
    const clipped = clipRing(hole, box);
    if (clipped === null) continue;
    // The box lies wholly in the hole: nothing of this polygon is in the box.
    if (isWholeBox(clipped, box)) return null;
    clippedHoles.push(clipped);
  }
  return [clippedShell, ...clippedHoles];
}

function isWholeBox(ring: readonly Position[], box: BoundingBox): boolean {
  return ring.every(([x, y]) => (x === box.minX || x === box.maxX) && (y === box.minY || y === box.maxY));
}

/**
 * A box grown on every side by a tenth of its size (and at least 1e-6°, ~10 cm), so that the
 * sides of the clipping box, where clipping may leave zero-width bridges, never touch the input
 * the box is around.
 */
export function clippingBox(box: BoundingBox): BoundingBox {
  const dx = Math.max((box.maxX - box.minX) * 0.1, 1e-6);
  const dy = Math.max((box.maxY - box.minY) * 0.1, 1e-6);
  return { minX: box.minX - dx, maxX: box.maxX + dx, minY: box.minY - dy, maxY: box.maxY + dy };
}

/**
 * The index serves a clip while fewer than this share of the geometry's positions (1 / this) meet
 * the box: past it, reading every position once costs less than the index's walks (a box over
 * all of an 80,000-position comb: 139 ms through the index, 28 ms by reading).
 */
const INDEXED_CLIP_SHARE = 8;

/** The parts of a geometry near a box, as nearParts finds them. */
export interface NearParts {
  /** The parts whose exterior ring's box meets the box, their large rings clipped. */
  near: PolygonCoordinates[];
  /** The same parts unclipped. */
  whole: PolygonCoordinates[];
  /** Whether any ring was clipped (near differs from whole). */
  clipped: boolean;
  /** What finding them read: every position, or with an index, its nodes looked at and the positions kept. */
  read: number;
}

/**
 * What of a geometry's `polygons` can meet another whose box is `box`: the parts whose exterior
 * ring's box meets it (a marine MultiPolygon may have thousands of parts far from a field), each
 * with its rings clipped to the box grown by a margin (clippingBox) when the part has more than
 * CLIP_MIN_POSITIONS positions, so an overlay sees the few hundred vertices near the other input
 * rather than a whole coastline. other ∩ near = other ∩ polygons. With the geometry's boundary
 * `index` (boundary-index.ts), only what lies near the box is read (indexed-clip.ts); without it,
 * every position.
 */
export function nearParts(polygons: PolygonCoordinates[], box: BoundingBox, index?: SegmentIndex): NearParts {
  const clipBox = clippingBox(box);
  let indexRead = 0;
  if (index !== undefined) {
    const visitedBefore = index.visited;
    const total = positionsIn(polygons);
    let clip: ReturnType<typeof clipIndexed> = null;
    try {
      clip = clipIndexed(polygons, index, clipBox, CLIP_MIN_POSITIONS, total / INDEXED_CLIP_SHARE);
    } catch {
      // Newer than the plain clip: should it ever break, the plain clip below still answers.
    }
    indexRead = index.visited - visitedBefore;
    if (clip !== null) return { ...clip, read: indexRead + positionsIn(clip.near) };
  }
  const near: PolygonCoordinates[] = [];
  const whole: PolygonCoordinates[] = [];
  let clipped = false;
  for (const rings of polygons) {
    // A valid polygon's holes lie inside its exterior ring: that ring's box is the part's box.
    if (!boxesIntersect(ringBox(rings[0]), box)) continue;
    const part = clipPolygon(rings, clipBox);
    if (part === null) continue;
    clipped ||= part !== rings;
    whole.push(rings);
    near.push(part);
  }
  return { near, whole, clipped, read: indexRead + positionsIn(polygons) };
}

function positionsIn(polygons: readonly PolygonCoordinates[]): number {
  let count = 0;
  for (const rings of polygons) for (const ring of rings) count += ring.length;
  return count;
}
