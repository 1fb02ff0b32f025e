import type Database from "better-sqlite3";
import type { SourceGeometry } from "../../geo/types.js";
import type { NewSourceRecord } from "../../model/records.js";
import type { ConflictPolicy, SpatialSubject } from "../../model/spatial.js";

/** A stored source as the conflict scan sees it. */
export interface StoredSubject extends SpatialSubject {
  seq: number;
  id: string;
  conflict: boolean;
}

interface SubjectRow {
  seq: number;
  id: string;
  geometry: string;
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

const SUBJECT_COLUMNS = `s.seq, s.id, s.geometry, s.area_m2, s.start_at, s.end_at, s.attribute_type, s.conflict,
  b.min_x, b.max_x, b.min_y, b.max_y`;

function fromSubjectRow(row: SubjectRow): StoredSubject {
  let geometry: SourceGeometry | undefined;
  return {
    seq: row.seq,
    id: row.id,
    // Parsed only when the policy gets past its cheap tests: most candidates never need it.
    get geometry(): SourceGeometry {
      geometry ??= JSON.parse(row.geometry) as SourceGeometry;
      return geometry;
    },
    areaM2: row.area_m2,
    startAt: row.start_at,
    endAt: row.end_at,
    attributeType: JSON.parse(row.attribute_type) as string[],
    conflict: row.conflict === 1,
    // The R*Tree's boxes (32-bit floats rounded outwards): never smaller than the true box.
    bbox: { minX: row.min_x, maxX: row.max_x, minY: row.min_y, maxY: row.max_y },
  };
}

/**
 * Conflict bookkeeping of docs/api.md §8 on the embedded store. Candidates come from the R*Tree of
 * bounding boxes across all accounts; the policy decides on the exact geometry. Every method runs
 * inside the caller's write transaction (BEGIN IMMEDIATE), so a check and the write it leads to
 * see the same ledger and two overlapping creates cannot both miss each other.
 */
export class ConflictScanner {
  private readonly candidates: Database.Statement<[number, number, number, number], SubjectRow>;
  private readonly bySeq: Database.Statement<[number], SubjectRow>;
  private readonly setConflict: Database.Statement<[number, number]>;

  constructor(
    db: Database.Database,
    private readonly policy: ConflictPolicy,
  ) {
    this.candidates = db.prepare(
      `SELECT ${SUBJECT_COLUMNS} FROM source_bbox b JOIN sources s ON s.seq = b.seq
       WHERE b.min_x <= ? AND b.max_x >= ? AND b.min_y <= ? AND b.max_y >= ?`,
    );
    this.bySeq = db.prepare(
      `SELECT ${SUBJECT_COLUMNS} FROM sources s JOIN source_bbox b ON b.seq = s.seq WHERE s.seq = ?`,
    );
    this.setConflict = db.prepare("UPDATE sources SET conflict = ? WHERE seq = ?");
  }

  private neighbours(subject: SpatialSubject): StoredSubject[] {
    const { minX, maxX, minY, maxY } = subject.bbox;
    return this.candidates.all(maxX, minX, maxY, minY).map(fromSubjectRow);
  }

  /**
   * Before `record` is inserted: whether it conflicts with any stored source. Every stored source
   * it conflicts with is flagged now (both sides are kept true); their ids are returned so a
   * batch can correct records it already returned.
   */
  admit(record: NewSourceRecord): { conflict: boolean; flagged: string[] } {
    const flagged: string[] = [];
    let conflict = false;
    for (const other of this.neighbours(record)) {
      // Once both sides are known to be flagged, this pair cannot change anything: skip the
      // overlay (a batch of n mutually overlapping sources would otherwise cost n²/2 of them).
      if (conflict && other.conflict) continue;
      if (!this.policy.conflicts(record, other)) continue;
      conflict = true;
      if (!other.conflict) {
        this.setConflict.run(1, other.seq);
        flagged.push(other.id);
      }
    }
    return { conflict, flagged };
  }

  /** The subject of a stored source, read before it is deleted. */
  subjectOf(seq: number): StoredSubject | null {
    const row = this.bySeq.get(seq);
    return row === undefined ? null : fromSubjectRow(row);
  }

  /**
   * After `removed` is deleted: every flagged neighbour that conflicted with it is re-evaluated
   * against what is left, and cleared when nothing else conflicts with it. A neighbour's other
   * conflicts are usually with sources around the removed one, so those (already read) are tried
   * before its own neighbourhood is queried.
   */
  release(removed: StoredSubject): void {
    const around = this.neighbours(removed);
    for (const neighbour of around) {
      if (!neighbour.conflict || !this.policy.conflicts(neighbour, removed)) continue;
      // Both sides of a conflict are flagged, so only flagged sources can keep this one flagged.
      const conflictsWith = (other: StoredSubject) =>
        other.conflict && other.seq !== neighbour.seq && this.policy.conflicts(neighbour, other);
      if (around.some(conflictsWith) || this.neighbours(neighbour).some(conflictsWith)) continue;
      this.setConflict.run(0, neighbour.seq);
      neighbour.conflict = false;
    }
  }
}
