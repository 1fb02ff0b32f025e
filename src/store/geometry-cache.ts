import { countPositions } from "../geo/parts.js";
import type { SourceGeometry } from "../geo/types.js";

/**
 * Parsed geometries, least recently used dropped first once the positions held pass a budget:
 * those of the active protected-area layer (neighbouring sources keep meeting the same areas, and
 * a large marine area is megabytes to read and parse; emptied when the active layer changes, and
 * areas of a layer never change, so an entry never goes stale; shared by every store), and the
 * embedded store's large stored sources met by conflict checks (sqlite/spatial.ts; one layer).
 */
export class GeometryCache<LayerId, Key> {
  private layerId: LayerId | null = null;
  private readonly entries = new Map<Key, { geometry: SourceGeometry; positions: number; usedAt: number }>();
  private positions = 0;

  /**
   * The default is about 30 MB of parsed coordinates. With `keepUsedWithinMs`, an entry used that
   * recently is never dropped for a newcomer, which is then not kept: when the geometries in use
   * together outgrow the budget, those already held keep serving instead of each in turn pushing
   * out the next one needed (least recently used alone would miss on every read of a cycle).
   */
  constructor(
    private readonly maxPositions: number = 500_000,
    private readonly keepUsedWithinMs = 0,
    private readonly now: () => number = () => performance.now(),
  ) {}

  forLayer(layerId: LayerId): this {
    if (this.layerId !== layerId) {
      this.entries.clear();
      this.positions = 0;
      this.layerId = layerId;
    }
    return this;
  }

  get(key: Key): SourceGeometry | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined) return undefined;
    // Re-inserting moves it to the end of the Map's order: the most recently used.
    this.entries.delete(key);
    hit.usedAt = this.now();
    this.entries.set(key, hit);
    return hit.geometry;
  }

  put(key: Key, geometry: SourceGeometry): void {
    const positions = countPositions(geometry);
    if (positions > this.maxPositions || this.entries.has(key)) return;
    const now = this.now();
    for (const [oldest, entry] of this.entries) {
      if (this.positions + positions <= this.maxPositions) break;
      if (this.keepUsedWithinMs > 0 && now - entry.usedAt < this.keepUsedWithinMs) return;
      this.entries.delete(oldest);
      this.positions -= entry.positions;
    }
    this.entries.set(key, { geometry, positions, usedAt: now });
    this.positions += positions;
  }

  /** The cached geometry, or `load()`'s, kept for next time (when `put` keeps it). */
  getOrLoad(key: Key, load: () => SourceGeometry): SourceGeometry {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const geometry = load();
    this.put(key, geometry);
    return geometry;
  }

  get size(): number {
    return this.entries.size;
  }
}
