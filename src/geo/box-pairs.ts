import { TOUCH_TOLERANCE_DEG } from "./planar.js";
import type { BoundingBox } from "./types.js";

/**
 * Index pairs (first < second) of boxes that intersect or touch, in ascending order. A sweep
 * along the axis on which the boxes overlap least keeps the active list short for both a row
 * and a column of boxes.
 */
export function intersectingBoxPairs(boxes: BoundingBox[]): [number, number][] {
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
