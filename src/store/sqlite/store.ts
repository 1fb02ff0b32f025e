import { randomBytes } from "node:crypto";
import type Database from "better-sqlite3";
import { geometryWireBytes } from "../../geo/geojson-wire.js";
import { conflictAllowances } from "../../geo/overlay-allowances.js";
import type { BoundingBox } from "../../geo/types.js";
import type { Change, SourceConflict, SourceEvent } from "../../model/history.js";
import { geometryCharsOf, type ListQuery } from "../../model/list-query.js";
import type { NewSourceRecord, RecordRead, SourceRecord } from "../../model/records.js";
import type { ConflictPolicy, ProtectedAreaPolicy } from "../../model/spatial.js";
import { collectInBatches, collectPage, mapRows } from "../page-collector.js";
import {
  altIdClash,
  altIdsByAccount,
  changeAfter,
  type EventPage,
  lastCreatedAt,
  recordedAfter,
  type SourceStore,
  StoreUnavailableError,
} from "../port.js";
import { type SpatialFilter, spatialFilterOf } from "../spatial-filter.js";
import { openMigrated } from "./connection.js";
import { toStoreError } from "./errors.js";
import { fillGeometryWire, WIRE_COLUMN, WIRE_JOIN, withWire } from "./geometry-wire.js";
import { type GroupCommitObservers, GroupCommitter } from "./group-commit.js";
import { fillDeletedEventBoxes, fillHistory, SqliteHistory } from "./history.js";
import {
  buildListStatement,
  envelopeCountStatement,
  type ListStatement,
  recordBySeqStatement,
  spatialPlanFor,
} from "./list-query.js";
import { SqliteProtectedAreaReader } from "./protected-areas.js";
import {
  COLUMNS,
  cursorOfColumns,
  fromColumns,
  fromColumnsWithWire,
  fromRow,
  type SourceRow,
  selectList,
  toRow,
} from "./rows.js";
import { ConflictScanner } from "./spatial.js";

export interface SqliteStoreOptions {
  /** A file path, or ':memory:'. */
  path: string;
  /** Applied on every create and delete (docs/api.md §8); without it `conflict` stays false. */
  conflictPolicy?: ConflictPolicy;
  /**
   * Computes `unep_overlap` on every create from the active protected-area layer (docs/api.md §8;
   * null while none is loaded). Without it `unepOverlap` is stored as given.
   */
  protectedAreaPolicy?: ProtectedAreaPolicy;
  /** How long a write waits for another connection's lock before failing as unavailable. */
  busyTimeoutMs?: number;
  /** Told of each group commit of creates, for /metrics (group-commit.ts). */
  groupCommit?: GroupCommitObservers;
}

/** What a delete reads of the source it removes: its key, and what its events name. */
interface SubjectKey {
  seq: number;
  id: string;
  account_id: string;
  alt_id: string;
}
const SUBJECT_KEY = "seq, id, account_id, alt_id";

const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
const SECRET_BYTES = 32;
/**
 * Sources per group commit. Single-source creates gain the most from sharing a commit; a request
 * of 1,000 already amortises its own, and holding several of them for one group would only raise
 * their latency and the memory they keep alive together.
 */
const MAX_GROUP_SOURCES = 1_000;

type Statement<P extends unknown[], R = unknown> = Database.Statement<P, R>;

export class SqliteSourceStore implements SourceStore {
  private closed = false;
  private readonly listStatements = new Map<string, Statement<(string | number)[], unknown[]>>();
  private readonly writes: GroupCommitter;
  private readonly deleteTransaction: Database.Transaction<
    (lookup: () => SubjectKey | undefined, change: Change) => boolean
  >;
  private readonly events: SqliteHistory;
  private readonly conflicts: ConflictScanner | null;
  private readonly protectedAreas: SqliteProtectedAreaReader | null;
  /**
   * Runs reads in one (deferred) transaction: they see one snapshot of the ledger. Synchronous
   * reads only (better-sqlite3 refuses a function that returns a promise).
   */
  private readonly inOneSnapshot: <T>(read: () => T) => T;
  private readonly statements: {
    takenAltIds: Statement<[string, string], { alt_id: string }>;
    insertSource: Statement<[SourceRow]>;
    insertBbox: Statement<[number | bigint, number, number, number, number]>;
    insertAttributeType: Statement<[number | bigint, string]>;
    getInAccount: Statement<string[], unknown[]>;
    getAnywhere: Statement<string[], unknown[]>;
    getInAccountWire: Statement<string[], unknown[]>;
    getAnywhereWire: Statement<string[], unknown[]>;
    insertWire: Statement<[number, Uint8Array]>;
    seqInAccount: Statement<[string, string], SubjectKey>;
    seqAnywhere: Statement<[string], SubjectKey>;
    seqByAltId: Statement<[string, string], SubjectKey>;
    deleteBySeq: Statement<[number]>;
    bboxCandidates: Statement<[number, number, number, number], SourceRow>;
    ping: Statement<[], unknown>;
    keepSecret: Statement<[Buffer]>;
    secret: Statement<[], { value: Buffer }>;
  };

  constructor(
    private readonly db: Database.Database,
    conflictPolicy?: ConflictPolicy,
    protectedAreaPolicy?: ProtectedAreaPolicy,
    groupCommit: GroupCommitObservers = {},
  ) {
    const columns = selectList("s");
    const getById = (inAccount: boolean, wire: boolean) =>
      db
        .prepare<string[], unknown[]>(
          `SELECT ${columns}${wire ? `, ${WIRE_COLUMN}` : ""} FROM sources s${wire ? ` ${WIRE_JOIN}` : ""}
           WHERE s.id = ?${inAccount ? " AND s.account_id = ?" : ""}`,
        )
        .raw(true);
    this.statements = {
      takenAltIds: db.prepare(
        `SELECT alt_id FROM sources
         WHERE account_id = ? AND alt_id IN (SELECT value FROM json_each(?))`,
      ),
      insertSource: db.prepare(
        `INSERT INTO sources (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((c) => `@${c}`).join(", ")})`,
      ),
      insertBbox: db.prepare("INSERT INTO source_bbox (seq, min_x, max_x, min_y, max_y) VALUES (?, ?, ?, ?, ?)"),
      insertAttributeType: db.prepare(
        "INSERT OR IGNORE INTO source_attribute_types (source_seq, attribute_type) VALUES (?, ?)",
      ),
      // Raw mode (arrays, see fromColumns) for the two hot reads, get and list; each also with the
      // stored wire bytes (RecordRead.geometryWire).
      getInAccount: getById(true, false),
      getAnywhere: getById(false, false),
      getInAccountWire: getById(true, true),
      getAnywhereWire: getById(false, true),
      // Over whatever a source that had this key left (SQLite reuses the largest key once its row
      // is gone, and a row deleted with foreign keys off leaves its own). An upsert, not OR
      // REPLACE, whose possible delete makes SQLite journal the statement's pages: 11.7–15 µs a
      // source in creates of 100 and 1,000 sources, 3.4–5 µs so (docs/benchmarks.md).
      insertWire: db.prepare<[number, Uint8Array]>(
        "INSERT INTO source_geometry_wire (seq, wire) VALUES (?, ?) ON CONFLICT (seq) DO UPDATE SET wire = excluded.wire",
      ),
      seqInAccount: db.prepare(`SELECT ${SUBJECT_KEY} FROM sources WHERE id = ? AND account_id = ?`),
      seqAnywhere: db.prepare(`SELECT ${SUBJECT_KEY} FROM sources WHERE id = ?`),
      seqByAltId: db.prepare(`SELECT ${SUBJECT_KEY} FROM sources WHERE alt_id = ? AND account_id = ?`),
      deleteBySeq: db.prepare("DELETE FROM sources WHERE seq = ?"),
      bboxCandidates: db.prepare(
        `SELECT ${columns} FROM source_bbox b JOIN sources s ON s.seq = b.seq
         WHERE b.min_x <= ? AND b.max_x >= ? AND b.min_y <= ? AND b.max_y >= ?
         ORDER BY s.created_at, s.id`,
      ),
      ping: db.prepare("SELECT 1"),
      keepSecret: db.prepare("INSERT OR IGNORE INTO ledger_settings (name, value) VALUES ('ledger_secret', ?)"),
      secret: db.prepare("SELECT value FROM ledger_settings WHERE name = 'ledger_secret'"),
    };
    this.conflicts = conflictPolicy ? new ConflictScanner(db, conflictPolicy) : null;
    this.protectedAreas = protectedAreaPolicy ? new SqliteProtectedAreaReader(db, protectedAreaPolicy) : null;
    this.writes = new GroupCommitter(db, {
      maxGroupWeight: MAX_GROUP_SOURCES,
      mapError: (error) => toStoreError(error, "insert"),
      abortsGroup: (error) => toStoreError(error, "insert") instanceof StoreUnavailableError,
      ...groupCommit,
    });
    this.events = new SqliteHistory(db);
    const creation = db.prepare<[number], { at: number; by: string }>(
      "SELECT created_at AS at, created_by AS by FROM sources WHERE seq = ?",
    );
    // The wire bytes first: the history's fill measures pairs, and reads large geometries from them.
    fillGeometryWire(db);
    fillDeletedEventBoxes(db, this.events);
    fillHistory(db, this.events, this.conflicts?.storedPairs() ?? null, (seq) => {
      const change = creation.get(seq);
      if (change === undefined) throw new Error(`source ${seq} vanished while its history was filled in`);
      return change;
    });
    this.inOneSnapshot = db.transaction((read: () => unknown) => read()) as <T>(read: () => T) => T;
    this.deleteTransaction = db.transaction((lookup: () => SubjectKey | undefined, requested: Change) => {
      const key = lookup();
      if (key === undefined) return false;
      // Recorded no earlier than the last change committed (SqliteHistory.lastChangeAt).
      const lastChangeAt = this.events.lastChangeAt();
      const change = changeAfter(requested, lastChangeAt);
      this.events.changedAt(change.at, lastChangeAt);
      const removed = { seq: key.seq, id: key.id, accountId: key.account_id, altId: key.alt_id };
      const counterparts = this.events.counterpartsOf(removed.seq);
      // Before the row goes: the deleted event keeps its geometry (history.ts).
      this.events.deleted(removed, change);
      this.statements.deleteBySeq.run(removed.seq);
      this.events.released(removed, counterparts, change);
      return true;
    });
  }

  async insertMany(records: NewSourceRecord[]): Promise<SourceRecord[]> {
    if (records.length === 0) return [];
    // unep_overlap depends on the protected-area layer only, not on other sources, so it is
    // computed before the write transaction, in a read snapshot: the overlays never hold the
    // write lock. A layer swapped in between is seen by the next create.
    const protectedAreas = this.protectedAreas;
    const withOverlap =
      protectedAreas === null
        ? records
        : this.runSync("protected-area overlap", () =>
            protectedAreas.overlapsOf(records).map((unepOverlap, i) => ({ ...records[i], unepOverlap })),
          );
    // The geometry's text and wire bytes too, outside the write lock.
    const geometries = withOverlap.map(
      (record): StoredForm => ({ text: JSON.stringify(record.geometry), wire: geometryWireBytes(record.geometry) }),
    );
    if (this.closed) throw new StoreUnavailableError("sqlite insert failed: store is closed");
    // The group's BEGIN IMMEDIATE takes the write lock before any alt_id check, so no other writer
    // can slip in between the check and the inserts; within the group, jobs run one after another.
    return this.writes.submit(() => this.insertAll(withOverlap, geometries), withOverlap.length);
  }

  async list(query: ListQuery): Promise<SourceRecord[]> {
    return this.runSync("list", () => {
      const { asOf } = query;
      // Its chunks in one snapshot, as the batched list's: another process's commit between two
      // would mix two states in one page.
      if (asOf !== undefined) return this.inOneSnapshot(() => this.events.listAsOf({ ...query, asOf }));
      const spatial = spatialFilterOf(query);
      if (spatial === null) {
        const statement = buildListStatement(query);
        const rows = this.listStatement(statement);
        const read = statement.withWire ? fromColumnsWithWire : fromColumns;
        const { maxGeometryChars } = query;
        if (maxGeometryChars === undefined) return rows.all(...statement.params).map((row) => read(row));
        // The statement ends with LIMIT ? OFFSET ?: each batch is the same statement, further on,
        // all in one read transaction (one snapshot: another process's commit between two
        // batches would move the offsets, and a record would be skipped or read twice).
        const filters = statement.params.slice(0, -2);
        return this.inOneSnapshot(() =>
          collectInBatches(
            (count, skip) => rows.all(...filters, count, query.offset + skip).map((row) => read(row)),
            { limit: query.limit, maxGeometryChars },
            geometryCharsOf,
          ),
        );
      }
      return this.spatialList(query, spatial);
    });
  }

  /**
   * A page of a spatial list: the rows whose box meets the envelope, in list order, kept while
   * their exact geometry matches, until `offset` are skipped and `limit` kept (or the exact tests'
   * allowance is spent). Driving from the R*Tree, the candidates' keys are sorted and each record
   * read by its key as the page reaches it, all in one snapshot.
   */
  private spatialList(query: ListQuery, spatial: SpatialFilter): SourceRecord[] {
    const count = envelopeCountStatement(spatial.envelope);
    const candidates = this.listStatement(count).get(...count.params) as unknown[];
    const plan = spatialPlanFor(candidates[0] as number);
    const statement = buildListStatement(query, { envelope: spatial.envelope, plan });
    const recordOf = statement.withWire ? fromColumnsWithWire : fromColumns;
    const page = (rows: Iterable<{ columns: unknown[]; box: unknown[] }>) =>
      collectPage(
        rows,
        ({ columns, box }) => {
          const record = recordOf(columns);
          // The R*Tree's box (rounded outwards) holds the geometry: within every area, it matches.
          const [minX, maxX, minY, maxY] = box as number[];
          return spatial.covers({ minX, maxX, minY, maxY }) || spatial.matches(record.geometry) ? record : null;
        },
        query,
        geometryCharsOf,
        ({ columns }) => cursorOfColumns(columns),
      );
    if (!statement.keysOnly) {
      const rows = this.listStatement(statement).iterate(...statement.params);
      return page(mapRows(rows, (row) => ({ columns: row, box: row.slice(statement.boxAt) })));
    }
    const byKey = this.listStatement(recordBySeqStatement(statement.withWire));
    return this.inOneSnapshot(() => {
      const keys = this.listStatement(statement).all(...statement.params);
      return page(
        mapRows(keys, (key) => {
          const columns = byKey.get(key[0] as number);
          // Read in the snapshot the keys came from: the row is there.
          if (columns === undefined) throw new Error(`source seq ${String(key[0])} listed but not read`);
          return { columns, box: key.slice(statement.boxAt) };
        }),
      );
    });
  }

  private listStatement({ key, sql }: ListStatement): Statement<(string | number)[], unknown[]> {
    let statement = this.listStatements.get(key);
    if (statement === undefined) {
      statement = this.db.prepare<(string | number)[], unknown[]>(sql).raw(true);
      this.listStatements.set(key, statement);
    }
    return statement;
  }

  async history(id: string, accountId: string | null, page?: EventPage): Promise<SourceEvent[] | null> {
    return this.runSync("history", () => this.events.eventsOf(id, accountId, page));
  }

  async conflictsOf(id: string, accountId: string | null, page?: EventPage): Promise<SourceConflict[] | null> {
    // One snapshot: the source's row, then its pairs by the row's seq, which another process's
    // delete and insert in between could give to another source.
    return this.runSync("conflicts", () => this.inOneSnapshot(() => this.events.conflictsOf(id, accountId, page)));
  }

  async ledgerSecret(): Promise<Uint8Array> {
    return this.runSync("secret", () => {
      // INSERT OR IGNORE: the first process to ask makes the secret; every later one reads it.
      this.statements.keepSecret.run(randomBytes(SECRET_BYTES));
      return new Uint8Array(this.statements.secret.get()?.value ?? []);
    });
  }

  async getAsOf(id: string, accountId: string | null, asOf: number): Promise<SourceRecord | null> {
    return this.runSync("get", () => this.events.getAsOf(id, accountId, asOf));
  }

  async get(id: string, accountId: string | null, read?: RecordRead): Promise<SourceRecord | null> {
    return this.runSync("get", () => {
      const { statements } = this;
      if (read?.geometryWire === true) {
        const row =
          accountId === null ? statements.getAnywhereWire.get(id) : statements.getInAccountWire.get(id, accountId);
        return row === undefined ? null : fromColumnsWithWire(row);
      }
      const row = accountId === null ? statements.getAnywhere.get(id) : statements.getInAccount.get(id, accountId);
      return row === undefined ? null : fromColumns(row);
    });
  }

  async deleteById(id: string, accountId: string | null, change: Change): Promise<boolean> {
    return this.runSync("delete", () =>
      this.deleteTransaction.immediate(
        () =>
          accountId === null ? this.statements.seqAnywhere.get(id) : this.statements.seqInAccount.get(id, accountId),
        change,
      ),
    );
  }

  async deleteByAltId(altId: string, accountId: string, change: Change): Promise<boolean> {
    return this.runSync("delete", () =>
      this.deleteTransaction.immediate(() => this.statements.seqByAltId.get(altId, accountId), change),
    );
  }

  /**
   * Sources of every account whose bounding box meets `bbox` (touching counts), ordered by
   * createdAt then id. Only candidates: the caller decides overlap on the exact geometry.
   * Synchronous, so a check-then-insert can run it inside the insert's transaction. The R*Tree
   * keeps 32-bit floats rounded outwards, so the set can only grow by near-touching boxes.
   */
  findBboxCandidates(bbox: BoundingBox): SourceRecord[] {
    return this.runSync("bbox search", () =>
      this.statements.bboxCandidates.all(bbox.maxX, bbox.minX, bbox.maxY, bbox.minY).map(fromRow),
    );
  }

  async ping(): Promise<void> {
    this.runSync("ping", () => this.statements.ping.get());
  }

  /** Write transactions committed so far: concurrent creates share one (group commit). */
  get writeGroupsCommitted(): number {
    return this.writes.groupsCommitted;
  }

  /** Groups run again with a savepoint per request, because a request failed after writing. */
  get writeGroupsRunAgain(): number {
    return this.writes.groupsRunAgain;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Creates already accepted are written before the file closes.
    this.writes.flush();
    this.db.close();
  }

  private assertAltIdsFree(records: readonly NewSourceRecord[]): void {
    for (const [accountId, batch] of altIdsByAccount(records)) {
      const stored = this.statements.takenAltIds.all(accountId, JSON.stringify(batch.altIds)).map((r) => r.alt_id);
      const clash = altIdClash(accountId, batch, stored);
      if (clash) throw clash;
    }
  }

  /**
   * Inserts one request's sources, each with its `created` event and, in production, its conflict
   * pairs and their `conflict_set` events, in the group committer's transaction. A taken alt_id is
   * refused before the first write, so that the group need not be run again (group-commit.ts).
   * `geometries[i]`: the stored forms of `requested[i]`'s geometry.
   */
  private insertAll(requested: NewSourceRecord[], geometries: readonly StoredForm[]): SourceRecord[] {
    this.assertAltIdsFree(requested);
    // The group committer may run this again after a rollback: each run measures the overlays
    // under the request's whole allowance, not what the undone run left of it (docs/api.md §8.5).
    conflictAllowances.renew(requested.map((record) => record.geometry));
    const inserted: SourceRecord[] = [];
    const positionOf = new Map<string, number>();
    // Each source no earlier than the last change committed before the request (SqliteHistory.lastChangeAt).
    const lastChangeAt = this.events.lastChangeAt();
    const recorded = recordedAfter(requested, lastChangeAt);
    recorded.forEach((record, i) => {
      const change = { by: record.createdBy, at: record.createdAt };
      const admitted = this.conflicts?.admit(record) ?? null;
      // Without a policy the store keeps what it is given (the contract suite relies on it).
      const conflict = admitted === null ? record.conflict : admitted.others.length > 0;
      // A later source of the batch may flag an earlier one that is already in `inserted`.
      for (const id of admitted?.flagged ?? []) {
        const position = positionOf.get(id);
        if (position !== undefined) inserted[position] = { ...inserted[position], conflict: true };
      }
      positionOf.set(record.id, inserted.length);
      const { seq, row } = this.insertOne({ ...record, conflict }, geometries[i]);
      this.events.created(row, record.bbox, change);
      const subject = { seq, id: record.id, accountId: record.accountId, altId: record.altId };
      admitted?.others.forEach((other, i) => {
        this.events.conflictFound(subject, other, admitted.measures[i], change, 2 + i);
      });
      // Read back through the same mapping as get(), so the response equals what a later read
      // returns; with the bytes, which a protobuf answer copies.
      inserted.push(withWire(fromRow(row), geometries[i].wire));
    });
    this.events.changedAt(lastCreatedAt(recorded, lastChangeAt), lastChangeAt);
    return inserted;
  }

  private insertOne(record: NewSourceRecord, { text, wire }: StoredForm): { seq: number; row: SourceRow } {
    const row = toRow(record, text);
    const { lastInsertRowid } = this.statements.insertSource.run(row);
    const seq = Number(lastInsertRowid);
    this.statements.insertWire.run(seq, wire);
    const { minX, maxX, minY, maxY } = record.bbox;
    this.statements.insertBbox.run(seq, minX, maxX, minY, maxY);
    for (const attributeType of record.attributeType) this.statements.insertAttributeType.run(seq, attributeType);
    return { seq, row };
  }

  private runSync<T>(action: string, work: () => T): T {
    if (this.closed) throw new StoreUnavailableError(`sqlite ${action} failed: store is closed`);
    try {
      return work();
    } catch (error) {
      throw toStoreError(error, action);
    }
  }
}

/** A geometry as the store keeps it: its GeoJSON text, and the text's wire bytes (geometry-wire.ts). */
interface StoredForm {
  text: string;
  wire: Uint8Array;
}

/** Opens (creating if needed) and migrates the embedded store. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteSourceStore {
  return openMigrated(
    { path: options.path, busyTimeoutMs: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS },
    (db) => new SqliteSourceStore(db, options.conflictPolicy, options.protectedAreaPolicy, options.groupCommit),
  );
}
