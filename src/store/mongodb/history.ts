import { type Change, type ConflictMeasure, fromOtherSide, type SourceEventType } from "../../model/history.js";
import {
  type ConflictPairDocument,
  conflictPairId,
  type EventSubject,
  type RecordDocument,
  type SourceEventDocument,
  sourceEventId,
  toCounterpartDocument,
  toMeasureDocument,
} from "./documents.js";
import type { EventSeqUpdate } from "./queries.js";

/** A source as an event or a pair names it. */
export type NamedSource = Pick<EventSubject, "id" | "accountId" | "altId">;

/**
 * The events and conflict pairs one transaction writes (docs/api.md §14), each event with its
 * source's next `seq`. Made afresh inside each attempt of a transaction's callback, filled while
 * the change is decided, and inserted by the store in that same transaction, so a change and its
 * events and pairs commit together or not at all.
 *
 * Per-source seq: a source document keeps the seq of its last event (`event_seq`). The
 * transaction reads it with the source (in its snapshot), numbers the source's new events after
 * it, and writes the new last seq back onto the document (a new source's document is inserted
 * with it). Any two transactions appending events for one source therefore both write its
 * document, so MongoDB lets one commit and makes the other retry on a snapshot that holds the
 * first's events: seqs never repeat, and the unique `source_seq` index would refuse one that did.
 * A delete removes the document with its `deleted` event, which is therefore the source's last.
 *
 * Nothing here updates or deletes an event: the store only ever inserts them.
 */
export class HistoryWrites {
  readonly events: SourceEventDocument[] = [];
  readonly pairs: ConflictPairDocument[] = [];
  private readonly lastSeq = new Map<string, number>();
  private readonly lastAt = new Map<string, number>();

  /** A stored source whose events this transaction may append: its document's `event_seq` and `last_event_at`. */
  track(subject: Pick<EventSubject, "id" | "eventSeq" | "lastEventAt">): void {
    if (!this.lastSeq.has(subject.id)) this.lastSeq.set(subject.id, subject.eventSeq);
    if (!this.lastAt.has(subject.id)) this.lastAt.set(subject.id, subject.lastEventAt);
  }

  /** The instant of the last event of `id` (stored or written here); −∞ when none is known. */
  lastAtOf(id: string): number {
    return this.lastAt.get(id) ?? Number.NEGATIVE_INFINITY;
  }

  /**
   * The update of a stored source this transaction appends events for: its last seq and instant,
   * and its new flag when that changes (eventSeqWrites).
   */
  sourceUpdate(id: string, conflict?: boolean): EventSeqUpdate {
    const update = { id, eventSeq: this.lastSeqOf(id), lastEventAt: this.lastAtOf(id) };
    return conflict === undefined ? update : { ...update, conflict };
  }

  /** The seq of the last event of `id` (stored or written here); 0 when it has none. */
  lastSeqOf(id: string): number {
    return this.lastSeq.get(id) ?? 0;
  }

  /** The `created` event of a source: its record as stored (recordDocumentOf a new document). */
  created(record: RecordDocument, change: Change): void {
    this.append({ id: record._id, accountId: record.account_id }, "created", change, { record });
  }

  /**
   * A conflict found by the create of `subject`: the pair, stored once with the measure from
   * `subject`'s side and detected at the create's time, and a `conflict_set` event on each side
   * naming the other, with the measure from that side.
   */
  conflictFound(subject: NamedSource, other: NamedSource, measure: ConflictMeasure, change: Change): void {
    const aEvent = this.append(subject, "conflict_set", change, {
      counterpart: toCounterpartDocument(other),
      measure: toMeasureDocument(measure),
    });
    const bEvent = this.append(other, "conflict_set", change, {
      counterpart: toCounterpartDocument(subject),
      measure: toMeasureDocument(fromOtherSide(measure)),
    });
    this.pairs.push({
      _id: conflictPairId(subject.id, other.id),
      a: subject.id,
      b: other.id,
      measure: toMeasureDocument(measure),
      detected_at: new Date(change.at),
      a_event: aEvent,
      b_event: bEvent,
    });
  }

  /** `counterpart` lost its pair with `removed`, deleted by this transaction. */
  released(counterpart: NamedSource, removed: NamedSource, change: Change): void {
    this.append(counterpart, "conflict_cleared", change, { counterpart: toCounterpartDocument(removed) });
  }

  /** The `deleted` event: the last of the source. */
  deleted(subject: Pick<NamedSource, "id" | "accountId">, change: Change): void {
    this.append(subject, "deleted", change, {});
  }

  private append(
    subject: Pick<NamedSource, "id" | "accountId">,
    type: SourceEventType,
    change: Change,
    data: Pick<SourceEventDocument, "record" | "counterpart" | "measure">,
  ): number {
    const seq = this.lastSeqOf(subject.id) + 1;
    this.lastSeq.set(subject.id, seq);
    this.lastAt.set(subject.id, Math.max(this.lastAtOf(subject.id), change.at));
    this.events.push({
      _id: sourceEventId(subject.id, seq),
      source_id: subject.id,
      seq,
      account_id: subject.accountId,
      type,
      at: new Date(change.at),
      by: change.by,
      ...data,
    });
    return seq;
  }
}
