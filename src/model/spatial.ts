import type { BoundingBox, SourceGeometry } from "../geo/types.js";
import type { ConflictMeasure } from "./history.js";
import type { UnepOverlapRecord } from "./records.js";

/** What a conflict decision needs to know of a source (docs/api.md §8). */
export interface SpatialSubject {
  geometry: SourceGeometry;
  bbox: BoundingBox;
  areaM2: number;
  startAt: number;
  endAt: number;
  attributeType: readonly string[];
}

/**
 * Decides whether two sources conflict. Stores that do spatial analysis apply it to the
 * candidates their spatial index finds, inside the write's transaction; ledger/conflict.ts
 * implements it so every store applies the same rule.
 */
export interface ConflictPolicy {
  conflicts(a: SpatialSubject, b: SpatialSubject): boolean;
  /**
   * What the conflict of `a` with `b` measures, from `a`'s side; null when they do not conflict.
   * The overlays of one `a.geometry` object share one allowance (docs/api.md §8.5; one create
   * request's sources share one, geo/overlay-allowances.ts): keep the geometry object as given.
   */
  measure(a: SpatialSubject, b: SpatialSubject): ConflictMeasure | null;
}

/** A protected area of a loaded layer (docs/api.md §8), as a store's spatial index hands it over. */
export interface ProtectedArea {
  /** WDPAID, as a string. Parcels of one site share it. */
  id: string;
  name: string;
  designation: string;
  iucnCategory: string;
  geometry: SourceGeometry;
  bbox: BoundingBox;
}

/**
 * Computes a source's `unep_overlap` (docs/api.md §8) from the protected areas of the active layer
 * whose bounding boxes meet the source's. Stores that hold a protected-area layer find the
 * candidates with their spatial index and apply it on create; protected-areas/overlap.ts
 * implements it so every store computes the same record. Never throws for geometric reasons
 * (overlay failures fall back to an estimate).
 */
export interface ProtectedAreaPolicy {
  overlap(
    subject: Pick<SpatialSubject, "geometry" | "bbox" | "areaM2">,
    dataset: string,
    candidates: readonly ProtectedArea[],
  ): UnepOverlapRecord;
}
