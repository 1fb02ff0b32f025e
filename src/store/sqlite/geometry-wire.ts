import type Database from "better-sqlite3";
import { GEOMETRY_WIRE_VERSION, geoJsonWireBytes } from "../../geo/geojson-wire.js";
import type { SourceRecord } from "../../model/records.js";

/**
 * Each source's `sourceledger.v2.Geometry` protobuf bytes, kept in `source_geometry_wire` beside
 * its GeoJSON text (migration 7): a binary gRPC or Connect answer copies them instead of scanning
 * the text into doubles on every read (RecordRead.geometryWire). Derived data, always made from the
 * stored text by geoJsonWireBytes; a text that is not the store's plain form has none, and its
 * answers encode the parsed geometry.
 */

/** How a read takes the bytes: joined by the source's key, one column right after COLUMNS (null when none). */
export const WIRE_JOIN = "LEFT JOIN source_geometry_wire w ON w.seq = s.seq";
export const WIRE_COLUMN = "w.wire";

/**
 * The record with its stored bytes (a BLOB, or null when none): `geometryWire`, not enumerable,
 * so a copy or a comparison sees the plain fields only. Defined either way: one shape for a page.
 */
export function withWire(record: SourceRecord, wire: unknown): SourceRecord {
  const value = wire instanceof Uint8Array ? wire : undefined;
  Object.defineProperty(record, "geometryWire", { value, enumerable: false });
  return record;
}

/** ledger_settings: the encoding of the bytes kept, and how far the fill has gone (FillProgress). */
export const FILL_PROGRESS = "geometry_wire_fill";

/** Sources filled in per transaction: each holds the write lock for a few tens of milliseconds. */
const FILL_BATCH = 2_000;

interface FillProgress {
  /** GEOMETRY_WIRE_VERSION of the bytes kept. */
  version: number;
  /** Every source up to this seq has its bytes (or a text that has none). */
  through: number;
  done: boolean;
}

/**
 * Brings the table up to date when a store opens: the bytes of sources stored before it (a ledger
 * of an earlier version), or all of them again when GEOMETRY_WIRE_VERSION changed. In batches of
 * FILL_BATCH sources, each its own transaction recording how far it got, so a process stopped
 * midway (a probe's restart) resumes where it stopped and the WAL never holds more than a batch;
 * once done, an open costs one read. Sources inserted meanwhile (another process of this version)
 * already have theirs and are left as they are.
 */
export function fillGeometryWire(db: Database.Database, batchSize = FILL_BATCH): void {
  const read = db.prepare<[string], { value: Buffer }>("SELECT value FROM ledger_settings WHERE name = ?");
  const write = db.prepare<[string, Buffer]>("INSERT OR REPLACE INTO ledger_settings (name, value) VALUES (?, ?)");
  const batch = db.prepare<[number, number], { seq: number; geometry: string }>(
    "SELECT seq, geometry FROM sources WHERE seq > ? ORDER BY seq LIMIT ?",
  );
  const insert = db.prepare<[number, Uint8Array]>(
    "INSERT OR IGNORE INTO source_geometry_wire (seq, wire) VALUES (?, ?)",
  );
  const progressOf = (): FillProgress | undefined => {
    const row = read.get(FILL_PROGRESS);
    return row === undefined ? undefined : (JSON.parse(row.value.toString("utf8")) as FillProgress);
  };
  const record = (progress: FillProgress) => write.run(FILL_PROGRESS, Buffer.from(JSON.stringify(progress)));
  const step = db.transaction((): boolean => {
    let progress = progressOf();
    if (progress?.version !== GEOMETRY_WIRE_VERSION) {
      // Bytes of another encoding (or none yet): made again from every text.
      db.exec("DELETE FROM source_geometry_wire");
      progress = { version: GEOMETRY_WIRE_VERSION, through: 0, done: false };
    }
    if (progress.done) return true;
    const rows = batch.all(progress.through, batchSize);
    for (const { seq, geometry } of rows) {
      const wire = geoJsonWireBytes(geometry);
      if (wire !== undefined) insert.run(seq, wire);
    }
    const done = rows.length < batchSize;
    record({ version: GEOMETRY_WIRE_VERSION, through: rows.at(-1)?.seq ?? progress.through, done });
    return done;
  });
  while (!step.immediate()) {
    // The next batch, in its own transaction.
  }
}
