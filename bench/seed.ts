/**
 * Loads a ledger directly through the embedded store (no HTTP).
 *
 * `seedLedger`: records are built the way ledger/ledger.ts builds them (NewSourceRecord,
 * production ids, bbox and geodesic area from src/geo, one distinct 100-position circle per
 * record) and inserted with the store's own `insertMany`, 5,000 a transaction, the store opened
 * with the production conflict policy as the service opens it: each record gets its `created`
 * event (issue 10) and the conflict check (no candidates: no two cells meet), and the store
 * records that its pairs are filled, so a server opening the file has nothing left to fill in.
 * About 6,000 records/s here, so it is used up to 100,000 records.
 *
 * `replicateLedger` (the 1,000,000-record ledger): copies a seeded ledger and repeats its rows in
 * SQL (INSERT … SELECT on the same connection settings the store uses, but with the journal off
 * while loading), giving every copy a new id, alt_id and created_at, and the geometry, bounding
 * box, area and tags `seedRecord` gives that alt_id's cell: copy c of a base of B records is the
 * grid's rows c·B/1000 … (c+1)·B/1000 − 1, so the replicated ledger covers the grid exactly as a
 * seeded one of that size would (a spatial search meets one source per cell, not ten copies of
 * one). The geometry text and area come from JavaScript functions registered on the connection,
 * the R*Tree rows from a prepared INSERT; only the attribute rows are copied as they are. Each
 * copy's `created` events are what the store writes for that row (its record as JSON without the
 * geometry, at its created_at, by its created_by: history.ts), made by another registered
 * function; the base must hold exactly one `created` event per source and no conflict pair. The
 * store's tables are the only ones it knows: if the schema grows a table it does not know, it
 * falls back to `seedLedger`.
 *
 * `seedHistoryLedger` (S12 and S13, issue 10): a ledger with conflicts, built through the store
 * with the conflict policy so every event, pair and measure is the service's own: triples of
 * seeded circles with an ellipse over each (ellipseOverThree: 3 conflicts for the ellipse, 1 for
 * each circle; every other ellipse in another account, so half the counterparts are refs), then
 * every tenth triple's middle circle deleted (its `deleted` event, `conflict_cleared` on the
 * ellipse) and as many lone circles created, so `count` sources are live; the deletes come all
 * along the ledger's time (after each batch), so an as_of read meets those before its instant.
 *
 * Run as a child process by bench/scenarios/ledgers.ts (so two ledgers load in parallel):
 *   node --import tsx bench/seed.ts <sqlite path> <count> [<base sqlite path> | history]
 * It writes `<path>.json` (DatasetInfo) next to the ledger.
 */
import { copyFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { geodesicAreaM2 } from "../src/geo/area.js";
import { boundingBox } from "../src/geo/bbox.js";
import { geoJsonWireBytes } from "../src/geo/geojson-wire.js";
import type { BoundingBox } from "../src/geo/types.js";
import { conflictPolicy } from "../src/ledger/conflict.js";
import { productionIds } from "../src/ledger/ids.js";
import type { NewSourceRecord } from "../src/model/records.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { COLUMNS, type SourceRow, toRow } from "../src/store/sqlite/rows.js";
import { cellPolygon, ellipseOverThree, GRID_COLUMNS, SEED_REGION } from "./geometry.js";

export const BENCH_ACCOUNT = "acct-bench";
/** The history ledger's other account: its ellipses are counterparts the bench account sees as refs. */
export const OTHER_ACCOUNT = "acct-bench-other";
export const BENCH_ACTOR = "Bench Client";
/** Seeded records are created one second apart from this instant. */
const CREATED_FROM = Date.UTC(2024, 0, 1);
const START_AT = Date.UTC(2024, 0, 1);
const END_AT = Date.UTC(2025, 0, 1);
const BATCH = 5_000;
/** Half of the ledger is FIELD, as in a typical agricultural account. */
const SOURCE_TYPES = ["FIELD", "FIELD", "FACILITY", "SITE"] as const;
const ATTRIBUTES = [["CARBON_REMOVAL"], ["CARBON_REMOVAL", "BIODIVERSITY"], ["WATER_QUALITY"], ["RENEWABLE_ENERGY"]];
const ID_SAMPLE = 100_000;

export interface DatasetInfo {
  path: string;
  count: number;
  account: string;
  /** Up to 100,000 ids spread over the whole ledger, for GET by id. */
  ids: string[];
  /** How the rows were made: "insertMany" (all distinct) or "replicated from N". */
  method: string;
  seconds: number;
  bytes: number;
  /** The history ledger's (seedHistoryLedger) sources by kind, all in BENCH_ACCOUNT. */
  history?: HistoryInfo;
}

export interface HistoryInfo {
  /** Live sources in a triple (circles and the bench account's ellipses): each has 1–3 conflicts. */
  conflicted: string[];
  /** Deleted circles: their history (created, conflict_set, deleted) outlives them. */
  deleted: string[];
  /** Live sources without a conflict (the lone circles). */
  lone: string[];
  /** The first and last event's instant (ms), for as_of. */
  firstAt: number;
  lastAt: number;
  events: number;
  pairs: number;
  /** Events per source: min, median, max (over every source, both accounts, deleted ones too). */
  eventsPerSource: { min: number; median: number; max: number };
}

export function seedRecord(k: number, id: string): NewSourceRecord {
  const geometry = cellPolygon(SEED_REGION, k);
  const createdAt = CREATED_FROM + k * 1000;
  return {
    id,
    accountId: BENCH_ACCOUNT,
    altId: `seed-${k}`,
    methodology: k % 3 === 0 ? "VM0042" : "ISCC",
    tags: ["bench", `block-${Math.floor(k / 1000)}`],
    stewardId: `grower-${k % 500}`,
    projectId: `prj-${k % 50}`,
    outcomeReportingYear: 2024,
    sourceType: SOURCE_TYPES[k % SOURCE_TYPES.length],
    attributeType: ATTRIBUTES[k % ATTRIBUTES.length],
    geometrySource: "CUSTODIAN_DRAWN",
    geometry,
    bbox: boundingBox(geometry),
    areaM2: geodesicAreaM2(geometry),
    startAt: START_AT,
    endAt: END_AT,
    createdBy: BENCH_ACTOR,
    updatedBy: BENCH_ACTOR,
    createdAt,
    updatedAt: createdAt,
    conflict: false,
    unepOverlap: null,
  };
}

export async function seedLedger(path: string, count: number): Promise<DatasetInfo> {
  const started = performance.now();
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
  const store = openSqliteStore({ path, conflictPolicy });
  const newId = productionIds();
  const every = Math.max(1, Math.floor(count / ID_SAMPLE));
  const ids: string[] = [];
  try {
    for (let from = 0; from < count; from += BATCH) {
      const records: NewSourceRecord[] = [];
      for (let k = from; k < Math.min(count, from + BATCH); k++) {
        const record = seedRecord(k, newId());
        if (k % every === 0 && ids.length < ID_SAMPLE) ids.push(record.id);
        records.push(record);
      }
      await store.insertMany(records);
    }
  } finally {
    // Closing checkpoints the WAL: the file alone is the ledger, ready to copy.
    await store.close();
  }
  return {
    path,
    count,
    account: BENCH_ACCOUNT,
    ids,
    method: "insertMany",
    seconds: (performance.now() - started) / 1000,
    bytes: statSync(path).size,
  };
}

/** Tables of sources the replication fills; another table of sources makes it fall back to seedLedger. */
const KNOWN_SOURCE_TABLES = new Set([
  "sources",
  "source_attribute_types",
  "source_bbox",
  "source_bbox_node",
  "source_bbox_rowid",
  "source_bbox_parent",
  // Issue 10: one created event per source is replicated; the pairs must be none (checked).
  "source_events",
  // Issue 13: each copy's Geometry wire bytes, made from its text as the store makes them.
  "source_geometry_wire",
  "conflict_pairs",
  // The spatial index of the past: each replicated created event's box, the copy's own.
  "source_event_bbox",
  "source_event_bbox_node",
  "source_event_bbox_rowid",
  "source_event_bbox_parent",
]);

/** What the base's event log and pairs hold that replication cannot repeat (empty when it can). */
function historyBlockers(db: Database.Database, count: number): string[] {
  const has = (table: string) =>
    db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = ?").get(table)?.n === 1;
  const blockers: string[] = [];
  if (has("conflict_pairs")) {
    const pairs = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM conflict_pairs").get()?.n ?? 0;
    if (pairs > 0) blockers.push(`${pairs} conflict pairs`);
  }
  if (has("source_events")) {
    const events = db
      .prepare<[], { all: number; created: number }>(
        "SELECT count(*) AS \"all\", sum(type = 'created' AND seq = 1) AS created FROM source_events",
      )
      .get();
    if (events?.all !== count || events?.created !== count) {
      blockers.push(`${events?.all} events (${events?.created} created) for ${count} sources`);
    }
  }
  return blockers;
}

/** Tables that hold per-source rows (named source… or referencing sources) the replication would not fill. */
function replicationBlockers(db: Database.Database): string[] {
  const tables = db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all()
    .map((t) => t.name)
    .filter((name) => !KNOWN_SOURCE_TABLES.has(name))
    .filter(
      (name) =>
        name.startsWith("source") ||
        db
          .prepare<[string], { table: string }>('SELECT "table" FROM pragma_foreign_key_list(?)')
          .all(name)
          .some((fk) => fk.table === "sources"),
    );
  const columns = db
    .prepare<[], { name: string }>("SELECT name FROM pragma_table_info('sources')")
    .all()
    .map((c) => c.name);
  const known = new Set<string>(["seq", ...COLUMNS]);
  return [
    ...tables.map((t) => `table ${t}`),
    ...columns.filter((c) => !known.has(c)).map((c) => `column sources.${c}`),
  ];
}

export async function replicateLedger(base: DatasetInfo, path: string, count: number): Promise<DatasetInfo> {
  const started = performance.now();
  if (count % base.count !== 0) throw new Error(`${count} is not a multiple of the base ledger's ${base.count}`);
  // A stale -wal of an earlier, failed build would be replayed into the copy.
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
  copyFileSync(base.path, path);
  const db = new Database(path);
  const blockers = [...replicationBlockers(db), ...historyBlockers(db, base.count)];
  if (blockers.length > 0) {
    db.close();
    process.stderr.write(
      `bench seed: schema has ${blockers.join(", ")}; loading ${count} records with insertMany instead\n`,
    );
    return seedLedger(path, count);
  }
  // Loading only: a crash leaves a file the next run rebuilds (the cache entry is written last).
  db.pragma("journal_mode = OFF");
  db.pragma("synchronous = OFF");
  db.pragma("cache_size = -262144");
  db.pragma("foreign_keys = ON");
  const B = base.count;
  const maxSeq = db.prepare<[], { n: number }>("SELECT max(seq) AS n, count(*) AS c FROM sources").get();
  if (maxSeq?.n !== B) throw new Error(`the base ledger's seq is not 1..${B} (max ${maxSeq?.n})`);
  // The base's record k (alt_id seed-k) has seq k + 1: the copies' rows are found by it.
  const misplaced = db
    .prepare<[], { n: number }>("SELECT count(*) AS n FROM sources WHERE alt_id != 'seed-' || (seq - 1)")
    .get();
  if (misplaced?.n !== 0) throw new Error(`${misplaced?.n} base records' alt_id is not seed-(seq - 1)`);

  // Every column but the id is what seedRecord makes for k = the base's k + shift (the cell's
  // geometry, area and box, and the alt_id, tags and k-cycled fields), so a replicated ledger
  // equals a seeded one but for its ids. Computed for a whole copy in JavaScript before its
  // INSERT … SELECT reads them through a function registered on the connection.
  const fromJs = COLUMNS.filter((c) => c !== "id");
  const cells = new Map<string, unknown[]>(fromJs.map((c) => [c, new Array<unknown>(B)]));
  const boxes = new Array<BoundingBox>(B);
  const prepareCells = (shift: number) => {
    for (let k = 0; k < B; k++) {
      const record = seedRecord(k + shift, "");
      const row = toRow(record);
      for (const c of fromJs) (cells.get(c) as unknown[])[k] = row[c];
      boxes[k] = record.bbox;
    }
  };
  db.function("bench_cell", { deterministic: true }, (column, k) => {
    const value = (cells.get(column as string) as unknown[])[Number(k)];
    return typeof value === "boolean" ? Number(value) : (value as string | number | null);
  });
  // The data of the row's `created` event as the store writes it (history.ts: the flag as created;
  // the row holds the rest of the record).
  db.function("bench_created", { deterministic: true }, (k) =>
    JSON.stringify({ conflict: (cells.get("conflict") as number[])[Number(k)] }),
  );
  const hasEvents =
    db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'source_events'").get()?.n ===
    1;
  const changed: Record<string, string> = {
    // `src_` + the ULID's 10 time characters + 16 digits (valid Crockford base32), unique by seq.
    id: "'src_' || substr(id, 5, 10) || printf('%016d', seq + @shift)",
    ...Object.fromEntries(fromJs.map((c) => [c, `bench_cell('${c}', seq - 1)`])),
  };
  const insertSources = db.prepare(
    `INSERT INTO sources (seq, ${COLUMNS.join(", ")})
     SELECT seq + @shift, ${COLUMNS.map((c) => changed[c] ?? c).join(", ")} FROM sources WHERE seq <= ${B} ORDER BY seq`,
  );
  const insertBox = db.prepare<[number, number, number, number, number]>(
    "INSERT INTO source_bbox (seq, min_x, max_x, min_y, max_y) VALUES (?, ?, ?, ?, ?)",
  );
  const insertAttributes = db.prepare(
    `INSERT INTO source_attribute_types (source_seq, attribute_type)
     SELECT source_seq + @shift, attribute_type FROM source_attribute_types WHERE source_seq <= ${B}`,
  );
  const insertEvents = hasEvents
    ? db.prepare(
        `INSERT INTO source_events (source_id, seq, account_id, type, at, by, data)
         SELECT id, 1, account_id, 'created', created_at, created_by, bench_created(seq - 1 - @shift)
           FROM sources WHERE seq > @shift AND seq <= @shift + ${B} ORDER BY seq`,
      )
    : null;
  const hasEventBoxes =
    db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'source_event_bbox'").get()
      ?.n === 1;
  // Each copy's created event gets its source's box, as the store writes it with the event.
  const insertEventBoxes =
    hasEvents && hasEventBoxes
      ? db.prepare(
          `INSERT INTO source_event_bbox (event_seq, min_x, max_x, min_y, max_y)
           SELECT e.event_seq, b.min_x, b.max_x, b.min_y, b.max_y
             FROM sources s JOIN source_events e ON e.source_id = s.id AND e.seq = 1 JOIN source_bbox b ON b.seq = s.seq
            WHERE s.seq > @shift AND s.seq <= @shift + ${B}`,
        )
      : null;
  const hasWire =
    db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'source_geometry_wire'").get()
      ?.n === 1;
  // Each copy's bytes made from its text as the store makes them (store.ts insertMany); none when
  // the text has none (INSERT OR IGNORE skips the NULL).
  db.function("bench_geometry_wire", { deterministic: true }, (text) => geoJsonWireBytes(text as string) ?? null);
  const insertWire = hasWire
    ? db.prepare(
        `INSERT OR IGNORE INTO source_geometry_wire (seq, wire)
         SELECT seq, bench_geometry_wire(geometry) FROM sources WHERE seq > @shift AND seq <= @shift + ${B}`,
      )
    : null;
  const block = db.transaction((shift: number) => {
    insertSources.run({ shift });
    insertWire?.run({ shift });
    for (let k = 0; k < B; k++) {
      const { minX, maxX, minY, maxY } = boxes[k];
      insertBox.run(k + 1 + shift, minX, maxX, minY, maxY);
    }
    insertAttributes.run({ shift });
    insertEvents?.run({ shift });
    insertEventBoxes?.run({ shift });
  });
  for (let shift = B; shift < count; shift += B) {
    prepareCells(shift);
    block(shift);
  }
  const ids = db
    .prepare<[number], { id: string }>("SELECT id FROM sources WHERE seq % ? = 0 ORDER BY seq")
    .all(Math.max(1, Math.floor(count / ID_SAMPLE)))
    .map((r) => r.id)
    .slice(0, ID_SAMPLE);
  // Every column but the id is what seedLedger would have stored for that alt_id, and so is the box.
  const rowAt = db.prepare<[number], SourceRow>(`SELECT ${COLUMNS.join(", ")} FROM sources WHERE seq = ?`);
  const boxAt = db.prepare<[number], BoundingBox>(
    "SELECT min_x AS minX, min_y AS minY, max_x AS maxX, max_y AS maxY FROM source_bbox WHERE seq = ?",
  );
  const attributesAt = db.prepare<[number], { attribute_type: string }>(
    "SELECT attribute_type FROM source_attribute_types WHERE source_seq = ? ORDER BY attribute_type",
  );
  const wireAt = hasWire
    ? db.prepare<[number], { wire: Buffer }>("SELECT wire FROM source_geometry_wire WHERE seq = ?")
    : null;
  const eventsOf = db.prepare<[string], { seq: number; type: string; at: number; by: string; data: string }>(
    "SELECT seq, type, at, by, data FROM source_events WHERE source_id = ? ORDER BY seq",
  );
  for (const seq of [B + 1, B + 2, B + 3, Math.floor(count / 2) + 7, count]) {
    const row = rowAt.get(seq) as SourceRow;
    const k = Number(row.alt_id.slice("seed-".length));
    const record = seedRecord(k, row.id);
    const want = toRow(record);
    const differing = COLUMNS.filter((c) => row[c] !== want[c]);
    if (k !== seq - 1 || differing.length > 0) {
      throw new Error(`replicated row ${seq} (${row.alt_id}) differs from its seeded form in ${differing.join(", ")}`);
    }
    const attributes = attributesAt.all(seq).map((a) => a.attribute_type);
    if (JSON.stringify(attributes) !== JSON.stringify([...record.attributeType].sort())) {
      throw new Error(`replicated row ${seq}'s attribute rows are ${attributes.join(", ")}, not its attribute_type`);
    }
    if (wireAt !== null) {
      const wire = wireAt.get(seq)?.wire;
      const expected = geoJsonWireBytes(row.geometry);
      if (expected === undefined || wire === undefined || !Buffer.from(expected).equals(wire)) {
        throw new Error(`replicated row ${seq}'s geometry wire bytes are not its text's`);
      }
    }
    const box = boxAt.get(seq) as BoundingBox;
    const off = Math.max(...(["minX", "minY", "maxX", "maxY"] as const).map((e) => Math.abs(box[e] - record.bbox[e])));
    // The R*Tree keeps 32-bit floats rounded outwards by a relative 2^-23 or so: ~1e-5° here.
    if (!(off < 1e-4)) throw new Error(`replicated row ${seq}'s R*Tree box is ${off}° off its geometry's`);
    if (hasEvents) {
      // The event the store itself would have written for this row (history.ts, `created`).
      const expected = { seq: 1, type: "created", at: record.createdAt, by: record.createdBy };
      const events = eventsOf.all(row.id);
      const data = JSON.stringify({ conflict: want.conflict });
      if (events.length !== 1 || JSON.stringify({ ...events[0], data: undefined }) !== JSON.stringify(expected)) {
        throw new Error(`replicated row ${seq}'s events are ${JSON.stringify(events)}`);
      }
      if (events[0].data !== data) throw new Error(`replicated row ${seq}'s created event holds ${events[0].data}`);
    }
  }
  if (hasEvents && hasEventBoxes) {
    const boxed = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM source_event_bbox").get()?.n;
    if (boxed !== count) throw new Error(`${boxed} created events have a box, not ${count}`);
  }
  db.pragma("journal_mode = WAL");
  db.close();

  // The store itself must read it back, opened as the service opens it (with the conflict policy):
  // whatever it would fill in on a first open is done here, not while a server starts.
  const opening = performance.now();
  const store = openSqliteStore({ path, conflictPolicy });
  const openMs = performance.now() - opening;
  if (openMs > 2_000) process.stderr.write(`bench seed: the store took ${(openMs / 1000).toFixed(1)} s to open\n`);
  try {
    const last = await store.get(ids[ids.length - 1], BENCH_ACCOUNT);
    if (last === null) throw new Error("a replicated record is not readable through the store");
    if (hasEvents) {
      const events = await store.history(last.id, BENCH_ACCOUNT);
      const created = events?.[0]?.record;
      const same =
        created?.id === last.id &&
        created.altId === last.altId &&
        created.createdAt === last.createdAt &&
        JSON.stringify(created.geometry) === JSON.stringify(last.geometry);
      if (events?.length !== 1 || !same) {
        throw new Error(`the history of ${last.altId} through the store is ${JSON.stringify(events)?.slice(0, 300)}`);
      }
    }
    const k = Number(last.altId.slice("seed-".length));
    const expected = seedRecord(k, last.id);
    const boxes = await store.list({ accountId: BENCH_ACCOUNT, limit: 10, offset: 0, bbox: expected.bbox });
    if (boxes.length !== 1 || boxes[0].id !== last.id) {
      throw new Error(
        `the bbox of ${last.altId} finds ${boxes.map((r) => r.altId).join(", ") || "nothing"}, not it alone`,
      );
    }
  } finally {
    await store.close();
  }
  return {
    path,
    count,
    account: BENCH_ACCOUNT,
    ids,
    method: `replicated from ${B.toLocaleString("en-US")} records, each copy in its own cells`,
    seconds: (performance.now() - started) / 1000,
    bytes: statSync(path).size,
  };
}

/** An ellipse's attribute types: every seeded circle's share one with it. */
const ALL_ATTRIBUTES = ["BIODIVERSITY", "CARBON_REMOVAL", "RENEWABLE_ENERGY", "WATER_QUALITY"];
const TRIPLES_PER_ROW = Math.floor(GRID_COLUMNS / 3);
/** Ids of each kind kept in the DatasetInfo (spread over the ledger). */
const HISTORY_ID_SAMPLE = 20_000;

/** Up to `max` of `ids`, spread evenly over them. */
function spread(ids: string[], max: number): string[] {
  const every = Math.max(1, Math.ceil(ids.length / max));
  return ids.filter((_, i) => i % every === 0);
}

/**
 * The history ledger of S12 and S13 (see the top of this file): `count` live sources (a multiple
 * of 4), built through the store with the conflict policy. Changes are one second apart, batch
 * by batch of 1,250 triples: each triple's three circles and then its ellipse, then the batch's
 * deletes, then as many lone circles.
 */
export async function seedHistoryLedger(path: string, count: number): Promise<DatasetInfo> {
  if (count % 4 !== 0) throw new Error(`the history ledger's count ${count} is not a multiple of 4`);
  const started = performance.now();
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
  const store = openSqliteStore({ path, conflictPolicy });
  const newId = productionIds();
  const triples = count / 4;
  const deletes = Math.floor(triples / 10);
  let created = 0;
  const nextAt = () => CREATED_FROM + created++ * 1000;
  const circle = (k: number): NewSourceRecord => {
    const createdAt = nextAt();
    return { ...seedRecord(k, newId()), createdAt, updatedAt: createdAt };
  };
  const ellipse = (t: number, k: number): NewSourceRecord => {
    const createdAt = nextAt();
    const geometry = ellipseOverThree(SEED_REGION, k);
    const ours = t % 2 === 0;
    const actor = ours ? BENCH_ACTOR : "Other Client";
    return {
      ...seedRecord(k + 1, newId()),
      accountId: ours ? BENCH_ACCOUNT : OTHER_ACCOUNT,
      altId: `ellipse-${t}`,
      attributeType: ALL_ATTRIBUTES,
      geometry,
      bbox: boundingBox(geometry),
      areaM2: geodesicAreaM2(geometry),
      createdBy: actor,
      updatedBy: actor,
      createdAt,
      updatedAt: createdAt,
    };
  };
  const conflicted: string[] = [];
  const middles: string[] = [];
  const lone: string[] = [];
  // Lone circles go in rows past the triples'.
  const firstLone = (Math.ceil(triples / TRIPLES_PER_ROW) + 1) * GRID_COLUMNS;
  try {
    const perBatch = BATCH / 4;
    for (let from = 0; from < triples; from += perBatch) {
      const records: NewSourceRecord[] = [];
      const deleting: string[] = [];
      for (let t = from; t < Math.min(triples, from + perBatch); t++) {
        const k = Math.floor(t / TRIPLES_PER_ROW) * GRID_COLUMNS + 3 * (t % TRIPLES_PER_ROW);
        const circles = [circle(k), circle(k + 1), circle(k + 2)];
        const over = ellipse(t, k);
        records.push(...circles, over);
        // Every tenth triple's middle circle is deleted once its batch is stored.
        if (t % 10 === 5 && middles.length + deleting.length < deletes) deleting.push(circles[1].id);
        else conflicted.push(circles[1].id);
        conflicted.push(circles[0].id, circles[2].id);
        if (over.accountId === BENCH_ACCOUNT) conflicted.push(over.id);
      }
      await store.insertMany(records);
      // Deletes all along the ledger's time, as a real one has them (an as_of read meets those
      // before its instant), each followed by a lone circle, so `count` sources are live at the end.
      for (const id of deleting) {
        if (!(await store.deleteById(id, BENCH_ACCOUNT, { by: BENCH_ACTOR, at: nextAt() }))) {
          throw new Error(`history ledger: ${id} could not be deleted`);
        }
      }
      const lonely = deleting.map((_, j) => circle(firstLone + middles.length + j));
      if (lonely.length > 0) await store.insertMany(lonely);
      middles.push(...deleting);
      lone.push(...lonely.map((r) => r.id));
    }
  } finally {
    await store.close();
  }
  const history = checkHistoryLedger(path, { count, triples, deletes: middles.length });
  return {
    path,
    count,
    account: BENCH_ACCOUNT,
    ids: spread([...conflicted, ...lone], ID_SAMPLE),
    method: `insertMany with the conflict policy: ${triples.toLocaleString("en-US")} triples of circles under an ellipse (every other ellipse in another account), ${middles.length.toLocaleString("en-US")} middle circles deleted, as many lone circles`,
    seconds: (performance.now() - started) / 1000,
    bytes: statSync(path).size,
    history: {
      ...history,
      conflicted: spread(conflicted, HISTORY_ID_SAMPLE),
      deleted: spread(middles, HISTORY_ID_SAMPLE),
      lone: spread(lone, HISTORY_ID_SAMPLE),
      firstAt: CREATED_FROM,
      lastAt: CREATED_FROM + (created - 1) * 1000,
    },
  };
}

/** The history ledger's counts, checked against what its construction must have stored. */
function checkHistoryLedger(
  path: string,
  { count, triples, deletes }: { count: number; triples: number; deletes: number },
): Pick<HistoryInfo, "events" | "pairs" | "eventsPerSource"> {
  const db = new Database(path, { readonly: true });
  try {
    const one = (sql: string) => (db.prepare<[], { n: number }>(sql).get() as { n: number }).n;
    const found = {
      sources: one("SELECT count(*) AS n FROM sources"),
      flagged: one("SELECT count(*) AS n FROM sources WHERE conflict = 1"),
      pairs: one("SELECT count(*) AS n FROM conflict_pairs"),
      events: one("SELECT count(*) AS n FROM source_events"),
      set: one("SELECT count(*) AS n FROM source_events WHERE type = 'conflict_set'"),
      cleared: one("SELECT count(*) AS n FROM source_events WHERE type = 'conflict_cleared'"),
      deleted: one("SELECT count(*) AS n FROM source_events WHERE type = 'deleted'"),
    };
    // Each triple: 3 pairs (6 conflict_set events); each delete takes one pair and clears its ellipse's side.
    const expected = {
      sources: count,
      flagged: 4 * triples - deletes,
      pairs: 3 * triples - deletes,
      events: 4 * triples + deletes + 6 * triples + 2 * deletes,
      set: 6 * triples,
      cleared: deletes,
      deleted: deletes,
    };
    if (JSON.stringify(found) !== JSON.stringify(expected)) {
      throw new Error(`history ledger: found ${JSON.stringify(found)}, expected ${JSON.stringify(expected)}`);
    }
    const perSource = db
      .prepare<[], { n: number }>("SELECT count(*) AS n FROM source_events GROUP BY source_id ORDER BY n")
      .all()
      .map((r) => r.n);
    return {
      events: found.events,
      pairs: found.pairs,
      eventsPerSource: {
        min: perSource[0],
        median: perSource[Math.floor(perSource.length / 2)],
        max: perSource[perSource.length - 1],
      },
    };
  } finally {
    db.close();
  }
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  const [path, countText, basePath] = process.argv.slice(2);
  if (!path || !countText) {
    process.stderr.write(
      "usage: node --import tsx bench/seed.ts <sqlite path> <count> [<base sqlite path> | history]\n",
    );
    process.exit(2);
  }
  const { readFileSync } = await import("node:fs");
  const info =
    basePath === "history"
      ? await seedHistoryLedger(path, Number(countText))
      : basePath
        ? await replicateLedger(
            JSON.parse(readFileSync(`${basePath}.json`, "utf8")) as DatasetInfo,
            path,
            Number(countText),
          )
        : await seedLedger(path, Number(countText));
  writeFileSync(`${path}.json`, JSON.stringify(info));
  const { history } = info;
  const counts = history && {
    ...history,
    conflicted: history.conflicted.length,
    deleted: history.deleted.length,
    lone: history.lone.length,
  };
  process.stdout.write(`${JSON.stringify({ ...info, ids: info.ids.length, history: counts })}\n`);
}
