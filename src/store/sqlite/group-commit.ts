import type Database from "better-sqlite3";

interface Job {
  /** Runs inside the group's transaction; its writes are undone alone if it throws. */
  work: () => unknown;
  /** Rows the job writes, to bound a group's size. */
  weight: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** What group commits report, for /metrics. */
export interface GroupCommitObservers {
  /** Told each committed group's size: its jobs (requests) and their weight (rows). */
  onCommit?: (jobs: number, weight: number) => void;
  /** Told each time a group is run again with a savepoint per job (a job threw after writing). */
  onRunAgain?: () => void;
}

export interface GroupCommitOptions extends GroupCommitObservers {
  /** A group is closed once it holds this much weight; later jobs wait for the next group. */
  maxGroupWeight: number;
  /** Maps a driver error to what the caller should see (e.g. StoreUnavailableError). */
  mapError: (error: unknown) => unknown;
  /**
   * Errors after which the database cannot be trusted to have undone the job (an I/O error may
   * also have failed the ROLLBACK TO that undoes it): the whole group is rolled back and every job
   * rejected, rather than committing the others next to a half-written job.
   */
  abortsGroup: (error: unknown) => boolean;
}

/**
 * Group commit: write jobs submitted within one event-loop turn run in ONE `BEGIN IMMEDIATE …
 * COMMIT`, so N concurrent creates pay one WAL fsync instead of N (with `synchronous=FULL` the
 * fsync dominated a single-source create). Each job still succeeds or fails on its own: a job that
 * throws (a taken alt_id, a bad row) is rejected, the others commit. A promise resolves only after
 * COMMIT returned, so a 201 still means the sources are on disk. If the transaction as a whole is
 * lost (SQLite rolled it back, or COMMIT failed), every job of the group is rejected, because none
 * of them is stored.
 *
 * Jobs run without a savepoint each at first. A savepoint makes SQLite copy every page the job
 * changes into a journal, and a create changes ~25 pages: past 64 KiB this build spills the
 * journal to a temporary file, whose writes were half a single-source create's time at 100,000
 * stored (docs/benchmarks.md, "Jobs without savepoints"). A job that throws before it changed a
 * row (a taken alt_id is checked first) leaves nothing to undo. Only when a job throws after
 * changing rows is the group rolled back and run again, each job in its own savepoint, which
 * undoes that job alone: so `work` may run twice, and must change nothing but the database.
 */
export class GroupCommitter {
  readonly #options: GroupCommitOptions;
  /** The group, each job straight in the transaction; throws UndoNeeded for the second way. */
  readonly #runStraight: Database.Transaction<(jobs: Job[]) => Outcomes>;
  /** The group again, each job in its own savepoint. */
  readonly #runInSavepoints: Database.Transaction<(jobs: Job[]) => Outcomes>;
  #pending: Job[] = [];
  #scheduled = false;
  #groups = 0;
  #groupsRunAgain = 0;

  constructor(db: Database.Database, options: GroupCommitOptions) {
    this.#options = options;
    // Rows inserted, updated or deleted on this connection so far, counting triggers and the
    // R*Tree's own tables: unchanged across a job that threw means it wrote nothing (a statement
    // that fails is undone by its own journal). Not counted: DDL, sqlite_sequence, and what a job
    // wrote before catching a statement's error and going on; the store's jobs do none of these.
    const changes = db.prepare<[], number>("SELECT total_changes()").pluck();
    /** Whether the group goes on after a job threw `error`: not if the transaction is gone or untrusted. */
    const survives = (error: unknown) => db.inTransaction && !options.abortsGroup(error);
    this.#runStraight = db.transaction((jobs: Job[]) => {
      const outcomes: Outcomes = new Map();
      for (const job of jobs) {
        const before = changes.get();
        try {
          outcomes.set(job, { ok: true, value: job.work() });
        } catch (error) {
          if (!survives(error)) throw error;
          if (changes.get() !== before) throw new UndoNeeded();
          outcomes.set(job, { ok: false, value: error });
        }
      }
      return outcomes;
    });
    // better-sqlite3 runs a transaction function called inside another one as a SAVEPOINT and
    // rolls back to it when the function throws: that is each job's isolation.
    const runJob = db.transaction((job: Job) => job.work());
    this.#runInSavepoints = db.transaction((jobs: Job[]) => {
      const outcomes: Outcomes = new Map();
      for (const job of jobs) {
        try {
          outcomes.set(job, { ok: true, value: runJob(job) });
        } catch (error) {
          // Some errors (SQLITE_FULL, SQLITE_IOERR, …) make SQLite roll back the whole transaction;
          // going on would run the next jobs in autocommit mode, outside the group.
          if (!survives(error)) throw error;
          outcomes.set(job, { ok: false, value: error });
        }
      }
      return outcomes;
    });
  }

  /** Transactions committed so far (a group is one); for tests and diagnostics. */
  get groupsCommitted(): number {
    return this.#groups;
  }

  /** Groups run a second time, each job in a savepoint, because a job threw after writing. */
  get groupsRunAgain(): number {
    return this.#groupsRunAgain;
  }

  /**
   * Queues `work` for the next group. It must be synchronous: better-sqlite3 only notices a
   * returned promise after its synchronous part ran, and what follows an `await` would run outside
   * the group's transaction. It may run twice (see the class): it must change nothing but the
   * database, and should throw the errors it expects before its first write.
   */
  submit<T>(work: () => T, weight: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, weight, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the I/O callbacks of this turn: every request that arrived with them joins the group.
        setImmediate(() => this.#flushOne());
      }
    });
  }

  /** Runs everything still queued, now (before the database is closed). */
  flush(): void {
    while (this.#pending.length > 0) this.#runNextGroup();
  }

  #flushOne(): void {
    this.#scheduled = false;
    this.#runNextGroup();
    if (this.#pending.length > 0 && !this.#scheduled) {
      // What did not fit waits for the next turn, so other I/O is served in between.
      this.#scheduled = true;
      setImmediate(() => this.#flushOne());
    }
  }

  #runNextGroup(): void {
    let weight = 0;
    let take = 0;
    while (
      take < this.#pending.length &&
      (take === 0 || weight + this.#pending[take].weight <= this.#options.maxGroupWeight)
    ) {
      weight += this.#pending[take].weight;
      take += 1;
    }
    const group = this.#pending.splice(0, take);
    if (group.length === 0) return;
    let outcomes: Outcomes;
    try {
      outcomes = this.#runStraightThenInSavepoints(group);
    } catch (error) {
      const mapped = this.#options.mapError(error);
      for (const job of group) job.reject(mapped);
      return;
    }
    this.#groups += 1;
    this.#options.onCommit?.(
      group.length,
      group.reduce((sum, job) => sum + job.weight, 0),
    );
    for (const job of group) {
      const outcome = outcomes.get(job);
      if (outcome?.ok) job.resolve(outcome.value);
      else job.reject(this.#options.mapError(outcome?.value));
    }
  }

  #runStraightThenInSavepoints(group: Job[]): Outcomes {
    try {
      return this.#runStraight.immediate(group);
    } catch (error) {
      if (!(error instanceof UndoNeeded)) throw error;
    }
    // Rolled back: another writer may commit before this BEGIN, which every job reads afresh.
    this.#groupsRunAgain += 1;
    this.#options.onRunAgain?.();
    return this.#runInSavepoints.immediate(group);
  }
}

type Outcomes = Map<Job, { ok: boolean; value: unknown }>;

/** A job threw after changing rows: only a savepoint around it can undo that job alone. */
class UndoNeeded extends Error {}
