/**
 * Protected-area layers on MongoDB: the import side (`ProtectedAreaLayers`, what the CLI uses)
 * and the read side the store uses on create (`MongoProtectedAreaReader`).
 *
 * - Areas are inserted a batch at a time (unordered `insertMany`, majority-journaled) under a new
 *   layer id; a layer still loading is invisible, since readers only look at the active layer.
 * - The layers' state is one document (layer-state.ts): begin, heartbeat, activation, abandon and
 *   garbage collection are each one conditional replacement of it. Activation therefore swaps the
 *   new layer in and retires the old one atomically.
 * - Garbage collection deletes a retired layer's areas a batch at a time, after the swap.
 * - A create reads the state document and its candidates in one snapshot (a read-only
 *   transaction), so the layer it reads cannot be retired and deleted under it, and computes the
 *   overlaps after the snapshot, outside any transaction.
 */
import type { ClientSession, Collection, Db, MongoClient, MongoClientOptions } from "mongodb";
import { ulid } from "ulid";
import { boxesIntersect } from "../../geo/bbox.js";
import type { SourceGeometry } from "../../geo/types.js";
import type { UnepOverlapRecord } from "../../model/records.js";
import type { ProtectedArea, ProtectedAreaPolicy, SpatialSubject } from "../../model/spatial.js";
import { GeometryCache } from "../geometry-cache.js";
import { StoreUnavailableError } from "../port.js";
import {
  type BeginImport,
  type LayerImport,
  type LayerInfo,
  type LayerStatus,
  LayerSupersededError,
  type NewProtectedArea,
  type ProtectedAreaLayers,
} from "../protected-area-layers.js";
import { newMongoClient } from "./client.js";
import {
  DEFAULT_GEOMETRY_LIMITS,
  fromProtectedAreaDocument,
  type GeometryChunkDocument,
  type GeometryStorageLimits,
  geometryChunkId,
  geometryFromChunks,
  type ProtectedAreaCandidateDocument,
  type ProtectedAreaDocument,
  toProtectedAreaDocuments,
} from "./documents.js";
import { ensureCollection, isDuplicateKey, toSetupError, toStoreError } from "./errors.js";
import {
  abandonLayer,
  activateLayer,
  beginLayer,
  emptyLayerState,
  forgetRetired,
  heartbeatLayer,
  type LayerStateDocument,
  layerInfo,
  layerStatus,
} from "./layer-state.js";
import {
  ACTIVE_LAYER_OPTIONS,
  AREA_BATCH,
  AREA_GEOMETRY_OPTIONS,
  AREA_INSERT_OPTIONS,
  areaGeometriesFilter,
  CANDIDATE_CHUNK,
  type CandidateShape,
  chunks,
  DB_OPTIONS,
  GEOMETRY_CHUNK_INDEXES,
  GEOMETRY_CHUNK_OPTIONS,
  GEOMETRY_CHUNKS,
  garbageBatchQuery,
  garbageDeleteFilter,
  geometryChunksFilter,
  LAYER_STATE_FILTER,
  LAYERS,
  layerStateWrite,
  PROTECTED_AREA_CANDIDATE_OPTIONS,
  PROTECTED_AREA_INDEXES,
  PROTECTED_AREAS,
  protectedAreaCandidatesFilter,
} from "./queries.js";

/** The three collections of the layers, on one database handle. */
interface LayerCollections {
  areas: Collection<ProtectedAreaDocument>;
  chunks: Collection<GeometryChunkDocument>;
  layers: Collection<LayerStateDocument>;
}

function layerCollections(db: Db): LayerCollections {
  return {
    areas: db.collection<ProtectedAreaDocument>(PROTECTED_AREAS),
    chunks: db.collection<GeometryChunkDocument>(GEOMETRY_CHUNKS),
    layers: db.collection<LayerStateDocument>(LAYERS),
  };
}

/**
 * Creates the indexes of the layers' collections (a no-op when they exist) and creates the state
 * collection, so a create's first snapshot read does not race its creation. Run by the store's setup and by the CLI's.
 */
export async function prepareProtectedAreaCollections(db: Db): Promise<{ collection: string; indexes: string[] }[]> {
  const { areas, chunks: geometryChunks } = layerCollections(db);
  const prepared = [
    { collection: PROTECTED_AREAS, indexes: await areas.createIndexes(PROTECTED_AREA_INDEXES) },
    { collection: GEOMETRY_CHUNKS, indexes: await geometryChunks.createIndexes(GEOMETRY_CHUNK_INDEXES) },
  ];
  await ensureCollection(db, LAYERS);
  return prepared;
}

// --- the import side ---

/** How often a state write is tried again when other writers keep changing the state first. */
const STATE_ATTEMPTS = 20;
/**
 * How long a retired layer stays listed after its areas were deleted: a batch of an import that
 * was taken over (`--force`) may still land after the deletion, and is deleted by the next
 * garbage collection while its layer is listed.
 */
export const DEFAULT_RETIRED_GRACE_MS = 24 * 3_600_000;

export interface MongoProtectedAreaLayersOptions {
  /** The layers' own clock (retirement times, the grace above); `Date.now` by default. */
  clock?: () => number;
  /** New layer ids; `pal_<ULID>` by default. */
  newLayerId?: () => string;
  retiredGraceMs?: number;
  /** When a geometry is stored in chunks, and their size (documents.ts); tests lower them. */
  geometryLimits?: GeometryStorageLimits;
}

export interface OpenMongoProtectedAreaLayersOptions extends MongoProtectedAreaLayersOptions {
  uri: string;
  database: string;
  /** Merged over the store's client defaults; tests shorten timeouts with it. */
  clientOptions?: MongoClientOptions;
}

type Decision<T> = { next: LayerStateDocument | null; result: T };

/** The import and status side of the protected-area layers on MongoDB. */
export class MongoProtectedAreaLayers implements ProtectedAreaLayers {
  private closed = false;
  private setup: Promise<void> | null = null;
  private readonly db: Db;
  private readonly collections: LayerCollections;
  private readonly clock: () => number;
  private readonly newLayerId: () => string;
  private readonly retiredGraceMs: number;
  private readonly geometryLimits: GeometryStorageLimits;

  constructor(
    private readonly client: MongoClient,
    database: string,
    options: MongoProtectedAreaLayersOptions = {},
  ) {
    this.db = client.db(database, DB_OPTIONS);
    this.collections = layerCollections(this.db);
    this.clock = options.clock ?? Date.now;
    this.newLayerId = options.newLayerId ?? (() => `pal_${ulid()}`);
    this.retiredGraceMs = options.retiredGraceMs ?? DEFAULT_RETIRED_GRACE_MS;
    this.geometryLimits = options.geometryLimits ?? DEFAULT_GEOMETRY_LIMITS;
  }

  /** Connects and creates the indexes (idempotent); retried on the next call until it succeeds. */
  ready(): Promise<void> {
    if (this.closed)
      return Promise.reject(new StoreUnavailableError("mongodb protected-area setup failed: store is closed"));
    this.setup ??= (async () => {
      await this.client.connect();
      await prepareProtectedAreaCollections(this.db);
    })().catch((error: unknown) => {
      this.setup = null;
      throw toSetupError(error);
    });
    return this.setup;
  }

  async begin(options: BeginImport): Promise<{ started: LayerImport } | { busy: LayerInfo }> {
    const id = this.newLayerId();
    return this.run("import start", () =>
      this.updateState("import start", (state): Decision<{ started: LayerImport } | { busy: LayerInfo }> => {
        const begun = beginLayer(state, options, id, new Date(this.clock()));
        if ("busy" in begun) return { next: null, result: { busy: begun.busy } };
        return { next: begun.next, result: { started: new MongoLayerImport(this, id) } };
      }),
    );
  }

  async status(): Promise<LayerStatus> {
    return this.run("status", async () => layerStatus(await this.readState()));
  }

  async collectGarbage(): Promise<number> {
    return this.run("garbage collection", async () => {
      const state = await this.readState();
      let deleted = 0;
      const emptied = new Set<string>();
      for (const { id } of state.retired) {
        deleted += await this.deleteLayerDocuments(this.collections.areas, id);
        await this.deleteLayerDocuments(this.collections.chunks, id);
        emptied.add(id);
      }
      if (emptied.size > 0) {
        await this.updateState("garbage collection", (current) => ({
          next: forgetRetired(current, emptied, this.clock(), this.retiredGraceMs),
          result: undefined,
        }));
      }
      return deleted;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }

  /** @internal */ async append(
    layerId: string,
    firstSequence: number,
    areas: readonly NewProtectedArea[],
    now: number,
  ): Promise<void> {
    await this.run("import", async () => {
      const docs = areas.map((area, i) =>
        toProtectedAreaDocuments(layerId, firstSequence + i, area, this.geometryLimits),
      );
      const geometryChunks = docs.flatMap((d) => d.chunks);
      // Chunks first: an area is never stored without its geometry.
      if (geometryChunks.length > 0) await this.collections.chunks.insertMany(geometryChunks, AREA_INSERT_OPTIONS);
      // The driver refuses an empty insertMany; an empty batch is only a heartbeat.
      if (docs.length > 0) {
        await this.collections.areas.insertMany(
          docs.map((d) => d.area),
          AREA_INSERT_OPTIONS,
        );
      }
      // After the batch: a batch written after another import took over is detected here, and
      // deleted with the retired layer by the garbage collection the import runs when it fails.
      await this.updateState("import", (state) => {
        const next = heartbeatLayer(state, layerId, areas.length, now);
        if (next === null) throw new LayerSupersededError(layerId);
        return { next, result: undefined };
      });
    });
  }

  /** @internal */ async activate(
    layerId: string,
    counts: { featureCount: number; rejectedCount: number },
    now: number,
  ): Promise<LayerInfo> {
    return this.run("import activation", () =>
      this.updateState("import activation", (state) => {
        const activated = activateLayer(state, layerId, counts, now, new Date(this.clock()));
        if (activated === null) throw new LayerSupersededError(layerId);
        return { next: activated.next, result: layerInfo(activated.active) };
      }),
    );
  }

  /** @internal */ async abandon(layerId: string): Promise<void> {
    await this.run("import abandon", () =>
      this.updateState("import abandon", (state) => ({
        next: abandonLayer(state, layerId, new Date(this.clock())),
        result: undefined,
      })),
    );
  }

  private async readState(): Promise<LayerStateDocument> {
    return (await this.collections.layers.findOne(LAYER_STATE_FILTER)) ?? emptyLayerState();
  }

  /**
   * Reads the state, decides, and writes the decision only if nobody changed the state since the
   * read (layer-state.ts); reads and decides again otherwise. `decide` may throw to refuse.
   */
  private async updateState<T>(action: string, decide: (state: LayerStateDocument) => Decision<T>): Promise<T> {
    for (let attempt = 1; attempt <= STATE_ATTEMPTS; attempt++) {
      const state = await this.readState();
      const { next, result } = decide(state);
      if (next === null) return result;
      const write = layerStateWrite(state.version, next);
      try {
        await this.collections.layers.replaceOne(write.filter, write.replacement, write.options);
        return result;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, 10 * attempt)));
    }
    throw new StoreUnavailableError(
      `mongodb protected-area ${action} failed: the layer state changed under every one of ${STATE_ATTEMPTS} attempts`,
    );
  }

  /** Deletes the documents of layer `layerId` from `collection`, a batch at a time; returns how many. */
  private async deleteLayerDocuments(
    collection: Collection<ProtectedAreaDocument> | Collection<GeometryChunkDocument>,
    layerId: string,
  ): Promise<number> {
    const target = collection as unknown as Collection<{ _id: string; layer_id: string }>;
    let deleted = 0;
    for (;;) {
      const { filter, options } = garbageBatchQuery(layerId);
      const ids = (await target.find<{ _id: string }>(filter, options).toArray()).map((d) => d._id);
      if (ids.length === 0) break;
      deleted += (await target.deleteMany(garbageDeleteFilter(layerId, ids))).deletedCount;
      if (ids.length < AREA_BATCH) break;
    }
    return deleted;
  }

  private async run<T>(action: string, work: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreUnavailableError(`mongodb protected-area ${action} failed: store is closed`);
    try {
      await this.ready();
      return await work();
    } catch (error) {
      throw toStoreError(error, `protected-area ${action}`);
    }
  }
}

class MongoLayerImport implements LayerImport {
  private written = 0;

  constructor(
    private readonly layers: MongoProtectedAreaLayers,
    readonly layerId: string,
  ) {}

  async append(areas: readonly NewProtectedArea[], now: number): Promise<void> {
    const first = this.written;
    this.written += areas.length;
    await this.layers.append(this.layerId, first, areas, now);
  }

  async activate(counts: { featureCount: number; rejectedCount: number }, now: number): Promise<LayerInfo> {
    return this.layers.activate(this.layerId, counts, now);
  }

  async abandon(): Promise<void> {
    await this.layers.abandon(this.layerId);
  }
}

/**
 * Opens the protected-area layers of a MongoDB database for the CLI: connects and prepares the
 * collections now, so an unreachable server fails the command at once (StoreUnavailableError).
 * A URI that does not parse is an InvalidMongoUriError.
 */
export async function openMongoProtectedAreaLayers(
  options: OpenMongoProtectedAreaLayersOptions,
): Promise<MongoProtectedAreaLayers> {
  const client = newMongoClient(options.uri, options.clientOptions);
  const layers = new MongoProtectedAreaLayers(client, options.database, options);
  try {
    await layers.ready();
  } catch (error) {
    await layers.close();
    throw error;
  }
  return layers;
}

// --- the read side ---

type OverlapSubject = Pick<SpatialSubject, "geometry" | "bbox" | "areaM2">;

/** What a create read of the active layer: its dataset and the candidates of the batch, in import order. */
export interface LayerCandidates {
  dataset: string;
  candidates: ProtectedArea[];
}

/**
 * Computes `unep_overlap` on the MongoDB store. `read` runs inside a read-only snapshot
 * transaction the store opens: the active layer from the state document, then the areas of that
 * layer whose covers meet the batch's box covers (`$geoIntersects`, the same padded covers as the
 * conflict candidates), then the geometries not already cached. `overlaps` then applies the
 * policy to each source and the candidates whose boxes meet its own, outside the transaction.
 */
export class MongoProtectedAreaReader {
  private readonly collections: LayerCollections;
  private readonly cache: GeometryCache<string, string>;

  constructor(
    db: Db,
    private readonly policy: ProtectedAreaPolicy,
    cachePositions?: number,
  ) {
    this.collections = layerCollections(db);
    this.cache = new GeometryCache<string, string>(cachePositions);
  }

  async read(shapes: readonly CandidateShape[], session: ClientSession): Promise<LayerCandidates | null> {
    const state = await this.collections.layers.findOne<Pick<LayerStateDocument, "active">>(LAYER_STATE_FILTER, {
      ...ACTIVE_LAYER_OPTIONS,
      session,
    });
    if (state === null || state.active === null) return null;
    const layerId = state.active.id;
    const cache = this.cache.forLayer(layerId);

    const found = new Map<string, ProtectedAreaCandidateDocument>();
    for (const chunk of chunks(shapes, CANDIDATE_CHUNK)) {
      const docs = await this.collections.areas
        .find<ProtectedAreaCandidateDocument>(protectedAreaCandidatesFilter(layerId, chunk), {
          ...PROTECTED_AREA_CANDIDATE_OPTIONS,
          session,
        })
        .toArray();
      for (const doc of docs) found.set(doc._id, doc);
    }

    const geometries = new Map<string, SourceGeometry>();
    for (const id of found.keys()) {
      const cached = cache.get(id);
      if (cached !== undefined) geometries.set(id, cached);
    }
    const missing = [...found.values()].filter((doc) => !geometries.has(doc._id));
    const inline = missing.filter((doc) => doc.geometry_chunks === 0).map((doc) => doc._id);
    for (const ids of chunks(inline, AREA_BATCH)) {
      const docs = await this.collections.areas
        .find<{ _id: string; geometry: SourceGeometry }>(areaGeometriesFilter(ids), {
          ...AREA_GEOMETRY_OPTIONS,
          session,
        })
        .toArray();
      for (const doc of docs) geometries.set(doc._id, doc.geometry);
    }
    for (const doc of missing.filter((d) => d.geometry_chunks > 0)) {
      const ids = Array.from({ length: doc.geometry_chunks }, (_, n) => geometryChunkId(doc._id, n));
      const parts = await this.collections.chunks
        .find<Pick<GeometryChunkDocument, "_id" | "n" | "text">>(geometryChunksFilter(ids), {
          ...GEOMETRY_CHUNK_OPTIONS,
          session,
        })
        .toArray();
      geometries.set(doc._id, geometryFromChunks(doc._id, doc.geometry_chunks, parts));
    }
    for (const doc of missing) {
      const geometry = geometries.get(doc._id);
      if (geometry !== undefined) cache.put(doc._id, geometry);
    }

    const candidates: ProtectedArea[] = [];
    for (const id of [...found.keys()].sort()) {
      const geometry = geometries.get(id);
      if (geometry === undefined) throw new Error(`protected area ${id} of layer ${layerId} has no geometry`);
      candidates.push(fromProtectedAreaDocument(found.get(id) as ProtectedAreaCandidateDocument, geometry));
    }
    return { dataset: state.active.dataset, candidates };
  }

  /** Each subject's overlap with what `read` found, or null for each when no layer is active. */
  overlaps(subjects: readonly OverlapSubject[], read: LayerCandidates | null): (UnepOverlapRecord | null)[] {
    if (read === null) return subjects.map(() => null);
    return subjects.map((subject) =>
      this.policy.overlap(
        subject,
        read.dataset,
        read.candidates.filter((candidate) => boxesIntersect(candidate.bbox, subject.bbox)),
      ),
    );
  }
}
