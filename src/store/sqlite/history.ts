import type Database from "better-sqlite3";
import { boundingBox } from "../../geo/bbox.js";
import type { BoundingBox, SourceGeometry } from "../../geo/types.js";
import {
  type Change,
  type ConflictMeasure,
  type Counterpart,
  fromOtherSide,
  type SourceConflict,
  type SourceEvent,
  type SourceEventType,
} from "../../model/history.js";
import { geometryCharsOf, type ListCursor, type ListQuery } from "../../model/list-query.js";
import type { SourceRecord } from "../../model/records.js";
import { collectPage, FIRST_BATCH, mapRows } from "../page-collector.js";
import type { EventPage } from "../port.js";
import { matcher, narrows } from "../record-filter.js";
import { spatialFilterOf } from "../spatial-filter.js";
import { envelopeCondition, envelopeCountStatement, spatialPlanFor } from "./list-query.js";
import { COLUMNS, fromColumns, fromRow, type SourceRow } from "./rows.js";

/** A stored source as its events and pairs name it. */
export interface EventSubject {
  seq: number;
  id: string;
  accountId: string;
  altId: string;
}

/**
 * An event row as eventsOf reads it, in raw mode (an array: objects of ~30 keys, then a SourceRow
 * of the live columns, cost a history read ~20 µs): the event's columns (EVENT), then the live
 * row's columns (COLUMNS, from EVENT.live; nulls when the source is not live or the event is not
 * `created`).
 */
type EventRow = unknown[];
const EVENT = { sourceId: 0, seq: 1, accountId: 2, type: 3, at: 4, by: 5, data: 6, live: 7 } as const;

/** The live row's columns of an event row, or null when the source is not live (or was not joined). */
function liveColumnsOf(row: EventRow): unknown[] | null {
  return row[EVENT.live] === null ? null : row.slice(EVENT.live);
}

/** A SourceRow of a row's columns in COLUMNS order. */
function rowOfColumns(columns: readonly unknown[]): SourceRow {
  return Object.fromEntries(COLUMNS.map((column, i) => [column, columns[i]])) as unknown as SourceRow;
}

/** What an event row's `data` holds, by type. */
interface EventData {
  /**
   * `created`: the flag as the source was created. The rest of the record is the row while the
   * source lives (only `conflict` ever changes on a row) and the `deleted` event's record after:
   * a copy in every created event cost a create ~10 µs and its bytes in the commit.
   */
  conflict?: number;
  /**
   * `created` of older ledgers: the record as stored (whole when filled in; without its geometry
   * when written by an earlier version of this store). `deleted`: the whole row the delete removes.
   */
  record?: Omit<SourceRow, "geometry"> & { geometry?: string };
  /** `deleted`, written by an earlier version of this store: the geometry only. */
  geometry?: string;
  counterpart?: Counterpart;
  measure?: ConflictMeasure;
}

/**
 * A `created` event as an as_of read takes it, in raw mode (an array, as the plain list reads its
 * rows: objects of 25 keys a row cost a page of 100 ~0.6 ms): the event's source id, account,
 * instant and data; conflict_set minus conflict_cleared events by the instant (more sets than
 * clears is a live pair); then the live row's columns (COLUMNS; nulls once the source is deleted).
 */
type CreatedRow = unknown[];
const AS_OF = { sourceId: 0, accountId: 1, at: 2, data: 3, openPairs: 4, live: 5 } as const;

/** Where a source's created-event row stands in list order (its created event's time is the source's). */
function cursorOfCreated(row: CreatedRow): ListCursor {
  return { createdAt: row[AS_OF.at] as number, id: row[AS_OF.sourceId] as string };
}

/** A candidate of an as_of list within an area: its created-event row and its box (source_event_bbox). */
interface BoxedRow {
  row: CreatedRow;
  box: BoundingBox;
}

/** What an as_of list within an area selects before the CreatedRow's columns: the box. */
const EVENT_BOX_COLUMNS = "h.min_x, h.max_x, h.min_y, h.max_y";

/** A row that starts with EVENT_BOX_COLUMNS, split. */
function boxedRow(row: unknown[]): BoxedRow {
  const [minX, maxX, minY, maxY] = row as number[];
  return { row: row.slice(4), box: { minX, maxX, minY, maxY } };
}

const CONFLICT_COLUMN = COLUMNS.indexOf("conflict");

/** Created events read at a time by an as_of list, at most: a page reads no more than it may use. */
const AS_OF_CHUNK = 500;

/**
 * The created events one as_of query may pass over in list order (its window): those it leaves out
 * in SQL (deleted by the instant, or with a box missing the area) are never returned, so only the
 * window bounds them. It starts at twice the query's chunk, and at least MIN_AS_OF_WINDOW (a
 * probing read's chunks start at 8; a window that small ends short on an area holding one box in
 * ten, and each short one costs another query), and doubles after each window that held too few to
 * fill its chunk, up to MAX_AS_OF_WINDOW, back to its start after one that filled it. Each costs
 * the read's allowance (spendOnPassedOver), and none is run once the allowance is spent.
 */
const MIN_AS_OF_WINDOW = 256;
const MAX_AS_OF_WINDOW = 65_536;

/**
 * Where an as_of query's window ended without filling its chunk: a candidate that is no source,
 * so a page that stops there resumes after the window instead of reading it again.
 */
class WindowEnd {
  constructor(readonly cursor: ListCursor) {}
}

/** What an as_of read selects (CreatedRow) from `source_events e` joined to `sources s`; its placeholder is the instant. */
const AS_OF_COLUMNS = `e.source_id, e.account_id, e.at, e.data,
       (SELECT coalesce(sum(f.type = 'conflict_set'), 0) - coalesce(sum(f.type = 'conflict_cleared'), 0)
          FROM source_events f WHERE f.source_id = e.source_id AND f.at <= ?) AS open_pairs,
       ${COLUMNS.map((column) => `s.${column}`).join(", ")}`;

/** Whether the source whose id is `sourceId` (a column) was deleted by the instant (the placeholder). */
const deletedBy = (sourceId: string) => `EXISTS (SELECT 1 FROM source_events d
                              WHERE d.source_id = ${sourceId} AND d.type = 'deleted' AND d.at <= ?)`;

/** Whether the created event \`e\` names a source deleted by the instant (the placeholder). */
const DELETED_BY = deletedBy("e.source_id");

interface PairRow {
  id: string;
  alt_id: string;
  account_id: string;
  measure: string;
  detected_at: number;
  /** The seq of the conflict_set event that recorded the pair in the asked-for source's history. */
  event: number;
  /** 1 when the asked-for source is the pair's `a` side (the measure is from its side). */
  mine: number;
}

const counterpartOf = (subject: EventSubject): Counterpart => ({
  id: subject.id,
  altId: subject.altId,
  accountId: subject.accountId,
});

/**
 * The event log and the conflict pairs of the embedded store (docs/api.md §14). Every write runs
 * inside the caller's transaction, so a change and its events commit together or not at all.
 * Events are only ever inserted; triggers in the schema refuse any update or delete of one.
 */
export class SqliteHistory {
  private readonly statements;

  constructor(private readonly db: Database.Database) {
    this.statements = {
      nextSeq: db.prepare<[string], { next: number }>(
        "SELECT coalesce(max(seq), 0) + 1 AS next FROM source_events WHERE source_id = ?",
      ),
      insertEvent: db.prepare<[string, number, string, string, number, string, string | null]>(
        "INSERT INTO source_events (source_id, seq, account_id, type, at, by, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      insertEventBox: db.prepare<[number | bigint, number, number, number, number]>(
        "INSERT INTO source_event_bbox (event_seq, min_x, max_x, min_y, max_y) VALUES (?, ?, ?, ?, ?)",
      ),
      insertPair: db.prepare<[number, number, string, number, number, number]>(
        `INSERT INTO conflict_pairs (a_seq, b_seq, measure, detected_at, a_event, b_event)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      pairsOf: db.prepare<{ seq: number; after: number }, PairRow>(PAIRS_OF_SQL),
      counterpartSeqs: db.prepare<[number, number], { seq: number; id: string; alt_id: string; account_id: string }>(
        `SELECT s.seq, s.id, s.alt_id, s.account_id FROM conflict_pairs p JOIN sources s ON s.seq = p.b_seq
           WHERE p.a_seq = ?
         UNION
         SELECT s.seq, s.id, s.alt_id, s.account_id FROM conflict_pairs p JOIN sources s ON s.seq = p.a_seq
           WHERE p.b_seq = ?`,
      ),
      hasPairs: db.prepare<[number, number], { found: number }>(
        `SELECT EXISTS (SELECT 1 FROM conflict_pairs WHERE a_seq = ?)
             OR EXISTS (SELECT 1 FROM conflict_pairs WHERE b_seq = ?) AS found`,
      ),
      clearFlag: db.prepare<[number]>("UPDATE sources SET conflict = 0 WHERE seq = ?"),
      eventsOf: db.prepare<[string, number], EventRow>(EVENTS_OF_SQL).raw(true),
      firstEvent: db.prepare<[string], { account_id: string }>(
        "SELECT account_id FROM source_events WHERE source_id = ? AND seq = 1",
      ),
      liveRow: db.prepare<[string], SourceRow>(`SELECT ${COLUMNS.join(", ")} FROM sources WHERE id = ?`),
      deletedData: db.prepare<[string], { data: string | null }>(
        "SELECT data FROM source_events WHERE source_id = ? AND type = 'deleted'",
      ),
      liveSeq: db.prepare<[string], { seq: number; account_id: string }>(
        "SELECT seq, account_id FROM sources WHERE id = ?",
      ),
      createdAsOf: db.prepare<[number, string, number, number], CreatedRow>(GET_AS_OF_SQL).raw(true),
      lastChangeAt: db.prepare<[], { last_at: number }>("SELECT last_at FROM change_clock WHERE id = 1"),
      advanceClock: db.prepare<[number]>("UPDATE change_clock SET last_at = ? WHERE id = 1"),
    };
  }

  /**
   * The instant of the last change committed, read inside a write transaction: a change is
   * recorded at the instant its request came in, or at this one when it is later (a create queued
   * behind a delete that came in after it), so the events' times follow the order of the commits
   * and an as_of instant sees every change committed before the last one it sees (docs/api.md
   * §14). The write lock makes read-then-advance safe across connections and processes.
   */
  lastChangeAt(): number {
    const last = this.statements.lastChangeAt.get()?.last_at;
    if (last === undefined) throw new Error("change_clock has no row: the store's migrations did not run");
    return last;
  }

  /**
   * Records, in the change's write transaction, that it was recorded at `at`, read `since` (its
   * lastChangeAt): the clock is written only when the change moved it.
   */
  changedAt(at: number, since: number): void {
    if (at > since) this.statements.advanceClock.run(at);
  }

  /**
   * Appends an event and answers its seq and its key (event_seq); `seq` when the caller knows it
   * (its own events within its transaction).
   */
  private append(
    subject: Pick<EventSubject, "id" | "accountId">,
    type: SourceEventType,
    change: Change,
    data: EventData | null,
    seq = this.statements.nextSeq.get(subject.id)?.next ?? 1,
  ): { seq: number; key: number | bigint } {
    const json = data === null ? null : JSON.stringify(data);
    const { lastInsertRowid } = this.statements.insertEvent.run(
      subject.id,
      seq,
      subject.accountId,
      type,
      change.at,
      change.by,
      json,
    );
    return { seq, key: lastInsertRowid };
  }

  /**
   * The `created` event of a source just inserted: its flag as created (the row holds the rest),
   * and its box in the spatial index of the past (source_event_bbox).
   */
  created(row: SourceRow, box: BoundingBox, change: Change): void {
    const { key } = this.append(
      { id: row.id, accountId: row.account_id },
      "created",
      change,
      { conflict: row.conflict },
      1,
    );
    this.statements.insertEventBox.run(key, box.minX, box.maxX, box.minY, box.maxY);
  }

  /**
   * A conflict found by a create: the pair, stored once with its measure from `subject`'s side, and
   * a `conflict_set` event on each side naming the other. `subjectSeq`: the event's seq on the
   * subject's side when the caller knows it (a source just created: 2 for its first pair, and on).
   */
  conflictFound(
    subject: EventSubject,
    other: EventSubject,
    measure: ConflictMeasure,
    change: Change,
    subjectSeq?: number,
  ): void {
    const subjectEvent = this.append(
      subject,
      "conflict_set",
      change,
      { counterpart: counterpartOf(other), measure },
      subjectSeq,
    ).seq;
    const otherEvent = this.append(other, "conflict_set", change, {
      counterpart: counterpartOf(subject),
      measure: fromOtherSide(measure),
    }).seq;
    this.statements.insertPair.run(
      subject.seq,
      other.seq,
      JSON.stringify(measure),
      change.at,
      subjectEvent,
      otherEvent,
    );
  }

  /** The sources `seq` is in a pair with, read before it is deleted (its pairs go with it). */
  counterpartsOf(seq: number): EventSubject[] {
    return this.statements.counterpartSeqs
      .all(seq, seq)
      .map((r) => ({ seq: r.seq, id: r.id, altId: r.alt_id, accountId: r.account_id }));
  }

  /**
   * After `removed` was deleted (its pairs with it): a `conflict_cleared` event on each former
   * counterpart, whose flag is cleared when that was its last pair.
   */
  released(removed: EventSubject, counterparts: readonly EventSubject[], change: Change): void {
    for (const counterpart of counterparts) {
      this.append(counterpart, "conflict_cleared", change, { counterpart: counterpartOf(removed) });
      if (this.statements.hasPairs.get(counterpart.seq, counterpart.seq)?.found !== 1) {
        this.statements.clearFlag.run(counterpart.seq);
      }
    }
  }

  /**
   * The `deleted` event of a source, written in its delete's transaction, before the row goes: it
   * keeps the whole row, so the history still has the record the `created` event leaves to it.
   */
  deleted(subject: Pick<EventSubject, "id" | "accountId">, change: Change): void {
    const record = this.statements.liveRow.get(subject.id);
    this.append(subject, "deleted", change, record === undefined ? null : { record });
  }

  /**
   * The geometry text of a deleted source, as its events kept it (`created` and `deleted` events'
   * data, in whichever format the store's version wrote them: recordOf).
   */
  keptGeometry(sourceId: string, created: string | null, deleted: string | null): string {
    const data = JSON.parse(created ?? "{}") as EventData;
    return this.recordOf(sourceId, data, null, JSON.parse(deleted ?? "{}") as EventData).geometry;
  }

  /**
   * A created event's record, whole: the row while the source lives (read with the event), else the
   * `deleted` event's (`deleted`: given when at hand, or the one query this costs), with the flag as
   * created; events of older ledgers carry the record, whole or but its geometry.
   */
  private recordOf(sourceId: string, data: EventData, live: SourceRow | null, deleted?: EventData): SourceRow {
    const record = data.record;
    if (record?.geometry !== undefined) return record as SourceRow;
    // Read (one query) on first need only, and once.
    let read: EventData | undefined = deleted;
    const kept = () => {
      read ??= JSON.parse(this.statements.deletedData.get(sourceId)?.data ?? "{}") as EventData;
      return read;
    };
    if (record !== undefined) {
      const geometry = live?.geometry ?? kept().geometry ?? kept().record?.geometry;
      if (geometry === undefined) throw new Error(`the geometry of source ${sourceId} is neither live nor kept`);
      return { ...record, geometry };
    }
    const row = live ?? (kept().record as SourceRow | undefined);
    if (row === undefined) throw new Error(`the record of source ${sourceId} is neither live nor kept`);
    return { ...row, conflict: data.conflict ?? row.conflict };
  }

  /**
   * A page of the ledger as it stood at `query.asOf` (docs/api.md §14): the sources created by then
   * and not deleted by then, in list order, each as created and with its flag as it was then
   * (more conflict_set than conflict_cleared events by then); the filters are applied to them.
   */
  listAsOf(query: ListQuery & { asOf: number }): SourceRecord[] {
    const plain = matcher(query);
    const spatial = spatialFilterOf(query);
    if (spatial === null) {
      return collectPage(
        this.createdAsOf(query, narrows(query) ? AS_OF_CHUNK : null, null),
        (row) => {
          if (row instanceof WindowEnd) return null;
          query.exactTests?.spendOnRead();
          const record = this.asItWas(row);
          return plain(record) ? record : null;
        },
        query,
        geometryCharsOf,
        (row) => (row instanceof WindowEnd ? row.cursor : cursorOfCreated(row)),
      );
    }
    return collectPage(
      this.createdWithinAsOf(query, spatial.envelope),
      (candidate) => {
        if (candidate instanceof WindowEnd) return null;
        query.exactTests?.spendOnRead();
        const record = this.asItWas(candidate.row);
        // The box (rounded outwards) holds the geometry: within every box area, it matches.
        return plain(record) && (spatial.covers(candidate.box) || spatial.matches(record.geometry)) ? record : null;
      },
      query,
      geometryCharsOf,
      (candidate) => (candidate instanceof WindowEnd ? candidate.cursor : cursorOfCreated(candidate.row)),
    );
  }

  /**
   * The created events of the sources live at `query.asOf` whose box meets `envelope`, in list
   * order, each with its box: driven from source_event_bbox when the envelope meets few boxes (their
   * keys sorted, each row read by key as the page reaches it), else the list order walked with each
   * row's box looked up by its key, those missing the envelope left out by the query.
   */
  private createdWithinAsOf(
    query: ListQuery & { asOf: number },
    envelope: BoundingBox,
  ): Iterable<BoxedRow | WindowEnd> {
    const count = envelopeCountStatement(envelope, "source_event_bbox");
    const candidates = this.statement(count.key, count.sql).get(...count.params) as unknown[];
    if (spatialPlanFor(candidates[0] as number) === "probing") {
      return mapRows(this.createdAsOf(query, FIRST_BATCH, envelope), (row) =>
        row instanceof WindowEnd ? row : boxedRow(row),
      );
    }
    const within = envelopeCondition("h", envelope);
    const inAccount = query.accountId !== null;
    const after = query.after ?? null;
    const params: (string | number)[] = [...within.params, query.asOf, query.asOf];
    if (query.accountId !== null) params.push(query.accountId);
    if (after !== null) params.push(after.createdAt, after.id);
    const keys = this.statement(
      `created-within:${inAccount}:${after !== null}`,
      createdWithinKeysSql(within.sql, inAccount, after !== null),
    ).all(...params);
    const byKey = this.statement("created-by-key", CREATED_BY_KEY_SQL);
    return mapRows(keys, (key) => {
      const row = byKey.get(query.asOf, key[0] as number);
      // Read in the snapshot the keys came from (the store's list runs in one): the row is there.
      if (row === undefined) throw new Error(`created event ${String(key[0])} listed but not read`);
      return { row, box: boxedRow(key.slice(1)).box };
    });
  }

  /**
   * The created events of the sources live at `query.asOf`, in list order, read in chunks of
   * `chunk` rows (null: no more than the page, as every event read is kept or skipped). Within an
   * envelope, each row starts with its box (EVENT_BOX_COLUMNS) and only those meeting it are read;
   * such a read may stop after a few large candidates (ListQuery.exactTests), so its chunks start
   * small and double: a read does not take hundreds of whole rows it leaves. Each query passes
   * over at most its window of created events, and costs the read's allowance that many; a window
   * that ends before its chunk is full ends in a WindowEnd, from which the next one goes on.
   */
  private *createdAsOf(
    query: ListQuery & { asOf: number },
    firstChunk: number | null,
    envelope: BoundingBox | null,
  ): Generator<unknown[] | WindowEnd> {
    let chunk = firstChunk ?? Math.max(1, Math.min(AS_OF_CHUNK, query.offset + query.limit));
    let window = Math.max(MIN_AS_OF_WINDOW, 2 * chunk);
    const within = envelope === null ? null : envelopeCondition("h", envelope);
    let after = query.after ?? null;
    const inAccount = query.accountId !== null;
    for (;;) {
      const scope = { asOf: query.asOf, accountId: query.accountId, after };
      // Read whole (not iterated): a deleted source's geometry is another query on the connection.
      const rows = this.statement(
        `as-of:${inAccount}:${after !== null}:${within !== null}`,
        listAsOfSql(inAccount, after !== null, within?.sql ?? null),
      ).all(...listAsOfParams(scope, window, within?.params ?? null, chunk));
      query.exactTests?.spendOnPassedOver(window);
      yield* rows;
      if (rows.length === chunk) {
        after = cursorOfCreated(within === null ? rows[chunk - 1] : rows[chunk - 1].slice(4));
        if (firstChunk !== null) chunk = Math.min(AS_OF_CHUNK, 2 * chunk);
        // Sources again: a window grown over a stretch left out would cost each next query whole.
        window = Math.max(MIN_AS_OF_WINDOW, 2 * chunk);
      } else {
        // Too few to fill the chunk: the window was read whole, or the listing ended within it.
        const end = this.windowEnd(scope, window);
        if (end === undefined) return;
        after = end;
        yield new WindowEnd(after);
        window = Math.min(MAX_AS_OF_WINDOW, 2 * window);
      }
      if (query.exactTests?.exhausted) {
        // Spent: collectPage stops before the next candidate, so the next query would be read only
        // to be left. A candidate to stop before, if one follows (a listing the allowance ends with
        // is not stopped).
        if (this.windowEnd({ ...scope, after }, 1) !== undefined) yield new WindowEnd(after);
        return;
      }
    }
  }

  /** The key of the last of `size` created events from `scope` on (windowEndSql), if there are that many. */
  private windowEnd(scope: AsOfScope, size: number): ListCursor | undefined {
    const inAccount = scope.accountId !== null;
    const after = scope.after !== null;
    const end = this.statement(`as-of-window-end:${inAccount}:${after}`, windowEndSql(inAccount, after)).get(
      ...windowEndParams(scope, size),
    );
    return end === undefined ? undefined : { createdAt: end[0] as number, id: end[1] as string };
  }

  /** One source as it stood at `asOf`; null when it was not live then (or not in scope). */
  getAsOf(id: string, accountId: string | null, asOf: number): SourceRecord | null {
    const row = this.statements.createdAsOf.get(asOf, id, asOf, asOf);
    if (row === undefined || (accountId !== null && row[AS_OF.accountId] !== accountId)) return null;
    return this.asItWas(row);
  }

  /** The source as created (the live row: only `conflict` changes on it), with its flag at the instant. */
  private asItWas(row: CreatedRow): SourceRecord {
    const conflict = (row[AS_OF.openPairs] as number) > 0 ? 1 : 0;
    const live = row.slice(AS_OF.live);
    if (live[0] !== null) {
      live[CONFLICT_COLUMN] = conflict;
      return fromColumns(live);
    }
    const sourceId = row[AS_OF.sourceId] as string;
    const record = this.recordOf(sourceId, JSON.parse(row[AS_OF.data] as string) as EventData, null);
    return fromRow({ ...record, conflict });
  }

  /** The as_of reads' statements, prepared once each (raw mode: rows are arrays). */
  private readonly asOfStatements = new Map<string, Database.Statement<(string | number)[], unknown[]>>();

  private statement(key: string, sql: string): Database.Statement<(string | number)[], unknown[]> {
    let statement = this.asOfStatements.get(key);
    if (statement === undefined) {
      statement = this.db.prepare<(string | number)[], unknown[]>(sql).raw(true);
      this.asOfStatements.set(key, statement);
    }
    return statement;
  }

  /**
   * A source's events in order (a page of them: after a seq, at most a limit, along the
   * (source_id, seq) index); null when it has none in `accountId`'s scope (never existed there).
   */
  eventsOf(id: string, accountId: string | null, page?: EventPage): SourceEvent[] | null {
    const rows = firstOf(
      this.statements.eventsOf.iterate(id, page?.afterSeq ?? 0),
      page?.limit ?? Number.POSITIVE_INFINITY,
    );
    // Every event names the source's account; past the last page, the first event says whether it existed.
    const owner = (rows[0]?.[EVENT.accountId] as string | undefined) ?? this.statements.firstEvent.get(id)?.account_id;
    if (owner === undefined || (accountId !== null && owner !== accountId)) return null;
    const data = rows.map((row) =>
      row[EVENT.data] === null ? {} : (JSON.parse(row[EVENT.data] as string) as EventData),
    );
    // A deleted source's record is in its last event, read with the others.
    const deleted = rows.at(-1)?.[EVENT.type] === "deleted" ? data.at(-1) : undefined;
    return rows.map((row, i) => {
      const { counterpart, measure } = data[i];
      const event: SourceEvent = {
        sourceId: row[EVENT.sourceId] as string,
        accountId: row[EVENT.accountId] as string,
        seq: row[EVENT.seq] as number,
        type: row[EVENT.type] as SourceEventType,
        at: row[EVENT.at] as number,
        by: row[EVENT.by] as string,
      };
      if (event.type === "created")
        event.record = this.createdRecord(event.sourceId, data[i], liveColumnsOf(row), deleted);
      if (counterpart) event.counterpart = counterpart;
      if (measure) event.measure = measure;
      return event;
    });
  }

  /**
   * A created event's record: the live row's columns with the flag as created (the usual case, read
   * straight from the columns), else as recordOf finds it.
   */
  private createdRecord(sourceId: string, data: EventData, live: unknown[] | null, deleted?: EventData): SourceRecord {
    if (live !== null && data.record === undefined) {
      if (data.conflict !== undefined) live[CONFLICT_COLUMN] = data.conflict;
      return fromColumns(live);
    }
    return fromRow(this.recordOf(sourceId, data, live === null ? null : rowOfColumns(live), deleted));
  }

  /**
   * A live source's conflicts in the order its history recorded them (a page of them: after an
   * event seq, at most a limit, one range of each side's index); null when it is not live in
   * `accountId`'s scope.
   */
  conflictsOf(id: string, accountId: string | null, page?: EventPage): SourceConflict[] | null {
    const live = this.statements.liveSeq.get(id);
    if (live === undefined || (accountId !== null && live.account_id !== accountId)) return null;
    const rows = this.statements.pairsOf.iterate({ seq: live.seq, after: page?.afterSeq ?? 0 });
    return firstOf(rows, page?.limit ?? Number.POSITIVE_INFINITY).map((row) => {
      const measure = JSON.parse(row.measure) as ConflictMeasure;
      return {
        counterpart: { id: row.id, altId: row.alt_id, accountId: row.account_id },
        measure: row.mine === 1 ? measure : fromOtherSide(measure),
        detectedAt: row.detected_at,
        seq: row.event,
      };
    });
  }
}

/**
 * A source's events in order from after a seq, a created event with the geometry of the live row.
 * Placeholders: id, seq. A page stops reading at its limit (firstOf): a bound `LIMIT ?` made every
 * history read ~2.5× slower (25 µs more a call, measured on the 100,000 ledger).
 */
export const EVENTS_OF_SQL = `SELECT e.source_id, e.seq, e.account_id, e.type, e.at, e.by, e.data,
       ${COLUMNS.map((column) => `s.${column} AS live_${column}`).join(", ")}
  FROM source_events e LEFT JOIN sources s ON e.type = 'created' AND s.id = e.source_id
 WHERE e.source_id = ? AND e.seq > ? ORDER BY e.seq`;

/**
 * A source's conflicts from after one of its event seqs, in that order: the pairs where it is `a`
 * and those where it is `b`, each one range of its (side, event) index, merged. Placeholders:
 * seq (the source's row), after (an event seq).
 */
export const PAIRS_OF_SQL = `SELECT s.id, s.alt_id, s.account_id, p.measure, p.detected_at, p.a_event AS event, 1 AS mine
  FROM conflict_pairs p JOIN sources s ON s.seq = p.b_seq WHERE p.a_seq = @seq AND p.a_event > @after
UNION ALL
SELECT s.id, s.alt_id, s.account_id, p.measure, p.detected_at, p.b_event AS event, 0 AS mine
  FROM conflict_pairs p JOIN sources s ON s.seq = p.a_seq WHERE p.b_seq = @seq AND p.b_event > @after
ORDER BY event`;

/** The first `limit` rows of a statement's iterator; leaving it early resets the statement. */
function firstOf<T>(rows: Iterable<T>, limit: number): T[] {
  const taken: T[] = [];
  if (limit <= 0) return taken;
  for (const row of rows) {
    taken.push(row);
    if (taken.length >= limit) break;
  }
  return taken;
}

/**
 * One source at an instant. Its created event is its first (seq 1), found by the key rather than
 * by walking every created event up to the instant. Placeholders: instant, id, instant, instant.
 */
export const GET_AS_OF_SQL = `SELECT ${AS_OF_COLUMNS} FROM source_events e LEFT JOIN sources s ON s.id = e.source_id
 WHERE e.source_id = ? AND e.seq = 1 AND e.at <= ? AND NOT ${DELETED_BY}`;

/** Where an as_of query reads: the instant, the account (null: every account), after a cursor. */
interface AsOfScope {
  asOf: number;
  accountId: string | null;
  after: ListCursor | null;
}

/**
 * The created events made by an instant, in list order, from the list order's index alone (its
 * key, instant and source id): an as_of query's window. Placeholders: the instant, the account
 * (when `inAccount`), the cursor's created_at and id (when `after`).
 */
function windowSql(inAccount: boolean, after: boolean, columns: string): string {
  return `SELECT ${columns} FROM source_events w
 WHERE w.type = 'created' AND w.at <= ?
   ${inAccount ? "AND w.account_id = ?" : ""}
   ${after ? "AND (w.at, w.source_id) > (?, ?)" : ""}
 ORDER BY w.at, w.source_id`;
}

function windowParams({ asOf, accountId, after }: AsOfScope): (string | number)[] {
  const params: (string | number)[] = [asOf];
  if (accountId !== null) params.push(accountId);
  if (after !== null) params.push(after.createdAt, after.id);
  return params;
}

/**
 * Created events of sources live at an instant, in list order, from a window of at most a number
 * of created events: those of sources deleted by the instant are left out before their rows are
 * read, and within an envelope (`within`, a condition on source_event_bbox `h`: each row then
 * starts with the box) so are those whose box misses it, each box looked up by its key. The window
 * is a co-routine in list order, so nothing is sorted and reading stops at the limit.
 * Placeholders: listAsOfParams.
 */
export function listAsOfSql(inAccount: boolean, after: boolean, within: string | null = null): string {
  return `SELECT ${within === null ? "" : `${EVENT_BOX_COLUMNS}, `}${AS_OF_COLUMNS}
  FROM (${windowSql(inAccount, after, "w.event_seq, w.at, w.source_id")} LIMIT ?) win
  ${within === null ? "" : "CROSS JOIN source_event_bbox h ON h.event_seq = win.event_seq "}CROSS JOIN source_events e ON e.event_seq = win.event_seq
  LEFT JOIN sources s ON s.id = e.source_id
 WHERE NOT ${deletedBy("win.source_id")}
   ${within === null ? "" : `AND ${within}`}
 ORDER BY win.at, win.source_id LIMIT ?`;
}

/** listAsOfSql's placeholders: the instant (the flag), the window's, its size, the instant (deleted by), the envelope's four, the limit. */
export function listAsOfParams(
  scope: AsOfScope,
  window: number,
  within: readonly number[] | null,
  limit: number,
): (string | number)[] {
  return [scope.asOf, ...windowParams(scope), window, scope.asOf, ...(within ?? []), limit];
}

/** The key of the last created event of a window (`OFFSET` its size less one), if it has that many. */
export function windowEndSql(inAccount: boolean, after: boolean): string {
  return `${windowSql(inAccount, after, "w.at, w.source_id")} LIMIT 1 OFFSET ?`;
}

export function windowEndParams(scope: AsOfScope, window: number): (string | number)[] {
  return [...windowParams(scope), window - 1];
}

/**
 * The keys (and boxes) of the created events of sources live at an instant whose box meets an
 * envelope, in list order, source_event_bbox driving. Placeholders: the envelope's four (`within`,
 * a condition on `h`), the instant twice, the account (when `inAccount`), the cursor's created_at
 * and id (when `after`).
 */
export function createdWithinKeysSql(within: string, inAccount: boolean, after: boolean): string {
  return `SELECT e.event_seq, ${EVENT_BOX_COLUMNS}
  FROM source_event_bbox h CROSS JOIN source_events e ON e.event_seq = h.event_seq
 WHERE ${within} AND e.at <= ? AND NOT ${DELETED_BY}
   ${inAccount ? "AND e.account_id = ?" : ""}
   ${after ? "AND (e.at, e.source_id) > (?, ?)" : ""}
 ORDER BY e.at, e.source_id`;
}

/** One created event's row (CreatedRow) by its key. Placeholders: the instant, the key. */
export const CREATED_BY_KEY_SQL = `SELECT ${AS_OF_COLUMNS} FROM source_events e LEFT JOIN sources s ON s.id = e.source_id
 WHERE e.event_seq = ?`;

/** What the migration to the event log still owes a ledger stored before it (ledger_settings names). */
const EVENTS_FILLED = "history_created_events_filled";
const PAIRS_FILLED = "history_conflict_pairs_filled";

/**
 * Fills in, once, what a ledger stored before the event log lacks (docs/api.md §14): a `created`
 * event for every source (its record as stored, at its created_at, by its created_by) and, when a
 * conflict policy is given, every pair of stored sources that conflict, with their measures and a
 * `conflict_set` event on each side (at the created_at of the later source in list order, by its
 * creator: when its create would have found the pair), and every flag set to "has a pair". Each
 * step runs in one transaction and records that it ran; a store opened without a policy leaves
 * the pairs for the first open with one.
 */
export function fillHistory(
  db: Database.Database,
  history: SqliteHistory,
  pairs: Iterable<{ subject: EventSubject; other: EventSubject; measure: ConflictMeasure }> | null,
  createdAtOf: (seq: number) => { at: number; by: string },
): void {
  const done = db.prepare<[string], { name: string }>("SELECT name FROM ledger_settings WHERE name = ?");
  const mark = db.prepare<[string]>("INSERT INTO ledger_settings (name, value) VALUES (?, x'01')");
  db.transaction(() => {
    if (done.get(EVENTS_FILLED) !== undefined) return;
    db.exec(`
      INSERT INTO source_events (source_id, seq, account_id, type, at, by, data)
      SELECT id, 1, account_id, 'created', created_at, created_by,
             json_object('record', json_object(${ROW_JSON_MEMBERS}))
        FROM sources
       WHERE NOT EXISTS (SELECT 1 FROM source_events e WHERE e.source_id = sources.id)`);
    // Their boxes: every created event without one is of a live source just filled in.
    db.exec(`
      INSERT INTO source_event_bbox (event_seq, min_x, max_x, min_y, max_y)
      SELECT e.event_seq, b.min_x, b.max_x, b.min_y, b.max_y
        FROM source_events e JOIN sources s ON s.id = e.source_id JOIN source_bbox b ON b.seq = s.seq
       WHERE e.type = 'created' AND NOT EXISTS (SELECT 1 FROM source_event_bbox h WHERE h.event_seq = e.event_seq)`);
    mark.run(EVENTS_FILLED);
  }).immediate();
  if (pairs === null) return;
  db.transaction(() => {
    if (done.get(PAIRS_FILLED) !== undefined) return;
    for (const { subject, other, measure } of pairs)
      history.conflictFound(subject, other, measure, createdAtOf(subject.seq));
    db.exec(`UPDATE sources SET conflict = (EXISTS (SELECT 1 FROM conflict_pairs WHERE a_seq = seq)
                                        OR EXISTS (SELECT 1 FROM conflict_pairs WHERE b_seq = seq))`);
    mark.run(PAIRS_FILLED);
  }).immediate();
}

/** ledger_settings: how far the fill of deleted sources' boxes has gone (DeletedBoxesProgress). */
export const DELETED_BOXES_FILL = "history_deleted_boxes_fill";

/**
 * Deleted sources' created events filled in per transaction: a source of 100,000 positions takes
 * ~25 ms to parse, so a batch holds the write lock for at most about a second.
 */
const DELETED_BOXES_BATCH = 32;

interface DeletedBoxesProgress {
  /** Every created event up to this key has its box, or its source is live. */
  through: number;
  done: boolean;
}

/**
 * Gives the created events of sources deleted before migration 8 their boxes in the spatial index
 * of the past (source_event_bbox), from the geometry their events kept (the `deleted` event's
 * record, or its geometry alone, or the `created` event's record, by the store's version that wrote
 * them). In batches, each its own transaction recording how far it got, so a process stopped midway
 * resumes there; once done, an open costs one read. Live sources got theirs in the migration, and
 * sources created since get theirs with their event.
 */
export function fillDeletedEventBoxes(
  db: Database.Database,
  history: SqliteHistory,
  batchSize = DELETED_BOXES_BATCH,
): void {
  const read = db.prepare<[string], { value: Buffer }>("SELECT value FROM ledger_settings WHERE name = ?");
  const write = db.prepare<[string, Buffer]>("INSERT OR REPLACE INTO ledger_settings (name, value) VALUES (?, ?)");
  const batch = db.prepare<
    [number, number],
    { event_seq: number; source_id: string; created: string | null; deleted: string | null }
  >(
    `SELECT c.event_seq, c.source_id, c.data AS created, d.data AS deleted
       FROM source_events c JOIN source_events d ON d.source_id = c.source_id AND d.type = 'deleted'
      WHERE c.type = 'created' AND c.event_seq > ?
        AND NOT EXISTS (SELECT 1 FROM source_event_bbox h WHERE h.event_seq = c.event_seq)
      ORDER BY c.event_seq LIMIT ?`,
  );
  const insert = db.prepare<[number, number, number, number, number]>(
    "INSERT INTO source_event_bbox (event_seq, min_x, max_x, min_y, max_y) VALUES (?, ?, ?, ?, ?)",
  );
  const step = db.transaction((): boolean => {
    const row = read.get(DELETED_BOXES_FILL);
    const progress: DeletedBoxesProgress =
      row === undefined ? { through: 0, done: false } : JSON.parse(row.value.toString("utf8"));
    if (progress.done) return true;
    const rows = batch.all(progress.through, batchSize);
    for (const { event_seq, source_id, created, deleted } of rows) {
      const geometry = JSON.parse(history.keptGeometry(source_id, created, deleted)) as SourceGeometry;
      const { minX, maxX, minY, maxY } = boundingBox(geometry);
      insert.run(event_seq, minX, maxX, minY, maxY);
    }
    const done = rows.length < batchSize;
    const through = rows.at(-1)?.event_seq ?? progress.through;
    write.run(DELETED_BOXES_FILL, Buffer.from(JSON.stringify({ through, done } satisfies DeletedBoxesProgress)));
    return done;
  });
  while (!step.immediate()) {
    // The next batch, in its own transaction.
  }
}

/** Every column of a `sources` row as a JSON member of the same name (SourceRow's shape). */
const ROW_JSON_MEMBERS = COLUMNS.map((column) => `'${column}', ${column}`).join(", ");
