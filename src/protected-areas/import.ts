import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { countPositions } from "../geo/parts.js";
import type { LayerImport, LayerInfo, NewProtectedArea, ProtectedAreaLayers } from "../store/protected-area-layers.js";
import { ImportAbortedError, ImportInProgressError, InputError } from "./errors.js";
import { protectedAreaFromFeature } from "./feature.js";
import { type FeatureItem, readFeatureCollection } from "./geojson-reader.js";

export const DEFAULT_BATCH_SIZE = 1_000;
/** A batch of large areas is cut earlier, so one transaction (and the memory it holds) stays bounded. */
export const DEFAULT_BATCH_POSITIONS = 250_000;
export const DEFAULT_MAX_REASONS = 20;
export const DEFAULT_PROGRESS_INTERVAL_MS = 2_000;
export const DEFAULT_PROGRESS_EVERY_FEATURES = 10_000;
/** A loading layer whose import wrote nothing for this long is taken as abandoned (killed process). */
export const DEFAULT_STALE_AFTER_MS = 5 * 60_000;
const MAX_DATASET_LENGTH = 256;

export interface ImportOptions {
  file: string;
  dataset: string;
  layers: ProtectedAreaLayers;
  batchSize?: number;
  batchPositions?: number;
  /** Rejection reasons kept for the report; the count covers them all. */
  maxReasons?: number;
  onProgress?: (progress: ImportProgress) => void;
  progressIntervalMs?: number;
  progressEveryFeatures?: number;
  signal?: AbortSignal;
  /** Take over from an import that still looks alive. */
  force?: boolean;
  staleAfterMs?: number;
  now?: () => number;
}

export interface ImportProgress {
  /** Elements of `features` read so far. */
  read: number;
  accepted: number;
  rejected: number;
  elapsedMs: number;
  featuresPerSecond: number;
}

export interface RejectedFeature {
  /** Position in the `features` array, from 0. */
  index: number;
  wdpaId: string | null;
  reason: string;
}

export interface ImportSummary extends ImportProgress {
  dataset: string;
  layer: LayerInfo;
  /** The first `maxReasons` rejections, in file order. */
  reasons: RejectedFeature[];
  /** Areas of replaced or abandoned layers deleted after the swap. */
  garbageCollected: number;
  /** Set when clearing the replaced layer failed; the import itself succeeded. */
  garbageError: string | null;
}

/** Nothing in the file could be loaded; the active layer was left as it was. */
export class NoValidFeaturesError extends InputError {
  override name = "NoValidFeaturesError";

  constructor(
    readonly progress: ImportProgress,
    readonly reasons: RejectedFeature[],
  ) {
    super(
      progress.read === 0
        ? "the FeatureCollection has no features; the loaded layer is unchanged"
        : `none of the ${progress.read} features could be loaded; the loaded layer is unchanged`,
    );
  }
}

/** Describes a rejection for people: `feature 12 (WDPAID 555): it has no geometry`. */
export function formatRejection(r: RejectedFeature): string {
  return `feature ${r.index}${r.wdpaId === null ? "" : ` (WDPAID ${r.wdpaId})`}: ${r.reason}`;
}

function checkDataset(dataset: string): string {
  const name = dataset.trim();
  if (name === "") throw new InputError('--dataset must name the dataset (for example "WDPA Jan 2025")');
  if ([...name].length > MAX_DATASET_LENGTH)
    throw new InputError(`--dataset must be at most ${MAX_DATASET_LENGTH} characters`);
  return name;
}

async function checkFile(file: string): Promise<void> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(
      code === "ENOENT" ? `no such file: ${file}` : `cannot read ${file} (${code ?? String(error)})`,
    );
  }
  if (!info.isFile()) throw new InputError(`not a file: ${file}`);
}

/** File-system errors from the read stream (permissions, a file removed mid-way) are the user's to fix. */
function asInputError(error: unknown, file: string): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return new InputError(`cannot read ${file} (${code})`);
  return error;
}

/**
 * Streams a GeoJSON FeatureCollection of WDPA-style protected areas into a new layer, and makes it
 * the active layer once every feature was read. Invalid features are counted and skipped (their
 * reasons kept up to `maxReasons`); they never stop the import. Areas are written in batched
 * transactions (`batchSize` areas or `batchPositions` positions, whichever comes first) while the
 * file is still being read, and the next chunk of the file is read only once a batch is written,
 * so memory stays bounded whatever the file's size.
 *
 * Any failure (the file is not a FeatureCollection, a read error, an interruption, the store)
 * abandons the new layer and leaves the active one as it was.
 */
export async function importProtectedAreas(options: ImportOptions): Promise<ImportSummary> {
  const now = options.now ?? Date.now;
  const dataset = checkDataset(options.dataset);
  await checkFile(options.file);
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH_SIZE);
  const batchPositions = Math.max(1, options.batchPositions ?? DEFAULT_BATCH_POSITIONS);
  const maxReasons = Math.max(0, options.maxReasons ?? DEFAULT_MAX_REASONS);
  const progressIntervalMs = options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  const progressEvery = options.progressEveryFeatures ?? DEFAULT_PROGRESS_EVERY_FEATURES;

  const features = readFeatureCollection(options.file, { signal: options.signal });
  const startedAt = now();
  let read = 0;
  let accepted = 0;
  let rejected = 0;
  const reasons: RejectedFeature[] = [];
  const progress = (): ImportProgress => {
    const elapsedMs = Math.max(0, now() - startedAt);
    return { read, accepted, rejected, elapsedMs, featuresPerSecond: elapsedMs > 0 ? (read * 1000) / elapsedMs : 0 };
  };

  // Read up to the first feature before touching the store: a file that is not a FeatureCollection
  // (when its "type" comes first) or not JSON at all is refused without starting a layer.
  let first: IteratorResult<FeatureItem>;
  try {
    first = await features.next();
  } catch (error) {
    throw asInputError(error, options.file);
  }

  const begun = await options.layers.begin({
    dataset,
    sourceFile: resolve(options.file),
    now: now(),
    staleAfterMs: options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS,
    force: options.force ?? false,
  });
  if ("busy" in begun) {
    await features.return(undefined);
    const since = Math.round((now() - begun.busy.heartbeatAt) / 1000);
    throw new ImportInProgressError(
      `another import ("${begun.busy.dataset}" from ${begun.busy.sourceFile}, ` +
        `${begun.busy.featureCount} areas so far) ` +
        `wrote its last batch ${since} s ago. Wait for it, or, if it was killed, pass --force to take over.`,
    );
  }
  const layer: LayerImport = begun.started;

  try {
    let batch: NewProtectedArea[] = [];
    let batchCount = 0;
    let lastReportAt = startedAt;
    let lastReportRead = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      await layer.append(batch, now());
      batch = [];
      batchCount = 0;
    };
    const take = async (item: FeatureItem) => {
      read++;
      const verdict = protectedAreaFromFeature(item.value);
      if (verdict.ok) {
        accepted++;
        batch.push(verdict.area);
        batchCount += countPositions(verdict.area.geometry);
        if (batch.length >= batchSize || batchCount >= batchPositions) await flush();
      } else {
        rejected++;
        if (reasons.length < maxReasons)
          reasons.push({ index: item.index, wdpaId: verdict.wdpaId, reason: verdict.reason });
      }
      if (
        options.onProgress &&
        (read - lastReportRead >= progressEvery || now() - lastReportAt >= progressIntervalMs)
      ) {
        lastReportAt = now();
        lastReportRead = read;
        options.onProgress(progress());
      }
    };

    if (!first.done) await take(first.value);
    for await (const item of features) {
      if (options.signal?.aborted) throw new ImportAbortedError("import interrupted");
      await take(item);
    }
    await flush();
    if (options.signal?.aborted) throw new ImportAbortedError("import interrupted");
    if (accepted === 0) throw new NoValidFeaturesError(progress(), reasons);

    const info = await layer.activate({ featureCount: accepted, rejectedCount: rejected }, now());
    const done = progress();
    let garbageCollected = 0;
    let garbageError: string | null = null;
    try {
      garbageCollected = await options.layers.collectGarbage();
    } catch (error) {
      garbageError = error instanceof Error ? error.message : String(error);
    }
    return { ...done, dataset, layer: info, reasons, garbageCollected, garbageError };
  } catch (error) {
    await features.return(undefined).catch(() => undefined);
    try {
      await layer.abandon();
      await options.layers.collectGarbage();
    } catch {
      // The layer stays loading or retired; the next import retires and clears it.
    }
    throw asInputError(error, options.file);
  }
}
