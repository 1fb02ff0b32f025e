import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { StoreUnavailableError } from "../port.js";
import { runMigrations } from "./migrations.js";
import { MIGRATIONS } from "./schema.js";

const MEMORY_PATH = ":memory:";

export interface ConnectionOptions {
  path: string;
  busyTimeoutMs: number;
}

/**
 * The page size of a new ledger file (SQLite's default is 4,096). A 100-position source's row is
 * ~2.7 KB, so at 4 KiB one row took a page and left ~1.4 KB of it unused: a third of the table
 * empty, written at every commit. At 8 KiB three share a page: an insert costs less (its
 * commit writes fewer pages), the file is 14–23% smaller, reads are unchanged or faster
 * (docs/benchmarks.md, "The page size"). SQLite reads it only before the file has content: a
 * ledger created with another page size keeps it (README, "Embedded store").
 */
export const NEW_LEDGER_PAGE_SIZE = 8192;

/** The pauses between tries of the WAL switch: short, growing, capped. */
const WAL_RETRY_FIRST_MS = 5;
const WAL_RETRY_MAX_MS = 100;

/**
 * `PRAGMA journal_mode = WAL`, tried again while SQLITE_BUSY within `busyTimeoutMs`. Switching a
 * file that is not yet in WAL mode (a new ledger) needs an exclusive lock, and two processes
 * opening it at the same moment can each hold what the other waits for: SQLite then answers
 * SQLITE_BUSY at once, without calling the busy handler (so busy_timeout does not help), and the
 * process that lost would not start (seen about once in 30 openings of 4 processes at once).
 */
function switchToWal(db: Database.Database, busyTimeoutMs: number): unknown {
  const deadline = Date.now() + busyTimeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let wait = WAL_RETRY_FIRST_MS; ; wait = Math.min(wait * 2, WAL_RETRY_MAX_MS)) {
    try {
      return db.pragma("journal_mode = WAL", { simple: true });
    } catch (error) {
      if ((error as { code?: unknown }).code !== "SQLITE_BUSY" || Date.now() >= deadline) throw error;
      // Opening is synchronous: a synchronous pause (nothing else runs before the store is open).
      Atomics.wait(pause, 0, 0, wait);
    }
  }
}

/** Opens the database file (creating its directory) and sets the connection's pragmas. */
export function openConnection({ path, busyTimeoutMs }: ConnectionOptions): Database.Database {
  const inMemory = path === MEMORY_PATH;
  if (!inMemory) mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    // Set first so that switching the journal mode below already waits for other connections.
    db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`);
    // Before the switch to WAL, which writes a new file's header (a WAL file's page size is fixed).
    db.pragma(`page_size = ${NEW_LEDGER_PAGE_SIZE}`);
    if (!inMemory) {
      // WAL lets readers (list, get, ping) proceed while a writer holds the lock.
      const mode = switchToWal(db, busyTimeoutMs);
      if (mode !== "wal") {
        throw new StoreUnavailableError(`sqlite could not enable WAL on ${path} (got ${String(mode)})`);
      }
    }
    // FULL rather than NORMAL: in WAL mode NORMAL can lose the last commits on power loss or an OS
    // crash, and a 201 tells the client its sources are on the ledger. Inserts are batched (up to
    // 1,000 sources a transaction), so one fsync per commit is cheap.
    db.pragma("synchronous = FULL");
    db.pragma("foreign_keys = ON");
    // 16 MiB of page cache (the default is 2 MiB): index pages of the hot part of the ledger stay
    // in memory; more raised the process's peak RSS past the 300 MB budget for little gain.
    db.pragma("cache_size = -16384");
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Opens the file, brings its schema up to date and hands the connection to `use`. Whatever stops
 * that (a missing permission, a non-directory parent, a corrupt file, a failed migration), the
 * connection is closed and the caller gets a StoreUnavailableError: nothing can be served from the
 * file until someone intervenes.
 */
export function openMigrated<T>(options: ConnectionOptions, use: (db: Database.Database) => T): T {
  let db: Database.Database | undefined;
  try {
    db = openConnection(options);
    runMigrations(db, MIGRATIONS);
    return use(db);
  } catch (error) {
    db?.close();
    if (error instanceof StoreUnavailableError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreUnavailableError(`sqlite open of ${options.path} failed: ${reason}`, { cause: error });
  }
}
