import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import type { ListQuery } from "../../src/model/list-query.js";
import { StoreUnavailableError } from "../../src/store/port.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { buildListStatement } from "../../src/store/sqlite/list-query.js";
import { appliedMigrations, type Migration, runMigrations } from "../../src/store/sqlite/migrations.js";
import { MIGRATIONS } from "../../src/store/sqlite/schema.js";
import { timedStore } from "../../src/store/timed.js";
import { change, listQuery, makeFullRecord, makeRecord, square, stored } from "../contract/fixtures.js";
import { describeSourceStoreContract } from "../contract/source-store-contract.js";

function makeTempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "source-ledger-sqlite-"));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A file store, with the production conflict policy or without any (the contract's plain part). */
async function fileStore(policy?: typeof conflictPolicy) {
  const temp = makeTempDir();
  const store = openSqliteStore({ path: join(temp.dir, "ledger.sqlite"), conflictPolicy: policy });
  return {
    store,
    cleanup: async () => {
      await store.close();
      temp.remove();
    },
  };
}

async function memoryStore(policy?: typeof conflictPolicy) {
  const store = openSqliteStore({ path: ":memory:", conflictPolicy: policy });
  return { store, cleanup: () => store.close() };
}

describeSourceStoreContract("sqlite (file)", () => fileStore(), {
  makeConflictStore: () => fileStore(conflictPolicy),
});

describeSourceStoreContract("sqlite (:memory:)", () => memoryStore(), {
  makeConflictStore: () => memoryStore(conflictPolicy),
});

/** The store as the app wires it: behind the timing wrapper, which must forward every argument. */
async function timedMemoryStore(policy?: typeof conflictPolicy) {
  const { store, cleanup } = await memoryStore(policy);
  return { store: timedStore(store, () => {}), cleanup };
}

describeSourceStoreContract("sqlite (:memory:) through timedStore", () => timedMemoryStore(), {
  makeConflictStore: () => timedMemoryStore(conflictPolicy),
});

/** A second, independent connection to look at what the store left on disk. */
function inspect(path: string) {
  return openConnection({ path, busyTimeoutMs: 0 });
}

describe("sqlite store", () => {
  let temp: ReturnType<typeof makeTempDir>;
  let path: string;
  const toClose: { close(): unknown }[] = [];

  beforeEach(() => {
    temp = makeTempDir();
    path = join(temp.dir, "nested", "dirs", "ledger.sqlite");
  });

  afterEach(async () => {
    for (const c of toClose.splice(0)) await c.close();
    temp.remove();
  });

  function open(options: { busyTimeoutMs?: number } = {}) {
    const store = openSqliteStore({ path, ...options });
    toClose.push(store);
    return store;
  }

  function connect() {
    const db = inspect(path);
    toClose.push(db);
    return db;
  }

  describe("opening", () => {
    it("creates missing parent directories and uses WAL", async () => {
      const store = open();
      await store.insertMany([makeRecord()]);

      expect(existsSync(path)).toBe(true);
      expect(existsSync(`${path}-wal`)).toBe(true);
      expect(connect().pragma("journal_mode", { simple: true })).toBe("wal");
    });

    it("sets synchronous FULL, foreign keys and the busy timeout on every connection", () => {
      const db = toClose[toClose.push(openConnection({ path, busyTimeoutMs: 1234 })) - 1] as ReturnType<typeof inspect>;

      expect(db.pragma("synchronous", { simple: true })).toBe(2);
      expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
      expect(db.pragma("busy_timeout", { simple: true })).toBe(1234);
    });

    it("creates a new ledger with 8 KiB pages, and keeps the page size of a ledger made with another", async () => {
      const store = open();
      await store.insertMany([makeRecord()]);
      expect(connect().pragma("page_size", { simple: true })).toBe(8192);

      // A ledger created with SQLite's default 4 KiB pages (an earlier version) opens, reads and
      // takes writes with its own page size: SQLite reads the setting only for a file without content.
      const older = join(temp.dir, "older.sqlite");
      const made = new Database(older);
      made.pragma("journal_mode = WAL");
      made.exec("CREATE TABLE placeholder (x INTEGER)");
      made.close();
      const reopened = openSqliteStore({ path: older });
      toClose.push(reopened);
      const [record] = await reopened.insertMany([makeRecord({ altId: "on-4k-pages" })]);
      expect((await reopened.get(record.id, record.accountId))?.altId).toBe("on-4k-pages");
      const db = inspect(older);
      toClose.push(db);
      expect(db.pragma("page_size", { simple: true })).toBe(4096);
    });

    it("works in memory, where WAL does not apply", async () => {
      const store = openSqliteStore({ path: ":memory:" });
      toClose.push(store);
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it("reports a path it cannot open as unavailable", () => {
      const blocker = join(temp.dir, "a-file");
      writeFileSync(blocker, "not a directory");

      expect(() => openSqliteStore({ path: join(blocker, "ledger.sqlite") })).toThrow(StoreUnavailableError);
    });

    it("reports a file that is not a database as unavailable", () => {
      const notDb = join(temp.dir, "garbage.sqlite");
      writeFileSync(notDb, "x".repeat(4096));

      expect(() => openSqliteStore({ path: notDb })).toThrow(StoreUnavailableError);
    });
  });

  describe("migrations", () => {
    it("applies each migration once: reopening an existing file re-applies nothing", async () => {
      const first = open();
      await first.insertMany([makeRecord()]);
      await first.close();
      const before = appliedMigrations(connect());

      const second = open();
      await second.close();

      expect(before.map((m) => m.version)).toEqual(MIGRATIONS.map((m) => m.version));
      expect(appliedMigrations(connect())).toEqual(before);
      expect(runMigrations(connect(), MIGRATIONS)).toEqual([]);
    });

    it("applies only the new ones, in order, each recorded", () => {
      const db = connect();
      const m1: Migration = { version: 1, name: "one", sql: "CREATE TABLE t1 (a INTEGER)" };
      const m2: Migration = { version: 2, name: "two", sql: "ALTER TABLE t1 ADD COLUMN b INTEGER" };
      const m3: Migration = { version: 3, name: "three", sql: "CREATE INDEX t1_b ON t1 (b)" };

      expect(runMigrations(db, [m1], () => 10)).toEqual([1]);
      expect(runMigrations(db, [m1, m2, m3], () => 20)).toEqual([2, 3]);
      expect(appliedMigrations(db)).toEqual([
        { version: 1, name: "one", appliedAt: 10 },
        { version: 2, name: "two", appliedAt: 20 },
        { version: 3, name: "three", appliedAt: 20 },
      ]);
    });

    it("rolls back a failing migration alone, keeping the ones before it", () => {
      const db = connect();
      const good: Migration = { version: 1, name: "good", sql: "CREATE TABLE kept (a INTEGER)" };
      const bad: Migration = {
        version: 2,
        name: "bad",
        sql: "CREATE TABLE half_done (a INTEGER); INSERT INTO no_such_table VALUES (1);",
      };

      expect(() => runMigrations(db, [good, bad])).toThrow(/no_such_table/);
      expect(appliedMigrations(db).map((m) => m.version)).toEqual([1]);
      const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").all();
      expect(tables.map((t) => t.name)).toContain("kept");
      expect(tables.map((t) => t.name)).not.toContain("half_done");
    });

    it("refuses migrations out of order, and a schema newer than the build", () => {
      const db = connect();
      const m1: Migration = { version: 1, name: "one", sql: "SELECT 1" };
      const m2: Migration = { version: 2, name: "two", sql: "SELECT 1" };

      expect(() => runMigrations(db, [m2, m1])).toThrow(/out of order/);
      runMigrations(db, [m1, m2]);
      expect(() => runMigrations(db, [m1])).toThrow(StoreUnavailableError);
    });
  });

  it("survives a restart: everything written reads back identically", async () => {
    const records = [
      makeFullRecord({ accountId: "a" }),
      // Apart from the MultiPolygons, whose box spans most of the globe.
      // biome-ignore lint/correctness/noPrecisionLoss: more digits than a double holds, on purpose
      makeRecord({ accountId: "a", geometry: square(-100.123456789012345, 60.5, 0.25) }),
      makeFullRecord({ accountId: "b", conflict: false, unepOverlap: null }),
    ];
    const first = open();
    await first.insertMany(records);
    await first.close();

    const reopened = open();
    expect(await reopened.list(listQuery(null))).toStrictEqual(records.map(stored));
    for (const r of records) {
      expect(JSON.stringify((await reopened.get(r.id, r.accountId))?.geometry)).toBe(JSON.stringify(r.geometry));
    }
    expect(reopened.findBboxCandidates({ minX: -101, minY: 60, maxX: -100, maxY: 61 }).map((r) => r.id)).toEqual([
      records[1].id,
    ]);
  });

  describe("bounding-box candidates (R*Tree)", () => {
    it("finds sources whose boxes overlap or touch the box, across accounts, in list order", async () => {
      const store = open();
      // North of the MultiPolygon's box, which spans longitudes -74..180 and latitudes -89.5..40.9.
      const inside = makeRecord({ accountId: "a", geometry: square(0, 50, 2) });
      const touching = makeRecord({ accountId: "b", geometry: square(2, 50, 1) });
      const far = makeRecord({ accountId: "a", geometry: square(-150, 60, 1) });
      const multi = makeFullRecord({ accountId: "c" });
      await store.insertMany([inside, touching, far, multi]);

      expect(store.findBboxCandidates({ minX: 1, minY: 51, maxX: 2, maxY: 51.5 }).map((r) => r.id)).toEqual([
        inside.id,
        touching.id,
      ]);
      // Between the MultiPolygon's parts: a candidate by its box, though its area is elsewhere.
      expect(store.findBboxCandidates({ minX: 0, minY: -10, maxX: 1, maxY: 10 }).map((r) => r.id)).toEqual([multi.id]);
      expect(store.findBboxCandidates({ minX: -100, minY: 50, maxX: -99, maxY: 51 })).toEqual([]);
      expect(store.findBboxCandidates({ minX: -149.5, minY: 60.5, maxX: -149.4, maxY: 60.6 })).toStrictEqual([
        stored(far),
      ]);
    });

    it("keeps the R*Tree and attribute rows in step with inserts, failed inserts and deletes", async () => {
      const store = open();
      const records = [
        makeRecord({ altId: "one", attributeType: ["CI_SCORE"] }),
        makeRecord({ altId: "two", attributeType: ["CI_SCORE", "BIODIVERSITY"] }),
        makeRecord({ altId: "three" }),
      ];
      await store.insertMany(records);
      await store.insertMany([makeRecord({ altId: "new" }), makeRecord({ altId: "one" })]).catch(() => undefined);
      await store.deleteById(records[0].id, null, change());
      await store.deleteByAltId("two", "acct_a", change());

      const db = connect();
      const count = (table: string) => db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()?.n;
      expect(count("sources")).toBe(1);
      expect(count("source_bbox")).toBe(1);
      expect(count("source_attribute_types")).toBe(0);
      expect(store.findBboxCandidates({ minX: -180, minY: -90, maxX: 180, maxY: 90 }).map((r) => r.id)).toEqual([
        records[2].id,
      ]);
    });
  });

  describe("query plans", () => {
    const account = "acct_a";
    const single: [string, Partial<ListQuery>][] = [
      ["no filter", {}],
      ["methodology", { methodology: "m" }],
      ["stewardId", { stewardId: "s" }],
      ["projectId", { projectId: "p" }],
      ["outcomeReportingYear", { outcomeReportingYear: 2024 }],
      ["sourceType", { sourceType: "FIELD" }],
      ["geometrySource", { geometrySource: "DERIVED" }],
      ["attributeTypes", { attributeTypes: ["CI_SCORE", "BIODIVERSITY"] }],
      ["id", { id: "src_x" }],
      ["altId", { altId: "x" }],
      [
        "methodology + sourceType + attributeTypes",
        { methodology: "m", sourceType: "FIELD", attributeTypes: ["CI_SCORE"] },
      ],
      ["stewardId + outcomeReportingYear", { stewardId: "s", outcomeReportingYear: 2024 }],
    ];
    const cases = [
      ...single.map(([label, filters]) => [`${label}, one account`, listQuery(account, filters)] as const),
      ...single.map(([label, filters]) => [`${label}, all accounts`, listQuery(null, filters)] as const),
    ];

    it.each(cases)("%s: reads an index in list order, without a temporary sort", (_label, query) => {
      open();
      const { sql, params } = buildListStatement(query);
      const plan = connect()
        .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
        .map((row) => row.detail);

      expect(plan.join("\n")).not.toMatch(/TEMP B-TREE/);
      const sourcesAccess = plan.find((d) => / s\b/.test(d) && /^(SCAN|SEARCH)/.test(d));
      expect(sourcesAccess).toMatch(/USING (COVERING )?INDEX|USING PRIMARY KEY/);
      const filtered =
        query.accountId !== null ||
        Object.keys(query).some((k) => !["accountId", "attributeTypes", "limit", "offset"].includes(k));
      if (filtered) expect(sourcesAccess).toMatch(/^SEARCH/);
      if ((query.attributeTypes ?? []).length > 0) expect(plan.join("\n")).toMatch(/source_attribute_types_by_type/);
    });

    it("prepares one statement per filter combination, whatever the values", () => {
      const a = buildListStatement(listQuery("x", { methodology: "m1", attributeTypes: ["A"], limit: 5 }));
      const b = buildListStatement(listQuery("y", { methodology: "m2", attributeTypes: ["B", "C"], offset: 9 }));
      const c = buildListStatement(listQuery("x", { stewardId: "m1", attributeTypes: ["A"] }));
      const d = buildListStatement(listQuery(null, { methodology: "m1", attributeTypes: ["A"] }));

      expect(a.key).toBe(b.key);
      expect(a.sql).toBe(b.sql);
      expect(new Set([a.key, c.key, d.key]).size).toBe(3);
    });
  });

  describe("unavailability", () => {
    it("turns a lock held too long into StoreUnavailableError, while reads go on (WAL)", async () => {
      const store = open({ busyTimeoutMs: 100 });
      await store.insertMany([makeRecord({ altId: "before" })]);
      const other = connect();
      other.exec("BEGIN IMMEDIATE");
      try {
        const started = Date.now();
        const error = await store.insertMany([makeRecord()]).catch((e: unknown) => e);

        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect((error as Error).message).toMatch(/SQLITE_BUSY/);
        expect(Date.now() - started).toBeGreaterThanOrEqual(90);
        expect(await store.list(listQuery(null))).toHaveLength(1);
      } finally {
        other.exec("ROLLBACK");
      }
      await expect(store.insertMany([makeRecord()])).resolves.toHaveLength(1);
    });

    it("rejects findBboxCandidates after close", async () => {
      const store = open();
      await store.close();
      expect(() => store.findBboxCandidates({ minX: 0, minY: 0, maxX: 1, maxY: 1 })).toThrow(StoreUnavailableError);
    });
  });
});
