import { boxesNear } from "./box-pairs.js";
import { segmentsMayTouch, TOUCH_TOLERANCE_DEG } from "./planar.js";
import type { RingIndex } from "./ring-index.js";
import type { BoundingBox } from "./types.js";

/**
 * Conservative: false only if no edge of p comes near an edge of q. Only edges inside the
 * overlap of the two boxes can meet, and the ring indexes find those without a full scan.
 */
export function ringsMayTouch(p: RingIndex, q: RingIndex): boolean {
  if (!boxesNear(p.box, q.box)) return false;
  const t = TOUCH_TOLERANCE_DEG;
  const window: BoundingBox = {
    minX: Math.max(p.box.minX, q.box.minX) - t,
    minY: Math.max(p.box.minY, q.box.minY) - t,
    maxX: Math.min(p.box.maxX, q.box.maxX) + t,
    maxY: Math.min(p.box.maxY, q.box.maxY) + t,
  };
  const fromP = p.segmentsNear(window);
  const fromQ = q.segmentsNear(window);
  if (fromP.length === 0 || fromQ.length === 0) return false;

  // Sweep both edge lists along x; each edge is tested only against the other ring's edges
  // whose x-range it overlaps.
  const rings = [p, q];
  const minX = (owner: number, i: number) => Math.min(rings[owner].ring[i][0], rings[owner].ring[i + 1][0]);
  const maxX = (owner: number, i: number) => Math.max(rings[owner].ring[i][0], rings[owner].ring[i + 1][0]);
  const events = [...fromP.map((i) => ({ owner: 0, i })), ...fromQ.map((i) => ({ owner: 1, i }))].sort(
    (a, b) => minX(a.owner, a.i) - minX(b.owner, b.i),
  );
  const active: number[][] = [[], []];
  for (const { owner, i } of events) {
    const other = 1 - owner;
    const candidates = active[other];
    const start = minX(owner, i);
    const [a, b] = [rings[owner].ring[i], rings[owner].ring[i + 1]];
    for (let k = candidates.length - 1; k >= 0; k--) {
      const j = candidates[k];
      if (maxX(other, j) + t < start) {
        candidates[k] = candidates[candidates.length - 1];
        candidates.pop();
      } else if (segmentsMayTouch(a, b, rings[other].ring[j], rings[other].ring[j + 1])) {
        return true;
      }
    }
    active[owner].push(i);
  }
  return false;
}
