import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import {
  type ClientSession,
  type Collection,
  type Db,
  type Document,
  type Filter,
  type FindOptions,
  type MongoClient,
  type MongoClientOptions,
  MongoError,
  MongoErrorLabel,
  MongoNotConnectedError,
  MongoTopologyClosedError,
} from "mongodb";
import { conflictAllowances } from "../../geo/overlay-allowances.js";
import type { Change, ConflictMeasure, SourceConflict, SourceEvent } from "../../model/history.js";
import type { ListCursor, ListQuery } from "../../model/list-query.js";
import type { NewSourceRecord, SourceRecord } from "../../model/records.js";
import type { ConflictPolicy, ProtectedAreaPolicy } from "../../model/spatial.js";
import {
  type AccountAltIds,
  altIdClash,
  altIdsByAccount,
  changeAfter,
  type EventPage,
  latestOf,
  recordedAfter,
  type SourceStore,
  StoreNeedsRepairError,
  StoreUnavailableError,
} from "../port.js";
import { matcher } from "../record-filter.js";
import { spatialFilterOf } from "../spatial-filter.js";
import { newMongoClient } from "./client.js";
import { sourceRectanglesOf } from "./cover.js";
import {
  type BoxDocument,
  type ConflictPairDocument,
  type EventSubject,
  type EventSubjectDocument,
  fromBoxDocument,
  fromDocument,
  fromEventDocument,
  fromEventSubjectDocument,
  fromPairDocument,
  fromSubjectDocument,
  type GuardDocument,
  type PairViewDocument,
  type RecordDocument,
  recordDocumentOf,
  type SettingDocument,
  type SourceBoxDocument,
  type SourceDocument,
  type SourceEventDocument,
  type StoredSubject,
  type SubjectDocument,
  sourceBoxOf,
  toDocument,
} from "./documents.js";
import {
  CommitRetriesStopped,
  duplicateAltIds,
  isAltIdDuplicate,
  isCommitOutcomeUnknown,
  isDuplicateKey,
  REPLICA_SET_REQUIRED,
  toSetupError,
  toStoreError,
} from "./errors.js";
import { guardCellsOf } from "./guards.js";
import { HistoryWrites, type NamedSource } from "./history.js";
import { fillHistory } from "./history-fill.js";
import { MongoProtectedAreaReader } from "./protected-areas.js";
import {
  APPLIED_IDS_OPTIONS,
  AS_OF_CHANGES_OPTIONS,
  AS_OF_HISTORY_OPTIONS,
  asOfBoxesFilter,
  asOfBoxesOptions,
  asOfChangesFilter,
  asOfChunkSize,
  asOfCreatedFilter,
  asOfCreatedOptions,
  asOfHistoryFilter,
  CANDIDATE_CHUNK,
  CANDIDATE_OPTIONS,
  type CandidateShape,
  CLASHING_ALT_IDS_OPTIONS,
  COMMITTED_IDS_OPTIONS,
  CONFLICT_PAIRS,
  COUNTERPART_OPTIONS,
  CREATED_EVENTS_OPTIONS,
  chunks,
  collectExact,
  conflictCandidatesFilter,
  createdEventsFilter,
  DB_OPTIONS,
  DELETE_OPTIONS,
  deleteByAltIdFilter,
  deleteByIdFilter,
  EVENT_SEQ_WRITE_OPTIONS,
  EVENT_SUBJECT_OPTIONS,
  eventSeqWrites,
  GET_OPTIONS,
  GUARD_TIMES_OPTIONS,
  GUARD_WRITE_OPTIONS,
  GUARDS,
  getFilter,
  guardsFilter,
  guardWrites,
  HELLO_COMMAND,
  HISTORY_EXISTS_OPTIONS,
  HISTORY_INSERT_OPTIONS,
  HISTORY_OPTIONS,
  historyFilter,
  historyPageFilter,
  historyPageOptions,
  LEDGER_SECRET_BYTES,
  LEDGER_SECRET_FILTER,
  LEDGER_SECRET_ID,
  LEDGER_SECRET_READ_OPTIONS,
  LIVE_SOURCE_OPTIONS,
  ledgerSecretWrite,
  listPlan,
  PAIR_KEYS_OPTIONS,
  PAIR_SIDES,
  pairsOfAnyFilter,
  pairsOfFilter,
  pairsPageQuery,
  SETTINGS,
  SOURCE_BOXES,
  SOURCE_EVENTS,
  SOURCES,
  sourcesByIdFilter,
  TAKEN_ALT_IDS_OPTIONS,
  TRANSACTION_OPTIONS,
  takenAltIdsFilter,
} from "./queries.js";
import { prepareLedgerCollections } from "./setup.js";

export interface MongoSourceStoreOptions {
  /**
   * Applied on every create (docs/api.md §8, §14): the pairs it finds are stored with their
   * measures. Without it `conflict` is stored as given and no pair is made.
   */
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
  /**
   * How long a call waits for setup still running (an index build) before it answers as
   * unavailable, setup going on. Default 5 s.
   */
  setupWaitMs?: number;
}

export interface OpenMongoStoreOptions extends MongoSourceStoreOptions {
  uri: string;
  database: string;
  /** Merged over the store's defaults (queries.ts `clientOptions`); tests shorten timeouts with it. */
  clientOptions?: MongoClientOptions;
}

const DEFAULT_TRANSACTION_BUDGET_MS = 10_000;
const DEFAULT_SETUP_WAIT_MS = 5_000;
/** A batch whose alt_id duplicate vanished before it could be named is tried this many times in all. */
const ALT_ID_ATTEMPTS = 3;
/** The wait before the second attempt of such a batch; doubled before each later one (50, 100 ms). */
const ALT_ID_BACKOFF_MS = 50;
/** Reads of a change whose commit outcome is unknown, while it is applied but not majority-committed. */
const COMMIT_CHECKS = 4;
/** The wait before the second such read, doubled before each later one (100, 200, 400 ms). */
const COMMIT_CHECK_BACKOFF_MS = 100;
/** Upsert-then-read rounds of the ledger's secret before the call fails as unavailable. */
const SECRET_ATTEMPTS = 3;

/** `hello` of a replica-set member names its set; a mongos router says `isdbgrid`. Both run transactions. */
export function supportsTransactions(hello: Document): boolean {
  return typeof hello.setName === "string" || hello.msg === "isdbgrid";
}

/** A cursor as it is (the as_of read's tested candidate already is one). */
const itself = (cursor: ListCursor): ListCursor => cursor;

/**
 * The SourceStore on MongoDB (a replica set or a sharded cluster). One MongoClient for the
 * store's life: the driver monitors the deployment, reconnects and re-elects by itself, so the
 * store never caches a connection and recovers when MongoDB is back. Index setup runs at open and,
 * until it has succeeded once, again before each call.
 */
export class MongoSourceStore implements SourceStore {
  private closed = false;
  private setup: Promise<void> | null = null;
  /** Setup has succeeded (and no topology closed since). */
  private prepared = false;
  /**
   * Why the last setup failed, kept for calls that stop waiting before a setup ends: when every
   * setup takes longer than setupWaitMs, no caller would otherwise ever see its failure.
   */
  private lastSetupFailure: Error | null = null;
  private readonly setupWaitMs: number;
  private readonly db: Db;
  private readonly sources: Collection<SourceDocument>;
  private readonly guards: Collection<GuardDocument>;
  private readonly events: Collection<SourceEventDocument>;
  private readonly boxes: Collection<SourceBoxDocument>;
  private readonly pairs: Collection<ConflictPairDocument>;
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
    this.events = this.db.collection<SourceEventDocument>(SOURCE_EVENTS);
    this.boxes = this.db.collection<SourceBoxDocument>(SOURCE_BOXES);
    this.pairs = this.db.collection<ConflictPairDocument>(CONFLICT_PAIRS);
    this.settings = this.db.collection<SettingDocument>(SETTINGS);
    this.protectedAreas = options.protectedAreaPolicy
      ? new MongoProtectedAreaReader(this.db, options.protectedAreaPolicy)
      : null;
    this.policy = options.conflictPolicy ?? null;
    this.transactionBudgetMs = options.transactionBudgetMs ?? DEFAULT_TRANSACTION_BUDGET_MS;
    this.setupWaitMs = options.setupWaitMs ?? DEFAULT_SETUP_WAIT_MS;
  }

  /**
   * Connects, creates the indexes and fills in what an older ledger lacks (idempotent); resolves
   * once done, and is retried on each call until then, unless it found what needs repair.
   */
  ready(): Promise<void> {
    if (this.closed) return Promise.reject(new StoreUnavailableError("mongodb setup failed: store is closed"));
    this.setup ??= this.prepare().then(
      () => {
        this.prepared = true;
        this.lastSetupFailure = null;
      },
      (error: unknown) => {
        const failure = toSetupError(error);
        // Kept when only an operator can help: every call then fails at once with its reason.
        if (!(failure instanceof StoreNeedsRepairError)) this.setup = null;
        this.lastSetupFailure = failure instanceof Error ? failure : new Error(String(failure));
        throw failure;
      },
    );
    return this.setup;
  }

  /**
   * A call's wait for setup, and the service's at start: at most `setupWaitMs`, then unavailable
   * while setup goes on (an index build of a deploy can keep createIndexes waiting for minutes;
   * the service listens, and calls and /readyz answer 503 meanwhile, instead of each hanging until
   * the socket timeout). One setup at a time.
   */
  async readyWithin(): Promise<void> {
    if (this.prepared) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<true>((resolve) => {
      timer = setTimeout(() => resolve(true), this.setupWaitMs);
    });
    try {
      const stillRunning = await Promise.race([this.ready().then(() => false), waited]);
      if (stillRunning) {
        const last = this.lastSetupFailure;
        throw new StoreUnavailableError(
          `mongodb setup still running after ${this.setupWaitMs} ms (an index build in progress?); ` +
            "it goes on, and calls are served once it is done" +
            (last === null ? "" : `; the setup before it failed: ${last.name}: ${last.message}`),
          last === null ? undefined : { cause: last },
        );
      }
    } finally {
      clearTimeout(timer);
    }
  }

  async insertMany(records: NewSourceRecord[]): Promise<SourceRecord[]> {
    if (records.length === 0) return [];
    return this.run("insert", async () => {
      const altIds = altIdsByAccount(records);
      if ([...altIds.values()].some((account) => account.repeated.size > 0)) await this.throwTakenAltIds(altIds);
      const batch = this.protectedAreas === null ? records : await this.withUnepOverlap(records, this.protectedAreas);
      const ids = records.map((record) => record.id);
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.transaction(
            "insert",
            (session) =>
              this.policy ? this.insertWithConflicts(batch, this.policy, session) : this.insertAsGiven(batch, session),
            async (created, unknown) => {
              await this.settleUnknownCommit(ids, "create", unknown);
              return created;
            },
          );
        } catch (error) {
          if (!isAltIdDuplicate(error)) throw error;
          // Looked up on the primary, where the unique index found the clash (majority-committed or not).
          await this.throwTakenAltIds(altIds, CLASHING_ALT_IDS_OPTIONS);
          // The clashing source was deleted before it could be named: the batch may fit now.
          if (attempt >= ALT_ID_ATTEMPTS) throw altIdClashOf(altIds, error);
          await delay(ALT_ID_BACKOFF_MS * 2 ** (attempt - 1));
        }
      }
    });
  }

  /**
   * After a commit failed with an unknown outcome (the transaction ran; its commit may or may not
   * have applied), decides by reading the change's own sources by id: stored for a create, gone
   * for a delete. Majority-committed so: it applied (a transaction is atomic, so one source of a
   * batch found is all of them): returns, and the change stands. Not so even on the primary (read
   * concern local): it did not apply: 503. Applied on the primary but not yet majority-committed:
   * read again with a bounded backoff, and 503 if still not (docs/mongodb.md "A commit whose
   * outcome is unknown").
   */
  private async settleUnknownCommit(
    ids: readonly string[],
    change: "create" | "delete",
    unknown: StoreUnavailableError,
  ): Promise<void> {
    const applied = (found: readonly unknown[]) => (change === "create" ? found.length > 0 : found.length === 0);
    for (let check = 1; ; check++) {
      if (applied(await this.sources.find(sourcesByIdFilter(ids), COMMITTED_IDS_OPTIONS).toArray())) return;
      if (!applied(await this.sources.find(sourcesByIdFilter(ids), APPLIED_IDS_OPTIONS).toArray())) {
        throw new StoreUnavailableError(`${unknown.message}; the ${change} did not apply`, { cause: unknown.cause });
      }
      if (check >= COMMIT_CHECKS) {
        throw new StoreUnavailableError(
          `${unknown.message}; the ${change} is applied on the primary but not majority-committed after ${check} reads`,
          { cause: unknown.cause },
        );
      }
      await delay(COMMIT_CHECK_BACKOFF_MS * 2 ** (check - 1));
    }
  }

  /**
   * Without a spatial part the server filters, sorts and pages. With `bbox` or `intersects` it
   * returns the cover candidates in list order, and collectExact keeps those whose exact geometry
   * intersects every area until the page is full, reading the cursor a batch at a time and
   * closing it then (queries.ts listPlan).
   */
  async list(query: ListQuery): Promise<SourceRecord[]> {
    const { asOf } = query;
    if (asOf !== undefined) return this.run("list", () => this.listAsOf(query, asOf));
    return this.run("list", async () => {
      const { filter, options, exact } = listPlan(query);
      // A spatial list's documents carry their box too (SPATIAL_LIST_OPTIONS).
      const cursor = this.sources.find<RecordDocument & Partial<Pick<SourceDocument, "bbox">>>(filter, options);
      const docs = exact.length === 0 ? await cursor.toArray() : await collectExact(cursor, exact, query);
      return docs.map(fromDocument);
    });
  }

  async get(id: string, accountId: string | null): Promise<SourceRecord | null> {
    return this.run("get", async () => {
      const doc = await this.sources.findOne<RecordDocument>(getFilter(id, accountId), GET_OPTIONS);
      return doc === null ? null : fromDocument(doc);
    });
  }

  /**
   * The source as it stood at `asOf` (docs/api.md §14), from its events by then, one query along
   * `source_seq`: created by then and not deleted by then, the record as created with the flag as
   * it was then (more conflict_set than conflict_cleared).
   */
  async getAsOf(id: string, accountId: string | null, asOf: number): Promise<SourceRecord | null> {
    return this.run("get", async () => {
      const events = await this.events
        .find<AsOfEventDocument>(asOfHistoryFilter(id, accountId, asOf), AS_OF_HISTORY_OPTIONS)
        .toArray();
      const created = events.find((event) => event.type === "created");
      if (created?.record === undefined || events.some((event) => event.type === "deleted")) return null;
      return { ...fromDocument(created.record), conflict: openConflicts(events) > 0 };
    });
  }

  async deleteById(id: string, accountId: string | null, change: Change): Promise<boolean> {
    return this.run("delete", () => this.remove(deleteByIdFilter(id, accountId), change));
  }

  async deleteByAltId(altId: string, accountId: string, change: Change): Promise<boolean> {
    return this.run("delete", () => this.remove(deleteByAltIdFilter(altId, accountId), change));
  }

  /**
   * One query along `source_seq`: the source's events in seq order, also after its deletion (its
   * events stay). No event in scope means no source of that id was ever in scope: null.
   */
  async history(id: string, accountId: string | null, page?: EventPage): Promise<SourceEvent[] | null> {
    return this.run("history", async () => {
      const docs = await this.events
        .find<Omit<SourceEventDocument, "_id">>(
          page === undefined ? historyFilter(id, accountId) : historyPageFilter(id, accountId, page.afterSeq),
          page === undefined ? HISTORY_OPTIONS : historyPageOptions(page.limit),
        )
        .toArray();
      if (docs.length > 0) return docs.map(fromEventDocument);
      // Nothing on the page: a source with no event in scope never existed there; past its last
      // event, the page is empty.
      if (page === undefined || page.afterSeq <= 0) return null;
      const any = await this.events.findOne(historyFilter(id, accountId), HISTORY_EXISTS_OPTIONS);
      return any === null ? null : [];
    });
  }

  /**
   * A live source's pairs (a page of them), each from its side, with the counterpart as its
   * document names it now, in the order the source's history recorded them (its event seq on the
   * pair). The reads (the source, a range of its pairs from each side, their counterparts) run in
   * one read-only snapshot transaction, so a delete committing meanwhile is seen whole or not at
   * all: never a pair without its counterpart.
   */
  async conflictsOf(id: string, accountId: string | null, page?: EventPage): Promise<SourceConflict[] | null> {
    return this.run("conflicts", () =>
      this.transaction(
        "conflicts",
        async (session) => {
          const live = await this.sources.findOne(getFilter(id, accountId), { ...LIVE_SOURCE_OPTIONS, session });
          if (live === null) return null;
          // One range of each side's index, merged in the order of the source's event seqs. One
          // after the other: operations of one transaction must not run in parallel (the driver).
          const sides: { pair: PairViewDocument; seq: number }[] = [];
          for (const side of PAIR_SIDES) {
            const { filter, options } = pairsPageQuery(id, side, page ?? { afterSeq: 0 });
            const found = await this.pairs.find<PairViewDocument>(filter, { ...options, session }).toArray();
            for (const pair of found) {
              const seq = pair[side.event];
              // Only a process of an earlier version, still writing after the fill, leaves it out.
              if (typeof seq !== "number") {
                throw new StoreUnavailableError(
                  `mongodb conflict pair ${pair.a}|${pair.b} has no ${side.event}: written by a process of an earlier version (docs/mongodb.md, "A ledger stored before the event log")`,
                );
              }
              sides.push({ pair, seq });
            }
          }
          const pairs = sides
            .sort((x, y) => x.seq - y.seq)
            .slice(0, page?.limit)
            .map(({ pair }) => pair);
          if (pairs.length === 0) return [];
          const counterpartIds = [...new Set(pairs.map((pair) => (pair.a === id ? pair.b : pair.a)))];
          const counterparts = new Map(
            (
              await this.sources
                .find<Pick<EventSubjectDocument, "_id" | "alt_id" | "account_id">>(sourcesByIdFilter(counterpartIds), {
                  ...COUNTERPART_OPTIONS,
                  session,
                })
                .toArray()
            ).map((doc) => [doc._id, doc]),
          );
          const conflicts: SourceConflict[] = [];
          for (const pair of pairs) {
            // Both sides of a pair are live in any snapshot (a delete removes the pairs with the source).
            const counterpart = counterparts.get(pair.a === id ? pair.b : pair.a);
            if (counterpart !== undefined) conflicts.push(fromPairDocument(id, pair, counterpart));
          }
          return conflicts;
        },
        keepWhatWasRead,
      ),
    );
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
    await prepareLedgerCollections(this.db);
    // A ledger stored before the event log gains it once (history-fill.ts); later opens read the
    // markers and go on.
    await fillHistory(
      {
        sources: this.sources,
        events: this.events,
        boxes: this.boxes,
        pairs: this.pairs,
        settings: this.settings,
        transaction: (action, work) => this.transaction(action, work),
        now: Date.now,
      },
      this.policy,
    );
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
      await this.readyWithin();
      return await work();
    } catch (error) {
      // A topology closed behind the store's back is never reopened by the driver: connect anew
      // (through setup) on the next call.
      if (error instanceof MongoTopologyClosedError || error instanceof MongoNotConnectedError) {
        this.setup = null;
        this.prepared = false;
      }
      throw toStoreError(error, action);
    }
  }

  /**
   * Runs `work` in a transaction with TRANSACTION_OPTIONS through `withTransaction`, which runs it
   * again on transient failures (a write conflict on a guard, a failover) and tries a commit whose
   * outcome is unknown again. Neither goes on past the budget (the driver alone would go on for
   * two minutes): a transient failure then ends the call as unavailable, and a commit is not tried
   * again. A commit that fails with its outcome unknown (errors.ts isCommitOutcomeUnknown) is
   * handed to `settle` with what the committed attempt returned, to decide by reading; without
   * `settle` the call is unavailable.
   */
  private async transaction<T>(
    action: string,
    work: (session: ClientSession) => Promise<T>,
    settle?: (result: T, unknown: StoreUnavailableError) => Promise<T>,
  ): Promise<T> {
    const deadline = Date.now() + this.transactionBudgetMs;
    // What the attempt being committed returned; absent while an attempt runs (its failures are not commits').
    const attempt: { result?: { value: T } } = {};
    let attempts = 0;
    let unknown: StoreUnavailableError;
    // Past the budget, a transient failure (when one is at hand) ends the call as unavailable: not
    // a MongoError, so withTransaction aborts and rethrows it without another attempt.
    const budgetSpent = (cause?: MongoError) =>
      new StoreUnavailableError(
        `mongodb ${action} transaction still failing after ${this.transactionBudgetMs} ms` +
          (cause === undefined ? "" : `: ${cause.name}: ${cause.message}`),
        cause === undefined ? undefined : { cause },
      );
    const session = this.client.startSession();
    const commits = this.commitWithinBudget(session, deadline);
    try {
      return await session.withTransaction(async (active) => {
        attempt.result = undefined;
        commits.newAttempt();
        // A commit aborted for certain (TransientTransactionError) brings withTransaction back
        // here without a look at the clock: nothing was stored, so past the budget it is a 503.
        if (attempts++ > 0 && Date.now() >= deadline) throw budgetSpent();
        try {
          const value = await work(active);
          attempt.result = { value };
          return value;
        } catch (error) {
          const transient =
            error instanceof MongoError && error.hasErrorLabel(MongoErrorLabel.TransientTransactionError);
          if (transient && Date.now() >= deadline) throw budgetSpent(error);
          throw error;
        }
      }, TRANSACTION_OPTIONS);
    } catch (error) {
      if (attempt.result === undefined || !isCommitOutcomeUnknown(error)) throw error;
      const { name, message } = error as Error;
      unknown = new StoreUnavailableError(`mongodb ${action} commit outcome unknown: ${name}: ${message}`, {
        cause: error,
      });
    } finally {
      await session.endSession();
    }
    if (settle === undefined) throw unknown;
    return settle(attempt.result.value, unknown);
  }

  /**
   * withTransaction tries a commit whose outcome is unknown again until its own 120 s have passed;
   * past `deadline` this session's commit is not tried again: CommitRetriesStopped ends
   * withTransaction with the commit's last failure, and the outcome is decided by reading. The
   * first commit of each attempt is always sent (`newAttempt` forgets the last attempt's failure).
   */
  private commitWithinBudget(session: ClientSession, deadline: number): { newAttempt(): void } {
    const commit = session.commitTransaction.bind(session);
    let failed: MongoError | undefined;
    session.commitTransaction = async () => {
      if (failed !== undefined && Date.now() >= deadline)
        throw new CommitRetriesStopped(failed, this.transactionBudgetMs);
      try {
        await commit();
        failed = undefined;
      } catch (error) {
        // Only a failure withTransaction tries the commit again after (a new attempt commits afresh).
        const retried =
          error instanceof MongoError && error.hasErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult);
        failed = retried ? error : undefined;
        throw error;
      }
    };
    return {
      newAttempt: () => {
        failed = undefined;
      },
    };
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
    const found = await this.transaction(
      "protected-area overlap",
      (session) =>
        reader.read(
          records.map((r) => ({ box: r.bbox, geometry: r.geometry })),
          session,
        ),
      keepWhatWasRead,
    );
    const overlaps = reader.overlaps(records, found);
    return records.map((record, i) => ({ ...record, unepOverlap: overlaps[i] }));
  }

  /**
   * A page of the ledger as it stood at `asOf` (docs/api.md §14), as the embedded store makes it:
   * the `created` events by then in list order, a growing chunk at a time (asOfChunkSize;
   * `account_type_at` or `type_at`), or within an area the boxes of the sources created by then
   * that meet it (source_boxes) and their `created` events; then one query for what happened to
   * that chunk's sources by then (deleted, conflict events); each live one as created, with its flag
   * as it was, filtered (the plain filters and the exact spatial test, in memory: a source whose box
   * lies within every box area untested) and paged. Plain reads, no transaction: every event at or
   * before a past instant was written by a change committed when the instant came (only a create
   * still retrying then can add one later), and events and boxes are never changed, so the chunks
   * agree with each other.
   */
  private async listAsOf(query: ListQuery, asOf: number): Promise<SourceRecord[]> {
    const plain = matcher(query);
    const spatial = spatialFilterOf(query);
    const page: SourceRecord[] = [];
    let skip = query.offset;
    let after = query.after;
    let tested: ListCursor | null = null;
    for (let round = 0; page.length < query.limit; round++) {
      const chunk = asOfChunkSize(query.offset, query.limit, round, spatial !== null);
      const { created, read, last } =
        spatial === null
          ? listedChunk(
              await this.events
                .find<AsOfCreatedDocument>(
                  asOfCreatedFilter(asOf, query.accountId, after, query.id),
                  asOfCreatedOptions(chunk),
                )
                .toArray(),
            )
          : await this.createdWithin(asOfBoxesFilter(asOf, query.accountId, spatial.envelope, after, query.id), chunk);
      if (read === 0) break;
      const changes = await this.events
        .find<Pick<SourceEventDocument, "source_id" | "type">>(
          asOfChangesFilter(
            created.map((event) => event.source_id),
            asOf,
          ),
          AS_OF_CHANGES_OPTIONS,
        )
        .toArray();
      const deleted = new Set(changes.filter((c) => c.type === "deleted").map((c) => c.source_id));
      const open = new Map<string, number>();
      for (const { source_id, type } of changes) {
        if (type !== "deleted") open.set(source_id, (open.get(source_id) ?? 0) + (type === "conflict_set" ? 1 : -1));
      }
      for (const event of created) {
        if (query.exactTests?.stopsBefore(tested, itself, skip)) return page;
        tested = { createdAt: event.at.getTime(), id: event.source_id };
        query.exactTests?.spendOnRead();
        if (deleted.has(event.source_id)) continue;
        const record = { ...fromDocument(event.record), conflict: (open.get(event.source_id) ?? 0) > 0 };
        if (!plain(record)) continue;
        if (spatial !== null) {
          // The box holds the geometry: within every box area, it matches.
          const within = event.bbox !== undefined && spatial.covers(fromBoxDocument(event.bbox));
          if (!within && !spatial.matches(record.geometry)) continue;
        }
        if (skip > 0) skip -= 1;
        else page.push(record);
        if (page.length >= query.limit) break;
      }
      // Past what was read, boxes without their event included.
      after = last;
      if (read < chunk) break;
    }
    return page;
  }

  /**
   * The `created` events of the first `limit` boxes `filter` finds (source_boxes, in list order),
   * in that order, each with its box. A box without its event (the events erased by hand and the
   * box left, docs/mongodb.md "Retention and erasure") is a source the log no longer holds: left
   * out, as a list without an area leaves it out.
   */
  private async createdWithin(filter: Filter<SourceBoxDocument>, limit: number): Promise<AsOfChunk> {
    const boxes = await this.boxes
      .find<Pick<SourceBoxDocument, "_id" | "at" | "bbox">>(filter, asOfBoxesOptions(limit))
      .toArray();
    const lastBox = boxes.at(-1);
    if (lastBox === undefined) return { created: [], read: 0, last: undefined };
    const events = await this.events
      .find<AsOfCreatedDocument>(createdEventsFilter(boxes.map((box) => box._id)), CREATED_EVENTS_OPTIONS)
      .toArray();
    const byId = new Map(events.map((event) => [event.source_id, event]));
    const created = boxes.flatMap((box) => {
      const event = byId.get(box._id);
      return event === undefined ? [] : [{ ...event, bbox: box.bbox }];
    });
    return { created, read: boxes.length, last: { createdAt: lastBox.at.getTime(), id: lastBox._id } };
  }

  /**
   * Without a policy the store keeps each record's flag as given (the contract suite relies on it)
   * and makes no pair; each record still gets its `created` event.
   */
  private async insertAsGiven(requested: readonly NewSourceRecord[], session: ClientSession): Promise<SourceRecord[]> {
    const records = await this.guardBatch(requested, session);
    const history = new HistoryWrites();
    const docs = records.map((record) => toDocument(record));
    docs.forEach((doc, k) => {
      history.created(recordDocumentOf(doc), changeOf(records[k]));
    });
    await this.sources.insertMany(docs, { session, ordered: true });
    await this.events.insertMany(history.events, { ...HISTORY_INSERT_OPTIONS, session });
    await this.boxes.insertMany(docs.map(sourceBoxOf), { ...HISTORY_INSERT_OPTIONS, session });
    return docs.map(fromDocument);
  }

  /**
   * docs/api.md §8 and §14 on create, inside the transaction: guard the batch's cells, read the
   * candidates of every account through the 2dsphere index, and measure each new source, in
   * request order, against every candidate (in id order) and then every earlier member of the
   * batch, with the policy on the exact geometries. Each conflict is a pair, stored once with the
   * measure from the new source's side, with a `conflict_set` event on both sides. A new source's
   * `created` event comes first and holds the record as it stood when its turn came (flagged when
   * it conflicts with what was there before it); its document and the response hold the final flag
   * (later members may flag it too). Then: the flag and last seq of every stored source that got a
   * pair, the batch, its pairs, and every event.
   */
  private async insertWithConflicts(
    requested: readonly NewSourceRecord[],
    policy: ConflictPolicy,
    session: ClientSession,
  ): Promise<SourceRecord[]> {
    // withTransaction runs this again after a transient failure: each attempt measures the overlays
    // under the request's whole allowance (docs/api.md §8.5), not what an aborted attempt left of it;
    // as the embedded store does when its group commit runs a request again.
    conflictAllowances.renew(requested.map((record) => record.geometry));
    let candidates: StoredSubject[] = [];
    const records = await this.guardBatch(requested, session, async () => {
      const stored = new Map<string, StoredSubject>();
      for (const chunk of chunks(requested, CANDIDATE_CHUNK)) {
        for (const candidate of await this.candidates(
          chunk.map((r) => ({ box: r.bbox, geometry: r.geometry })),
          session,
        )) {
          stored.set(candidate.id, candidate);
        }
      }
      candidates = [...stored.values()].sort((x, y) => compareIds(x.id, y.id));
      // No earlier than the last event of any source it may write events for (a candidate).
      return latestOf(candidates, (candidate) => candidate.lastEventAt);
    });

    const history = new HistoryWrites();
    for (const candidate of candidates) history.track(candidate);
    const conflict = records.map(() => false);
    const paired = new Set<string>();
    const docs: SourceDocument[] = [];
    records.forEach((record, k) => {
      const change = changeOf(record);
      const found: { other: NamedSource; measure: ConflictMeasure; member: number }[] = [];
      for (const other of candidates) {
        const measure = policy.measure(record, other);
        if (measure !== null) found.push({ other, measure, member: -1 });
      }
      for (let j = 0; j < k; j++) {
        const measure = policy.measure(record, records[j]);
        if (measure !== null) found.push({ other: records[j], measure, member: j });
      }
      conflict[k] = found.length > 0;
      const doc = toDocument({ ...record, conflict: conflict[k] });
      docs.push(doc);
      history.created(recordDocumentOf(doc), change);
      for (const { other, measure, member } of found) {
        history.conflictFound(record, other, measure, change);
        if (member >= 0) conflict[member] = true;
        else paired.add(other.id);
      }
    });
    // The final flags (later members may have flagged earlier ones) and last seqs; the `created`
    // events keep their own copies of the record fields as they stood.
    docs.forEach((doc, k) => {
      doc.conflict = conflict[k];
      doc.event_seq = history.lastSeqOf(doc._id);
      doc.last_event_at = new Date(history.lastAtOf(doc._id));
    });

    if (paired.size > 0) {
      const updates = candidates
        .filter((candidate) => paired.has(candidate.id))
        .map((candidate) => history.sourceUpdate(candidate.id, true));
      await this.sources.bulkWrite(eventSeqWrites(updates), { ...EVENT_SEQ_WRITE_OPTIONS, session });
    }
    await this.sources.insertMany(docs, { session, ordered: true });
    if (history.pairs.length > 0) {
      await this.pairs.insertMany(history.pairs, { ...HISTORY_INSERT_OPTIONS, session });
    }
    await this.events.insertMany(history.events, { ...HISTORY_INSERT_OPTIONS, session });
    await this.boxes.insertMany(docs.map(sourceBoxOf), { ...HISTORY_INSERT_OPTIONS, session });
    return docs.map(fromDocument);
  }

  /**
   * Deletes the source `filter` names, in a transaction with its events: the source's `deleted`
   * event; its pairs removed; for each counterpart (in id order) a `conflict_cleared` event naming
   * it, and the flag cleared when that was the counterpart's last pair. Nothing is re-evaluated:
   * the pairs say what conflicted. No guard is needed for the pairs: every transaction that
   * changes the pairs of a source appends an event for it and so writes its document (history.ts);
   * a create pairing with the deleted source writes that source's document, which the delete
   * removes, and one pairing with a counterpart writes the counterpart's document, as the delete
   * does: either way MongoDB lets one commit and the other retries. The delete still writes the
   * guards of its box, for its time: a create there that commits after it without seeing it is
   * recorded no earlier (guardBatch), so no as_of instant shows both live and unpaired.
   */
  private async remove(filter: Filter<SourceDocument>, requested: Change): Promise<boolean> {
    // The source the committed attempt deleted, to decide a commit whose outcome is unknown.
    let deletedId: string | null = null;
    const work = async (session: ClientSession): Promise<boolean> => {
      deletedId = null;
      const doc = await this.sources.findOneAndDelete(filter, { ...DELETE_OPTIONS, session });
      if (doc === null) return false;
      const removed = fromEventSubjectDocument(doc);
      deletedId = removed.id;
      const history = new HistoryWrites();
      history.track(removed);
      let counterparts: EventSubject[] = [];
      let stillPaired = new Set<string>();
      // The guards of its place: a create there that did not see it after this commit is recorded
      // no earlier than this delete. No earlier than the last event of any source it writes events
      // for either (itself, its counterparts), so no history goes back.
      const since = await this.holdPlace(
        guardCellsOf([fromBoxDocument(doc.bbox)]),
        requested.at,
        session,
        removed.lastEventAt,
        async () => {
          const pairs = await this.pairs
            .find<Pick<ConflictPairDocument, "a" | "b">>(pairsOfFilter(removed.id), {
              ...PAIR_KEYS_OPTIONS,
              session,
            })
            .toArray();
          if (pairs.length === 0) return Number.NEGATIVE_INFINITY;
          const ids = [...new Set(pairs.map((pair) => (pair.a === removed.id ? pair.b : pair.a)))];
          await this.pairs.deleteMany(pairsOfFilter(removed.id), { session });
          counterparts = (
            await this.sources
              .find<EventSubjectDocument>(sourcesByIdFilter(ids), { ...EVENT_SUBJECT_OPTIONS, session })
              .toArray()
          )
            .map(fromEventSubjectDocument)
            .sort((x, y) => compareIds(x.id, y.id));
          const left = await this.pairs
            .find<Pick<ConflictPairDocument, "a" | "b">>(pairsOfAnyFilter(ids), { ...PAIR_KEYS_OPTIONS, session })
            .toArray();
          stillPaired = new Set(left.flatMap((pair) => [pair.a, pair.b]));
          return latestOf(counterparts, (counterpart) => counterpart.lastEventAt);
        },
      );
      const change = changeAfter(requested, since);
      history.deleted(removed, change);
      const updates = counterparts.map((counterpart) => {
        history.track(counterpart);
        history.released(counterpart, removed, change);
        // The flag clears with the counterpart's last pair.
        return history.sourceUpdate(counterpart.id, stillPaired.has(counterpart.id) ? undefined : false);
      });
      if (updates.length > 0) {
        await this.sources.bulkWrite(eventSeqWrites(updates), { ...EVENT_SEQ_WRITE_OPTIONS, session });
      }
      await this.events.insertMany(history.events, { ...HISTORY_INSERT_OPTIONS, session });
      return true;
    };
    return this.transaction("delete", work, async (deleted, unknown) => {
      // Nothing found, nothing written: whether that commit applied changes nothing.
      if (!deleted || deletedId === null) return deleted;
      await this.settleUnknownCommit([deletedId], "delete", unknown);
      return true;
    });
  }

  private async candidates(shapes: CandidateShape[], session: ClientSession): Promise<StoredSubject[]> {
    const docs = await this.sources
      .find<SubjectDocument>(conflictCandidatesFilter(shapes), { ...CANDIDATE_OPTIONS, session })
      .toArray();
    return docs.map(fromSubjectDocument);
  }

  /**
   * A batch's guards, first in its transaction (guards.ts): the cells of every member's rectangles,
   * held for the batch (holdPlace; `readAlso` reads the candidates' last events), which is recorded
   * no earlier than the instant that answers (recordedAfter).
   */
  private async guardBatch(
    requested: readonly NewSourceRecord[],
    session: ClientSession,
    readAlso?: () => Promise<number>,
  ): Promise<NewSourceRecord[]> {
    const cells = guardCellsOf(requested.flatMap((r) => sourceRectanglesOf(r.geometry, r.bbox)));
    const requestedAt = latestOf(requested, (record) => record.createdAt);
    return recordedAfter(
      requested,
      await this.holdPlace(cells, requestedAt, session, Number.NEGATIVE_INFINITY, readAlso),
    );
  }

  /**
   * Holds the guards of `cells` for a change that came in at `requestedAt` (a create's latest
   * record, a delete): reads the instant of the last change each guarded and writes them all at
   * once with the change's instant, no earlier than those nor than `floor` (so a concurrent writer
   * of one collides, and a large source holds its cells while it reads its candidates, as the
   * grid's argument needs). `readAlso` then reads what else the instant must not precede (the last
   * events of the sources it writes events for); when that is later, the guards, already held, are
   * written again with it. Answers the instant the change is recorded no earlier than
   * (recordedAfter, changeAfter; docs/mongodb.md "Change times").
   */
  private async holdPlace(
    cells: readonly string[],
    requestedAt: number,
    session: ClientSession,
    floor: number,
    readAlso?: () => Promise<number>,
  ): Promise<number> {
    const held = Math.max(await this.lastChangeAt(cells, session), floor);
    const written = Math.max(held, requestedAt);
    await this.writeGuards(cells, written, session);
    const also = readAlso === undefined ? Number.NEGATIVE_INFINITY : await readAlso();
    if (also <= held) return held;
    if (also > written) await this.writeGuards(cells, also, session);
    return also;
  }

  /**
   * The instant of the last change committed to any of `cells`, read in the transaction before
   * it writes them: a change committed to one of them since this transaction's snapshot makes the
   * guard write a write conflict, and the transaction runs again and reads it.
   */
  private async lastChangeAt(cells: readonly string[], session: ClientSession): Promise<number> {
    if (cells.length === 0) return Number.NEGATIVE_INFINITY;
    const guards = await this.guards
      .find<Pick<GuardDocument, "last_change_at">>(guardsFilter(cells), { ...GUARD_TIMES_OPTIONS, session })
      .toArray();
    return latestOf(guards, (guard) => guard.last_change_at?.getTime() ?? Number.NEGATIVE_INFINITY);
  }

  private async writeGuards(cells: readonly string[], changedAt: number, session: ClientSession): Promise<void> {
    if (cells.length === 0) return;
    try {
      await this.guards.bulkWrite(guardWrites(cells, new Date(changedAt)), { ...GUARD_WRITE_OPTIONS, session });
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
  private async throwTakenAltIds(
    batch: Map<string, AccountAltIds>,
    options: FindOptions = TAKEN_ALT_IDS_OPTIONS,
  ): Promise<void> {
    for (const [accountId, account] of batch) {
      const stored = await this.sources
        .find<{ alt_id: string }>(takenAltIdsFilter(accountId, account.altIds), options)
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
 * The answer when a batch's alt_id clash could not be found by reading, ALT_ID_ATTEMPTS times
 * (each time the clashing source was gone before the lookup): a 409 naming what the last
 * duplicate-key error names (the first account in request order it names), or, when it names
 * nothing of the batch, a retryable 503. Never the raw duplicate-key error (a 500).
 */
function altIdClashOf(batch: Map<string, AccountAltIds>, error: unknown): Error {
  const named = duplicateAltIds(error);
  for (const [accountId, account] of batch) {
    const clash = altIdClash(
      accountId,
      { altIds: account.altIds, repeated: new Set() },
      named.filter((key) => key.accountId === accountId && account.altIds.includes(key.altId)).map((key) => key.altId),
    );
    if (clash) return clash;
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(
    `mongodb insert failed: an alt_id clash that could not be identified after ${ALT_ID_ATTEMPTS} attempts: ${reason}`,
    { cause: error },
  );
}

/**
 * A read-only transaction whose commit outcome is unknown: what it read is a consistent snapshot
 * whatever the commit did (it wrote nothing), so the call keeps it.
 */
function keepWhatWasRead<T>(result: T): Promise<T> {
  return Promise.resolve(result);
}

/** An event as getAsOf reads it. */
type AsOfEventDocument = Pick<SourceEventDocument, "type" | "record">;

/** A `created` event as an as_of list reads it; within an area, with its source's box (source_boxes). */
interface AsOfCreatedDocument {
  source_id: string;
  at: Date;
  record: RecordDocument;
  bbox?: BoxDocument;
}

/**
 * One read of an as_of list: the `created` events to decide on, how many candidates the read took
 * (a box without its event counts: the read goes on past it), and where the last one stands.
 */
interface AsOfChunk {
  created: AsOfCreatedDocument[];
  read: number;
  last: ListCursor | undefined;
}

/** A read of `created` events in list order as an AsOfChunk. */
function listedChunk(created: AsOfCreatedDocument[]): AsOfChunk {
  const last = created.at(-1);
  return {
    created,
    read: created.length,
    last: last === undefined ? undefined : { createdAt: last.at.getTime(), id: last.source_id },
  };
}

/** Pairs still open after these events: a pair sets once and clears at most once on each side. */
function openConflicts(events: readonly Pick<SourceEventDocument, "type">[]): number {
  let open = 0;
  for (const { type } of events) {
    if (type === "conflict_set") open += 1;
    else if (type === "conflict_cleared") open -= 1;
  }
  return open;
}

/** Who made a create and when: what its events say. */
function changeOf(record: NewSourceRecord): Change {
  return { by: record.createdBy, at: record.createdAt };
}

/** Code-unit order of ids, as MongoDB compares strings (no locale). */
function compareIds(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Whether a failure of setup at start stops the start: anything but unavailability (which setup
 * outlives, answering 503 meanwhile), and a ledger that needs repair (which it cannot).
 */
export function stopsTheStart(error: unknown): boolean {
  return !(error instanceof StoreUnavailableError) || error instanceof StoreNeedsRepairError;
}

/**
 * Connects to MongoDB and prepares the collections. An unreachable server does not stop the start:
 * the store is returned, `/readyz` answers 503 with the reason in the log, and setup is retried
 * until MongoDB answers. A URI that does not parse is an InvalidMongoUriError; a ledger that needs
 * repair (StoreNeedsRepairError) stops the start too.
 */
export async function openMongoStore(options: OpenMongoStoreOptions): Promise<MongoSourceStore> {
  const client = newMongoClient(options.uri, options.clientOptions);
  const store = new MongoSourceStore(client, options.database, options);
  try {
    await store.readyWithin();
  } catch (error) {
    if (stopsTheStart(error)) {
      await client.close();
      throw error;
    }
  }
  return store;
}
