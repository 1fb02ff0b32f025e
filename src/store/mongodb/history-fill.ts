import type { ClientSession, Collection } from "mongodb";
import type { ConflictPolicy } from "../../model/spatial.js";
import { StoreNeedsRepairError } from "../port.js";
import {
  type ConflictPairDocument,
  type FillSubjectDocument,
  fromSubjectDocument,
  type RecordDocument,
  type SettingDocument,
  type SourceBoxDocument,
  type SourceDocument,
  type SourceEventDocument,
  sourceBoxOfRecord,
} from "./documents.js";
import { isDuplicateKey } from "./errors.js";
import { HistoryWrites } from "./history.js";
import {
  BOX_FILL_CHUNK,
  CONFLICT_PAIRS_FILLED,
  CREATED_EVENTS_FILLED,
  conflictCandidatesFilter,
  conflictSetEventsQuery,
  createdEventsWalk,
  EVENT_SEQ_WRITE_OPTIONS,
  eventSeqWrites,
  FILL_CANDIDATE_OPTIONS,
  FLAG_FILL_OPTIONS,
  fillMarkerFilter,
  fillMarkerWrite,
  flagFillFilter,
  HISTORY_INSERT_OPTIONS,
  LEGACY_CHUNK,
  LEGACY_RECORD_OPTIONS,
  legacySourcesQuery,
  numberLegacyUpdate,
  PAIR_EVENTS_CHUNK,
  PAIR_EVENTS_FILLED,
  PAIR_FILL_CHUNK,
  PAIR_KEYS_OPTIONS,
  pairEventWrites,
  pairFillQuery,
  pairsOfAnyFilter,
  SOURCE_BOXES_FILLED,
  setFlagsUpdate,
  sourceBoxInserts,
  UNSEQUENCED_PAIR_QUERY,
  unnumberedFilter,
} from "./queries.js";

/** What the fill reads and writes. */
export interface HistoryFillTarget {
  sources: Collection<SourceDocument>;
  events: Collection<SourceEventDocument>;
  boxes: Collection<SourceBoxDocument>;
  pairs: Collection<ConflictPairDocument>;
  settings: Collection<SettingDocument>;
  /** The store's transaction runner (snapshot, majority, retried on transient errors). */
  transaction<T>(action: string, work: (session: ClientSession) => Promise<T>): Promise<T>;
  now(): number;
}

/** `(created_at, _id)`: the list order, in which the fill takes sources as "earlier" and "later". */
function listOrder(
  a: Pick<FillSubjectDocument, "created_at" | "_id">,
  b: Pick<FillSubjectDocument, "created_at" | "_id">,
) {
  const byTime = a.created_at.getTime() - b.created_at.getTime();
  if (byTime !== 0) return byTime;
  return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
}

const pairKey = (x: string, y: string) => (x < y ? `${x}|${y}` : `${y}|${x}`);

/**
 * Fills in, once, what a ledger stored by an earlier version lacks (docs/api.md §14), as the
 * embedded store does at open:
 *
 * 1. Each pair stored before pairs kept their event seqs gets them (fillPairEvents; the embedded
 *    store's migration 6). Then, for a ledger stored before the event log:
 * 2. A `created` event (seq 1, at its `created_at`, by its `created_by`, its record as stored) for
 *    every source without `event_seq`, whose `event_seq` becomes 1: a chunk of sources per
 *    transaction, each re-read inside it, so processes filling at once (or a fill started again
 *    after a crash) write every event once.
 * 3. A box (`source_boxes`, the spatial index of the past) for every `created` event written
 *    before it, from the record the event holds (fillSourceBoxes).
 * 4. With a conflict policy: every pair of stored sources that conflict, each measured from the
 *    later one's side (list order), with `conflict_set` on both sides at the later one's creation
 *    by its creator (when its create would have found the pair); sources in list order, a chunk
 *    per transaction, pairs already stored skipped. Then every flag set to "has a pair".
 *
 * Each step ends by marking itself done in `settings` (`history_conflict_pair_events_filled`,
 * `history_created_events_filled`, `history_source_boxes_filled`, `history_conflict_pairs_filled`), so
 * later opens skip it; a
 * store opened without a policy leaves the pairs for the first open with one. Runs at setup, before the store serves: a process
 * of this version answers nothing until the ledger is filled. Processes of an earlier version must
 * be stopped first (what they write after the fill would lack events).
 */
export async function fillHistory(target: HistoryFillTarget, policy: ConflictPolicy | null): Promise<void> {
  if ((await target.settings.findOne(fillMarkerFilter(PAIR_EVENTS_FILLED))) === null) {
    await fillPairEvents(target);
    await markFilled(target, PAIR_EVENTS_FILLED);
  }
  if ((await target.settings.findOne(fillMarkerFilter(CREATED_EVENTS_FILLED))) === null) {
    await fillCreatedEvents(target);
    await markFilled(target, CREATED_EVENTS_FILLED);
  }
  if ((await target.settings.findOne(fillMarkerFilter(SOURCE_BOXES_FILLED))) === null) {
    await fillSourceBoxes(target);
    await markFilled(target, SOURCE_BOXES_FILLED);
  }
  if (policy === null || (await target.settings.findOne(fillMarkerFilter(CONFLICT_PAIRS_FILLED))) !== null) return;
  await fillPairs(target, policy);
  await fillFlags(target);
  await markFilled(target, CONFLICT_PAIRS_FILLED);
}

async function markFilled(target: HistoryFillTarget, name: string): Promise<void> {
  const { filter, update, options } = fillMarkerWrite(name, target.now());
  try {
    await target.settings.updateOne(filter, update, options);
  } catch (error) {
    // Another process marked it at the same moment: as done as it gets.
    if (!isDuplicateKey(error)) throw error;
  }
}

/**
 * Step 1: each pair stored before pairs kept their event seqs gets them (docs/api.md §14: a
 * source's conflicts page along its history): one walk of the `conflict_set` events, a chunk at a
 * time, each setting its seq on its side of the pair it names, if that pair is still stored.
 * Every live pair has such an event on both sides (a create writes the pair and both events in one
 * transaction); a pair left without a seq stops the open, as the embedded store's migration 6
 * does, rather than list a conflict no page could reach.
 */
async function fillPairEvents(target: HistoryFillTarget): Promise<void> {
  for (let after: string | undefined; ; ) {
    const { filter, options } = conflictSetEventsQuery(after);
    const events = await target.events
      .find<Pick<SourceEventDocument, "_id" | "source_id" | "seq" | "counterpart">>(filter, options)
      .toArray();
    if (events.length === 0) break;
    after = events[events.length - 1]._id;
    const writes = events.flatMap((event) =>
      event.counterpart === undefined ? [] : pairEventWrites(event.source_id, event.counterpart.id, event.seq),
    );
    if (writes.length > 0) await target.pairs.bulkWrite(writes, { ordered: false });
    if (events.length < PAIR_EVENTS_CHUNK) break;
  }
  const unsequenced = await target.pairs.findOne(UNSEQUENCED_PAIR_QUERY.filter, UNSEQUENCED_PAIR_QUERY.options);
  if (unsequenced !== null) {
    throw new StoreNeedsRepairError(
      `mongodb conflict pair ${unsequenced._id} has no conflict_set event on one side: the ledger is inconsistent (docs/mongodb.md, "A ledger stored before the event log")`,
    );
  }
}

/** Step 2: a `created` event for every source written before the event log. */
async function fillCreatedEvents(target: HistoryFillTarget): Promise<void> {
  for (let after: string | undefined; ; ) {
    const { filter, options } = legacySourcesQuery(after);
    const ids = (await target.sources.find<{ _id: string }>(filter, options).toArray()).map((d) => d._id);
    if (ids.length === 0) return;
    after = ids[ids.length - 1];
    await target.transaction("history fill", async (session) => {
      const docs = await target.sources
        .find<RecordDocument>(unnumberedFilter(ids), { ...LEGACY_RECORD_OPTIONS, session })
        .toArray();
      if (docs.length === 0) return;
      const history = new HistoryWrites();
      for (const doc of docs) history.created(doc, createdChange(doc));
      const { filter: numbered, update } = numberLegacyUpdate(docs.map((d) => d._id));
      await target.sources.updateMany(numbered, update, { session });
      await target.events.insertMany(history.events, { ...HISTORY_INSERT_OPTIONS, session });
    });
    if (ids.length < LEGACY_CHUNK) return;
  }
}

/**
 * Step 3: a box for every `created` event (the spatial index of the past, docs/api.md §14), from
 * the record it holds: one walk of the `_id` index over the event log, a chunk at a time, each box
 * written unless there (sourceBoxInserts). Only boxes are written: the events are read, never changed.
 */
async function fillSourceBoxes(target: HistoryFillTarget): Promise<void> {
  for (let after: string | undefined; ; ) {
    const { filter, options } = createdEventsWalk(after);
    const events = await target.events.find<Pick<SourceEventDocument, "_id" | "record">>(filter, options).toArray();
    if (events.length === 0) return;
    after = events[events.length - 1]._id;
    const boxes = events.flatMap((event) => (event.record === undefined ? [] : [sourceBoxOfRecord(event.record)]));
    if (boxes.length > 0) await target.boxes.bulkWrite(sourceBoxInserts(boxes), { ordered: false });
    if (events.length < BOX_FILL_CHUNK) return;
  }
}

/** Step 4: every stored conflicting pair, found from its later side, with its events. */
async function fillPairs(target: HistoryFillTarget, policy: ConflictPolicy): Promise<void> {
  for (let after: { createdAt: number; id: string } | undefined; ; ) {
    const chunk = await target.transaction("history fill", async (session) => {
      const { filter, options } = pairFillQuery(after);
      const subjects = await target.sources.find<FillSubjectDocument>(filter, { ...options, session }).toArray();
      if (subjects.length === 0) return subjects;
      const ids = subjects.map((s) => s._id);
      const stored = await target.pairs
        .find<Pick<ConflictPairDocument, "a" | "b">>(pairsOfAnyFilter(ids), { ...PAIR_KEYS_OPTIONS, session })
        .toArray();
      const known = new Set(stored.map((p) => pairKey(p.a, p.b)));
      const history = new HistoryWrites();
      const paired = new Set<string>();
      for (const doc of subjects) {
        const subject = fromSubjectDocument(doc);
        const candidates = await target.sources
          .find<FillSubjectDocument>(conflictCandidatesFilter([{ box: subject.bbox, geometry: subject.geometry }]), {
            ...FILL_CANDIDATE_OPTIONS,
            session,
          })
          .toArray();
        // Only the earlier ones: each pair is found once, from its later side.
        for (const earlier of candidates.filter((c) => listOrder(c, doc) < 0).sort(listOrder)) {
          if (known.has(pairKey(doc._id, earlier._id))) continue;
          const other = fromSubjectDocument(earlier);
          const measure = policy.measure(subject, other);
          if (measure === null) continue;
          // Every read is of this transaction's snapshot, so the first seq seen of a source holds.
          history.track(subject);
          history.track(other);
          history.conflictFound(subject, other, measure, createdChange(doc));
          known.add(pairKey(subject.id, other.id));
          paired.add(subject.id).add(other.id);
        }
      }
      if (history.pairs.length === 0) return subjects;
      const updates = [...paired].sort().map((id) => history.sourceUpdate(id, true));
      await target.sources.bulkWrite(eventSeqWrites(updates), { ...EVENT_SEQ_WRITE_OPTIONS, session });
      await target.pairs.insertMany(history.pairs, { ...HISTORY_INSERT_OPTIONS, session });
      await target.events.insertMany(history.events, { ...HISTORY_INSERT_OPTIONS, session });
      return subjects;
    });
    if (chunk.length === 0) return;
    const last = chunk[chunk.length - 1];
    after = { createdAt: last.created_at.getTime(), id: last._id };
    if (chunk.length < PAIR_FILL_CHUNK) return;
  }
}

/**
 * Then: every flag is "has a pair" (the flags stored before may have been kept otherwise). Each
 * chunk reads its flags and pairs and writes the wrong flags in one transaction: a process that
 * finished its fill meanwhile serves creates and deletes, each of which writes the document of
 * every side whose pairs it changes (a counterpart's event seq; a deleted source's document is
 * removed), so such a write lands either before this chunk's snapshot (and is read) or conflicts
 * with its update (a WriteConflict, retried as a transient error within the transaction budget),
 * never in between, where a flag set from stale pairs would outlive them.
 */
async function fillFlags(target: HistoryFillTarget): Promise<void> {
  for (let after: string | undefined; ; ) {
    const docs = await target.transaction("history fill", async (session) => {
      const chunk = await target.sources
        .find<Pick<SourceDocument, "_id" | "conflict">>(flagFillFilter(after), { ...FLAG_FILL_OPTIONS, session })
        .toArray();
      if (chunk.length === 0) return chunk;
      const ids = chunk.map((d) => d._id);
      const stored = await target.pairs
        .find<Pick<ConflictPairDocument, "a" | "b">>(pairsOfAnyFilter(ids), { ...PAIR_KEYS_OPTIONS, session })
        .toArray();
      const paired = new Set(stored.flatMap((p) => [p.a, p.b]));
      for (const flag of [true, false]) {
        const wrong = chunk.filter((d) => paired.has(d._id) === flag && d.conflict !== flag).map((d) => d._id);
        if (wrong.length > 0) {
          const { filter, update } = setFlagsUpdate(wrong, flag);
          await target.sources.updateMany(filter, update, { session });
        }
      }
      return chunk;
    });
    if (docs.length === 0) return;
    after = docs[docs.length - 1]._id;
    if (docs.length < LEGACY_CHUNK) return;
  }
}

/** The create of a stored source, as its filled-in events name it. */
function createdChange(doc: Pick<RecordDocument, "created_at" | "created_by">) {
  return { by: doc.created_by, at: doc.created_at.getTime() };
}
