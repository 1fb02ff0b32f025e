import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { intersectionAreaM2 } from "../../src/geo/overlap.js";
import { conflictAllowances } from "../../src/geo/overlay-allowances.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { AltIdTakenError, StoreUnavailableError } from "../../src/store/port.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { GroupCommitter } from "../../src/store/sqlite/group-commit.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { makeRecord, square } from "../contract/fixtures.js";
import { notchedUnitSquare } from "../support/geometry-fixtures.js";

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
    const runAgain = store.writeGroupsRunAgain;
    const [a, b, c] = await Promise.allSettled([first, clashing, last].map((records) => store.insertMany(records)));
    expect(store.writeGroupsCommitted - before).toBe(1);
    // Refused before its first write: nothing to undo, so the group ran once.
    expect(store.writeGroupsRunAgain - runAgain).toBe(0);
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
    const runAgain = store.writeGroupsRunAgain;
    const [a, b, c] = await Promise.allSettled([good, broken, alsoGood].map((records) => store.insertMany(records)));
    // Its first source was written: the group ran again, each request in a savepoint.
    expect(store.writeGroupsRunAgain - runAgain).toBe(1);
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

  it("measures a request's overlays under its whole allowance again when its group runs a second time", async () => {
    await store.close();
    store = openSqliteStore({ path, conflictPolicy });
    // Not convex (two convex rings are intersected without an overlay): the overlay counts two
    // meeting edge pairs, against an allowance of three.
    const [stored] = await store.insertMany([makeRecord({ geometry: notchedUnitSquare() })]);
    const crossing = [makeRecord({ geometry: square(0.5, 0.5, 1) })];
    conflictAllowances.share([crossing[0].geometry], { positions: 1_000, edgePairs: 3, beamWork: 1e9 });
    const broken: NewSourceRecord[] = [makeRecord(), { ...makeRecord(), tags: [10n as unknown as string] }];
    const runAgain = store.writeGroupsRunAgain;
    const [c, b] = await Promise.allSettled([crossing, broken].map((records) => store.insertMany(records)));
    expect(store.writeGroupsRunAgain - runAgain).toBe(1);
    expect(b.status).toBe("rejected");
    expect(c.status).toBe("fulfilled");
    // Charged twice, the second run would have come to four pairs and flagged the whole area.
    const [pair] = (await store.conflictsOf(crossing[0].id, null)) ?? [];
    expect(pair.counterpart.id).toBe(stored.id);
    expect(pair.measure.overlapAreaUpperBound).toBeUndefined();
    expect(pair.measure.overlapAreaM2).toBeCloseTo(intersectionAreaM2(notchedUnitSquare(), square(0.5, 0.5, 1)), 3);
    expect(pair.measure.overlapFraction).toBeLessThan(0.3);
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

describe("GroupCommitter: jobs without savepoints, and the second run", () => {
  let db: Database.Database;
  let committer: GroupCommitter;
  let insert: Database.Statement<[string | null]>;
  /** The table's values in insertion order. */
  let values: () => string[];

  beforeEach(() => {
    db = new Database(":memory:");
    db.exec("CREATE TABLE t (v TEXT NOT NULL UNIQUE)");
    insert = db.prepare<[string | null]>("INSERT INTO t (v) VALUES (?)");
    const all = db.prepare<[], { v: string }>("SELECT v FROM t ORDER BY rowid");
    values = () => all.all().map((r) => r.v);
    committer = new GroupCommitter(db, {
      maxGroupWeight: 100,
      mapError: (error) => error,
      abortsGroup: (error) => error instanceof Database.SqliteError && error.code.startsWith("SQLITE_IOERR"),
    });
  });

  afterEach(() => {
    // However its jobs ended, no group leaves its transaction open.
    expect(db.inTransaction).toBe(false);
    db.close();
  });

  it("runs a group once when its failing jobs threw before writing, or on a statement that wrote nothing", async () => {
    const runs = [0, 0, 0, 0];
    const outcomes = await Promise.allSettled([
      committer.submit(() => {
        runs[0] += 1;
        return insert.run("a").changes;
      }, 1),
      committer.submit(() => {
        runs[1] += 1;
        throw new RangeError("refused before writing");
      }, 1),
      committer.submit(() => {
        runs[2] += 1;
        insert.run("a"); // UNIQUE: the statement fails whole, nothing written
      }, 1),
      committer.submit(() => {
        runs[3] += 1;
        return insert.run("b").changes;
      }, 1),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(RangeError);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: "SQLITE_CONSTRAINT_UNIQUE" });
    expect(runs).toEqual([1, 1, 1, 1]);
    expect(committer.groupsRunAgain).toBe(0);
    expect(committer.groupsCommitted).toBe(1);
    expect(values()).toEqual(["a", "b"]);
  });

  it("runs the group again in savepoints when a job threw after writing: only that job is undone", async () => {
    const runs = [0, 0, 0];
    const outcomes = await Promise.allSettled([
      committer.submit(() => {
        runs[0] += 1;
        insert.run("first");
        return "first";
      }, 1),
      committer.submit(() => {
        runs[1] += 1;
        insert.run("half");
        throw new RangeError("failed after writing");
      }, 1),
      committer.submit(() => {
        runs[2] += 1;
        insert.run("last");
        return "last";
      }, 1),
    ]);
    expect(outcomes).toEqual([
      { status: "fulfilled", value: "first" },
      { status: "rejected", reason: new RangeError("failed after writing") },
      { status: "fulfilled", value: "last" },
    ]);
    // The first run stopped at the job that wrote and threw; the second ran all three.
    expect(runs).toEqual([2, 2, 1]);
    expect(committer.groupsRunAgain).toBe(1);
    expect(committer.groupsCommitted).toBe(1);
    expect(values()).toEqual(["first", "last"]);
  });

  it("rolls back the whole group when the second run meets an error the database may not have undone", async () => {
    let secondRun = false;
    const outcomes = await Promise.allSettled([
      committer.submit(() => insert.run("first"), 1),
      committer.submit(() => {
        insert.run("half");
        if (!secondRun) {
          secondRun = true;
          throw new RangeError("failed after writing");
        }
        throw new Database.SqliteError("disk I/O error", "SQLITE_IOERR_WRITE");
      }, 1),
      committer.submit(() => insert.run("last"), 1),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const outcome of outcomes) {
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: "SQLITE_IOERR_WRITE" });
    }
    expect(committer.groupsRunAgain).toBe(1);
    expect(committer.groupsCommitted).toBe(0);
    expect(values()).toEqual([]);
  });

  it("keeps the second run's outcome of a job that failed only in the first", async () => {
    let tries = 0;
    const outcomes = await Promise.allSettled([
      committer.submit(() => {
        tries += 1;
        insert.run(`try ${tries}`);
        if (tries === 1) throw new RangeError("first try");
        return tries;
      }, 1),
    ]);
    expect(outcomes).toEqual([{ status: "fulfilled", value: 2 }]);
    expect(values()).toEqual(["try 2"]);
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
