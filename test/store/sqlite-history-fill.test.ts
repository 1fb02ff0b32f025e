/**
 * A ledger stored before the event log (schema version 3) gains its history once, when a store
 * first opens it (src/store/sqlite/history.ts fillHistory): a `created` event per source, and with
 * a conflict policy every stored pair, measured, with `conflict_set` on both sides, and each flag
 * set from the pairs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BoundingBox } from "../../src/geo/types.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { runMigrations } from "../../src/store/sqlite/migrations.js";
import { COLUMNS, toRow } from "../../src/store/sqlite/rows.js";
import { MIGRATIONS } from "../../src/store/sqlite/schema.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { listQuery, makeRecord, square, stored } from "../contract/fixtures.js";

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ledger-fill-"));
  path = join(dir, "ledger.sqlite");
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Sources written the way a version-3 store wrote them: rows and boxes, no events, no pairs. */
function storeAtVersion3(records: ReturnType<typeof makeRecord>[]): void {
  const db = openConnection({ path, busyTimeoutMs: 1_000 });
  runMigrations(db, MIGRATIONS.slice(0, 3));
  const insert = db.prepare(
    `INSERT INTO sources (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((c) => `@${c}`).join(", ")})`,
  );
  const box = db.prepare("INSERT INTO source_bbox (seq, min_x, max_x, min_y, max_y) VALUES (?, ?, ?, ?, ?)");
  for (const record of records) {
    const { lastInsertRowid } = insert.run(toRow(record));
    box.run(lastInsertRowid, record.bbox.minX, record.bbox.maxX, record.bbox.minY, record.bbox.maxY);
  }
  db.close();
}

describe("filling in the history of a ledger stored before it", () => {
  const a = makeRecord({ geometry: square(0, 0, 2), conflict: true, createdBy: "Farm Co" });
  const b = makeRecord({ geometry: square(1, 1, 2), conflict: true, accountId: "acct_b", createdBy: "Mill Co" });
  const apart = makeRecord({ geometry: square(50, 50), conflict: true });

  it("writes a created event per source, the pairs with their measures, and the flags from the pairs", async () => {
    storeAtVersion3([a, b, apart]);
    const store = openSqliteStore({ path, conflictPolicy });
    try {
      const history = await store.history(a.id, null);
      expect(history?.map((e) => [e.seq, e.type, e.by])).toEqual([
        [1, "created", "Farm Co"],
        [2, "conflict_set", "Mill Co"],
      ]);
      expect(history?.[0].record).toEqual(stored(a));
      expect(history?.[0].at).toBe(a.createdAt);
      expect(history?.[1].at).toBe(b.createdAt);
      const [conflict] = (await store.conflictsOf(a.id, null)) ?? [];
      expect(conflict.counterpart).toEqual({ id: b.id, altId: b.altId, accountId: "acct_b" });
      // A quarter of each 2×2 square (near the equator: about a quarter of the area).
      expect(conflict.measure.overlapFraction).toBeCloseTo(0.25, 2);
      expect(conflict.measure.counterpartOverlapFraction).toBeCloseTo(0.25, 2);
      const [fromB] = (await store.conflictsOf(b.id, null)) ?? [];
      expect(fromB.measure.overlapAreaM2).toBe(conflict.measure.overlapAreaM2);
      // The flag stored as true on a source without any pair is set from the pairs.
      expect((await store.get(apart.id, null))?.conflict).toBe(false);
      expect((await store.get(a.id, null))?.conflict).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("gives each created event its source's box: an as_of list within an area finds the sources filled in", async () => {
    storeAtVersion3([a, b, apart]);
    const store = openSqliteStore({ path, conflictPolicy });
    try {
      const asOf = Math.max(a.createdAt, b.createdAt, apart.createdAt) + 1;
      const near = (bbox: BoundingBox) => store.list(listQuery(null, { asOf, bbox }));
      expect((await near({ minX: 49, minY: 49, maxX: 52, maxY: 52 })).map((r) => r.id)).toEqual([apart.id]);
      expect((await near({ minX: 2.5, minY: 2.5, maxX: 2.6, maxY: 2.6 })).map((r) => r.id)).toEqual([b.id]);
    } finally {
      await store.close();
    }
  });

  it("starts the change clock at the latest stored creation: a create requested before it is recorded at it", async () => {
    storeAtVersion3([a, b, apart]);
    const store = openSqliteStore({ path, conflictPolicy });
    try {
      const latest = Math.max(a.createdAt, b.createdAt, apart.createdAt);
      const early = makeRecord({ geometry: square(80, 20), createdAt: a.createdAt - 1 });
      const [recorded] = await store.insertMany([early]);
      expect(recorded.createdAt).toBe(latest);
      expect((await store.history(early.id, null))?.map((e) => e.at)).toEqual([latest]);
    } finally {
      await store.close();
    }
  });

  it("finds each pair from its later side in list order, whatever the rows' order: a history never goes back in time", async () => {
    const hub = makeRecord({ geometry: square(0, 0, 4), createdAt: Date.UTC(2023, 0, 1) });
    // Stored in this order, created in the other (a ledger of before the change clock could hold this).
    const late = makeRecord({ geometry: square(0, 0, 1), createdAt: Date.UTC(2023, 0, 3) });
    const early = makeRecord({ geometry: square(2, 2, 1), createdAt: Date.UTC(2023, 0, 2) });
    storeAtVersion3([hub, late, early]);
    const store = openSqliteStore({ path, conflictPolicy });
    try {
      const history = (await store.history(hub.id, null)) ?? [];
      expect(history.map((e) => [e.seq, e.type, e.counterpart?.id, e.at])).toEqual([
        [1, "created", undefined, hub.createdAt],
        [2, "conflict_set", early.id, early.createdAt],
        [3, "conflict_set", late.id, late.createdAt],
      ]);
      expect((await store.conflictsOf(hub.id, null))?.map((c) => [c.counterpart.id, c.detectedAt])).toEqual([
        [early.id, early.createdAt],
        [late.id, late.createdAt],
      ]);
    } finally {
      await store.close();
    }
  });

  it("runs once: reopening writes nothing more", async () => {
    storeAtVersion3([a, b]);
    await openSqliteStore({ path, conflictPolicy }).close();
    const store = openSqliteStore({ path, conflictPolicy });
    try {
      expect((await store.history(a.id, null))?.length).toBe(2);
      expect(await store.conflictsOf(a.id, null)).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it("without a policy, writes the created events and leaves the pairs for the first open with one", async () => {
    storeAtVersion3([a, b]);
    const plain = openSqliteStore({ path });
    expect((await plain.history(a.id, null))?.map((e) => e.type)).toEqual(["created"]);
    expect(await plain.conflictsOf(a.id, null)).toEqual([]);
    await plain.close();
    const store = openSqliteStore({ path, conflictPolicy });
    try {
      expect((await store.history(b.id, null))?.map((e) => e.type)).toEqual(["created", "conflict_set"]);
    } finally {
      await store.close();
    }
  });
});

describe("migration 6: pairs stored before they kept their event seqs", () => {
  it("takes each side's seq from its conflict_set event naming the other; conflicts then page as any", async () => {
    const hub = makeRecord({
      geometry: {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [6, 0],
            [6, 1],
            [0, 1],
            [0, 0],
          ],
        ],
      },
    });
    const spokes = Array.from({ length: 5 }, (_, i) =>
      makeRecord({
        geometry: {
          type: "Polygon",
          coordinates: [
            [
              [i, 0],
              [i + 1, 0],
              [i + 1, 1],
              [i, 1],
              [i, 0],
            ],
          ],
        },
        createdAt: hub.createdAt + 1 + i,
      }),
    );
    const store = openSqliteStore({ path, conflictPolicy });
    await store.insertMany([hub]);
    for (const spoke of spokes) await store.insertMany([spoke]);
    await store.deleteById(spokes[1].id, null, { at: hub.createdAt + 100, by: "tidy" });
    const before = (await store.conflictsOf(hub.id, null)) ?? [];
    expect(before.map((c) => [c.counterpart.id, c.seq])).toEqual([
      [spokes[0].id, 2],
      [spokes[2].id, 4],
      [spokes[3].id, 5],
      [spokes[4].id, 6],
    ]);
    await store.close();

    // The table as version 5 made it, and the ledger at version 5.
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    const seqs = db.prepare("SELECT a_seq, b_seq, a_event, b_event FROM conflict_pairs ORDER BY a_seq, b_seq").all();
    db.exec(`
      CREATE TABLE pairs_v5 (
        a_seq INTEGER NOT NULL REFERENCES sources (seq) ON DELETE CASCADE,
        b_seq INTEGER NOT NULL REFERENCES sources (seq) ON DELETE CASCADE,
        measure TEXT NOT NULL, detected_at INTEGER NOT NULL, PRIMARY KEY (a_seq, b_seq)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO pairs_v5 SELECT a_seq, b_seq, measure, detected_at FROM conflict_pairs;
      DROP TABLE conflict_pairs;
      ALTER TABLE pairs_v5 RENAME TO conflict_pairs;
      CREATE INDEX conflict_pairs_by_b ON conflict_pairs (b_seq, a_seq);
      DELETE FROM schema_migrations WHERE version = 6;
    `);
    db.close();

    const reopened = openSqliteStore({ path, conflictPolicy });
    try {
      const migrated = openConnection({ path, busyTimeoutMs: 1_000 });
      expect(
        migrated.prepare("SELECT a_seq, b_seq, a_event, b_event FROM conflict_pairs ORDER BY a_seq, b_seq").all(),
      ).toEqual(seqs);
      migrated.close();
      expect(await reopened.conflictsOf(hub.id, null)).toEqual(before);
      const first = (await reopened.conflictsOf(hub.id, null, { afterSeq: 0, limit: 3 })) ?? [];
      const second = (await reopened.conflictsOf(hub.id, null, { afterSeq: first[2].seq, limit: 3 })) ?? [];
      expect([...first, ...second]).toEqual(before);
      // A delete still takes the pairs with it (the foreign keys survived the rebuild).
      expect(await reopened.deleteById(spokes[0].id, null, { at: hub.createdAt + 200, by: "tidy" })).toBe(true);
      expect((await reopened.conflictsOf(hub.id, null))?.map((c) => c.seq)).toEqual([4, 5, 6]);
    } finally {
      await reopened.close();
    }
  });

  it("stops, naming the column, when a pair has no conflict_set event on a side (which no version writes)", async () => {
    const a = makeRecord({ geometry: square(0, 0, 2) });
    const b = makeRecord({ geometry: square(1, 1, 2), createdAt: a.createdAt + 1 });
    const store = openSqliteStore({ path, conflictPolicy });
    await store.insertMany([a]);
    await store.insertMany([b]);
    await store.close();
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    db.exec(`
      CREATE TABLE pairs_v5 (a_seq INTEGER NOT NULL, b_seq INTEGER NOT NULL, measure TEXT NOT NULL,
        detected_at INTEGER NOT NULL, PRIMARY KEY (a_seq, b_seq)) STRICT, WITHOUT ROWID;
      INSERT INTO pairs_v5 SELECT a_seq, b_seq, measure, detected_at FROM conflict_pairs;
      DROP TABLE conflict_pairs;
      ALTER TABLE pairs_v5 RENAME TO conflict_pairs;
      DELETE FROM schema_migrations WHERE version = 6;
      DROP TRIGGER source_events_no_delete;
    `);
    db.prepare("DELETE FROM source_events WHERE source_id = ? AND type = 'conflict_set'").run(a.id);
    db.close();
    expect(() => openSqliteStore({ path, conflictPolicy })).toThrow(
      /NOT NULL constraint failed: conflict_pairs_paged\.b_event/,
    );
  });
});
