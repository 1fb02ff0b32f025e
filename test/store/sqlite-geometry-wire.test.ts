/**
 * The embedded store's Geometry wire bytes (migration 7, RecordRead.geometryWire): kept beside each
 * source's GeoJSON text from its insert, attached to the records of a read that asks for them, and
 * exactly the bytes encoding the geometry gives.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GEOMETRY_WIRE_VERSION, geoJsonWireBytes } from "../../src/geo/geojson-wire.js";
import { encodeGeometry } from "../../src/geo/geometry-wire.js";
import type { SourceRecord } from "../../src/model/records.js";
import { geometryToProto } from "../../src/rpc/geometry-codec.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { FILL_PROGRESS, fillGeometryWire } from "../../src/store/sqlite/geometry-wire.js";
import { buildListStatement, recordBySeqStatement } from "../../src/store/sqlite/list-query.js";
import { runMigrations } from "../../src/store/sqlite/migrations.js";
import { COLUMNS } from "../../src/store/sqlite/rows.js";
import { MIGRATIONS } from "../../src/store/sqlite/schema.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/store.js";
import {
  BASE_TIME,
  change,
  detailedMultiPolygon,
  listQuery,
  makeRecord,
  square,
  stored,
} from "../contract/fixtures.js";

const A = "acct_a";
let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ledger-wire-"));
  path = join(dir, "ledger.sqlite");
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

const encoded = (record: SourceRecord) => Buffer.from(encodeGeometry(geometryToProto(record.geometry)));

/** The bytes each source's row holds, by source id. */
function storedWires(): Map<string, Buffer> {
  const db = openConnection({ path, busyTimeoutMs: 1_000 });
  try {
    const rows = db
      .prepare<[], { id: string; wire: Buffer }>(
        "SELECT s.id, w.wire FROM source_geometry_wire w JOIN sources s ON s.seq = w.seq",
      )
      .all();
    return new Map(rows.map((row) => [row.id, row.wire]));
  } finally {
    db.close();
  }
}

const records = [
  makeRecord({ accountId: A, geometry: square(0, 0, 1), createdAt: BASE_TIME + 1 }),
  makeRecord({ accountId: A, geometry: detailedMultiPolygon, createdAt: BASE_TIME + 2 }),
  makeRecord({ accountId: A, geometry: square(-179.5, -89.5, 0.000001), createdAt: BASE_TIME + 3 }),
];

describe("the embedded store's Geometry wire bytes", () => {
  let store: SqliteSourceStore;

  let inserted: SourceRecord[];

  beforeEach(async () => {
    store = openSqliteStore({ path });
    inserted = await store.insertMany(records);
  });

  afterEach(async () => {
    await store.close();
  });

  it("are written with each source: the encoding of its geometry, as scanned from its text", async () => {
    const wires = storedWires();
    // The create's answer carries them too (a protobuf answer copies them).
    expect(inserted.map((r) => Buffer.from(r.geometryWire as Uint8Array))).toEqual(records.map((r) => wires.get(r.id)));
    expect([...wires.keys()].sort()).toEqual(records.map((r) => r.id).sort());
    for (const record of records) {
      const read = (await store.get(record.id, A)) as SourceRecord;
      expect(wires.get(record.id)).toEqual(encoded(read));
      expect(wires.get(record.id)).toEqual(Buffer.from(geoJsonWireBytes(read.geometryJson as string) as Uint8Array));
    }
  });

  it("come with the records of a get, a list, a page read to a size and a spatial list that ask for them", async () => {
    const reads: SourceRecord[][] = [
      [(await store.get(records[1].id, A, { geometryWire: true })) as SourceRecord],
      [(await store.get(records[1].id, null, { geometryWire: true })) as SourceRecord],
      await store.list({ ...listQuery(A), geometryWire: true }),
      await store.list({ ...listQuery(A), geometryWire: true, maxGeometryChars: 1 }),
      await store.list({ ...listQuery(A), geometryWire: true, bbox: { minX: -80, minY: -1, maxX: 180, maxY: 90 } }),
    ];
    expect(reads.map((read) => read.map((r) => r.id))).toEqual([
      [records[1].id],
      [records[1].id],
      records.map((r) => r.id),
      [records[0].id, records[1].id],
      [records[0].id, records[1].id],
    ]);
    for (const record of reads.flat()) {
      expect(record.geometryWire).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(record.geometryWire as Uint8Array)).toEqual(encoded(record));
      // Not a field of the record: a copy or a comparison sees the plain fields only.
      expect(Object.keys(record)).not.toContain("geometryWire");
      expect(record).toStrictEqual(stored(records.find((r) => r.id === record.id) ?? records[0]));
    }
  });

  it("stay out of reads that do not ask for them", async () => {
    const reads = [
      (await store.get(records[0].id, A)) as SourceRecord,
      (await store.get(records[0].id, A, {})) as SourceRecord,
      ...(await store.list(listQuery(A))),
      ...(await store.list({ ...listQuery(A), bbox: { minX: -80, minY: -1, maxX: 180, maxY: 90 } })),
    ];
    for (const record of reads) expect(record.geometryWire).toBeUndefined();
  });

  it("go with their source's delete", async () => {
    await store.deleteById(records[0].id, A, change());
    expect([...storedWires().keys()].sort()).toEqual([records[1].id, records[2].id].sort());
  });

  it("are written from the positions, also for a text not in the plain form; a row its key left is replaced", async () => {
    // A row left by a source deleted with foreign keys off, at the key the next source will get.
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    db.pragma("foreign_keys = OFF");
    db.prepare("DELETE FROM sources WHERE id = ?").run(records[2].id);
    db.close();
    // A geometry with a member beyond type and coordinates: its text is not the plain form.
    const odd = makeRecord({
      accountId: A,
      altId: "odd",
      geometry: { ...square(5, 5, 1), extra: 1 } as unknown as ReturnType<typeof square>,
    });
    const [inserted] = await store.insertMany([odd]);
    const read = (await store.get(odd.id, A, { geometryWire: true })) as SourceRecord;
    expect(geoJsonWireBytes(read.geometryJson as string)).toBeUndefined();
    expect(storedWires().get(odd.id)).toEqual(encoded(read));
    expect(Buffer.from(inserted.geometryWire as Uint8Array)).toEqual(encoded(read));
    expect(Buffer.from(read.geometryWire as Uint8Array)).toEqual(encoded(read));
  });

  it("go when the text is changed by hand (no code path does): the read then carries none", async () => {
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    db.prepare("UPDATE sources SET geometry = ' ' || geometry WHERE id = ?").run(records[2].id);
    db.close();
    expect(storedWires().has(records[2].id)).toBe(false);
    expect(storedWires().size).toBe(2);
    const record = (await store.get(records[2].id, A, { geometryWire: true })) as SourceRecord;
    expect(record.geometryWire).toBeUndefined();
    expect(record.geometry).toEqual(records[2].geometry);
  });
});

describe("filling in the bytes when a store opens (fillGeometryWire)", () => {
  /** The ledger as version 6 left it: no table, no progress; one text in a form only an operator's hand could give. */
  async function ledgerAtVersion6(): Promise<Map<string, Buffer>> {
    const store = openSqliteStore({ path });
    await store.insertMany(records);
    await store.close();
    const expected = storedWires();
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    db.exec(
      "DROP TRIGGER source_geometry_wire_stale; DROP TABLE source_geometry_wire; DELETE FROM schema_migrations WHERE version = 7;",
    );
    db.prepare("DELETE FROM ledger_settings WHERE name = ?").run(FILL_PROGRESS);
    db.prepare("UPDATE sources SET geometry = ' ' || geometry WHERE id = ?").run(records[2].id);
    db.close();
    return expected;
  }

  const progress = (db: ReturnType<typeof openConnection>) =>
    JSON.parse(
      (
        db.prepare("SELECT value FROM ledger_settings WHERE name = ?").get(FILL_PROGRESS) as { value: Buffer }
      ).value.toString(),
    );

  it("a ledger of an earlier version gets each source's bytes from its text; a text not in the plain form none", async () => {
    const expected = await ledgerAtVersion6();
    const reopened = openSqliteStore({ path });
    try {
      const filled = storedWires();
      expect([...filled.keys()].sort()).toEqual([records[0].id, records[1].id].sort());
      for (const [id, wire] of filled) expect(wire).toEqual(expected.get(id));
      const page = await reopened.list({ ...listQuery(A), geometryWire: true });
      expect(page.map((r) => r.geometryWire !== undefined)).toEqual([true, true, false]);
    } finally {
      await reopened.close();
    }
  });

  it("goes in batches, each recording how far it got; a fill stopped midway resumes there", async () => {
    await ledgerAtVersion6();
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    try {
      runMigrations(db, MIGRATIONS);
      const seqs = db.prepare("SELECT seq FROM sources ORDER BY seq").pluck().all() as number[];
      // As if the first batch (of one) had committed before the process stopped.
      db.prepare("INSERT INTO ledger_settings (name, value) VALUES (?, ?)").run(
        FILL_PROGRESS,
        Buffer.from(JSON.stringify({ version: GEOMETRY_WIRE_VERSION, through: seqs[0], done: false })),
      );
      fillGeometryWire(db, 1);
      expect(progress(db)).toEqual({ version: GEOMETRY_WIRE_VERSION, through: seqs[2], done: true });
      // The first source's bytes were left to the batch that "committed": the fill trusts its record.
      expect(db.prepare("SELECT seq FROM source_geometry_wire ORDER BY seq").pluck().all()).toEqual([seqs[1]]);
    } finally {
      db.close();
    }
  });

  it("makes every source's bytes again when they were made by another encoding", async () => {
    const store = openSqliteStore({ path });
    await store.insertMany(records);
    await store.close();
    const expected = storedWires();
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    db.exec("UPDATE source_geometry_wire SET wire = x'00'");
    db.prepare("UPDATE ledger_settings SET value = ? WHERE name = ?").run(
      Buffer.from(JSON.stringify({ version: GEOMETRY_WIRE_VERSION - 1, through: 1e9, done: true })),
      FILL_PROGRESS,
    );
    db.close();
    const reopened = openSqliteStore({ path });
    await reopened.close();
    expect(storedWires()).toEqual(expected);
  });

  it("costs one read once done: bytes removed by hand stay removed", async () => {
    const store = openSqliteStore({ path });
    await store.insertMany(records);
    await store.close();
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    db.exec("DELETE FROM source_geometry_wire");
    db.close();
    const reopened = openSqliteStore({ path });
    await reopened.close();
    expect(storedWires().size).toBe(0);
  });
});

describe("a row left behind", () => {
  it("by a delete without foreign keys is replaced when SQLite gives its key to a new source", async () => {
    const store = openSqliteStore({ path });
    await store.insertMany([records[0]]);
    await store.close();
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    db.pragma("foreign_keys = OFF");
    db.prepare("DELETE FROM sources WHERE id = ?").run(records[0].id);
    db.close();

    const reopened = openSqliteStore({ path });
    try {
      await reopened.insertMany([records[1]]);
      const read = (await reopened.get(records[1].id, A, { geometryWire: true })) as SourceRecord;
      expect(Buffer.from(read.geometryWire as Uint8Array)).toEqual(encoded(read));
    } finally {
      await reopened.close();
    }
  });
});

describe("a spatial list's rows, with and without the bytes", () => {
  it("carry the R*Tree box where the statement says, in both plans", async () => {
    const store = openSqliteStore({ path });
    await store.insertMany([records[0]]);
    await store.close();
    const db = openConnection({ path, busyTimeoutMs: 1_000 });
    try {
      for (const plan of ["driving", "probing"] as const) {
        for (const geometryWire of [false, true]) {
          const statement = buildListStatement(
            { ...listQuery(A), geometryWire },
            { envelope: { minX: -1, minY: -1, maxX: 2, maxY: 2 }, plan },
          );
          const rows = db
            .prepare(statement.sql)
            .raw(true)
            .all(...statement.params) as unknown[][];
          expect(rows).toHaveLength(1);
          const [minX, maxX, minY, maxY] = rows[0].slice(statement.boxAt) as number[];
          // The box of square(0, 0, 1), as the R*Tree keeps it (32-bit floats rounded outwards).
          for (const [got, want] of [
            [minX, 0],
            [maxX, 1],
            [minY, 0],
            [maxY, 1],
          ]) {
            expect(Math.abs(got - want)).toBeLessThan(1e-6);
          }
          expect(rows[0].length).toBe(statement.boxAt + 4);
          expect(statement.keysOnly).toBe(plan === "driving");
          if (statement.keysOnly) {
            // Driving: the key, then the box; the record (and its bytes) read by the key.
            expect(statement.boxAt).toBe(1);
            const record = db.prepare(recordBySeqStatement(geometryWire).sql).raw(true).get(rows[0][0]) as unknown[];
            expect(record.length).toBe(COLUMNS.length + (geometryWire ? 1 : 0));
            expect(record.at(-1) instanceof Uint8Array).toBe(geometryWire);
          } else {
            expect(rows[0][statement.boxAt - 1] instanceof Uint8Array).toBe(geometryWire);
          }
        }
      }
    } finally {
      db.close();
    }
  });
});
