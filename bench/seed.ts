/**
 * Loads a ledger directly through the embedded store (no HTTP).
 *
 * `seedLedger`: records are built the way ledger/ledger.ts builds them (NewSourceRecord,
 * production ids, bbox and geodesic area from src/geo, one distinct 100-position circle per
 * record) and inserted with the store's own `insertMany`, 5,000 a transaction. About 9,000
 * records/s here, so it is used up to 100,000 records.
 *
 * `replicateLedger` (the 1,000,000-record ledger): copies a seeded ledger and repeats its rows in
 * SQL (INSERT … SELECT on the same connection settings the store uses, but with the journal off
 * while loading), giving every copy a new id, alt_id and created_at, and the geometry, bounding
 * box, area and tags `seedRecord` gives that alt_id's cell: copy c of a base of B records is the
 * grid's rows c·B/1000 … (c+1)·B/1000 − 1, so the replicated ledger covers the grid exactly as a
 * seeded one of that size would (a spatial search meets one source per cell, not ten copies of
 * one). The geometry text and area come from JavaScript functions registered on the connection,
 * the R*Tree rows from a prepared INSERT; only the attribute rows are copied as they are. The
 * store's tables are the only ones it knows: if the schema grows a table it does not know, it
 * falls back to `seedLedger`.
 *
 * Run as a child process by bench/scenarios/ledgers.ts (so two ledgers load in parallel):
 *   node --import tsx bench/seed.ts <sqlite path> <count> [<base sqlite path> <base count>]
 * It writes `<path>.json` (DatasetInfo) next to the ledger.
 */
import { copyFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { geodesicAreaM2 } from "../src/geo/area.js";
import { boundingBox } from "../src/geo/bbox.js";
import type { BoundingBox } from "../src/geo/types.js";
import { productionIds } from "../src/ledger/ids.js";
import type { NewSourceRecord } from "../src/model/records.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { COLUMNS, type SourceRow, toRow } from "../src/store/sqlite/rows.js";
import { cellPolygon, SEED_REGION } from "./geometry.js";

export const BENCH_ACCOUNT = "acct-bench";
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
  const store = openSqliteStore({ path });
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
]);

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
  const blockers = replicationBlockers(db);
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
  const block = db.transaction((shift: number) => {
    insertSources.run({ shift });
    for (let k = 0; k < B; k++) {
      const { minX, maxX, minY, maxY } = boxes[k];
      insertBox.run(k + 1 + shift, minX, maxX, minY, maxY);
    }
    insertAttributes.run({ shift });
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
    const box = boxAt.get(seq) as BoundingBox;
    const off = Math.max(...(["minX", "minY", "maxX", "maxY"] as const).map((e) => Math.abs(box[e] - record.bbox[e])));
    // The R*Tree keeps 32-bit floats rounded outwards by a relative 2^-23 or so: ~1e-5° here.
    if (!(off < 1e-4)) throw new Error(`replicated row ${seq}'s R*Tree box is ${off}° off its geometry's`);
  }
  db.pragma("journal_mode = WAL");
  db.close();

  // The store itself must read it back.
  const store = openSqliteStore({ path });
  try {
    const last = await store.get(ids[ids.length - 1], BENCH_ACCOUNT);
    if (last === null) throw new Error("a replicated record is not readable through the store");
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

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  const [path, countText, basePath] = process.argv.slice(2);
  if (!path || !countText) {
    process.stderr.write("usage: node --import tsx bench/seed.ts <sqlite path> <count> [<base sqlite path>]\n");
    process.exit(2);
  }
  const { readFileSync } = await import("node:fs");
  const info = basePath
    ? await replicateLedger(
        JSON.parse(readFileSync(`${basePath}.json`, "utf8")) as DatasetInfo,
        path,
        Number(countText),
      )
    : await seedLedger(path, Number(countText));
  writeFileSync(`${path}.json`, JSON.stringify(info));
  process.stdout.write(`${JSON.stringify({ ...info, ids: info.ids.length })}\n`);
}
