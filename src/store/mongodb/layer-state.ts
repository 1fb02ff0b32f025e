/**
 * The protected-area layers' state on MongoDB, as pure transitions of one document.
 *
 * Every layer's state lives in a single document of the `protected_area_layers` collection
 * (`_id: "layers"`): the active layer (at most one), the layers being loaded, and the retired
 * layers whose areas may still be stored. A layer goes loading → active → retired, as on the
 * embedded store (store/protected-area-layers.ts). Because it is one document, every transition is one
 * atomic single-document write: activation swaps the new layer in and retires the old one in the
 * same write, so a reader sees either the old layer or the new one, never both or neither. No
 * multi-document transaction is needed to change the state, which keeps the import working on a
 * sharded cluster without distributed transactions.
 *
 * Writers (imports, garbage collection) read the document, compute the next state here, and
 * replace it only if its `version` is still the one they read (optimistic concurrency, see
 * protected-areas.ts); a concurrent change makes them read again and recompute. Readers (the
 * store's creates) never write it.
 */
import type { BeginImport, LayerInfo, LayerStatus } from "../protected-area-layers.js";

/** `_id` of the one state document. */
export const LAYER_STATE_ID = "layers";

/** A loading or active layer. Times are BSON dates. */
export interface LayerDocument {
  /** `pal_<ULID>`; the `layer_id` of its areas. Never reused. */
  id: string;
  dataset: string;
  source_file: string;
  started_at: Date;
  /** Last batch written by the importing process; a loading layer without news is abandoned. */
  heartbeat_at: Date;
  /** When it became active; null while loading. */
  imported_at: Date | null;
  feature_count: number;
  rejected_count: number;
}

/** A retired layer, kept until its areas are deleted and a grace period has passed (see forgetRetired). */
export interface RetiredLayerDocument {
  id: string;
  retired_at: Date;
}

export interface LayerStateDocument {
  _id: typeof LAYER_STATE_ID;
  /** Incremented by every write; a write applies only to the version it was computed from. */
  version: number;
  active: LayerDocument | null;
  /** In order of start. */
  loading: LayerDocument[];
  retired: RetiredLayerDocument[];
}

/** The state before the first import: version 0 means "no document yet". */
export function emptyLayerState(): LayerStateDocument {
  return { _id: LAYER_STATE_ID, version: 0, active: null, loading: [], retired: [] };
}

export function layerInfo(layer: LayerDocument): LayerInfo {
  return {
    dataset: layer.dataset,
    sourceFile: layer.source_file,
    featureCount: layer.feature_count,
    rejectedCount: layer.rejected_count,
    startedAt: layer.started_at.getTime(),
    importedAt: layer.imported_at === null ? null : layer.imported_at.getTime(),
    heartbeatAt: layer.heartbeat_at.getTime(),
  };
}

export function layerStatus(state: LayerStateDocument): LayerStatus {
  return { active: state.active === null ? null : layerInfo(state.active), importing: state.loading.map(layerInfo) };
}

function retire(ids: readonly string[], at: Date): RetiredLayerDocument[] {
  return ids.map((id) => ({ id, retired_at: at }));
}

/**
 * Starting an import: refused (`busy`) while another loading layer's heartbeat is younger than
 * `staleAfterMs`, unless `force`; otherwise every loading layer is retired (abandoned or taken
 * over) and a new one starts. `retiredAt` stamps the retirements (the layers' own clock).
 */
export function beginLayer(
  state: LayerStateDocument,
  options: BeginImport,
  id: string,
  retiredAt: Date,
): { busy: LayerInfo } | { next: LayerStateDocument; layer: LayerDocument } {
  const alive = state.loading.find((layer) => layer.heartbeat_at.getTime() > options.now - options.staleAfterMs);
  if (alive !== undefined && !options.force) return { busy: layerInfo(alive) };
  const layer: LayerDocument = {
    id,
    dataset: options.dataset,
    source_file: options.sourceFile,
    started_at: new Date(options.now),
    heartbeat_at: new Date(options.now),
    imported_at: null,
    feature_count: 0,
    rejected_count: 0,
  };
  return {
    layer,
    next: {
      ...state,
      loading: [layer],
      retired: [
        ...state.retired,
        ...retire(
          state.loading.map((l) => l.id),
          retiredAt,
        ),
      ],
    },
  };
}

/** A batch of `added` areas was written: a sign of life. Null when the layer is no longer loading. */
export function heartbeatLayer(
  state: LayerStateDocument,
  id: string,
  added: number,
  now: number,
): LayerStateDocument | null {
  if (!state.loading.some((layer) => layer.id === id)) return null;
  return {
    ...state,
    loading: state.loading.map((layer) =>
      layer.id === id ? { ...layer, heartbeat_at: new Date(now), feature_count: layer.feature_count + added } : layer,
    ),
  };
}

/**
 * Makes the loading layer `id` the active one and retires the previous active layer, in one
 * write. Other loading layers stay loading (as on the embedded store). Null when `id` is no
 * longer loading (another import took over).
 */
export function activateLayer(
  state: LayerStateDocument,
  id: string,
  counts: { featureCount: number; rejectedCount: number },
  now: number,
  retiredAt: Date,
): { next: LayerStateDocument; active: LayerDocument } | null {
  const layer = state.loading.find((l) => l.id === id);
  if (layer === undefined) return null;
  const active: LayerDocument = {
    ...layer,
    imported_at: new Date(now),
    heartbeat_at: new Date(now),
    feature_count: counts.featureCount,
    rejected_count: counts.rejectedCount,
  };
  return {
    active,
    next: {
      ...state,
      active,
      loading: state.loading.filter((l) => l.id !== id),
      retired: state.active === null ? state.retired : [...state.retired, ...retire([state.active.id], retiredAt)],
    },
  };
}

/** Retires the loading layer `id`; null (nothing to write) when it is not loading. */
export function abandonLayer(state: LayerStateDocument, id: string, retiredAt: Date): LayerStateDocument | null {
  if (!state.loading.some((layer) => layer.id === id)) return null;
  return {
    ...state,
    loading: state.loading.filter((layer) => layer.id !== id),
    retired: [...state.retired, ...retire([id], retiredAt)],
  };
}

/**
 * Forgets the retired layers `ids` whose areas were deleted, once they were retired at least
 * `graceMs` before `now`. The grace covers an import that was taken over (`--force`) while one of
 * its batches was still on the way: the batch may land after the areas were deleted, and the
 * next garbage collection deletes it as long as the layer is still listed. Null when nothing
 * is to be forgotten.
 */
export function forgetRetired(
  state: LayerStateDocument,
  ids: ReadonlySet<string>,
  now: number,
  graceMs: number,
): LayerStateDocument | null {
  const keep = state.retired.filter((r) => !ids.has(r.id) || r.retired_at.getTime() > now - graceMs);
  if (keep.length === state.retired.length) return null;
  return { ...state, retired: keep };
}
