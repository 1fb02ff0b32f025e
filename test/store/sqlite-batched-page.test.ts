/**
 * A page read to a geometry budget (every protobuf list) is read in batches (collectInBatches):
 * all of them in one read transaction, so another process's commit between two batches can
 * neither skip a record nor repeat one.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FIRST_BATCH } from "../../src/store/page-collector.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { BASE_TIME, listQuery, makeRecord, square } from "../contract/fixtures.js";

const A = "acct_a";
let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ledger-batches-"));
  path = join(dir, "ledger.sqlite");
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("a page read in batches", () => {
  it("sees one snapshot: a delete committed by another connection between two batches changes nothing", async () => {
    const records = Array.from({ length: 20 }, (_, i) =>
      makeRecord({ accountId: A, altId: `r-${i}`, geometry: square(i * 2, 0, 1), createdAt: BASE_TIME + i }),
    );
    const store = openSqliteStore({ path });
    await store.insertMany(records);
    const other = new Database(path);
    other.pragma("busy_timeout = 1000");
    other.pragma("foreign_keys = ON");
    // Another process's delete, run right after the store's first batch was read.
    const statement = Object.getPrototypeOf(other.prepare("SELECT 1")) as { all: (...args: unknown[]) => unknown[] };
    const all = statement.all;
    let batches = 0;
    statement.all = function (this: unknown, ...args: unknown[]) {
      const rows = all.apply(this, args);
      batches += 1;
      if (batches === 1) other.prepare("DELETE FROM sources WHERE alt_id = 'r-3'").run();
      return rows;
    };
    try {
      const page = await store.list({ ...listQuery(A), limit: 20, maxGeometryChars: 1_000_000 });
      expect(batches).toBe(2);
      expect(page.map((r) => r.altId)).toEqual(records.map((r) => r.altId));
    } finally {
      statement.all = all;
      other.close();
      await store.close();
    }
    // The delete did commit: the next read sees it.
    const reopened = openSqliteStore({ path });
    const after = await reopened.list({ ...listQuery(A), limit: 20, maxGeometryChars: 1_000_000 });
    expect(after.map((r) => r.altId)).toEqual(records.filter((_, i) => i !== 3).map((r) => r.altId));
    expect(FIRST_BATCH).toBeLessThan(20);
    await reopened.close();
  });
});
