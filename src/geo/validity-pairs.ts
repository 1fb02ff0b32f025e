import { boxContains, pointInPolygon, ringBox, segmentsMayTouch, TOUCH_TOLERANCE_DEG } from "./planar.js";
import type { BoundingBox, PolygonCoordinates, Position } from "./types.js";
import type { GeometryIssue } from "./validity.js";
import { nestedPartsIssue } from "./validity-messages.js";

/** Decides, exactly, whether two parts whose boundaries may touch are valid together. */
export type ExactPairCheck = (first: number, second: number) => GeometryIssue | null;

/**
 * The first (by part indices) pair of parts of a MultiPolygon that breaks the OGC pair rules,
 * given that each part is valid on its own.
 *
 * Only parts with intersecting boxes can interact. Of those, a pair whose boundaries may touch
 * goes to `exact` (JTS); a pair whose boundaries certainly do not meet is either disjoint or
 * nested, which one point-in-polygon test settles. That keeps JTS away from the common cases:
 * separate fields, and islands inside a large part's hole.
 */
export function findPartInteraction(parts: PolygonCoordinates[], exact: ExactPairCheck): GeometryIssue | null {
  const boxes = parts.map((rings) => ringBox(rings[0]));
  for (const [first, second] of candidatePairs(boxes)) {
    const issue = boundariesMayTouch(parts[first], parts[second], boxes[first], boxes[second])
      ? exact(first, second)
      : nestingIssue(first, second, parts, boxes);
    if (issue !== null) return issue;
  }
  return null;
}

function nestingIssue(first: number, second: number, parts: PolygonCoordinates[], boxes: BoundingBox[]): GeometryIssue | null {
  // With no boundary contact any vertex of one part is either inside the other or not.
  for (const [inner, outer] of [[second, first], [first, second]]) {
    const probe: Position = parts[inner][0][0];
    if (boxContains(boxes[outer], boxes[inner]) && pointInPolygon(probe, parts[outer])) {
      return nestedPartsIssue(first, second, inner, probe);
    }
  }
  return null;
}

/**
 * Index pairs (first < second) of boxes that intersect or touch, in ascending order. A sweep
 * along the axis on which the boxes overlap least keeps the active list short for both a row
 * and a column of parts.
 */
function candidatePairs(boxes: BoundingBox[]): [number, number][] {
  const n = boxes.length;
  const alongX = axisCrowding(boxes, "minX", "maxX") <= axisCrowding(boxes, "minY", "maxY");
  const lo = new Float64Array(n);
  const hi = new Float64Array(n);
  const crossLo = new Float64Array(n);
  const crossHi = new Float64Array(n);
  const order = new Uint32Array(n);
  boxes.forEach((box, i) => {
    [lo[i], hi[i], crossLo[i], crossHi[i]] = alongX ? [box.minX, box.maxX, box.minY, box.maxY] : [box.minY, box.maxY, box.minX, box.maxX];
    order[i] = i;
  });
  order.sort((a, b) => lo[a] - lo[b]);

  const t = TOUCH_TOLERANCE_DEG;
  const pairs: [number, number][] = [];
  const active: number[] = [];
  for (const i of order) {
    for (let k = active.length - 1; k >= 0; k--) {
      const j = active[k];
      if (hi[j] + t < lo[i]) {
        active[k] = active[active.length - 1];
        active.pop();
      } else if (crossLo[j] <= crossHi[i] + t && crossLo[i] <= crossHi[j] + t) {
        pairs.push(j < i ? [j, i] : [i, j]);
      }
    }
    active.push(i);
  }
  return pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

/** Sum of box extents over the total extent along one axis: ~1 for a row along it, ~n across it. */
function axisCrowding(boxes: BoundingBox[], minKey: "minX" | "minY", maxKey: "maxX" | "maxY"): number {
  let lo = Infinity;
  let hi = -Infinity;
  let sum = 0;
  for (const box of boxes) {
    lo = Math.min(lo, box[minKey]);
    hi = Math.max(hi, box[maxKey]);
    sum += box[maxKey] - box[minKey];
  }
  return hi > lo ? sum / (hi - lo) : Infinity;
}

interface Segment {
  a: Position;
  b: Position;
  minX: number;
  maxX: number;
  owner: 0 | 1;
}

/**
 * Conservative: false only if no edge of one part comes near an edge of the other. Only edges
 * inside the overlap of the two boxes can meet, so a large part costs one scan, not a JTS graph.
 */
function boundariesMayTouch(p: PolygonCoordinates, q: PolygonCoordinates, boxP: BoundingBox, boxQ: BoundingBox): boolean {
  const t = TOUCH_TOLERANCE_DEG;
  const window: BoundingBox = {
    minX: Math.max(boxP.minX, boxQ.minX) - t,
    minY: Math.max(boxP.minY, boxQ.minY) - t,
    maxX: Math.min(boxP.maxX, boxQ.maxX) + t,
    maxY: Math.min(boxP.maxY, boxQ.maxY) + t,
  };
  const segments = [...segmentsIn(p, window, 0), ...segmentsIn(q, window, 1)].sort((s, u) => s.minX - u.minX);
  const active: [Segment[], Segment[]] = [[], []];
  for (const segment of segments) {
    const others = active[1 - segment.owner].filter((other) => other.maxX + t >= segment.minX);
    active[1 - segment.owner] = others;
    for (const other of others) {
      if (segmentsMayTouch(segment.a, segment.b, other.a, other.b)) return true;
    }
    active[segment.owner].push(segment);
  }
  return false;
}

function segmentsIn(rings: PolygonCoordinates, window: BoundingBox, owner: 0 | 1): Segment[] {
  const found: Segment[] = [];
  for (const ring of rings) {
    for (let i = 1; i < ring.length; i++) {
      const a = ring[i - 1];
      const b = ring[i];
      const minX = Math.min(a[0], b[0]);
      const maxX = Math.max(a[0], b[0]);
      if (maxX < window.minX || minX > window.maxX) continue;
      if (Math.max(a[1], b[1]) < window.minY || Math.min(a[1], b[1]) > window.maxY) continue;
      found.push({ a, b, minX, maxX, owner });
    }
  }
  return found;
}
