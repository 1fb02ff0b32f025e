import { polygonsOf } from "./parts.js";
import { ringBox } from "./planar.js";
import type { BoundingBox, SourceGeometry } from "./types.js";

/** Holes lie inside their exterior ring, so only exterior rings are scanned (ringBox each). */
export function boundingBox(g: SourceGeometry): BoundingBox {
  let box: BoundingBox | undefined;
  for (const rings of polygonsOf(g)) {
    const exterior = rings[0];
    if (exterior === undefined || exterior.length === 0) continue;
    const ring = ringBox(exterior);
    if (box === undefined) box = ring;
    else {
      if (ring.minX < box.minX) box.minX = ring.minX;
      if (ring.minY < box.minY) box.minY = ring.minY;
      if (ring.maxX > box.maxX) box.maxX = ring.maxX;
      if (ring.maxY > box.maxY) box.maxY = ring.maxY;
    }
  }
  if (box === undefined) throw new RangeError("cannot compute the bounding box of a geometry without positions");
  return box;
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
