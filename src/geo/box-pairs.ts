import { overlappingIntervalPairs } from "./interval-pairs.js";
import { TOUCH_TOLERANCE_DEG } from "./planar.js";
import type { BoundingBox } from "./types.js";

/**
 * The most pairs of boxes overlapping along the sweep's axis that intersectingBoxPairs compares
 * (~0.2 s), and the most intersecting pairs it hands back (each costs its caller a ring test).
 * Thousands of parts whose boxes all overlap (diagonal strips: 4,000 parts took 32 s and 700 MB,
 * 20,000 would have run out of memory) are beyond them; a 100 × 100 grid of fields compares
 * ~500,000 and finds none.
 */
export const MAX_SWEPT_BOX_PAIRS = 20_000_000;
export const MAX_INTERSECTING_BOX_PAIRS = 500_000;

/**
 * Index pairs (first < second) of boxes that intersect or touch, in ascending order; null when
 * there are too many to look at (MAX_SWEPT_BOX_PAIRS, MAX_INTERSECTING_BOX_PAIRS). A sweep
 * along the axis on which the boxes overlap least keeps the active list short for both a row
 * and a column of boxes.
 */
export function intersectingBoxPairs(boxes: BoundingBox[]): [number, number][] | null {
  const n = boxes.length;
  const alongX = crowding(boxes, "minX", "maxX") <= crowding(boxes, "minY", "maxY");
  const lo = new Float64Array(n);
  const hi = new Float64Array(n);
  const crossLo = new Float64Array(n);
  const crossHi = new Float64Array(n);
  const order = new Uint32Array(n);
  boxes.forEach((box, i) => {
    lo[i] = alongX ? box.minX : box.minY;
    hi[i] = alongX ? box.maxX : box.maxY;
    crossLo[i] = alongX ? box.minY : box.minX;
    crossHi[i] = alongX ? box.maxY : box.maxX;
    order[i] = i;
  });
  order.sort((a, b) => lo[a] - lo[b]);

  const t = TOUCH_TOLERANCE_DEG;
  if (
    overlappingIntervalPairs(
      lo,
      Float64Array.from(hi, (value) => value + t),
    ) > MAX_SWEPT_BOX_PAIRS
  )
    return null;
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
        if (pairs.length > MAX_INTERSECTING_BOX_PAIRS) return null;
      }
    }
    active.push(i);
  }
  return pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

export function boxesNear(a: BoundingBox, b: BoundingBox): boolean {
  const t = TOUCH_TOLERANCE_DEG;
  return a.minX <= b.maxX + t && b.minX <= a.maxX + t && a.minY <= b.maxY + t && b.minY <= a.maxY + t;
}

/** Sum of box extents over the total extent along one axis: ~1 for a row along it, ~n across it. */
function crowding(boxes: BoundingBox[], minKey: "minX" | "minY", maxKey: "maxX" | "maxY"): number {
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
