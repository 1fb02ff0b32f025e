/**
 * Opening a ledger file that is not yet in WAL mode (a new one) while another process writes to
 * it: the switch to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once when
 * waiting could deadlock, without waiting out busy_timeout. Two processes opening one new file
 * at the same moment (a server and the CLI, two servers sharing a volume) hit exactly that: about
 * one opening in 30 failed with "database is locked". connection.ts switchToWal tries again
 * within the busy timeout. Here the other process is made to hold a write transaction for a set
 * time, so the case is reproduced every time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/store/port.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";

const BETTER_SQLITE3 = createRequire(import.meta.url).resolve("better-sqlite3");

/** Another process: creates a table on the file (rollback journal mode), then holds a write transaction for `ms`. */
const HOLDER = `
const Database = require(process.argv[1]);
const db = new Database(process.argv[2]);
db.exec("CREATE TABLE other_writer (x)");
db.exec("BEGIN IMMEDIATE; INSERT INTO other_writer VALUES (1);");
process.stdout.write("holding");
setTimeout(() => { db.exec("COMMIT"); db.close(); }, Number(process.argv[3]));
`;

const dir = mkdtempSync(join(tmpdir(), "ledger-open-race-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the holder on a new file; resolves once it holds the write lock. */
async function holdWriteLock(path: string, ms: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["-e", HOLDER, BETTER_SQLITE3, path, String(ms)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise((resolve) => child.stdout?.once("data", resolve));
  return child;
}

describe("opening a new ledger file another process is writing to", () => {
  it("waits for the other writer (within the busy timeout) instead of failing at once, and migrates the file", async () => {
    const path = join(dir, "busy.sqlite");
    const holder = await holdWriteLock(path, 300);
    const started = Date.now();
    const store = openSqliteStore({ path, busyTimeoutMs: 5_000 });
    try {
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect(await store.list({ accountId: "acct_a", limit: 10, offset: 0 })).toEqual([]);
    } finally {
      await store.close();
      holder.kill();
    }
  });

  it("gives up as unavailable once the busy timeout has passed", async () => {
    const path = join(dir, "held.sqlite");
    const holder = await holdWriteLock(path, 3_000);
    const started = Date.now();
    try {
      expect(() => openSqliteStore({ path, busyTimeoutMs: 400 })).toThrow(StoreUnavailableError);
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(400);
      expect(waited).toBeLessThan(2_000);
    } finally {
      holder.kill();
    }
  });
});
