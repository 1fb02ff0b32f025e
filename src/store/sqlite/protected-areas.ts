import type Database from "better-sqlite3";
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
import { openMigrated } from "./connection.js";
import { toStoreError } from "./errors.js";

interface LayerRow {
  id: number;
  dataset: string;
  source_file: string;
  started_at: number;
  heartbeat_at: number;
  imported_at: number | null;
  feature_count: number;
  rejected_count: number;
}

interface CandidateRow {
  seq: number;
  min_x: number;
  max_x: number;
  min_y: number;
  max_y: number;
  wdpa_id: string;
  name: string;
  designation: string;
  iucn_category: string;
}

const LAYER_COLUMNS = "id, dataset, source_file, started_at, heartbeat_at, imported_at, feature_count, rejected_count";

function layerInfo(row: LayerRow): LayerInfo {
  return {
    dataset: row.dataset,
    sourceFile: row.source_file,
    featureCount: row.feature_count,
    rejectedCount: row.rejected_count,
    startedAt: row.started_at,
    importedAt: row.imported_at,
    heartbeatAt: row.heartbeat_at,
  };
}

/**
 * Computes `unep_overlap` on the embedded store: the active layer is read on every call (one
 * indexed row), so a layer that another process (the CLI) activated is used by the very next
 * create; the R*Tree of protected-area boxes, filtered to that layer, yields the candidates, and
 * the policy decides on their exact geometry.
 */
export class SqliteProtectedAreaReader {
  private readonly activeLayer: Database.Statement<[], { id: number; dataset: string }>;
  private readonly candidates: Database.Statement<[number, number, number, number, number], CandidateRow>;
  private readonly geometryOf: Database.Statement<[number], { geometry: string }>;
  private readonly readTransaction: Database.Transaction<
    (subjects: readonly Pick<SpatialSubject, "geometry" | "bbox" | "areaM2">[]) => (UnepOverlapRecord | null)[]
  >;
  private readonly cache: GeometryCache<number, number>;

  constructor(
    db: Database.Database,
    private readonly policy: ProtectedAreaPolicy,
    cachePositions?: number,
  ) {
    this.cache = new GeometryCache<number, number>(cachePositions);
    this.activeLayer = db.prepare("SELECT id, dataset FROM protected_area_layers WHERE state = 'active'");
    this.candidates = db.prepare(
      `SELECT b.seq, b.min_x, b.max_x, b.min_y, b.max_y, p.wdpa_id, p.name, p.designation, p.iucn_category
       FROM protected_area_bbox b JOIN protected_areas p ON p.seq = b.seq
       WHERE b.min_x <= ? AND b.max_x >= ? AND b.min_y <= ? AND b.max_y >= ? AND b.layer_id = ?
       ORDER BY b.seq`,
    );
    this.geometryOf = db.prepare("SELECT geometry FROM protected_areas WHERE seq = ?");
    // A deferred transaction that only reads: one WAL snapshot for the layer row and its areas,
    // taken without the write lock, so overlays never hold up other writers.
    this.readTransaction = db.transaction((subjects) => {
      const layer = this.activeLayer.get();
      if (layer === undefined) return subjects.map(() => null);
      const cache = this.cache.forLayer(layer.id);
      return subjects.map((subject) => {
        const { minX, maxX, minY, maxY } = subject.bbox;
        const found: ProtectedArea[] = this.candidates.all(maxX, minX, maxY, minY, layer.id).map((row) => ({
          id: row.wdpa_id,
          name: row.name,
          designation: row.designation,
          iucnCategory: row.iucn_category,
          bbox: { minX: row.min_x, maxX: row.max_x, minY: row.min_y, maxY: row.max_y },
          geometry: cache.getOrLoad(
            row.seq,
            () => JSON.parse((this.geometryOf.get(row.seq) as { geometry: string }).geometry) as SourceGeometry,
          ),
        }));
        return this.policy.overlap(subject, layer.dataset, found);
      });
    });
  }

  /** Each subject's overlap with the active layer, or null for each when no layer is loaded. */
  overlapsOf(subjects: readonly Pick<SpatialSubject, "geometry" | "bbox" | "areaM2">[]): (UnepOverlapRecord | null)[] {
    return this.readTransaction.deferred(subjects);
  }
}

/** Areas deleted per transaction when a retired layer is cleared. */
const GARBAGE_BATCH = 1_000;

/** The import and status side of the protected-area layers on the embedded store. */
export class SqliteProtectedAreaLayers implements ProtectedAreaLayers {
  private closed = false;
  private readonly statements: {
    loading: Database.Statement<[], LayerRow>;
    active: Database.Statement<[], LayerRow>;
    byId: Database.Statement<[number], LayerRow & { state: string }>;
    retireLoading: Database.Statement<[]>;
    retireActive: Database.Statement<[]>;
    retireLayer: Database.Statement<[number]>;
    insertLayer: Database.Statement<[string, string, number, number]>;
    insertArea: Database.Statement<[number, string, string, string, string, string, number]>;
    insertBox: Database.Statement<[number | bigint, number, number, number, number, number]>;
    heartbeat: Database.Statement<[number, number, number]>;
    activate: Database.Statement<[number, number, number, number, number]>;
    retired: Database.Statement<[], { id: number }>;
    deleteAreas: Database.Statement<[number, number]>;
    deleteLayer: Database.Statement<[number]>;
  };

  constructor(private readonly db: Database.Database) {
    this.statements = {
      loading: db.prepare(`SELECT ${LAYER_COLUMNS} FROM protected_area_layers WHERE state = 'loading' ORDER BY id`),
      active: db.prepare(`SELECT ${LAYER_COLUMNS} FROM protected_area_layers WHERE state = 'active'`),
      byId: db.prepare(`SELECT ${LAYER_COLUMNS}, state FROM protected_area_layers WHERE id = ?`),
      retireLoading: db.prepare("UPDATE protected_area_layers SET state = 'retired' WHERE state = 'loading'"),
      retireActive: db.prepare("UPDATE protected_area_layers SET state = 'retired' WHERE state = 'active'"),
      retireLayer: db.prepare("UPDATE protected_area_layers SET state = 'retired' WHERE id = ? AND state = 'loading'"),
      insertLayer: db.prepare(
        `INSERT INTO protected_area_layers (dataset, state, source_file, started_at, heartbeat_at)
         VALUES (?, 'loading', ?, ?, ?)`,
      ),
      insertArea: db.prepare(
        `INSERT INTO protected_areas (layer_id, wdpa_id, name, designation, iucn_category, geometry, area_m2)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertBox: db.prepare(
        "INSERT INTO protected_area_bbox (seq, min_x, max_x, min_y, max_y, layer_id) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      heartbeat: db.prepare(
        `UPDATE protected_area_layers SET heartbeat_at = ?, feature_count = feature_count + ?
         WHERE id = ? AND state = 'loading'`,
      ),
      activate: db.prepare(
        `UPDATE protected_area_layers SET state = 'active', imported_at = ?, heartbeat_at = ?,
           feature_count = ?, rejected_count = ?
         WHERE id = ?`,
      ),
      retired: db.prepare("SELECT id FROM protected_area_layers WHERE state = 'retired' ORDER BY id"),
      deleteAreas: db.prepare(
        `DELETE FROM protected_areas
         WHERE seq IN (SELECT seq FROM protected_areas WHERE layer_id = ? ORDER BY seq LIMIT ?)`,
      ),
      deleteLayer: db.prepare("DELETE FROM protected_area_layers WHERE id = ?"),
    };
  }

  async begin(options: BeginImport): Promise<{ started: LayerImport } | { busy: LayerInfo }> {
    return this.run("import start", () =>
      this.db
        .transaction((): { started: LayerImport } | { busy: LayerInfo } => {
          const alive = this.statements.loading
            .all()
            .find((row) => row.heartbeat_at > options.now - options.staleAfterMs);
          if (alive !== undefined && !options.force) return { busy: layerInfo(alive) };
          this.statements.retireLoading.run();
          const { lastInsertRowid } = this.statements.insertLayer.run(
            options.dataset,
            options.sourceFile,
            options.now,
            options.now,
          );
          return { started: new SqliteLayerImport(this, Number(lastInsertRowid)) };
        })
        .immediate(),
    );
  }

  async status(): Promise<LayerStatus> {
    return this.run("status", () =>
      this.db
        .transaction(() => {
          const active = this.statements.active.get();
          return {
            active: active === undefined ? null : layerInfo(active),
            importing: this.statements.loading.all().map(layerInfo),
          };
        })
        .deferred(),
    );
  }

  async collectGarbage(): Promise<number> {
    return this.run("garbage collection", () => {
      let deleted = 0;
      for (const { id } of this.statements.retired.all()) {
        // Small transactions: the server's creates wait for the write lock between them, not for the whole layer.
        for (;;) {
          const { changes } = this.db.transaction(() => this.statements.deleteAreas.run(id, GARBAGE_BATCH)).immediate();
          deleted += changes;
          if (changes < GARBAGE_BATCH) break;
        }
        this.db.transaction(() => this.statements.deleteLayer.run(id)).immediate();
      }
      return deleted;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  /** @internal */ appendSync(layerId: number, areas: readonly NewProtectedArea[], now: number): void {
    this.run("import", () =>
      this.db
        .transaction(() => {
          const { insertArea, insertBox, heartbeat } = this.statements;
          for (const area of areas) {
            const { lastInsertRowid: seq } = insertArea.run(
              layerId,
              area.id,
              area.name,
              area.designation,
              area.iucnCategory,
              JSON.stringify(area.geometry),
              area.areaM2,
            );
            const { minX, maxX, minY, maxY } = area.bbox;
            insertBox.run(seq, minX, maxX, minY, maxY, layerId);
          }
          // In the same transaction: a batch written after another import retired this layer rolls back.
          if (heartbeat.run(now, areas.length, layerId).changes === 0) throw new LayerSupersededError(layerId);
        })
        .immediate(),
    );
  }

  /** @internal */ activateSync(
    layerId: number,
    counts: { featureCount: number; rejectedCount: number },
    now: number,
  ): LayerInfo {
    return this.run("import activation", () =>
      this.db
        .transaction(() => {
          const row = this.statements.byId.get(layerId);
          if (row === undefined || row.state !== "loading") throw new LayerSupersededError(layerId);
          this.statements.retireActive.run();
          this.statements.activate.run(now, now, counts.featureCount, counts.rejectedCount, layerId);
          return layerInfo(this.statements.byId.get(layerId) as LayerRow);
        })
        .immediate(),
    );
  }

  /** @internal */ abandonSync(layerId: number): void {
    this.run("import abandon", () => this.db.transaction(() => this.statements.retireLayer.run(layerId)).immediate());
  }

  private run<T>(action: string, work: () => T): T {
    if (this.closed) throw new StoreUnavailableError(`sqlite protected-area ${action} failed: store is closed`);
    try {
      return work();
    } catch (error) {
      throw toStoreError(error, `protected-area ${action}`);
    }
  }
}

class SqliteLayerImport implements LayerImport {
  constructor(
    private readonly layers: SqliteProtectedAreaLayers,
    private readonly layerId: number,
  ) {}

  async append(areas: readonly NewProtectedArea[], now: number): Promise<void> {
    this.layers.appendSync(this.layerId, areas, now);
  }

  async activate(counts: { featureCount: number; rejectedCount: number }, now: number): Promise<LayerInfo> {
    return this.layers.activateSync(this.layerId, counts, now);
  }

  async abandon(): Promise<void> {
    this.layers.abandonSync(this.layerId);
  }
}

/** A protected-area import takes the write lock a batch at a time; it may wait longer than a request would. */
const IMPORT_BUSY_TIMEOUT_MS = 30_000;

/** Opens (creating and migrating if needed) the embedded store's protected-area layers. */
export function openSqliteProtectedAreaLayers(
  path: string,
  busyTimeoutMs = IMPORT_BUSY_TIMEOUT_MS,
): SqliteProtectedAreaLayers {
  return openMigrated({ path, busyTimeoutMs }, (db) => new SqliteProtectedAreaLayers(db));
}
