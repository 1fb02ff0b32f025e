import type Database from "better-sqlite3";
import { decodeGeometryWire } from "../../geo/geometry-wire.js";
import type { BoundingBox, SourceGeometry } from "../../geo/types.js";
import type { ConflictMeasure } from "../../model/history.js";
import type { NewSourceRecord } from "../../model/records.js";
import type { ConflictPolicy, SpatialSubject } from "../../model/spatial.js";
import { GeometryCache } from "../geometry-cache.js";
import { WIRE_JOIN } from "./geometry-wire.js";

/** A stored source as the conflict scan sees it. */
export interface StoredSubject extends SpatialSubject {
  seq: number;
  id: string;
  createdAt: number;
  accountId: string;
  altId: string;
  conflict: boolean;
}

interface SubjectRow {
  seq: number;
  id: string;
  created_at: number;
  account_id: string;
  alt_id: string;
  /** Null for a large geometry (LARGE_GEOMETRY_BYTES), read on demand through the cache. */
  geometry: string | null;
  /** The geometry's length in bytes, which octet_length reads from the record's header. */
  geometry_bytes: number;
  area_m2: number;
  start_at: number;
  end_at: number;
  attribute_type: string;
  conflict: number;
  min_x: number;
  max_x: number;
  min_y: number;
  max_y: number;
}

/** Sources read at a time while every stored pair is found. */
const PAIR_CHUNK = 1_000;

/**
 * Stored geometries longer than this (as JSON text, ~800 positions at full precision) are not read with the
 * candidate rows (octet_length reads only the record's header) but on demand, through a cache of
 * parsed geometries: a batch of fields along a 99,000-position jurisdiction would otherwise read
 * and parse its 4 MB once per field (~45 ms each), and the same parsed object is what lets the
 * overlay index its boundary from its second use (geo/boundary-index.ts).
 */
const LARGE_GEOMETRY_BYTES = 32_768;

/** Positions of large stored geometries kept parsed (~10.5 MB each 100,000, their boundary indexes included). */
const LARGE_GEOMETRY_CACHE_POSITIONS = 200_000;

/**
 * A large geometry used this recently is not dropped for another: fields that each meet more
 * large sources than the cache holds then keep hitting those it holds (least recently used alone
 * would drop each just before it is needed again, and miss on every one).
 */
const LARGE_GEOMETRY_KEPT_WHILE_USED_MS = 2_000;

/** A candidate's row gone between reading it and reading its geometry: one transaction prevents it. */
function vanished(seq: number): Error {
  return new Error(`source ${seq} vanished while its conflicts were checked`);
}

const SUBJECT_COLUMNS = `s.seq, s.id, s.created_at, s.account_id, s.alt_id,
  CASE WHEN octet_length(s.geometry) > ${LARGE_GEOMETRY_BYTES} THEN NULL ELSE s.geometry END AS geometry,
  octet_length(s.geometry) AS geometry_bytes,
  s.area_m2, s.start_at, s.end_at, s.attribute_type, s.conflict, b.min_x, b.max_x, b.min_y, b.max_y`;

/**
 * A stored source as the conflict checks read it. A class with its getter on the prototype, not an
 * object literal with `get geometry() {…}`: a literal makes a new getter function for every
 * candidate, and V8 then keeps every such object's closure (the row and its geometry text) through
 * each scavenge until the next full collection (as InProcessResponse in rpc/invoke.ts).
 */
class StoredSubjectRow implements StoredSubject {
  readonly seq: number;
  readonly id: string;
  readonly createdAt: number;
  readonly accountId: string;
  readonly altId: string;
  readonly areaM2: number;
  readonly startAt: number;
  readonly endAt: number;
  readonly attributeType: string[];
  conflict: boolean;
  /** The R*Tree's boxes (32-bit floats rounded outwards): never smaller than the true box. */
  readonly bbox: BoundingBox;
  readonly #row: SubjectRow;
  readonly #large: (row: SubjectRow) => SourceGeometry;
  #geometry: SourceGeometry | undefined;

  constructor(row: SubjectRow, large: (row: SubjectRow) => SourceGeometry) {
    this.seq = row.seq;
    this.id = row.id;
    this.createdAt = row.created_at;
    this.accountId = row.account_id;
    this.altId = row.alt_id;
    this.areaM2 = row.area_m2;
    this.startAt = row.start_at;
    this.endAt = row.end_at;
    this.attributeType = JSON.parse(row.attribute_type) as string[];
    this.conflict = row.conflict === 1;
    this.bbox = { minX: row.min_x, maxX: row.max_x, minY: row.min_y, maxY: row.max_y };
    this.#row = row;
    this.#large = large;
  }

  /** Parsed only when the policy gets past its cheap tests: most candidates never need it. */
  get geometry(): SourceGeometry {
    this.#geometry ??=
      this.#row.geometry === null ? this.#large(this.#row) : (JSON.parse(this.#row.geometry) as SourceGeometry);
    return this.#geometry;
  }
}

/** Whether `x` comes before `y` in list order: (created_at, id). */
function listsBefore(x: StoredSubject, y: StoredSubject): boolean {
  return x.createdAt < y.createdAt || (x.createdAt === y.createdAt && x.id < y.id);
}

/**
 * Conflict bookkeeping of docs/api.md §8 on the embedded store. Candidates come from the R*Tree of
 * bounding boxes across all accounts; the policy decides on the exact geometry. Every method runs
 * inside the caller's write transaction (BEGIN IMMEDIATE), so a check and the write it leads to
 * see the same ledger and two overlapping creates cannot both miss each other.
 */
export class ConflictScanner {
  private readonly candidates: Database.Statement<[number, number, number, number], SubjectRow>;
  private readonly setConflict: Database.Statement<[number, number]>;

  private readonly after: Database.Statement<[number, string, number], SubjectRow>;
  private readonly geometryOf: Database.Statement<[number], { geometry: string | null; wire: Uint8Array | null }>;
  private readonly textOf: Database.Statement<[number], { geometry: string }>;
  /**
   * Large stored geometries, parsed, by source id and length: a source's geometry never changes
   * through the API, and ids are never reused, so an entry never goes stale (one of a deleted
   * source ages out unused); the length keys out a text an operator changed by hand.
   */
  private readonly largeGeometries = new GeometryCache<null, string>(
    LARGE_GEOMETRY_CACHE_POSITIONS,
    LARGE_GEOMETRY_KEPT_WHILE_USED_MS,
  );
  private readonly large = ({ seq, id, geometry_bytes }: SubjectRow): SourceGeometry =>
    this.largeGeometries.getOrLoad(`${id} ${geometry_bytes}`, () => {
      const row = this.geometryOf.get(seq);
      if (row === undefined) throw vanished(seq);
      // The kept wire bytes read ~4× faster than the text parses; the text when there are none.
      if (row.wire !== null) {
        try {
          return decodeGeometryWire(row.wire);
        } catch {
          // Damaged bytes must not fail every create that meets this source: the text is the data.
        }
      }
      const text = row.geometry ?? this.textOf.get(seq)?.geometry;
      if (text === undefined) throw vanished(seq);
      return JSON.parse(text) as SourceGeometry;
    });

  constructor(
    db: Database.Database,
    private readonly policy: ConflictPolicy,
  ) {
    this.after = db.prepare(
      `SELECT ${SUBJECT_COLUMNS} FROM sources s JOIN source_bbox b ON b.seq = s.seq
       WHERE (s.created_at, s.id) > (?, ?) ORDER BY s.created_at, s.id LIMIT ?`,
    );
    this.candidates = db.prepare(
      `SELECT ${SUBJECT_COLUMNS} FROM source_bbox b JOIN sources s ON s.seq = b.seq
       WHERE b.min_x <= ? AND b.max_x >= ? AND b.min_y <= ? AND b.max_y >= ?`,
    );
    this.setConflict = db.prepare("UPDATE sources SET conflict = ? WHERE seq = ?");
    this.textOf = db.prepare("SELECT geometry FROM sources WHERE seq = ?");
    // The wire bytes only when present: the trigger on a hand edit of the text drops them.
    this.geometryOf = db.prepare(
      `SELECT CASE WHEN w.wire IS NULL THEN s.geometry END AS geometry, w.wire AS wire
       FROM sources s ${WIRE_JOIN} WHERE s.seq = ?`,
    );
  }

  private neighbours(subject: SpatialSubject): StoredSubject[] {
    const { minX, maxX, minY, maxY } = subject.bbox;
    return this.candidates.all(maxX, minX, maxY, minY).map((row) => new StoredSubjectRow(row, this.large));
  }

  /**
   * Before `record` is inserted: every stored source it conflicts with, and what each conflict
   * measures from the record's side (docs/api.md §14). Each of them is flagged now (both sides of
   * a pair are kept true); their ids are returned so a batch can correct records it already
   * returned. Every pair is measured: the explanation needs each one's overlap.
   */
  admit(record: NewSourceRecord): { others: StoredSubject[]; measures: ConflictMeasure[]; flagged: string[] } {
    const others: StoredSubject[] = [];
    const measures: ConflictMeasure[] = [];
    const flagged: string[] = [];
    for (const other of this.neighbours(record)) {
      const measure = this.policy.measure(record, other);
      if (measure === null) continue;
      others.push(other);
      measures.push(measure);
      if (!other.conflict) {
        this.setConflict.run(1, other.seq);
        other.conflict = true;
        flagged.push(other.id);
      }
    }
    return { others, measures, flagged };
  }

  /**
   * Every pair of stored sources that conflict, each once, the later side in list order
   * (created_at, id) first with the measure from its side: what the pairs would hold had every
   * source been created with pairs kept (the migration that introduced them fills them in once,
   * history.ts). Subjects come in list order, so each source's conflict_set events are appended in
   * the order of their times, as MongoDB's fill does.
   */
  *storedPairs(): Generator<{ subject: StoredSubject; other: StoredSubject; measure: ConflictMeasure }> {
    // A chunk at a time, read whole: the caller writes between pairs, which an open iterator forbids.
    let after: [number, string] = [Number.MIN_SAFE_INTEGER, ""];
    for (
      let rows = this.after.all(...after, PAIR_CHUNK);
      rows.length > 0;
      rows = this.after.all(...after, PAIR_CHUNK)
    ) {
      for (const row of rows) {
        const subject = new StoredSubjectRow(row, this.large);
        for (const other of this.neighbours(subject)) {
          if (!listsBefore(other, subject)) continue;
          const measure = this.policy.measure(subject, other);
          if (measure !== null) yield { subject, other, measure };
        }
        after = [row.created_at, row.id];
      }
    }
  }
}
