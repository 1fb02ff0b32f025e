import { randomBytes } from "node:crypto";
import {
  type ClientSession,
  type Collection,
  type Db,
  type Document,
  type Filter,
  type MongoClient,
  type MongoClientOptions,
  MongoError,
  MongoErrorLabel,
  MongoNotConnectedError,
  MongoTopologyClosedError,
} from "mongodb";
import type { BoundingBox } from "../../geo/types.js";
import type { ListQuery } from "../../model/list-query.js";
import type { NewSourceRecord, SourceRecord } from "../../model/records.js";
import type { ConflictPolicy, ProtectedAreaPolicy } from "../../model/spatial.js";
import { type AccountAltIds, altIdClash, altIdsByAccount, type SourceStore, StoreUnavailableError } from "../port.js";
import { newMongoClient } from "./client.js";
import {
  fromDocument,
  fromSubjectDocument,
  type GuardDocument,
  type RecordDocument,
  type SettingDocument,
  type SourceDocument,
  type StoredSubject,
  type SubjectDocument,
  toDocument,
} from "./documents.js";
import {
  ensureCollection,
  isAltIdDuplicate,
  isDuplicateKey,
  REPLICA_SET_REQUIRED,
  toSetupError,
  toStoreError,
} from "./errors.js";
import { guardCellsOf } from "./guards.js";
import { MongoProtectedAreaReader, prepareProtectedAreaCollections } from "./protected-areas.js";
import {
  CANDIDATE_CHUNK,
  CANDIDATE_OPTIONS,
  chunks,
  collectExact,
  conflictCandidatesFilter,
  DB_OPTIONS,
  DELETE_OPTIONS,
  deleteByAltIdFilter,
  deleteByIdFilter,
  GET_OPTIONS,
  GUARD_WRITE_OPTIONS,
  GUARDS,
  getFilter,
  guardWrites,
  HELLO_COMMAND,
  LEDGER_SECRET_BYTES,
  LEDGER_SECRET_FILTER,
  LEDGER_SECRET_ID,
  LEDGER_SECRET_READ_OPTIONS,
  ledgerSecretWrite,
  listPlan,
  otherCandidatesFilter,
  SETTINGS,
  SOURCE_INDEXES,
  SOURCES,
  setConflictUpdate,
  TAKEN_ALT_IDS_OPTIONS,
  TRANSACTION_OPTIONS,
  takenAltIdsFilter,
} from "./queries.js";

export interface MongoSourceStoreOptions {
  /** Applied on every create and delete (docs/api.md §8); without it `conflict` is stored as given. */
  conflictPolicy?: ConflictPolicy;
  /**
   * Computes `unep_overlap` on every create from the active protected-area layer (docs/api.md §8;
   * null while none is active). Without it `unepOverlap` is stored as given.
   */
  protectedAreaPolicy?: ProtectedAreaPolicy;
  /**
   * How long a transaction may keep retrying transient failures (write conflicts with concurrent
   * creates, a primary stepping down) before the call fails as unavailable. Default 10 s.
   */
  transactionBudgetMs?: number;
}

export interface OpenMongoStoreOptions extends MongoSourceStoreOptions {
  uri: string;
  database: string;
  /** Merged over the store's defaults (queries.ts `clientOptions`); tests shorten timeouts with it. */
  clientOptions?: MongoClientOptions;
}

const DEFAULT_TRANSACTION_BUDGET_MS = 10_000;
/** A batch whose alt_id duplicate vanished before it could be named is tried again this many times. */
const ALT_ID_ATTEMPTS = 3;
/** Upsert-then-read rounds of the ledger's secret before the call fails as unavailable. */
const SECRET_ATTEMPTS = 3;

/** `hello` of a replica-set member names its set; a mongos router says `isdbgrid`. Both run transactions. */
export function supportsTransactions(hello: Document): boolean {
  return typeof hello.setName === "string" || hello.msg === "isdbgrid";
}

/**
 * The SourceStore on MongoDB (a replica set or a sharded cluster). One MongoClient for the
 * store's life: the driver monitors the deployment, reconnects and re-elects by itself, so the
 * store never caches a connection and recovers when MongoDB is back. Index setup runs at open and,
 * until it has succeeded once, again before each call.
 */
export class MongoSourceStore implements SourceStore {
  private closed = false;
  private setup: Promise<void> | null = null;
  private readonly db: Db;
  private readonly sources: Collection<SourceDocument>;
  private readonly guards: Collection<GuardDocument>;
  private readonly settings: Collection<SettingDocument>;
  /** The ledger's secret once read (or being read); reset when the read fails. */
  private secret: Promise<Uint8Array> | null = null;
  private readonly protectedAreas: MongoProtectedAreaReader | null;
  private readonly policy: ConflictPolicy | null;
  private readonly transactionBudgetMs: number;

  constructor(
    private readonly client: MongoClient,
    database: string,
    options: MongoSourceStoreOptions = {},
  ) {
    this.db = client.db(database, DB_OPTIONS);
    this.sources = this.db.collection<SourceDocument>(SOURCES);
    this.guards = this.db.collection<GuardDocument>(GUARDS);
    this.settings = this.db.collection<SettingDocument>(SETTINGS);
    this.protectedAreas = options.protectedAreaPolicy
      ? new MongoProtectedAreaReader(this.db, options.protectedAreaPolicy)
      : null;
    this.policy = options.conflictPolicy ?? null;
    this.transactionBudgetMs = options.transactionBudgetMs ?? DEFAULT_TRANSACTION_BUDGET_MS;
  }

  /** Connects and creates the indexes (idempotent); resolves once done, and is retried on each call until then. */
  ready(): Promise<void> {
    if (this.closed) return Promise.reject(new StoreUnavailableError("mongodb setup failed: store is closed"));
    this.setup ??= this.prepare().catch((error: unknown) => {
      this.setup = null;
      throw toSetupError(error);
    });
    return this.setup;
  }

  async insertMany(records: NewSourceRecord[]): Promise<SourceRecord[]> {
    if (records.length === 0) return [];
    return this.run("insert", async () => {
      const altIds = altIdsByAccount(records);
      if ([...altIds.values()].some((account) => account.repeated.size > 0)) await this.throwTakenAltIds(altIds);
      const batch = this.protectedAreas === null ? records : await this.withUnepOverlap(records, this.protectedAreas);
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.transaction("insert", (session) =>
            this.policy ? this.insertWithConflicts(batch, this.policy, session) : this.insertAsGiven(batch, session),
          );
        } catch (error) {
          if (!isAltIdDuplicate(error)) throw error;
          await this.throwTakenAltIds(altIds);
          // The duplicate was deleted before it could be named: the batch may fit now.
          if (attempt >= ALT_ID_ATTEMPTS) throw error;
        }
      }
    });
  }

  /**
   * Without a spatial part the server filters, sorts and pages. With `bbox` or `intersects` it
   * returns the cover candidates in list order, and collectExact keeps those whose exact geometry
   * intersects every area until the page is full, reading the cursor a batch at a time and
   * closing it then (queries.ts listPlan).
   */
  async list(query: ListQuery): Promise<SourceRecord[]> {
    return this.run("list", async () => {
      const { filter, options, exact } = listPlan(query);
      const cursor = this.sources.find<RecordDocument>(filter, options);
      const docs =
        exact.length === 0 ? await cursor.toArray() : await collectExact(cursor, exact, query.offset, query.limit);
      return docs.map(fromDocument);
    });
  }

  async get(id: string, accountId: string | null): Promise<SourceRecord | null> {
    return this.run("get", async () => {
      const doc = await this.sources.findOne<RecordDocument>(getFilter(id, accountId), GET_OPTIONS);
      return doc === null ? null : fromDocument(doc);
    });
  }

  async deleteById(id: string, accountId: string | null): Promise<boolean> {
    return this.run("delete", () => this.remove(deleteByIdFilter(id, accountId)));
  }

  async deleteByAltId(altId: string, accountId: string): Promise<boolean> {
    return this.run("delete", () => this.remove(deleteByAltIdFilter(altId, accountId)));
  }

  /**
   * The ledger's secret (SourceStore.ledgerSecret), read once per store instance. The first call
   * on a fresh database stores 32 random bytes with an upsert that only inserts; processes racing
   * it all end up reading the one value that won.
   */
  async ledgerSecret(): Promise<Uint8Array> {
    this.secret ??= this.run("ledger secret", () => this.readLedgerSecret()).catch((error: unknown) => {
      this.secret = null;
      throw error;
    });
    return new Uint8Array(await this.secret);
  }

  /** Reachable, indexes in place, and a replica set or sharded cluster (transactions need one). */
  async ping(): Promise<void> {
    return this.run("ping", async () => {
      const hello = await this.db.command(HELLO_COMMAND);
      if (!supportsTransactions(hello)) throw new StoreUnavailableError(`mongodb ping failed: ${REPLICA_SET_REQUIRED}`);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }

  // --- internals ---

  private async prepare(): Promise<void> {
    // Explicitly, because a client whose first connection failed keeps a closed topology and
    // fails every later operation with "Topology is closed"; connect() replaces such a topology
    // and returns at once for a connected one. Once connected, the driver's monitoring survives
    // outages on its own.
    await this.client.connect();
    await this.sources.createIndexes(SOURCE_INDEXES);
    await prepareProtectedAreaCollections(this.db);
    // Guards are upserted inside transactions; the collection must exist before the first one.
    await ensureCollection(this.db, GUARDS);
  }

  /**
   * Upsert (insert only when missing), then read back majority-committed. Two concurrent upserts
   * can collide on `_id` (MongoDB retries most such upserts itself, not all): the loser's value is
   * dropped and the stored one read. The stored document may then not be majority-committed yet,
   * so a read can find nothing: the next round's upsert matches the document without changing it,
   * and its majority write concern waits until everything the primary holds, that insert
   * included, is majority-committed, so the next read finds it.
   */
  private async readLedgerSecret(): Promise<Uint8Array> {
    for (let attempt = 1; attempt <= SECRET_ATTEMPTS; attempt++) {
      const { filter, update, options } = ledgerSecretWrite(randomBytes(LEDGER_SECRET_BYTES), Date.now());
      try {
        await this.settings.updateOne(filter, update, options);
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const doc = await this.settings.findOne<Pick<SettingDocument, "value">>(
        LEDGER_SECRET_FILTER,
        LEDGER_SECRET_READ_OPTIONS,
      );
      if (doc === null) continue;
      const bytes = doc.value.value();
      if (bytes.length !== LEDGER_SECRET_BYTES) {
        throw new Error(
          `mongodb ledger secret: the stored ${SETTINGS} document ${LEDGER_SECRET_ID} holds ${bytes.length} bytes, not ${LEDGER_SECRET_BYTES}`,
        );
      }
      return new Uint8Array(bytes);
    }
    throw new StoreUnavailableError(
      `mongodb ledger secret failed: not readable with majority read concern after ${SECRET_ATTEMPTS} attempts`,
    );
  }

  private async run<T>(action: string, work: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreUnavailableError(`mongodb ${action} failed: store is closed`);
    try {
      await this.ready();
      return await work();
    } catch (error) {
      // A topology closed behind the store's back is never reopened by the driver: connect anew
      // (through setup) on the next call.
      if (error instanceof MongoTopologyClosedError || error instanceof MongoNotConnectedError) this.setup = null;
      throw toStoreError(error, action);
    }
  }

  /**
   * Runs `work` in a transaction with TRANSACTION_OPTIONS through `withTransaction`, which runs it
   * again on transient failures (a write conflict on a guard, a failover). Past the budget a
   * transient failure ends the call as unavailable instead of retrying for the driver's two minutes.
   */
  private async transaction<T>(action: string, work: (session: ClientSession) => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.transactionBudgetMs;
    const session = this.client.startSession();
    try {
      return await session.withTransaction(async (active) => {
        try {
          return await work(active);
        } catch (error) {
          if (error instanceof MongoError) {
            if (error.hasErrorLabel(MongoErrorLabel.TransientTransactionError) && Date.now() >= deadline) {
              // Not a MongoError: withTransaction aborts and rethrows it without another attempt.
              throw new StoreUnavailableError(
                `mongodb ${action} transaction still failing after ${this.transactionBudgetMs} ms: ` +
                  `${error.name}: ${error.message}`,
                { cause: error },
              );
            }
          }
          throw error;
        }
      }, TRANSACTION_OPTIONS);
    } finally {
      await session.endSession();
    }
  }

  /**
   * `unep_overlap` depends on the protected-area layer only, not on other sources, so it is
   * computed before the write transaction (as on the embedded store): the active layer and its
   * candidates are read in one read-only snapshot transaction, so the layer cannot be retired
   * and deleted between the two reads, and the overlays run after it, holding nothing. A layer
   * activated in between is seen by the next create.
   */
  private async withUnepOverlap(
    records: NewSourceRecord[],
    reader: MongoProtectedAreaReader,
  ): Promise<NewSourceRecord[]> {
    const found = await this.transaction("protected-area overlap", (session) =>
      reader.read(
        records.map((r) => r.bbox),
        session,
      ),
    );
    const overlaps = reader.overlaps(records, found);
    return records.map((record, i) => ({ ...record, unepOverlap: overlaps[i] }));
  }

  /** Without a policy the store keeps each record's flag as given (the contract suite relies on it). */
  private async insertAsGiven(records: readonly NewSourceRecord[], session: ClientSession): Promise<SourceRecord[]> {
    const docs = records.map(toDocument);
    await this.sources.insertMany(docs, { session, ordered: true });
    return docs.map(fromDocument);
  }

  /**
   * docs/api.md §8 on create, inside the transaction: guard the batch's cells, read the candidates
   * of every account through the 2dsphere index, decide with the policy on the exact geometries
   * (stored sources and earlier members of the batch), flag the stored sources that now conflict,
   * then insert the batch with its own flags.
   */
  private async insertWithConflicts(
    records: readonly NewSourceRecord[],
    policy: ConflictPolicy,
    session: ClientSession,
  ): Promise<SourceRecord[]> {
    await this.writeGuards(
      records.map((r) => r.bbox),
      session,
    );
    const stored = new Map<string, StoredSubject>();
    for (const chunk of chunks(records, CANDIDATE_CHUNK)) {
      for (const candidate of await this.candidates(
        chunk.map((r) => r.bbox),
        session,
      )) {
        stored.set(candidate.id, candidate);
      }
    }

    const conflict = records.map(() => false);
    const flagged = new Set<string>();
    records.forEach((record, k) => {
      for (const other of stored.values()) {
        if (!policy.conflicts(record, other)) continue;
        conflict[k] = true;
        if (!other.conflict) flagged.add(other.id);
      }
      for (let j = 0; j < k; j++) {
        if (policy.conflicts(record, records[j])) conflict[j] = conflict[k] = true;
      }
    });

    if (flagged.size > 0) {
      const { filter, update } = setConflictUpdate([...flagged], true);
      await this.sources.updateMany(filter, update, { session });
    }
    const docs = records.map((record, k) => toDocument({ ...record, conflict: conflict[k] }));
    await this.sources.insertMany(docs, { session, ordered: true });
    return docs.map(fromDocument);
  }

  /**
   * Deletes the source `filter` names. With a policy, in a transaction: when the source was
   * flagged, every flagged neighbour that conflicted with it is re-evaluated against what is
   * left and cleared when nothing else conflicts with it; the cells of the deleted source and of
   * every re-evaluated neighbour are guarded, so a concurrent create or delete touching them collides.
   */
  private async remove(filter: Filter<SourceDocument>): Promise<boolean> {
    const policy = this.policy;
    if (policy === null) return (await this.sources.deleteOne(filter)).deletedCount === 1;
    return this.transaction("delete", async (session) => {
      const doc = await this.sources.findOneAndDelete(filter, { ...DELETE_OPTIONS, session });
      if (doc === null) return false;
      const removed = fromSubjectDocument(doc);
      if (!removed.conflict) return true;

      const guarded: BoundingBox[] = [removed.bbox];
      const cleared = new Set<string>();
      const around = await this.candidates([removed.bbox], session);
      for (const neighbour of around) {
        if (!neighbour.conflict || !policy.conflicts(neighbour, removed)) continue;
        guarded.push(neighbour.bbox);
        // Both sides of a conflict are flagged, so only flagged sources can keep this one flagged.
        // Its other conflicts are usually around the removed source (already read): try those
        // before querying its own neighbourhood.
        const conflictsWith = (other: StoredSubject) =>
          other.conflict && !cleared.has(other.id) && other.id !== neighbour.id && policy.conflicts(neighbour, other);
        if (around.some(conflictsWith)) continue;
        const others = await this.sources
          .find<SubjectDocument>(otherCandidatesFilter(neighbour.bbox, neighbour.id), { ...CANDIDATE_OPTIONS, session })
          .toArray();
        if (!others.map(fromSubjectDocument).some(conflictsWith)) cleared.add(neighbour.id);
      }
      await this.writeGuards(guarded, session);
      if (cleared.size > 0) {
        const { filter: clearFilter, update } = setConflictUpdate([...cleared], false);
        await this.sources.updateMany(clearFilter, update, { session });
      }
      return true;
    });
  }

  private async candidates(boxes: BoundingBox[], session: ClientSession): Promise<StoredSubject[]> {
    const docs = await this.sources
      .find<SubjectDocument>(conflictCandidatesFilter(boxes), { ...CANDIDATE_OPTIONS, session })
      .toArray();
    return docs.map(fromSubjectDocument);
  }

  private async writeGuards(boxes: BoundingBox[], session: ClientSession): Promise<void> {
    const cells = guardCellsOf(boxes);
    if (cells.length === 0) return;
    try {
      await this.guards.bulkWrite(guardWrites(cells), { ...GUARD_WRITE_OPTIONS, session });
    } catch (error) {
      // Two transactions inserting the same new guard document: as much a write conflict as any
      // other, so withTransaction runs this one again (and then finds the guard in place).
      if (isDuplicateKey(error)) error.addErrorLabel(MongoErrorLabel.TransientTransactionError);
      throw error;
    }
  }

  /**
   * Throws AltIdTakenError for the first account (in request order) with alt_ids already stored or
   * repeated in the batch, naming all of them in request order. Returns when there are none.
   */
  private async throwTakenAltIds(batch: Map<string, AccountAltIds>): Promise<void> {
    for (const [accountId, account] of batch) {
      const stored = await this.sources
        .find<{ alt_id: string }>(takenAltIdsFilter(accountId, account.altIds), TAKEN_ALT_IDS_OPTIONS)
        .toArray();
      const clash = altIdClash(
        accountId,
        account,
        stored.map((d) => d.alt_id),
      );
      if (clash) throw clash;
    }
  }
}

/**
 * Connects to MongoDB and prepares the collections. An unreachable server does not stop the start:
 * the store is returned, `/readyz` answers 503 with the reason in the log, and setup is retried
 * until MongoDB answers. A URI that does not parse is an InvalidMongoUriError.
 */
export async function openMongoStore(options: OpenMongoStoreOptions): Promise<MongoSourceStore> {
  const client = newMongoClient(options.uri, options.clientOptions);
  const store = new MongoSourceStore(client, options.database, options);
  try {
    await store.ready();
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) {
      await client.close();
      throw error;
    }
  }
  return store;
}
