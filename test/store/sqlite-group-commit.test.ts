import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { AltIdTakenError, StoreUnavailableError } from "../../src/store/port.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { GroupCommitter } from "../../src/store/sqlite/group-commit.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { makeRecord, square } from "../contract/fixtures.js";

describe("sqlite store: group commit of concurrent creates", () => {
  let dir: string;
  let path: string;
  let store: SqliteSourceStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "source-ledger-group-"));
    path = join(dir, "ledger.sqlite");
    store = openSqliteStore({ path });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Ids on disk, read through a second connection. */
  function idsOnDisk(): string[] {
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    try {
      return db
        .prepare<[], { id: string }>("SELECT id FROM sources ORDER BY id")
        .all()
        .map((r) => r.id);
    } finally {
      db.close();
    }
  }

  it("commits creates submitted in one event-loop turn in one transaction, each answered with its own records", async () => {
    const requests = Array.from({ length: 5 }, () => [makeRecord(), makeRecord()]);
    const before = store.writeGroupsCommitted;
    const answers = await Promise.all(requests.map((records) => store.insertMany(records)));
    expect(store.writeGroupsCommitted - before).toBe(1);
    answers.forEach((answer, i) => {
      expect(answer.map((r) => r.id)).toEqual(requests[i].map((r) => r.id));
    });
    expect(idsOnDisk()).toEqual(
      requests
        .flat()
        .map((r) => r.id)
        .sort(),
    );
  });

  it("refuses only the request whose alt_id is taken; the rest of its group is stored", async () => {
    const existing = makeRecord({ altId: "field-1" });
    await store.insertMany([existing]);
    const first = [makeRecord()];
    const clashing = [makeRecord(), makeRecord({ altId: "field-1" })];
    const last = [makeRecord()];
    const before = store.writeGroupsCommitted;
    const [a, b, c] = await Promise.allSettled([first, clashing, last].map((records) => store.insertMany(records)));
    expect(store.writeGroupsCommitted - before).toBe(1);
    expect(a.status).toBe("fulfilled");
    expect(c.status).toBe("fulfilled");
    expect(b.status).toBe("rejected");
    const error = (b as PromiseRejectedResult).reason as AltIdTakenError;
    expect(error).toBeInstanceOf(AltIdTakenError);
    expect(error.altIds).toEqual(["field-1"]);
    // Nothing of the refused request is stored, not even its first, valid source.
    expect(idsOnDisk()).toEqual([existing.id, first[0].id, last[0].id].sort());
  });

  it("lets the first of two requests of one group with the same alt_id win", async () => {
    const winner = [makeRecord({ altId: "twice" })];
    const loser = [makeRecord({ altId: "twice" })];
    const [a, b] = await Promise.allSettled([store.insertMany(winner), store.insertMany(loser)]);
    expect(a.status).toBe("fulfilled");
    expect((b as PromiseRejectedResult).reason).toBeInstanceOf(AltIdTakenError);
    expect(idsOnDisk()).toEqual([winner[0].id]);
  });

  it("rolls back a request that fails for any other reason alone", async () => {
    const good = [makeRecord()];
    // JSON.stringify cannot write a BigInt: the request fails half-way through its own inserts.
    const broken: NewSourceRecord[] = [makeRecord(), { ...makeRecord(), tags: [10n as unknown as string] }];
    const alsoGood = [makeRecord()];
    const [a, b, c] = await Promise.allSettled([good, broken, alsoGood].map((records) => store.insertMany(records)));
    expect(a.status).toBe("fulfilled");
    expect(b.status).toBe("rejected");
    expect((b as PromiseRejectedResult).reason).toBeInstanceOf(TypeError);
    expect(c.status).toBe("fulfilled");
    expect(idsOnDisk()).toEqual([good[0].id, alsoGood[0].id].sort());
  });

  it("rolls back a failed request's events, pairs and flags with it; the rest of its group keeps theirs", async () => {
    await store.close();
    store = openSqliteStore({ path, conflictPolicy });
    const [stored] = await store.insertMany([makeRecord({ geometry: square(0, 0, 1) })]);
    // The first member finds `stored` (a pair, two conflict_set events, its flag) before the
    // second fails on its own insert: all of it must go with the request's savepoint.
    const broken: NewSourceRecord[] = [
      makeRecord({ geometry: square(0.5, 0, 1) }),
      { ...makeRecord({ geometry: square(30, 0, 1) }), tags: [10n as unknown as string] },
    ];
    const good = [makeRecord({ geometry: square(0.2, 0.2, 1) })];
    const [b, g] = await Promise.allSettled([broken, good].map((records) => store.insertMany(records)));
    expect(b.status).toBe("rejected");
    expect(g.status).toBe("fulfilled");

    for (const record of broken) expect(await store.history(record.id, null)).toBeNull();
    expect((await store.conflictsOf(stored.id, null))?.map((c) => c.counterpart.id)).toEqual([good[0].id]);
    expect((await store.history(stored.id, null))?.map((e) => [e.type, e.counterpart?.id])).toEqual([
      ["created", undefined],
      ["conflict_set", good[0].id],
    ]);
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    try {
      expect(db.prepare("SELECT count(*) AS n FROM conflict_pairs").get()).toEqual({ n: 1 });
      expect(db.prepare("SELECT count(*) AS n FROM source_events").get()).toEqual({ n: 4 });
    } finally {
      db.close();
    }
  });

  it("closes a group at 1,000 sources, so large batches do not pile into one long transaction", async () => {
    const sizes = [400, 600, 700, 1_000, 1];
    const batches = sizes.map((size) => Array.from({ length: size }, () => makeRecord()));
    const before = store.writeGroupsCommitted;
    const answers = await Promise.all(batches.map((records) => store.insertMany(records)));
    // 400 + 600 | 700 | 1,000 | 1: in arrival order, a group is closed before it would exceed 1,000.
    expect(store.writeGroupsCommitted - before).toBe(4);
    expect(answers.map((a) => a.length)).toEqual(sizes);
    expect(idsOnDisk()).toHaveLength(2_701);
  });

  it("fails every request of a group whose transaction cannot start, and stores none of them", async () => {
    await store.close();
    store = openSqliteStore({ path, busyTimeoutMs: 0 });
    const blocker = openConnection({ path, busyTimeoutMs: 0 });
    blocker.exec("BEGIN IMMEDIATE");
    try {
      const outcomes = await Promise.allSettled(
        [makeRecord(), makeRecord(), makeRecord()].map((r) => store.insertMany([r])),
      );
      for (const outcome of outcomes) {
        expect(outcome.status).toBe("rejected");
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      }
    } finally {
      blocker.exec("ROLLBACK");
      blocker.close();
    }
    expect(idsOnDisk()).toEqual([]);
    // The store recovers once the lock is free.
    const later = makeRecord();
    await store.insertMany([later]);
    expect(idsOnDisk()).toEqual([later.id]);
  });

  it("writes creates still queued when the store closes before closing the file", async () => {
    const record = makeRecord();
    const pending = store.insertMany([record]);
    await store.close();
    await expect(pending).resolves.toHaveLength(1);
    expect(idsOnDisk()).toEqual([record.id]);
    await expect(store.insertMany([makeRecord()])).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe("GroupCommitter: errors that abort the whole group", () => {
  it("rolls back every job of the group when one fails with an error the database may not have undone", async () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE t (v TEXT NOT NULL)");
    const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
    const committer = new GroupCommitter(db, {
      maxGroupWeight: 100,
      mapError: (error) => (error instanceof Database.SqliteError ? new StoreUnavailableError(error.code) : error),
      abortsGroup: (error) => error instanceof Database.SqliteError && error.code.startsWith("SQLITE_IOERR"),
    });
    const outcomes = await Promise.allSettled([
      committer.submit(() => insert.run("before"), 1),
      committer.submit(() => {
        insert.run("half-written");
        throw new Database.SqliteError("disk I/O error", "SQLITE_IOERR_WRITE");
      }, 1),
      committer.submit(() => insert.run("after"), 1),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const outcome of outcomes) {
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
    }
    expect(db.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 0 });
    expect(db.inTransaction).toBe(false);
    expect(committer.groupsCommitted).toBe(0);
    // A constraint error is the job's own: the rest of its group commits.
    const next = await Promise.allSettled([
      committer.submit(() => insert.run("kept"), 1),
      committer.submit(() => insert.run(null), 1),
    ]);
    expect(next.map((o) => o.status)).toEqual(["fulfilled", "rejected"]);
    expect(db.prepare("SELECT v FROM t").all()).toEqual([{ v: "kept" }]);
    db.close();
  });
});
