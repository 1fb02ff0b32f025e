import { boundingBox, boxesIntersect } from "./bbox.js";
import { polygonsOf } from "./parts.js";
import { ringBox } from "./planar.js";
import type { BoundingBox, PolygonCoordinates, Position, SearchArea, SourceGeometry } from "./types.js";

// The exact "intersects" (DE-9IM not disjoint) of a search area and a stored source, planar in
// lon/lat degrees. Every decision reduces to coordinate comparisons and the sign of orient(),
// which is exact, so a touch at an edge or a vertex is never lost to rounding and never invented.
//
// Two closed polygonal sets meet exactly when their boundaries meet, or a part of one holds a
// point of the other's boundary. With no boundary contact, each part of either lies wholly inside
// or wholly outside the other, so one vertex per part settles it.

export interface PreparedSearchArea {
  /** The area's bounding box: a store's index narrows candidates with it (box overlap, edges included). */
  readonly envelope: BoundingBox;
  /** True when `geometry` intersects the area: they share at least one point (touching at an edge or a vertex counts). */
  intersects(geometry: SourceGeometry): boolean;
  /**
   * True when the area holds every point of `box` (edges included): then any geometry within the
   * box intersects the area, and a store that knows a candidate's box (or a box around it) accepts
   * it without reading its geometry. False when it cannot tell cheaply (only a box area can).
   */
  covers(box: BoundingBox): boolean;
}

/** Does the per-search work once (edge index, box fast path) so a candidate costs about its own size, not its size times the area's. */
export function prepareSearchArea(area: SearchArea): PreparedSearchArea {
  switch (area.type) {
    case "Point":
      return preparePoint(area.coordinates);
    case "Box":
      return prepareBox(area.box);
    default: {
      const parts = polygonsOf(area);
      const rectangle = rectangleOf(parts);
      return rectangle === null ? preparePolygons(parts) : prepareBox(rectangle);
    }
  }
}

type SourceTest = (parts: PolygonCoordinates[], sourceBox: BoundingBox) => boolean;

/** Every kind of area rejects by box first: a source whose box misses the envelope cannot meet the area. */
function prepared(
  envelope: BoundingBox,
  meets: SourceTest,
  covers: (box: BoundingBox) => boolean = () => false,
): PreparedSearchArea {
  return {
    envelope,
    covers,
    intersects(geometry: SourceGeometry): boolean {
      const sourceBox = boundingBox(geometry);
      return boxesIntersect(sourceBox, envelope) && meets(polygonsOf(geometry), sourceBox);
    },
  };
}

function preparePoint([x, y]: Position): PreparedSearchArea {
  return prepared({ minX: x, minY: y, maxX: x, maxY: y }, (parts) => locateInParts(x, y, parts) !== "outside");
}

function prepareBox(box: BoundingBox): PreparedSearchArea {
  const { minX, minY, maxX, maxY } = box;
  const envelope = { minX, minY, maxX, maxY };
  // With no edge touching the box, the box lies wholly inside or wholly outside the source.
  return prepared(
    envelope,
    (parts) => someEdgeTouchesBox(parts, envelope) || locateInParts(minX, minY, parts) !== "outside",
    (inner) => minX <= inner.minX && inner.maxX <= maxX && minY <= inner.minY && inner.maxY <= maxY,
  );
}

function preparePolygons(parts: PolygonCoordinates[]): PreparedSearchArea {
  const envelope = boundingBox({ type: "MultiPolygon", coordinates: parts });
  const areaEdges = new SegmentIndex(parts);
  const areaPartStarts = parts.map((rings) => rings[0][0]);
  return prepared(
    envelope,
    (sourceParts, sourceBox) =>
      someSourcePartStartsInArea(sourceParts, areaEdges, envelope) ||
      someSourceEdgeMeetsArea(sourceParts, areaEdges, envelope) ||
      someAreaPartStartsInSource(areaPartStarts, sourceParts, sourceBox),
  );
}

/** A lone hole-free ring with four axis-parallel edges is exactly its box, and the box test is cheaper. */
function rectangleOf(parts: PolygonCoordinates[]): BoundingBox | null {
  if (parts.length !== 1 || parts[0].length !== 1 || parts[0][0].length !== 5) return null;
  const ring = parts[0][0];
  let previousHorizontal: boolean | null = null;
  for (let i = 0; i < 4; i++) {
    const x1 = ring[i][0];
    const y1 = ring[i][1];
    const x2 = ring[i + 1][0];
    const y2 = ring[i + 1][1];
    const horizontal = y1 === y2 && x1 !== x2;
    const vertical = x1 === x2 && y1 !== y2;
    if (!horizontal && !vertical) return null;
    if (horizontal === previousHorizontal) return null;
    previousHorizontal = horizontal;
  }
  return ringBox(ring);
}

// ---- polygon areas ----------------------------------------------------------------------------

function someSourcePartStartsInArea(
  sourceParts: PolygonCoordinates[],
  areaEdges: SegmentIndex,
  envelope: BoundingBox,
): boolean {
  for (const rings of sourceParts) {
    const x = rings[0][0][0];
    const y = rings[0][0][1];
    if (x < envelope.minX || x > envelope.maxX || y < envelope.minY || y > envelope.maxY) continue;
    if (areaEdges.locate(x, y) !== "outside") return true;
  }
  return false;
}

function someSourceEdgeMeetsArea(
  sourceParts: PolygonCoordinates[],
  areaEdges: SegmentIndex,
  envelope: BoundingBox,
): boolean {
  for (const rings of sourceParts) {
    for (const ring of rings) {
      // Runs of NODE_SIZE edges first: a big source mostly lies away from the area's edges,
      // and one index query then clears a whole run.
      for (let first = 0; first < ring.length - 1; first += NODE_SIZE) {
        const last = Math.min(ring.length - 1, first + NODE_SIZE);
        const run = ringBox(ring, first, last);
        if (!boxesIntersect(run, envelope) || !areaEdges.someSegmentNear(run)) continue;
        for (let i = first + 1; i <= last; i++) {
          const ax = ring[i - 1][0];
          const ay = ring[i - 1][1];
          const bx = ring[i][0];
          const by = ring[i][1];
          if (areaEdges.someSegmentMeets(ax, ay, bx, by)) return true;
        }
      }
    }
  }
  return false;
}

/** Above this many point-in-source steps, indexing the source first is cheaper than scanning it per point. */
const SCAN_BUDGET = 200_000;

function someAreaPartStartsInSource(
  areaPartStarts: Position[],
  sourceParts: PolygonCoordinates[],
  sourceBox: BoundingBox,
): boolean {
  const starts = areaPartStarts.filter(
    ([x, y]) => x >= sourceBox.minX && x <= sourceBox.maxX && y >= sourceBox.minY && y <= sourceBox.maxY,
  );
  if (starts.length === 0) return false;
  if (starts.length * countSegments(sourceParts) <= SCAN_BUDGET) {
    return starts.some(([x, y]) => locateInParts(x, y, sourceParts) !== "outside");
  }
  const sourceEdges = new SegmentIndex(sourceParts);
  return starts.some(([x, y]) => sourceEdges.locate(x, y) !== "outside");
}

function countSegments(parts: PolygonCoordinates[]): number {
  let count = 0;
  for (const rings of parts) for (const ring of rings) count += Math.max(0, ring.length - 1);
  return count;
}

// ---- boxes ------------------------------------------------------------------------------------

function someEdgeTouchesBox(parts: PolygonCoordinates[], box: BoundingBox): boolean {
  for (const rings of parts) {
    for (const ring of rings) {
      for (let i = 1; i < ring.length; i++) {
        const ax = ring[i - 1][0];
        const ay = ring[i - 1][1];
        const bx = ring[i][0];
        const by = ring[i][1];
        if (segmentTouchesBox(ax, ay, bx, by, box)) return true;
      }
    }
  }
  return false;
}

/**
 * Closed segment against closed box (possibly a line or a point). Both are convex, so they are
 * disjoint only if separated along an axis or by the segment's own line.
 */
function segmentTouchesBox(ax: number, ay: number, bx: number, by: number, box: BoundingBox): boolean {
  const { minX, minY, maxX, maxY } = box;
  if ((ax < minX && bx < minX) || (ax > maxX && bx > maxX)) return false;
  if ((ay < minY && by < minY) || (ay > maxY && by > maxY)) return false;
  if (ax >= minX && ax <= maxX && ay >= minY && ay <= maxY) return true;
  const side = Math.sign(orient(ax, ay, bx, by, minX, minY));
  if (side === 0) return true;
  return (
    Math.sign(orient(ax, ay, bx, by, maxX, minY)) !== side ||
    Math.sign(orient(ax, ay, bx, by, maxX, maxY)) !== side ||
    Math.sign(orient(ax, ay, bx, by, minX, maxY)) !== side
  );
}

// ---- points against rings ---------------------------------------------------------------------

type Location = "inside" | "boundary" | "outside";

/** What one segment does to a ray cast from p towards +x. */
const MISSES = 0;
const CROSSES = 1;
const HOLDS_POINT = 2;
type RayStep = typeof MISSES | typeof CROSSES | typeof HOLDS_POINT;

/**
 * A segment counts as crossing when exactly one end lies strictly above p's line (so a vertex on
 * the line is counted once), and the crossing lies strictly right of p; orient() decides both
 * that side and whether p lies on the segment.
 */
function raySegment(px: number, py: number, ax: number, ay: number, bx: number, by: number): RayStep {
  if ((ay > py && by > py) || (ay < py && by < py) || (ax < px && bx < px)) return MISSES;
  if (ay > py !== by > py) {
    if (ax > px && bx > px) return CROSSES;
    const side = orient(ax, ay, bx, by, px, py);
    if (side === 0) return HOLDS_POINT;
    return side > 0 === by > ay ? CROSSES : MISSES;
  }
  // Both ends at or below p's line and one on it (or the whole segment along it).
  if (ax > px && bx > px) return MISSES;
  return orient(ax, ay, bx, by, px, py) === 0 ? HOLDS_POINT : MISSES;
}

/** Even-odd over every ring of every part: right for valid (multi)polygons, whose parts' interiors are disjoint. */
function locateInParts(px: number, py: number, parts: PolygonCoordinates[]): Location {
  let inside = false;
  for (const rings of parts) {
    for (const ring of rings) {
      for (let i = 1; i < ring.length; i++) {
        const ax = ring[i - 1][0];
        const ay = ring[i - 1][1];
        const bx = ring[i][0];
        const by = ring[i][1];
        const step = raySegment(px, py, ax, ay, bx, by);
        if (step === HOLDS_POINT) return "boundary";
        if (step === CROSSES) inside = !inside;
      }
    }
  }
  return inside ? "inside" : "outside";
}

// ---- segment index ----------------------------------------------------------------------------

/** Children per index node. */
const NODE_SIZE = 16;

/**
 * Every ring segment of a (multi)polygon in a static box tree. Ring order already keeps
 * neighbouring segments close, so groups of NODE_SIZE consecutive segments make tight boxes
 * without sorting, and a query costs O(log n + hits) instead of O(n).
 */
export class SegmentIndex {
  /** ax, ay, bx, by per segment. */
  private readonly ends: Float64Array;
  /**
   * levels[k], k ≥ 1: minX, minY, maxX, maxY of each node, one per NODE_SIZE nodes of level k − 1.
   * Level 0 is the segments themselves, whose boxes are read from `ends` rather than kept (half
   * the index's memory: it rides along with cached large geometries).
   */
  private readonly levels: Float64Array[];
  /** Each ring's first segment, the parts' rings in order, then the number of segments. */
  private readonly ringStarts: Int32Array;
  /** Each part's first ring (its entry in ringStarts). */
  private readonly partRings: Int32Array;
  /** Index nodes and segments looked at so far, by every query: what a caller spends is the difference. */
  visited = 0;

  constructor(parts: PolygonCoordinates[]) {
    const count = countSegments(parts);
    this.ends = new Float64Array(count * 4);
    this.partRings = new Int32Array(parts.length);
    this.ringStarts = new Int32Array(parts.reduce((n, rings) => n + rings.length, 0) + 1);
    let s = 0;
    let r = 0;
    for (const [p, rings] of parts.entries()) {
      this.partRings[p] = r;
      for (const ring of rings) {
        this.ringStarts[r++] = s / 4;
        for (let i = 1; i < ring.length; i++, s += 4) {
          const ax = ring[i - 1][0];
          const ay = ring[i - 1][1];
          const bx = ring[i][0];
          const by = ring[i][1];
          this.ends[s] = ax;
          this.ends[s + 1] = ay;
          this.ends[s + 2] = bx;
          this.ends[s + 3] = by;
        }
      }
    }
    this.ringStarts[r] = count;
    this.levels = [new Float64Array(0)];
    if (count > NODE_SIZE) this.levels.push(groupBoxes(this.ends));
    while (this.levels[this.levels.length - 1].length > NODE_SIZE * 4) {
      this.levels.push(groupBoxes(this.levels[this.levels.length - 1]));
    }
  }

  /** Nodes at `level` (level 0: segments). */
  private nodesAt(level: number): number {
    return level === 0 ? this.ends.length / 4 : this.levels[level].length / 4;
  }

  /** Whether the box of node `node` at `level` misses the box given by its corners. */
  private misses(level: number, node: number, minX: number, minY: number, maxX: number, maxY: number): boolean {
    const o = node * 4;
    if (level === 0) {
      const e = this.ends;
      return (
        Math.min(e[o], e[o + 2]) > maxX ||
        Math.max(e[o], e[o + 2]) < minX ||
        Math.min(e[o + 1], e[o + 3]) > maxY ||
        Math.max(e[o + 1], e[o + 3]) < minY
      );
    }
    const boxes = this.levels[level];
    return boxes[o] > maxX || boxes[o + 2] < minX || boxes[o + 1] > maxY || boxes[o + 3] < minY;
  }

  /** The segments of ring `ring` of part `part`, as [first, end): segment first + i runs from position i to i + 1. */
  ringSegments(part: number, ring: number): { first: number; end: number } {
    const r = this.partRings[part] + ring;
    return { first: this.ringStarts[r], end: this.ringStarts[r + 1] };
  }

  /** The part and ring that segment `segment` belongs to. */
  ringOf(segment: number): { part: number; ring: number } {
    const r = lastAtMost(this.ringStarts, segment, this.ringStarts.length - 2);
    const part = lastAtMost(this.partRings, r, this.partRings.length - 1);
    return { part, ring: r - this.partRings[part] };
  }

  /** The segments whose boxes meet `window`, in order; null as soon as there are more than `limit`. */
  segmentsNear(window: BoundingBox, limit = Infinity): number[] | null {
    const found: number[] = [];
    const over = this.someNear(window, (s) => {
      found.push(s);
      return found.length > limit;
    });
    return over ? null : found;
  }

  /**
   * The segments that the ray from (px, py) towards +x crosses (as locate counts them), in order;
   * null as soon as there are more than `limit`. The point must not lie on any.
   */
  segmentsCrossingRay(px: number, py: number, limit = Infinity): number[] | null {
    const e = this.ends;
    const found: number[] = [];
    const over = this.someNear({ minX: px, minY: py, maxX: Infinity, maxY: py }, (s) => {
      if (raySegment(px, py, e[s * 4], e[s * 4 + 1], e[s * 4 + 2], e[s * 4 + 3]) === CROSSES) found.push(s);
      return found.length > limit;
    });
    return over ? null : found;
  }

  /**
   * The angle (radians, counter-clockwise positive) that the path along segments [first, end) of
   * one ring turns about (cx, cy), which no segment of it may pass through. A run of segments whose
   * box leaves out the point stays in a half-plane without it, so it turns less than half a turn:
   * the difference of its ends' angles. Only the nodes whose boxes hold the point are opened, so a
   * run far from the point costs O(log n) nodes.
   */
  sweptAngle(first: number, end: number, cx: number, cy: number): number {
    let angle = 0;
    this.eachNodeIn(first, end, (level, node) => {
      angle += this.nodeSwept(level, node, cx, cy);
    });
    return angle;
  }

  private nodeSwept(level: number, node: number, cx: number, cy: number): number {
    this.visited++;
    const span = NODE_SIZE ** level;
    const e = this.ends;
    if (level === 0 || this.misses(level, node, cx, cy, cx, cy)) {
      const first = node * span * 4;
      const last = (Math.min((node + 1) * span, this.ends.length / 4) - 1) * 4;
      return turn(e[first] - cx, e[first + 1] - cy, e[last + 2] - cx, e[last + 3] - cy);
    }
    let angle = 0;
    const children = this.nodesAt(level - 1);
    for (let child = node * NODE_SIZE; child < Math.min((node + 1) * NODE_SIZE, children); child++) {
      angle += this.nodeSwept(level - 1, child, cx, cy);
    }
    return angle;
  }

  /** Calls `visit` on the largest nodes that together hold exactly the segments [first, end), in order. */
  private eachNodeIn(first: number, end: number, visit: (level: number, node: number) => void): void {
    const walk = (level: number, node: number): void => {
      const span = NODE_SIZE ** level;
      const from = node * span;
      const to = from + span;
      if (to <= first || from >= end) return;
      if ((first <= from && to <= end) || level === 0) {
        visit(level, node);
        return;
      }
      this.visited++;
      const children = this.nodesAt(level - 1);
      for (let child = node * NODE_SIZE; child < Math.min((node + 1) * NODE_SIZE, children); child++) {
        walk(level - 1, child);
      }
    };
    const top = this.levels.length - 1;
    for (let node = 0; node < this.nodesAt(top); node++) walk(top, node);
  }

  /** Whether any indexed segment's box meets `window`. */
  someSegmentNear(window: BoundingBox): boolean {
    return this.someNear(window, () => true);
  }

  /** Whether any indexed segment shares a point with segment ab. */
  someSegmentMeets(ax: number, ay: number, bx: number, by: number): boolean {
    const e = this.ends;
    const window = { minX: Math.min(ax, bx), minY: Math.min(ay, by), maxX: Math.max(ax, bx), maxY: Math.max(ay, by) };
    return this.someNear(window, (s) =>
      segmentsMeet(ax, ay, bx, by, e[s * 4], e[s * 4 + 1], e[s * 4 + 2], e[s * 4 + 3]),
    );
  }

  /** Ray casting towards +x over the segments whose boxes reach the ray. */
  locate(px: number, py: number): Location {
    const e = this.ends;
    let inside = false;
    let onBoundary = false;
    this.someNear({ minX: px, minY: py, maxX: Infinity, maxY: py }, (s) => {
      const step = raySegment(px, py, e[s * 4], e[s * 4 + 1], e[s * 4 + 2], e[s * 4 + 3]);
      if (step === CROSSES) inside = !inside;
      onBoundary = step === HOLDS_POINT;
      return onBoundary;
    });
    if (onBoundary) return "boundary";
    return inside ? "inside" : "outside";
  }

  /** Calls `visit` on each segment whose box meets `window` until it answers true. */
  private someNear(window: BoundingBox, visit: (segment: number) => boolean): boolean {
    const top = this.levels.length - 1;
    const nodes = this.nodesAt(top);
    for (let node = 0; node < nodes; node++) {
      if (this.someNearIn(top, node, window, visit)) return true;
    }
    return false;
  }

  private someNearIn(level: number, node: number, window: BoundingBox, visit: (segment: number) => boolean): boolean {
    this.visited++;
    if (this.misses(level, node, window.minX, window.minY, window.maxX, window.maxY)) return false;
    if (level === 0) return visit(node);
    const end = Math.min((node + 1) * NODE_SIZE, this.nodesAt(level - 1));
    for (let child = node * NODE_SIZE; child < end; child++) {
      if (this.someNearIn(level - 1, child, window, visit)) return true;
    }
    return false;
  }
}

/** The last index i ≤ `last` with values[i] ≤ target (values ascending, values[0] ≤ target). */
function lastAtMost(values: Int32Array, target: number, last: number): number {
  let low = 0;
  let high = last;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (values[middle] <= target) low = middle;
    else high = middle - 1;
  }
  return low;
}

/** The angle from direction (ax, ay) to (bx, by), in (−π, π]. */
function turn(ax: number, ay: number, bx: number, by: number): number {
  return Math.atan2(ax * by - ay * bx, ax * bx + ay * by);
}

/**
 * One box per NODE_SIZE consecutive items of four numbers, each read as two points: a segment's
 * ends (ax, ay, bx, by), or a box's corners (minX, minY, maxX, maxY), so one pass serves both.
 */
function groupBoxes(items: Float64Array): Float64Array {
  const count = items.length / 4;
  const groups = new Float64Array(Math.ceil(count / NODE_SIZE) * 4);
  for (let g = 0; g * NODE_SIZE < count; g++) {
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    const end = Math.min(count, (g + 1) * NODE_SIZE) * 4;
    for (let o = g * NODE_SIZE * 4; o < end; o += 2) {
      if (items[o] < minX) minX = items[o];
      if (items[o] > maxX) maxX = items[o];
      if (items[o + 1] < minY) minY = items[o + 1];
      if (items[o + 1] > maxY) maxY = items[o + 1];
    }
    groups[g * 4] = minX;
    groups[g * 4 + 1] = minY;
    groups[g * 4 + 2] = maxX;
    groups[g * 4 + 3] = maxY;
  }
  return groups;
}

// ---- exact predicates -------------------------------------------------------------------------

/** Whether closed segments ab and cd share a point (zero-length segments included). */
function segmentsMeet(
  ax: number,
  ay: number,
  bx: number,
  by: number,
  cx: number,
  cy: number,
  dx: number,
  dy: number,
): boolean {
  if (Math.max(ax, bx) < Math.min(cx, dx) || Math.max(cx, dx) < Math.min(ax, bx)) return false;
  if (Math.max(ay, by) < Math.min(cy, dy) || Math.max(cy, dy) < Math.min(ay, by)) return false;
  // Each segment must not lie strictly on one side of the other's line. When all four points are
  // on one line both tests pass and the box overlap above decides; when ab is a single point, the
  // second test asks whether it lies on cd.
  const c = Math.sign(orient(ax, ay, bx, by, cx, cy));
  const d = Math.sign(orient(ax, ay, bx, by, dx, dy));
  if (c * d > 0) return false;
  const a = Math.sign(orient(cx, cy, dx, dy, ax, ay));
  const b = Math.sign(orient(cx, cy, dx, dy, bx, by));
  return a * b <= 0;
}

/** 2^-53: half an ulp of 1, the relative rounding error of one double operation. */
const EPSILON = 2 ** -53;
/** Shewchuk's bound on the error of the plain double determinant in orient(). */
const ORIENT_ERROR_BOUND = (3 + 16 * EPSILON) * EPSILON;
/** Splits a double into two 26-bit halves whose products are exact (Dekker). */
const SPLITTER = 2 ** 27 + 1;

/**
 * Positive when c lies left of a→b, negative when right, zero when on the line; the sign is
 * exact (Shewchuk's filter, then an exact expansion sum when the double result is too close to 0).
 */
export function orient(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const left = (ax - cx) * (by - cy);
  const right = (ay - cy) * (bx - cx);
  const det = left - right;
  let sum: number;
  if (left > 0) {
    if (right <= 0) return det;
    sum = left + right;
  } else if (left < 0) {
    if (right >= 0) return det;
    sum = -left - right;
  } else {
    return det;
  }
  if (Math.abs(det) >= ORIENT_ERROR_BOUND * sum) return det;
  return exactOrient(ax, ay, bx, by, cx, cy);
}

/**
 * The turn from direction p1→p2 to direction q1→q2: (p2 − p1) × (q2 − q1), positive
 * counter-clockwise, 0 when parallel; the sign is exact. The differences round once each, the
 * products and their difference once more, so the double result is off by at most
 * ~4ε (|ux·vy| + |uy·vx|); closer to 0 than twice that, the eight products are summed exactly.
 */
export function directionTurn(
  p1x: number,
  p1y: number,
  p2x: number,
  p2y: number,
  q1x: number,
  q1y: number,
  q2x: number,
  q2y: number,
): number {
  const left = (p2x - p1x) * (q2y - q1y);
  const right = (p2y - p1y) * (q2x - q1x);
  const cross = left - right;
  if (Math.abs(cross) > 8 * EPSILON * (Math.abs(left) + Math.abs(right))) return cross;
  let length = 0;
  length = addProduct(length, p2x, q2y);
  length = addProduct(length, -p2x, q1y);
  length = addProduct(length, -p1x, q2y);
  length = addProduct(length, p1x, q1y);
  length = addProduct(length, -p2y, q2x);
  length = addProduct(length, p2y, q1x);
  length = addProduct(length, p1y, q2x);
  length = addProduct(length, -p1y, q1x);
  return length === 0 ? 0 : expansion[length - 1];
}

/**
 * Scratch expansion for the exact sums: nonoverlapping components in increasing magnitude, at most
 * two per product (directionTurn sums eight).
 */
const expansion = new Float64Array(16);

/** The determinant as ax·by − ay·bx + bx·cy − by·cx + cx·ay − cy·ax, summed without rounding. */
function exactOrient(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  let length = 0;
  length = addProduct(length, ax, by);
  length = addProduct(length, -ay, bx);
  length = addProduct(length, bx, cy);
  length = addProduct(length, -by, cx);
  length = addProduct(length, cx, ay);
  length = addProduct(length, -cy, ax);
  // The largest component outweighs all the others together, so it carries the sign.
  return length === 0 ? 0 : expansion[length - 1];
}

/** Adds a·b exactly: the rounded product and its rounding error (Dekker's two-product). */
function addProduct(length: number, a: number, b: number): number {
  const product = a * b;
  let c = SPLITTER * a;
  const aHigh = c - (c - a);
  const aLow = a - aHigh;
  c = SPLITTER * b;
  const bHigh = c - (c - b);
  const bLow = b - bHigh;
  const error = aLow * bLow - (product - aHigh * bHigh - aLow * bHigh - aHigh * bLow);
  return growExpansion(growExpansion(length, error), product);
}

/** Shewchuk's Grow-Expansion with zero elimination: adds one double to the scratch expansion exactly. */
function growExpansion(length: number, value: number): number {
  let sum = value;
  let kept = 0;
  for (let i = 0; i < length; i++) {
    const component = expansion[i];
    const total = sum + component;
    const componentPart = total - sum;
    const sumPart = total - componentPart;
    const error = sum - sumPart + (component - componentPart);
    sum = total;
    if (error !== 0) expansion[kept++] = error;
  }
  if (sum !== 0) expansion[kept++] = sum;
  return kept;
}
