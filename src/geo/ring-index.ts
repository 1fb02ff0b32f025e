import type { BoundingBox, Position } from "./types.js";

/** Consecutive segments per chunk: small enough to skip most of a ring, large enough to index cheaply. */
const CHUNK_SEGMENTS = 32;

/**
 * A closed ring with the bounding box of every run of CHUNK_SEGMENTS segments, so queries about
 * a small area or a single point skip most of a large ring. Used where one big ring meets many
 * small ones (islands in a lake, many holes in one field), which would otherwise be quadratic.
 */
export class RingIndex {
  readonly box: BoundingBox;
  /** minX, minY, maxX, maxY per chunk. */
  private readonly chunkBoxes: Float64Array;

  constructor(readonly ring: Position[]) {
    const segments = Math.max(0, ring.length - 1);
    const chunks = Math.ceil(segments / CHUNK_SEGMENTS);
    this.chunkBoxes = new Float64Array(chunks * 4);
    for (let c = 0; c < chunks; c++) {
      let minX = Infinity;
      let minY = Infinity;
      let maxX = -Infinity;
      let maxY = -Infinity;
      const end = Math.min(ring.length, (c + 1) * CHUNK_SEGMENTS + 1);
      for (let i = c * CHUNK_SEGMENTS; i < end; i++) {
        const x = ring[i][0];
        const y = ring[i][1];
        if (x < minX) minX = x;
        if (x > maxX) maxX = x;
        if (y < minY) minY = y;
        if (y > maxY) maxY = y;
      }
      this.chunkBoxes.set([minX, minY, maxX, maxY], c * 4);
    }
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (let c = 0; c < chunks; c++) {
      minX = Math.min(minX, this.chunkBoxes[c * 4]);
      minY = Math.min(minY, this.chunkBoxes[c * 4 + 1]);
      maxX = Math.max(maxX, this.chunkBoxes[c * 4 + 2]);
      maxY = Math.max(maxY, this.chunkBoxes[c * 4 + 3]);
    }
    this.box = { minX, minY, maxX, maxY };
  }

  /** Segments (as start indices into `ring`) whose chunk meets `window`, a superset of those that do. */
  segmentsNear(window: BoundingBox): number[] {
    const found: number[] = [];
    const b = this.chunkBoxes;
    for (let c = 0; c * 4 < b.length; c++) {
      if (
        b[c * 4] > window.maxX ||
        b[c * 4 + 2] < window.minX ||
        b[c * 4 + 1] > window.maxY ||
        b[c * 4 + 3] < window.minY
      )
        continue;
      const end = Math.min(this.ring.length - 1, (c + 1) * CHUNK_SEGMENTS);
      for (let i = c * CHUNK_SEGMENTS; i < end; i++) found.push(i);
    }
    return found;
  }

  /** Even-odd ray casting towards +x; only meaningful for points not on the ring. */
  contains(p: Position): boolean {
    const x = p[0];
    const y = p[1];
    const b = this.chunkBoxes;
    const ring = this.ring;
    let inside = false;
    for (let c = 0; c * 4 < b.length; c++) {
      // A crossing edge spans y and reaches beyond x, so its chunk does too.
      if (b[c * 4 + 1] > y || b[c * 4 + 3] < y || b[c * 4 + 2] < x) continue;
      const end = Math.min(ring.length - 1, (c + 1) * CHUNK_SEGMENTS);
      for (let i = c * CHUNK_SEGMENTS; i < end; i++) {
        const xi = ring[i][0];
        const yi = ring[i][1];
        const xj = ring[i + 1][0];
        const yj = ring[i + 1][1];
        if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
      }
    }
    return inside;
  }
}
