import { polygonsOf } from "./parts.js";
import type { BoundingBox, SourceGeometry } from "./types.js";

/** Holes lie inside their exterior ring, so only exterior rings are scanned. */
export function boundingBox(g: SourceGeometry): BoundingBox {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const rings of polygonsOf(g)) {
    const exterior = rings[0];
    if (exterior === undefined) continue;
    for (let i = 0; i < exterior.length; i++) {
      const x = exterior[i][0];
      const y = exterior[i][1];
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
  }
  if (minX > maxX) throw new RangeError("cannot compute the bounding box of a geometry without positions");
  return { minX, minY, maxX, maxY };
}

export function boxesIntersect(a: BoundingBox, b: BoundingBox): boolean {
  return a.minX <= b.maxX && b.minX <= a.maxX && a.minY <= b.maxY && b.minY <= a.maxY;
}

/** The box both boxes cover, or null when they do not meet (edges count as meeting). */
export function boxIntersection(a: BoundingBox, b: BoundingBox): BoundingBox | null {
  const box = {
    minX: Math.max(a.minX, b.minX),
    minY: Math.max(a.minY, b.minY),
    maxX: Math.min(a.maxX, b.maxX),
    maxY: Math.min(a.maxY, b.maxY),
  };
  return box.minX <= box.maxX && box.minY <= box.maxY ? box : null;
}
