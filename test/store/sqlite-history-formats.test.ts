/**
 * Ledgers written by earlier versions of the SQLite store keep their history: events in the two
 * older formats read exactly as the current format (src/store/sqlite/history.ts `recordOf`):
 *
 * - whole: a `created` event holds the whole record as created, a `deleted` event nothing
 *   (b473ddd–103cc83);
 * - split: a `created` event holds the record without its geometry, the `deleted` event the
 *   geometry the row held (103cc83–54854fb);
 * - current: a `created` event holds the flag as created, the `deleted` event the whole row.
 *
 * One ledger is written with creates, conflicts and deletes, its answers read, its events rewritten
 * into an older format (as that version wrote them), and every answer read again.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { DELETED_BOXES_FILL, fillDeletedEventBoxes, SqliteHistory } from "../../src/store/sqlite/history.js";
import { runMigrations } from "../../src/store/sqlite/migrations.js";
import { COLUMNS, type SourceRow } from "../../src/store/sqlite/rows.js";
import { MIGRATIONS } from "../../src/store/sqlite/schema.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { BASE_TIME, change, listQuery, makeRecord, square } from "../contract/fixtures.js";

const at = (minutes: number) => BASE_TIME + minutes * 60_000;

const a = makeRecord({ geometry: square(0, 0, 2), createdAt: at(1), createdBy: "Farm Co" });
const b = makeRecord({ geometry: square(1, 1, 2), createdAt: at(2), accountId: "acct_b", createdBy: "Mill Co" });
const apart = makeRecord({ geometry: square(50, 50), createdAt: at(3) });
const c = makeRecord({ geometry: square(1.5, 1.5, 1), createdAt: at(4), createdBy: "Farm Co" });
const ids = [a.id, b.id, apart.id, c.id];
/** Before anything, between every change, and after the last. */
const instants = [0, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5].map(at);

/** Boxes for lists within an area: around `apart` alone, and the corner of `a` that `b` and `c` miss. */
const NEAR_APART = { minX: 49, minY: 49, maxX: 52, maxY: 52 };
const NEAR_A = { minX: -1, minY: -1, maxX: 0.5, maxY: 0.5 };

let dir: string;
let path: string;

/** Every answer that reads events: histories, conflicts, get and list as of every instant. */
async function answers() {
  const store = openSqliteStore({ path, conflictPolicy });
  try {
    const read: Record<string, unknown> = {};
    for (const id of ids) {
      read[`history ${id}`] = await store.history(id, null);
      read[`conflicts ${id}`] = await store.conflictsOf(id, null);
      for (const instant of instants) read[`get ${id} @${instant}`] = await store.getAsOf(id, null, instant);
    }
    for (const instant of instants) {
      read[`list @${instant}`] = await store.list(listQuery(null, { asOf: instant }));
      read[`list acct_a @${instant}`] = await store.list(listQuery("acct_a", { asOf: instant }));
      read[`list page @${instant}`] = await store.list(listQuery(null, { asOf: instant, limit: 1, offset: 1 }));
      // Within an area: read through the boxes of the spatial index of the past (source_event_bbox).
      read[`list near apart @${instant}`] = await store.list(listQuery(null, { asOf: instant, bbox: NEAR_APART }));
      read[`list near a @${instant}`] = await store.list(listQuery(null, { asOf: instant, bbox: NEAR_A }));
    }
    return read;
  } finally {
    await store.close();
  }
}

interface EventRow {
  event_seq: number;
  source_id: string;
  type: string;
  data: string | null;
}

/** Rewrites every created and deleted event as `format` wrote it (the append-only triggers set aside meanwhile). */
function rewriteEvents(format: "whole" | "split"): void {
  const db = openConnection({ path, busyTimeoutMs: 1_000 });
  try {
    const triggers = db
      .prepare<[], { sql: string }>(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'source_events'",
      )
      .all();
    expect(triggers).toHaveLength(2);
    const events = db
      .prepare<[], EventRow>("SELECT event_seq, source_id, type, data FROM source_events ORDER BY event_seq")
      .all();
    const liveRow = db.prepare<[string], SourceRow>(`SELECT ${COLUMNS.join(", ")} FROM sources WHERE id = ?`);
    const deletedRecord = new Map<string, SourceRow>();
    for (const event of events) {
      if (event.type === "deleted") deletedRecord.set(event.source_id, JSON.parse(event.data ?? "null").record);
    }
    const update = db.prepare<[string | null, number]>("UPDATE source_events SET data = ? WHERE event_seq = ?");
    db.transaction(() => {
      db.exec("DROP TRIGGER source_events_no_update");
      for (const event of events) {
        const row = liveRow.get(event.source_id) ?? deletedRecord.get(event.source_id);
        if (row === undefined) throw new Error(`no record for ${event.source_id}`);
        if (event.type === "created") {
          const asCreated = { ...row, conflict: JSON.parse(event.data ?? "{}").conflict };
          expect(asCreated.conflict).toBeTypeOf("number");
          const { geometry: _geometry, ...withoutGeometry } = asCreated;
          const written = update.run(
            JSON.stringify({ record: format === "whole" ? asCreated : withoutGeometry }),
            event.event_seq,
          );
          expect(written.changes).toBe(1);
        } else if (event.type === "deleted") {
          const written = update.run(
            format === "whole" ? null : JSON.stringify({ geometry: row.geometry }),
            event.event_seq,
          );
          expect(written.changes).toBe(1);
        }
      }
      for (const { sql } of triggers) if (sql.includes("source_events_no_update")) db.exec(sql);
    })();
    expect(
      db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'source_events'").get(),
    ).toEqual({ n: 2 });
  } finally {
    db.close();
  }
}

let current: Record<string, unknown>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ledger-history-formats-"));
  path = join(dir, "ledger.sqlite");
  const store = openSqliteStore({ path, conflictPolicy });
  try {
    for (const record of [a, b, apart, c]) await store.insertMany([record]);
    expect(await store.deleteById(b.id, null, change({ at: at(5), by: "Mill Co" }))).toBe(true);
    expect(await store.deleteById(apart.id, null, change({ at: at(6) }))).toBe(true);
  } finally {
    await store.close();
  }
  current = await answers();
  expect(existsSync(`${path}-wal`)).toBe(false);
  copyFileSync(path, join(dir, "current.sqlite"));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a history written in an older event format reads as the current one", () => {
  it("the ledger read in the current format is the one the changes made", () => {
    const history = current[`history ${a.id}`] as { type: string; record?: { conflict: boolean } }[];
    expect(history.map((e) => e.type)).toEqual(["created", "conflict_set", "conflict_set", "conflict_cleared"]);
    expect(history[0].record?.conflict).toBe(false);
    expect(current[`history ${b.id}`]).toHaveLength(4);
    expect((current[`get ${b.id} @${at(4.5)}`] as { conflict: boolean }).conflict).toBe(true);
    expect(current[`get ${b.id} @${at(5.5)}`]).toBeNull();
    expect((current[`get ${apart.id} @${at(5.5)}`] as { geometry: unknown }).geometry).toEqual(apart.geometry);
    expect((current[`list @${at(4.5)}`] as { id: string }[]).map((r) => r.id)).toEqual(ids);
    expect((current[`list @${at(6.5)}`] as { id: string }[]).map((r) => r.id)).toEqual([a.id, c.id]);
    expect(current[`conflicts ${b.id}`]).toBeNull();
    const idsOf = (key: string) => (current[key] as { id: string }[]).map((r) => r.id);
    expect(idsOf(`list near apart @${at(3.5)}`)).toEqual([apart.id]);
    expect(idsOf(`list near apart @${at(5.5)}`)).toEqual([apart.id]);
    expect(idsOf(`list near apart @${at(6.5)}`)).toEqual([]);
    expect(idsOf(`list near a @${at(6.5)}`)).toEqual([a.id]);
  });

  for (const format of ["whole", "split"] as const) {
    it(`${format}: every history, conflict list, get and list as of every instant answer the same`, async () => {
      copyFileSync(join(dir, "current.sqlite"), path);
      rewriteEvents(format);
      expect(await answers()).toEqual(current);
    });
  }

  for (const format of ["current", "whole", "split"] as const) {
    it(`${format}: migration 8 fills in every created source's box, deleted ones' from the events`, async () => {
      copyFileSync(join(dir, "current.sqlite"), path);
      if (format !== "current") rewriteEvents(format);
      forgetEventBoxes();
      if (format !== "current") {
        // The deleted sources' boxes one per batch, as a fill resumed batch after batch.
        const db = openConnection({ path, busyTimeoutMs: 1_000 });
        try {
          runMigrations(db, MIGRATIONS);
          fillDeletedEventBoxes(db, new SqliteHistory(db), 1);
        } finally {
          db.close();
        }
      }
      expect(await answers()).toEqual(current);
      const db = openConnection({ path, busyTimeoutMs: 1_000 });
      try {
        const boxes = db.prepare("SELECT count(*) AS n FROM source_event_bbox").get();
        expect(boxes).toEqual({ n: ids.length });
      } finally {
        db.close();
      }
    });
  }
});

/** Takes the ledger back to before migration 8: no spatial index of the past. */
function forgetEventBoxes(): void {
  const db = openConnection({ path, busyTimeoutMs: 1_000 });
  try {
    db.exec("DROP TABLE source_event_bbox; DELETE FROM schema_migrations WHERE version = 8");
    db.prepare("DELETE FROM ledger_settings WHERE name = ?").run(DELETED_BOXES_FILL);
  } finally {
    db.close();
  }
}
