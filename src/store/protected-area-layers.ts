import type { ProtectedArea } from "../model/spatial.js";

/**
 * What the protected-area import needs of a store, and what `status` reads. The embedded SQLite
 * store implements it (store/sqlite/protected-areas.ts); store/open.ts hands it out.
 *
 * A layer goes loading → active → retired. Only the active layer serves `unep_overlap`; at most one
 * is active. A new import writes a loading layer that no reader looks at, and `activate` swaps it
 * in with one write, so readers see the old layer until the new one is complete, and a failed or
 * interrupted import leaves the old layer in place.
 */
export interface ProtectedAreaLayers {
  /**
   * Starts a loading layer, unless another import's loading layer showed life (a heartbeat)
   * within `staleAfterMs` and `force` is not set: then returns that import as `busy`. Loading
   * layers older than that are taken as abandoned and retired.
   */
  begin(options: BeginImport): Promise<{ started: LayerImport } | { busy: LayerInfo }>;
  /** The active layer and any imports in progress. */
  status(): Promise<LayerStatus>;
  /** Deletes the areas of retired layers, a bounded batch per transaction; returns how many. */
  collectGarbage(): Promise<number>;
  close(): Promise<void>;
}

export interface BeginImport {
  dataset: string;
  sourceFile: string;
  now: number;
  staleAfterMs: number;
  force: boolean;
}

/** A loading layer being written by this process. */
export interface LayerImport {
  /** Appends areas to the loading layer, in one transaction; also records a heartbeat. */
  append(areas: readonly NewProtectedArea[], now: number): Promise<void>;
  /**
   * Makes this layer the active one and retires the previous, in one transaction. Throws
   * LayerSupersededError when the layer is no longer loading (another import took over).
   */
  activate(counts: { featureCount: number; rejectedCount: number }, now: number): Promise<LayerInfo>;
  /** Retires the loading layer; its areas are deleted by collectGarbage. */
  abandon(): Promise<void>;
}

/** A protected area to store, with its geodesic area. */
export interface NewProtectedArea extends ProtectedArea {
  areaM2: number;
}

export interface LayerInfo {
  dataset: string;
  sourceFile: string;
  /** Areas stored (for a loading layer: so far). */
  featureCount: number;
  rejectedCount: number;
  /** Epoch milliseconds. */
  startedAt: number;
  /** When the layer became active; null while loading. */
  importedAt: number | null;
  /** Last sign of life of the import that writes it. */
  heartbeatAt: number;
}

export interface LayerStatus {
  active: LayerInfo | null;
  importing: LayerInfo[];
}

/** `activate` found the layer no longer loading: another import (`--force`) retired it. */
export class LayerSupersededError extends Error {
  override name = "LayerSupersededError";

  constructor(layerId: string | number) {
    super(`protected-area layer ${layerId} is no longer loading: another import took over`);
  }
}
