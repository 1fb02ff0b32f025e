import { clearlyTurns, segmentsMayTouch, TOUCH_TOLERANCE_DEG } from "./planar.js";
import type { Position } from "./types.js";

/** Segment-pair tests allowed per segment before the sweep gives up on a crowded ring. */
const WORK_PER_SEGMENT = 32;

/**
 * True only if the closed ring is certainly simple: it turns at every vertex (no repeated
 * positions, no straight or folded-back runs) and no two non-adjacent edges come near each
 * other. A hole-free polygon with such a ring is valid under JTS's rules, so this lets the
 * common case skip IsValidOp's topology graph, which costs several times more.
 *
 * False means "not certain": touching or collinear configurations, and rings so crowded along
 * both axes that the sweep would turn quadratic, all answer false and are left to JTS.
 */
export function isClearlySimpleRing(ring: Position[]): boolean {
  const edges = ring.length - 1;
  if (edges < 3) return false;
  for (let i = 0; i < edges; i++) {
    if (!clearlyTurns(ring[i === 0 ? edges - 1 : i - 1], ring[i], ring[i + 1])) return false;
  }
  return edges <= SMALL_RING_EDGES ? noNearEdgesBruteForce(ring, edges) : noNearEdgesSweep(ring, edges);
}

/** Below this many edges, trying every pair beats sorting (and most parts are this small). */
const SMALL_RING_EDGES = 16;

function isAdjacent(i: number, j: number, edges: number): boolean {
  const gap = Math.abs(i - j);
  return gap === 1 || gap === edges - 1;
}

function noNearEdgesBruteForce(ring: Position[], edges: number): boolean {
  for (let i = 0; i < edges; i++) {
    for (let j = i + 2; j < edges; j++) {
      if (!isAdjacent(i, j, edges) && segmentsMayTouch(ring[i], ring[i + 1], ring[j], ring[j + 1])) return false;
    }
  }
  return true;
}

function noNearEdgesSweep(ring: Position[], edges: number): boolean {
  // Sweep along the axis where edges overlap least; lo/hi are each edge's extent on that axis.
  const axis = crowding(ring, 0) <= crowding(ring, 1) ? 0 : 1;
  const lo = new Float64Array(edges);
  const hi = new Float64Array(edges);
  const order = new Uint32Array(edges);
  for (let i = 0; i < edges; i++) {
    lo[i] = Math.min(ring[i][axis], ring[i + 1][axis]);
    hi[i] = Math.max(ring[i][axis], ring[i + 1][axis]);
    order[i] = i;
  }
  // -1/0/1 rather than a difference: a comparator's double result is boxed on every call.
  order.sort((a, b) => (lo[a] < lo[b] ? -1 : lo[a] > lo[b] ? 1 : 0));

  let budget = WORK_PER_SEGMENT * edges;
  const active: number[] = [];
  for (const i of order) {
    for (let k = active.length - 1; k >= 0; k--) {
      const j = active[k];
      if (hi[j] + TOUCH_TOLERANCE_DEG < lo[i]) {
        active[k] = active[active.length - 1];
        active.pop();
        continue;
      }
      if (--budget < 0) return false;
      if (!isAdjacent(i, j, edges) && segmentsMayTouch(ring[i], ring[i + 1], ring[j], ring[j + 1])) return false;
    }
    active.push(i);
  }
  return true;
}

/** Sum of edge extents over the ring's extent along one axis; low means a sweep there stays lean. */
function crowding(ring: Position[], axis: 0 | 1): number {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (let i = 1; i < ring.length; i++) {
    const a = ring[i - 1][axis];
    const b = ring[i][axis];
    sum += Math.abs(b - a);
    if (b < min) min = b;
    if (b > max) max = b;
  }
  return max > min ? sum / (max - min) : Infinity;
}
