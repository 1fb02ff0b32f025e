import type { BoundingBox, Position } from "./types.js";

/**
 * Degrees. Two things closer than this are treated as touching by the conservative tests below.
 * It is far above the rounding error of lon/lat arithmetic (~1e-13°) and far below any real
 * feature (1e-9° ≈ 0.1 mm), so "maybe touching" never hides a real touch and rarely fires falsely.
 */
export const TOUCH_TOLERANCE_DEG = 1e-9;

/**
 * The length of (dx, dy). Not Math.hypot: V8 runs that as a builtin that allocates on every call
 * (~28 ns against ~2.5); degrees neither overflow nor underflow when squared. Hot geometry loops
 * here also read positions by index rather than destructuring them: positions arrive in several
 * element kinds (JSON, the RPC codec, stored text), and destructuring such arrays falls back to the
 * iterator protocol, allocating (docs/benchmarks.md, "Allocation per create").
 */
export function length(dx: number, dy: number): number {
  return Math.sqrt(dx * dx + dy * dy);
}

/** The box of ring[first..last], both ends included (the whole ring by default). */
export function ringBox(ring: Position[], first = 0, last = ring.length - 1): BoundingBox {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (let i = first; i <= last; i++) {
    const x = ring[i][0];
    const y = ring[i][1];
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  return { minX, minY, maxX, maxY };
}

export function boxContains(outer: BoundingBox, inner: BoundingBox): boolean {
  return outer.minX <= inner.minX && inner.maxX <= outer.maxX && outer.minY <= inner.minY && inner.maxY <= outer.maxY;
}

export function distanceToSegment(p: Position, a: Position, b: Position): number {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const lengthSquared = dx * dx + dy * dy;
  let t = lengthSquared === 0 ? 0 : ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / lengthSquared;
  t = Math.max(0, Math.min(1, t));
  return length(p[0] - (a[0] + t * dx), p[1] - (a[1] + t * dy));
}

/** How many of the ring's segments pass within TOUCH_TOLERANCE_DEG of p. */
export function countSegmentsNear(p: Position, ring: Position[]): number {
  let count = 0;
  for (let i = 1; i < ring.length; i++) {
    if (distanceToSegment(p, ring[i - 1], ring[i]) <= TOUCH_TOLERANCE_DEG) count++;
  }
  return count;
}

/** Even-odd ray crossing; a point on the ring itself may count either way. */
export function pointInRing(p: Position, ring: Position[]): boolean {
  const x = p[0];
  const y = p[1];
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const xi = ring[i][0];
    const yi = ring[i][1];
    const xj = ring[j][0];
    const yj = ring[j][1];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/**
 * False only when segments ab and cd certainly do not meet (one lies clearly on one side of the
 * other's line). Near-misses, collinear and zero-length cases answer true, so a caller can skip
 * exact work when this says false and must do it otherwise.
 */
export function segmentsMayTouch(a: Position, b: Position, c: Position, d: Position): boolean {
  const t = TOUCH_TOLERANCE_DEG;
  if (Math.max(a[0], b[0]) + t < Math.min(c[0], d[0]) || Math.max(c[0], d[0]) + t < Math.min(a[0], b[0])) return false;
  if (Math.max(a[1], b[1]) + t < Math.min(c[1], d[1]) || Math.max(c[1], d[1]) + t < Math.min(a[1], b[1])) return false;
  return !clearlyOneSide(a, b, c, d) && !clearlyOneSide(c, d, a, b);
}

/** Both p and q lie more than TOUCH_TOLERANCE_DEG from line ab, on the same side. */
function clearlyOneSide(a: Position, b: Position, p: Position, q: Position): boolean {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const margin = TOUCH_TOLERANCE_DEG * length(dx, dy);
  if (margin === 0) return false;
  const sp = dx * (p[1] - a[1]) - dy * (p[0] - a[0]);
  const sq = dx * (q[1] - a[1]) - dy * (q[0] - a[0]);
  return (sp > margin && sq > margin) || (sp < -margin && sq < -margin);
}

/** Whether the turn a→b→c is clearly not straight (so the two segments meet only at b). */
export function clearlyTurns(a: Position, b: Position, c: Position): boolean {
  const ux = b[0] - a[0];
  const uy = b[1] - a[1];
  const vx = c[0] - b[0];
  const vy = c[1] - b[1];
  const margin = TOUCH_TOLERANCE_DEG * Math.sqrt(Math.max(ux * ux + uy * uy, vx * vx + vy * vy));
  return Math.abs(ux * vy - uy * vx) > margin && margin > 0;
}

/**
 * Every vertex lies within TOUCH_TOLERANCE_DEG of the line through the first vertex and the vertex
 * farthest from it.
 */
export function isCollinear(ring: Position[]): boolean {
  const origin = ring[0];
  let far: Position | undefined;
  let farDistance = 0;
  for (const p of ring) {
    const distance = length(p[0] - origin[0], p[1] - origin[1]);
    if (distance > farDistance) {
      far = p;
      farDistance = distance;
    }
  }
  if (far === undefined) return true;
  const dx = far[0] - origin[0];
  const dy = far[1] - origin[1];
  return ring.every(
    (p) => Math.abs(dx * (p[1] - origin[1]) - dy * (p[0] - origin[0])) / farDistance <= TOUCH_TOLERANCE_DEG,
  );
}
