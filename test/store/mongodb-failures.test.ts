import {
  type FindOptions,
  MongoError,
  MongoNetworkError,
  type MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type TopologyDescription,
} from "mongodb";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { ExactTestAllowance, POSITIONS_PER_TEST } from "../../src/model/exact-tests.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { runCli } from "../../src/protected-areas/cli.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { coverOf, sourceCoverOf, sourceRectanglesOf } from "../../src/store/mongodb/cover.js";
import {
  conflictPairId,
  recordDocumentOf,
  type SourceDocument,
  sourceBoxOf,
  sourceBoxOfRecord,
  toDocument,
  toMeasureDocument,
} from "../../src/store/mongodb/documents.js";
import { REPLICA_SET_REQUIRED } from "../../src/store/mongodb/errors.js";
import { guardCellsOf } from "../../src/store/mongodb/guards.js";
import { InvalidMongoUriError, type MongoSourceStore, openMongoStore } from "../../src/store/mongodb/index.js";
import {
  AS_OF_CHANGES_OPTIONS,
  AS_OF_HISTORY_OPTIONS,
  asOfBoxesFilter,
  asOfBoxesOptions,
  asOfChangesFilter,
  asOfChunkSize,
  asOfCreatedFilter,
  asOfCreatedOptions,
  asOfHistoryFilter,
  CANDIDATE_OPTIONS,
  CLASHING_ALT_IDS_OPTIONS,
  CONFLICT_PAIR_INDEXES,
  CONFLICT_PAIRS_FILLED,
  COUNTERPART_OPTIONS,
  CREATED_EVENTS_FILLED,
  CREATED_EVENTS_OPTIONS,
  conflictCandidatesFilter,
  conflictSetEventsQuery,
  createdEventsFilter,
  createdEventsWalk,
  DB_OPTIONS,
  DELETE_OPTIONS,
  deleteByAltIdFilter,
  deleteByIdFilter,
  EVENT_SEQ_WRITE_OPTIONS,
  EVENT_SUBJECT_OPTIONS,
  eventSeqWrites,
  FLAG_FILL_OPTIONS,
  fillMarkerFilter,
  flagFillFilter,
  GEOMETRY_CHUNK_INDEXES,
  GET_OPTIONS,
  GUARD_TIMES_OPTIONS,
  getFilter,
  guardsFilter,
  guardWrites,
  HISTORY_EXISTS_OPTIONS,
  HISTORY_INSERT_OPTIONS,
  HISTORY_OPTIONS,
  historyFilter,
  historyPageFilter,
  historyPageOptions,
  LEGACY_RECORD_OPTIONS,
  LIVE_SOURCE_OPTIONS,
  legacySourcesQuery,
  listFilter,
  listOptions,
  numberLegacyUpdate,
  PAIR_EVENTS_FILLED,
  PAIR_KEYS_OPTIONS,
  PAIR_SIDES,
  PROTECTED_AREA_INDEXES,
  pairFillQuery,
  pairsOfAnyFilter,
  pairsOfFilter,
  pairsPageQuery,
  SOURCE_BOXES_FILLED,
  SOURCE_EVENT_INDEXES,
  SOURCE_INDEXES,
  setFlagsUpdate,
  sourceBoxInserts,
  sourcesByIdFilter,
  TRANSACTION_OPTIONS,
  takenAltIdsFilter,
  UNSEQUENCED_PAIR_QUERY,
  unnumberedFilter,
} from "../../src/store/mongodb/queries.js";
import { stopsTheStart } from "../../src/store/mongodb/store.js";
import { openProductionStore } from "../../src/store/open.js";
import { AltIdTakenError, StoreNeedsRepairError, StoreUnavailableError } from "../../src/store/port.js";
import { change, listQuery, makeRecord, square, stored } from "../contract/fixtures.js";
import { deadPort, FakeMongo, failure, serverError } from "../support/mongo-fake.js";
import { startTestServer, type TestServer } from "../support/server.js";

// --- the fake driver ---

/**
 * The shared fake (test/support/mongo-fake.ts) with the driver's withTransaction rules scripted:
 * it runs the callback again while the error carries the TransientTransactionError label, and
 * rethrows anything else.
 */
class FakeDriver extends FakeMongo {
  readonly transactions: unknown[] = [];
  readonly session = {
    withTransaction: async (fn: (session: unknown) => Promise<unknown>, options: unknown) => {
      this.transactions.push(options);
      for (let attempt = 1; ; attempt++) {
        this.calls.push({ target: "session", method: "startTransaction", args: [attempt] });
        try {
          return await fn(this.session);
        } catch (error) {
          if (error instanceof MongoError && error.hasErrorLabel("TransientTransactionError") && attempt < 50) continue;
          throw error;
        }
      }
    },
    // The store bounds the commit's retries by wrapping it (store.ts commitWithinBudget); the
    // scripted withTransaction above commits nothing, so it is never called.
    commitTransaction: async () => {},
    endSession: async () => {
      this.calls.push({ target: "session", method: "endSession", args: [] });
    },
  };

  protected startSession(): unknown {
    return this.session;
  }
}

/** A deleted source's box as the store reads it back: one 11.25° cell, g11.25:16:8. */
const UNIT_BOX = { min_x: 0, min_y: 0, max_x: 1, max_y: 1 };

const networkError = () => new MongoNetworkError("connection 4 to 10.0.0.5:27017 closed");
const selectionError = () =>
  new MongoServerSelectionError("Server selection timed out after 5000 ms", {
    error: null,
  } as unknown as TopologyDescription);
function altIdDuplicate(accountId: string, altId: string): MongoServerError {
  return serverError(
    11000,
    "DuplicateKey",
    `E11000 duplicate key error collection: ledger.sources index: account_alt_id_unique dup key: { account_id: "${accountId}", alt_id: "${altId}" }`,
    { keyPattern: { account_id: 1, alt_id: 1 }, keyValue: { account_id: accountId, alt_id: altId } },
  );
}
function writeConflict(): MongoServerError {
  const error = serverError(
    112,
    "WriteConflict",
    "WriteConflict error: this operation conflicted with another operation. Please retry your operation or multi-document transaction.",
  );
  error.addErrorLabel("TransientTransactionError");
  return error;
}

// --- the store hands the driver the pinned values ---

describe("what the store sends (fake driver)", () => {
  it("opens the database with the pinned concerns and creates every index, once", async () => {
    const fake = new FakeDriver();
    const store = fake.store();
    await store.ping();
    await store.ping();
    expect(fake.callsTo("client", "db")).toEqual([["ledger", DB_OPTIONS]]);
    expect(fake.callsTo("sources", "createIndexes")).toEqual([[SOURCE_INDEXES]]);
    expect(fake.callsTo("protected_areas", "createIndexes")).toEqual([[PROTECTED_AREA_INDEXES]]);
    // Setup takes no index away: DDL would take locks that abort concurrent transactions.
    expect(fake.callsTo("protected_areas", "dropIndex")).toEqual([]);
    expect(fake.callsTo("protected_area_geometry_chunks", "createIndexes")).toEqual([[GEOMETRY_CHUNK_INDEXES]]);
    // These also create the history's collections, before any transaction inserts into them.
    expect(fake.callsTo("source_events", "createIndexes")).toEqual([[SOURCE_EVENT_INDEXES]]);
    expect(fake.callsTo("conflict_pairs", "createIndexes")).toEqual([[CONFLICT_PAIR_INDEXES]]);
    expect(fake.callsTo("db", "createCollection")).toEqual([["protected_area_layers"], ["conflict_guards"]]);
    expect(fake.callsTo("db", "command")).toEqual([[{ hello: 1 }], [{ hello: 1 }]]);
  });

  it("tolerates the guard and layer collections existing already", async () => {
    const fake = new FakeDriver().on("db.createCollection", () => {
      throw serverError(48, "NamespaceExists", "Collection ledger.conflict_guards already exists.");
    });
    await expect(fake.store().ping()).resolves.toBeUndefined();
  });

  it("fills in a ledger stored before the event log at setup: created events in a transaction, then pairs and flags, each step marked", async () => {
    const legacy = makeRecord({ conflict: true });
    const { event_seq: _none, ...legacyDoc } = toDocument(legacy);
    const legacyEvent = { _id: `${legacy.id}:0000000001`, record: recordDocumentOf(toDocument(legacy)) };
    const fake = new FakeDriver()
      .on("sources.find", (filter, options) => {
        const text = JSON.stringify(filter);
        if (text === JSON.stringify(legacySourcesQuery().filter)) return [{ _id: legacy.id }];
        if (text === JSON.stringify(unnumberedFilter([legacy.id]))) return [recordDocumentOf(toDocument(legacy))];
        // Flagged as stored, and no pair: the flag step sets it to false.
        const { projection } = options as FindOptions;
        if (text === JSON.stringify(flagFillFilter()) && projection === FLAG_FILL_OPTIONS.projection) {
          return [{ _id: legacy.id, conflict: true }];
        }
        return [];
      })
      // The walk of the created events for their boxes finds the one just written.
      .on("source_events.find", (filter) =>
        JSON.stringify(filter) === JSON.stringify(createdEventsWalk(undefined).filter) ? [legacyEvent] : [],
      );
    fake.filled = false;
    await fake.store({ policy: true }).ready();

    const session = fake.session;
    const steps = fake.calls.filter(
      (c) => c.target !== "client" && !["createIndexes", "createCollection"].includes(c.method),
    );
    expect(steps.map((c) => `${c.target}.${c.method}`)).toEqual([
      // No conflict_set event to read, and no pair without its seqs.
      "settings.findOne",
      "source_events.find",
      "conflict_pairs.findOne",
      "settings.updateOne",
      "settings.findOne",
      "sources.find",
      "session.startTransaction",
      "sources.find",
      "sources.updateMany",
      "source_events.insertMany",
      "session.endSession",
      "settings.updateOne",
      // Boxes for the created events: read, then written unless there.
      "settings.findOne",
      "source_events.find",
      "source_boxes.bulkWrite",
      "settings.updateOne",
      "settings.findOne",
      "session.startTransaction",
      "sources.find",
      "session.endSession",
      // Flags read and set in one transaction: a create or delete of a process already serving
      // cannot land between the read of the pairs and the write of the flag.
      "session.startTransaction",
      "sources.find",
      "conflict_pairs.find",
      "sources.updateMany",
      "session.endSession",
      "settings.updateOne",
    ]);
    const [legacyRead, reread, walk, flags] = fake.callsTo("sources", "find");
    expect(legacyRead).toEqual([legacySourcesQuery().filter, legacySourcesQuery().options]);
    expect(reread).toEqual([unnumberedFilter([legacy.id]), { ...LEGACY_RECORD_OPTIONS, session }]);
    expect(walk).toEqual([pairFillQuery().filter, { ...pairFillQuery().options, session }]);
    expect(flags).toEqual([flagFillFilter(), { ...FLAG_FILL_OPTIONS, session }]);
    expect(fake.callsTo("conflict_pairs", "find")).toEqual([
      [pairsOfAnyFilter([legacy.id]), { ...PAIR_KEYS_OPTIONS, session }],
    ]);
    const numbered = numberLegacyUpdate([legacy.id]);
    const cleared = setFlagsUpdate([legacy.id], false);
    expect(fake.callsTo("sources", "updateMany")).toEqual([
      [numbered.filter, numbered.update, { session }],
      [cleared.filter, cleared.update, { session }],
    ]);
    expect(fake.callsTo("source_events", "insertMany")).toEqual([
      [
        [
          {
            _id: `${legacy.id}:0000000001`,
            source_id: legacy.id,
            seq: 1,
            account_id: legacy.accountId,
            type: "created",
            at: new Date(legacy.createdAt),
            by: legacy.createdBy,
            record: recordDocumentOf({ ...legacyDoc, event_seq: 1 }),
          },
        ],
        { ...HISTORY_INSERT_OPTIONS, session },
      ],
    ]);
    expect(fake.callsTo("source_events", "find")).toEqual([
      [conflictSetEventsQuery(undefined).filter, conflictSetEventsQuery(undefined).options],
      [createdEventsWalk(undefined).filter, createdEventsWalk(undefined).options],
    ]);
    // The box the source itself keeps (its cover and box), made from the record the event holds.
    const box = sourceBoxOfRecord(legacyEvent.record);
    expect(box).toEqual(sourceBoxOf(toDocument(legacy)));
    expect(fake.callsTo("source_boxes", "bulkWrite")).toEqual([[sourceBoxInserts([box]), { ordered: false }]]);
    expect(fake.callsTo("conflict_pairs", "findOne")).toEqual([
      [UNSEQUENCED_PAIR_QUERY.filter, UNSEQUENCED_PAIR_QUERY.options],
    ]);
    expect(fake.callsTo("settings", "updateOne").map(([filter]) => filter)).toEqual([
      fillMarkerFilter(PAIR_EVENTS_FILLED),
      fillMarkerFilter(CREATED_EVENTS_FILLED),
      fillMarkerFilter(SOURCE_BOXES_FILLED),
      fillMarkerFilter(CONFLICT_PAIRS_FILLED),
    ]);
  });

  it("lists and gets with the pinned filter and options", async () => {
    const fake = new FakeDriver();
    const store = fake.store();
    const query = listQuery("acct_a", { methodology: "M", attributeTypes: ["CI_SCORE"], limit: 5, offset: 10 });
    await store.list(query);
    await store.get("src_1", null);
    expect(fake.callsTo("sources", "find")).toEqual([[listFilter(query), listOptions(query)]]);
    expect(fake.callsTo("sources", "findOne")).toEqual([[getFilter("src_1", null), GET_OPTIONS]]);
  });

  it("creates a batch in one transaction with the pinned options: guards, candidates, flags, insert, pairs, events", async () => {
    const stored = makeRecord({ accountId: "acct_b", geometry: square(10, 10, 1) });
    const fake = new FakeDriver().on("sources.find", () => [{ ...toDocument(stored, 4), conflict: false }]);
    const store = fake.store({ policy: true });
    const record = makeRecord({ geometry: square(10.5, 10, 1) });

    const [returned] = await store.insertMany([record]);

    expect(returned.conflict).toBe(true);
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    const inTransaction = fake.calls.filter(
      (c) => c.target !== "client" && !["createIndexes", "createCollection", "dropIndex"].includes(c.method),
    );
    expect(inTransaction.map((c) => `${c.target}.${c.method}`)).toEqual([
      "session.startTransaction",
      "conflict_guards.find",
      "conflict_guards.bulkWrite",
      "sources.find",
      "sources.bulkWrite",
      "sources.insertMany",
      "conflict_pairs.insertMany",
      "source_events.insertMany",
      "source_boxes.insertMany",
      "session.endSession",
    ]);
    const session = fake.session;
    const at = new Date(record.createdAt);
    expect(fake.callsTo("conflict_guards", "find")).toEqual([
      [guardsFilter(guardCellsOf([record.bbox])), { ...GUARD_TIMES_OPTIONS, session }],
    ]);
    expect(fake.callsTo("conflict_guards", "bulkWrite")).toEqual([
      [guardWrites(guardCellsOf([record.bbox]), at), { ordered: true, session }],
    ]);
    expect(fake.callsTo("sources", "find")).toEqual([
      [conflictCandidatesFilter([record.bbox]), { ...CANDIDATE_OPTIONS, session }],
    ]);
    // The stored side: flagged, and its last seq past its new conflict_set event.
    expect(fake.callsTo("sources", "bulkWrite")).toEqual([
      [
        eventSeqWrites([{ id: stored.id, eventSeq: 5, lastEventAt: record.createdAt, conflict: true }]),
        { ...EVENT_SEQ_WRITE_OPTIONS, session },
      ],
    ]);
    expect(fake.callsTo("sources", "insertMany")).toEqual([
      [[toDocument({ ...record, conflict: true }, 2)], { session, ordered: true }],
    ]);
    const measure = conflictPolicy.measure(record, stored);
    expect(measure).not.toBeNull();
    expect(fake.callsTo("conflict_pairs", "insertMany")).toEqual([
      [
        [
          {
            _id: conflictPairId(record.id, stored.id),
            a: record.id,
            b: stored.id,
            measure: toMeasureDocument(measure as NonNullable<typeof measure>),
            detected_at: at,
            // The seqs of the two conflict_set events below.
            a_event: 2,
            b_event: 5,
          },
        ],
        { ...HISTORY_INSERT_OPTIONS, session },
      ],
    ]);
    const [[events, eventOptions]] = fake.callsTo("source_events", "insertMany") as [
      Record<string, unknown>[],
      unknown,
    ][];
    expect(eventOptions).toEqual({ ...HISTORY_INSERT_OPTIONS, session });
    expect(events.map((e) => [e._id, e.type, e.by, e.at])).toEqual([
      [`${record.id}:0000000001`, "created", record.createdBy, at],
      [`${record.id}:0000000002`, "conflict_set", record.createdBy, at],
      [`${stored.id}:0000000005`, "conflict_set", record.createdBy, at],
    ]);
    // The created event holds the record as it stood: already in conflict with the stored source.
    expect(events[0].record).toEqual(recordDocumentOf(toDocument({ ...record, conflict: true })));
    expect(events[2]).toMatchObject({
      account_id: "acct_b",
      counterpart: { id: record.id, alt_id: record.altId, account_id: record.accountId },
    });
    // Its box in the spatial index of the past, in the same transaction.
    expect(fake.callsTo("source_boxes", "insertMany")).toEqual([
      [[sourceBoxOf(toDocument(record))], { ...HISTORY_INSERT_OPTIONS, session }],
    ]);
  });

  it("guards a jurisdiction's cell rectangles and asks and stores its cell cover; a field in the batch keeps its box", async () => {
    const fake = new FakeDriver();
    const store = fake.store({ policy: true });
    // An L 16° × 16° from (40, 10), 2° thick: its cells are two rectangles, [40, 56] × [10, 14.0625]
    // and [40, 42.1875] × [14.0625, 26], so it guards five 11.25° cells, not the six of its box.
    const jurisdiction = makeRecord({
      geometry: {
        type: "Polygon",
        coordinates: [
          [
            [40, 10],
            [56, 10],
            [56, 12],
            [42, 12],
            [42, 26],
            [40, 26],
            [40, 10],
          ],
        ],
      },
    });
    const field = makeRecord({ accountId: "acct_b", geometry: square(40.5, 20, 0.01) });

    const returned = await store.insertMany([jurisdiction, field]);

    expect(returned.map((r) => r.conflict)).toEqual([true, true]);
    const session = fake.session;
    expect(sourceRectanglesOf(jurisdiction.geometry, jurisdiction.bbox)).toEqual([
      { minX: 40, minY: 10, maxX: 56, maxY: 14.0625 },
      { minX: 40, minY: 14.0625, maxX: 42.1875, maxY: 26 },
    ]);
    expect(fake.callsTo("conflict_guards", "bulkWrite")).toEqual([
      [
        guardWrites(
          ["g11.25:19:10", "g11.25:19:8", "g11.25:19:9", "g11.25:20:8", "g11.25:20:9"],
          new Date(field.createdAt),
        ),
        { ordered: true, session },
      ],
    ]);
    expect(fake.callsTo("sources", "find")).toEqual([
      [
        conflictCandidatesFilter([
          { box: jurisdiction.bbox, geometry: jurisdiction.geometry },
          { box: field.bbox, geometry: field.geometry },
        ]),
        { ...CANDIDATE_OPTIONS, session },
      ],
    ]);
    const inserted = fake.callsTo("sources", "insertMany")[0][0] as SourceDocument[];
    expect(inserted[0].cover).toStrictEqual(sourceCoverOf(jurisdiction.geometry, jurisdiction.bbox));
    expect(inserted[0].cover.type).toBe("MultiPolygon");
    expect(inserted[1].cover).toStrictEqual(coverOf(field.bbox));
  });

  it("measures every pair of a batch: members flag earlier members, whose created events keep their flag as it was", async () => {
    const fake = new FakeDriver();
    const records = [
      makeRecord({ geometry: square(0, 0, 1) }),
      makeRecord({ geometry: square(0.5, 0, 1) }),
      makeRecord({ geometry: square(0.25, 0, 1) }),
    ];
    const returned = await fake.store({ policy: true }).insertMany(records);
    expect(returned.map((r) => r.conflict)).toEqual([true, true, true]);
    expect(fake.callsTo("sources", "bulkWrite")).toEqual([]); // nothing stored was paired
    const [[docs]] = fake.callsTo("sources", "insertMany") as [Record<string, unknown>[]][];
    expect(docs.map((d) => [d.conflict, d.event_seq])).toEqual([
      [true, 3],
      [true, 3],
      [true, 3],
    ]);
    const [[pairs]] = fake.callsTo("conflict_pairs", "insertMany") as [{ a: string; b: string }[]][];
    expect(pairs.map((p) => [p.a, p.b])).toEqual([
      [records[1].id, records[0].id],
      [records[2].id, records[0].id],
      [records[2].id, records[1].id],
    ]);
    const [[events]] = fake.callsTo("source_events", "insertMany") as [
      { source_id: string; seq: number; type: string; record?: { conflict: boolean } }[],
    ][];
    expect(events.map((e) => [records.findIndex((r) => r.id === e.source_id), e.seq, e.type])).toEqual([
      [0, 1, "created"],
      [1, 1, "created"],
      [1, 2, "conflict_set"],
      [0, 2, "conflict_set"],
      [2, 1, "created"],
      [2, 2, "conflict_set"],
      [0, 3, "conflict_set"],
      [2, 3, "conflict_set"],
      [1, 3, "conflict_set"],
    ]);
    expect(events.filter((e) => e.type === "created").map((e) => e.record?.conflict)).toEqual([false, true, true]);
  });

  it("records a create and a delete no earlier than the last change their guards hold (docs/mongodb.md, Change times)", async () => {
    const record = makeRecord({ geometry: square(0.2, 0.2, 0.5) });
    const later = record.createdAt + 5_000;
    const fake = new FakeDriver()
      .on("conflict_guards.find", () => [{}, { last_change_at: new Date(later) }, { last_change_at: new Date(0) }])
      .on("sources.findOneAndDelete", () => ({
        _id: record.id,
        account_id: "acct_a",
        alt_id: record.altId,
        event_seq: 1,
        bbox: UNIT_BOX,
      }));
    const store = fake.store({ policy: true });
    const session = fake.session;

    const [returned] = await store.insertMany([record]);
    expect(returned).toStrictEqual(stored({ ...record, createdAt: later, updatedAt: later }));
    const [[docs]] = fake.callsTo("sources", "insertMany") as [SourceDocument[]][];
    expect([docs[0].created_at, docs[0].updated_at]).toEqual([new Date(later), new Date(later)]);
    const [[createdEvents]] = fake.callsTo("source_events", "insertMany") as [{ at: Date }[]][];
    expect(createdEvents.map((e) => e.at)).toEqual([new Date(later)]);
    expect(fake.callsTo("conflict_guards", "bulkWrite")).toEqual([
      [guardWrites(["g11.25:16:8"], new Date(later)), { ordered: true, session }],
    ]);

    // A delete whose request came in before that change; one after it keeps its own time.
    expect(await store.deleteById(record.id, "acct_a", change({ at: record.createdAt + 1 }))).toBe(true);
    expect(await store.deleteById(record.id, "acct_a", change({ at: later + 3 }))).toBe(true);
    const deletedAt = (fake.callsTo("source_events", "insertMany") as [{ at: Date }[]][])
      .slice(1)
      .map(([events]) => events[0].at);
    expect(deletedAt).toEqual([new Date(later), new Date(later + 3)]);
    expect(fake.callsTo("conflict_guards", "bulkWrite").slice(1)).toEqual([
      [guardWrites(["g11.25:16:8"], new Date(later)), { ordered: true, session }],
      [guardWrites(["g11.25:16:8"], new Date(later + 3)), { ordered: true, session }],
    ]);
  });

  it("records a change no earlier than the last event of a source it writes events for, so no history goes back in time", async () => {
    const stored = makeRecord({ accountId: "acct_b", geometry: square(10, 10, 1) });
    const record = makeRecord({ geometry: square(10.5, 10, 1) });
    // The stored source's last event is later than anything its guards hold (a change elsewhere).
    const later = record.createdAt + 7_000;
    const create = new FakeDriver().on("sources.find", () => [
      { ...toDocument(stored, 4), conflict: false, last_event_at: new Date(later) },
    ]);
    const [returned] = await create.store({ policy: true }).insertMany([record]);
    expect(returned.createdAt).toBe(later);
    const [[events]] = create.callsTo("source_events", "insertMany") as [{ _id: string; at: Date }[]][];
    expect(events.map((e) => [e._id, e.at])).toEqual([
      [`${record.id}:0000000001`, new Date(later)],
      [`${record.id}:0000000002`, new Date(later)],
      [`${stored.id}:0000000005`, new Date(later)],
    ]);
    expect(create.callsTo("sources", "bulkWrite")[0][0]).toEqual(
      eventSeqWrites([{ id: stored.id, eventSeq: 5, lastEventAt: later, conflict: true }]),
    );
    const [[docs]] = create.callsTo("sources", "insertMany") as [SourceDocument[]][];
    expect(docs[0].last_event_at).toEqual(new Date(later));
    // The guards are held first (at the request's instant), then written again with the later one.
    const cells = guardCellsOf([record.bbox]);
    expect(create.callsTo("conflict_guards", "bulkWrite").map(([writes]) => writes)).toEqual([
      guardWrites(cells, new Date(record.createdAt)),
      guardWrites(cells, new Date(later)),
    ]);

    // A delete: its own last event and its counterpart's, each later than the request.
    const asked = Date.UTC(2031, 0, 1);
    const removed = { _id: "src_r", account_id: "acct_a", alt_id: "r", event_seq: 2, bbox: UNIT_BOX };
    const remove = new FakeDriver()
      .on("sources.findOneAndDelete", () => ({ ...removed, last_event_at: new Date(asked + 10) }))
      .on("conflict_pairs.find", (filter) =>
        JSON.stringify(filter) === JSON.stringify(pairsOfFilter("src_r")) ? [{ a: "src_r", b: "src_k" }] : [],
      )
      .on("sources.find", () => [
        { _id: "src_k", account_id: "acct_b", alt_id: "k", event_seq: 3, last_event_at: new Date(asked + 20) },
      ]);
    expect(await remove.store({ policy: true }).deleteById("src_r", null, change({ at: asked }))).toBe(true);
    const [[deleteEvents]] = remove.callsTo("source_events", "insertMany") as [{ _id: string; at: Date }[]][];
    expect(deleteEvents.map((e) => [e._id, e.at])).toEqual([
      ["src_r:0000000003", new Date(asked + 20)],
      ["src_k:0000000004", new Date(asked + 20)],
    ]);
    expect(remove.callsTo("conflict_guards", "bulkWrite").map(([writes]) => writes)).toEqual([
      guardWrites(["g11.25:16:8"], new Date(asked + 10)),
      guardWrites(["g11.25:16:8"], new Date(asked + 20)),
    ]);

    // Without pairs, the deleted source's own last event is what the delete may not precede.
    const alone = new FakeDriver().on("sources.findOneAndDelete", () => ({
      ...removed,
      last_event_at: new Date(asked + 30),
    }));
    expect(await alone.store({ policy: true }).deleteById("src_r", null, change({ at: asked }))).toBe(true);
    const [[aloneEvents]] = alone.callsTo("source_events", "insertMany") as [{ at: Date }[]][];
    expect(aloneEvents.map((e) => e.at)).toEqual([new Date(asked + 30)]);
    expect(alone.callsTo("conflict_guards", "bulkWrite")).toHaveLength(1);
  });

  it("asks for the candidates of a large batch in chunks of 100 boxes", async () => {
    const fake = new FakeDriver();
    const records = Array.from({ length: 250 }, (_, i) => makeRecord({ geometry: square(-170 + i, 0, 0.5) }));
    await fake.store({ policy: true }).insertMany(records);
    const finds = fake.callsTo("sources", "find");
    expect(finds.map(([filter]) => filter)).toEqual([
      conflictCandidatesFilter(records.slice(0, 100).map((r) => r.bbox)),
      conflictCandidatesFilter(records.slice(100, 200).map((r) => r.bbox)),
      conflictCandidatesFilter(records.slice(200).map((r) => r.bbox)),
    ]);
  });

  it("deletes in a transaction: its deleted event, its pairs, conflict_cleared on each counterpart, flags cleared when it was their last pair", async () => {
    const removed = { _id: "src_r", account_id: "acct_a", alt_id: "gone", event_seq: 3, bbox: UNIT_BOX };
    const kept = "src_k"; // still paired with another source
    const freed = "src_f"; // this was its only pair
    const fake = new FakeDriver()
      .on("sources.findOneAndDelete", () => removed)
      .on("conflict_pairs.find", (filter) =>
        JSON.stringify(filter) === JSON.stringify(pairsOfFilter("src_r"))
          ? [
              { a: "src_r", b: kept },
              { a: freed, b: "src_r" },
            ]
          : [{ a: "src_z", b: kept }],
      )
      .on("sources.find", () => [
        { _id: kept, account_id: "acct_b", alt_id: "k", event_seq: 5 },
        { _id: freed, account_id: "acct_a", alt_id: "f" }, // written before the event log: no event_seq
      ]);
    const store = fake.store({ policy: true });
    const when = change({ by: "admin:ops", at: Date.UTC(2031, 1, 2) });

    expect(await store.deleteById("src_r", "acct_a", when)).toBe(true);

    const session = fake.session;
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    const inTransaction = fake.calls.filter(
      (c) => c.target !== "client" && !["createIndexes", "createCollection", "dropIndex"].includes(c.method),
    );
    expect(inTransaction.map((c) => `${c.target}.${c.method}`)).toEqual([
      "session.startTransaction",
      "sources.findOneAndDelete",
      "conflict_guards.find",
      "conflict_guards.bulkWrite",
      "conflict_pairs.find",
      "conflict_pairs.deleteMany",
      "sources.find",
      "conflict_pairs.find",
      "sources.bulkWrite",
      "source_events.insertMany",
      "session.endSession",
    ]);
    expect(fake.callsTo("sources", "findOneAndDelete")).toEqual([
      [deleteByIdFilter("src_r", "acct_a"), { ...DELETE_OPTIONS, session }],
    ]);
    expect(fake.callsTo("conflict_pairs", "find")).toEqual([
      [pairsOfFilter("src_r"), { ...PAIR_KEYS_OPTIONS, session }],
      [pairsOfAnyFilter([kept, freed]), { ...PAIR_KEYS_OPTIONS, session }],
    ]);
    expect(fake.callsTo("conflict_pairs", "deleteMany")).toEqual([[pairsOfFilter("src_r"), { session }]]);
    expect(fake.callsTo("sources", "find")).toEqual([
      [sourcesByIdFilter([kept, freed]), { ...EVENT_SUBJECT_OPTIONS, session }],
    ]);
    // The guards of its box, for its time (the pairs need none: the writes on the counterparts'
    // documents are what concurrent writers collide on).
    expect(fake.callsTo("conflict_guards", "find")).toEqual([
      [guardsFilter(["g11.25:16:8"]), { ...GUARD_TIMES_OPTIONS, session }],
    ]);
    expect(fake.callsTo("conflict_guards", "bulkWrite")).toEqual([
      [guardWrites(["g11.25:16:8"], new Date(when.at)), { ordered: true, session }],
    ]);
    expect(fake.callsTo("sources", "bulkWrite")).toEqual([
      [
        eventSeqWrites([
          { id: freed, eventSeq: 1, lastEventAt: when.at, conflict: false },
          { id: kept, eventSeq: 6, lastEventAt: when.at },
        ]),
        { ...EVENT_SEQ_WRITE_OPTIONS, session },
      ],
    ]);
    const at = new Date(when.at);
    expect(fake.callsTo("source_events", "insertMany")).toEqual([
      [
        [
          {
            _id: "src_r:0000000004",
            source_id: "src_r",
            seq: 4,
            account_id: "acct_a",
            type: "deleted",
            at,
            by: "admin:ops",
          },
          {
            _id: "src_f:0000000001",
            source_id: freed,
            seq: 1,
            account_id: "acct_a",
            type: "conflict_cleared",
            at,
            by: "admin:ops",
            counterpart: { id: "src_r", alt_id: "gone", account_id: "acct_a" },
          },
          {
            _id: "src_k:0000000006",
            source_id: kept,
            seq: 6,
            account_id: "acct_b",
            type: "conflict_cleared",
            at,
            by: "admin:ops",
            counterpart: { id: "src_r", alt_id: "gone", account_id: "acct_a" },
          },
        ],
        { ...HISTORY_INSERT_OPTIONS, session },
      ],
    ]);
  });

  it("deletes a source without pairs with its deleted event only; a missing one writes nothing", async () => {
    const fake = new FakeDriver().on("sources.findOneAndDelete", () => ({
      _id: "src_1",
      account_id: "acct_a",
      alt_id: "field-7",
      event_seq: 1,
      bbox: UNIT_BOX,
    }));
    expect(await fake.store({ policy: true }).deleteByAltId("field-7", "acct_a", change())).toBe(true);
    expect(fake.callsTo("sources", "findOneAndDelete")[0][0]).toEqual(deleteByAltIdFilter("field-7", "acct_a"));
    expect(fake.callsTo("conflict_pairs", "deleteMany")).toEqual([]);
    expect(fake.callsTo("sources", "bulkWrite")).toEqual([]);
    const [[events]] = fake.callsTo("source_events", "insertMany") as [{ _id: string; type: string }[]][];
    expect(events.map((e) => [e._id, e.type])).toEqual([["src_1:0000000002", "deleted"]]);

    const none = new FakeDriver();
    expect(await none.store({ policy: true }).deleteById("src_x", null, change())).toBe(false);
    expect(none.callsTo("conflict_pairs", "find")).toEqual([]);
    expect(none.callsTo("source_events", "insertMany")).toEqual([]);
  });

  it("without a policy a delete is a transaction too, with its deleted event", async () => {
    const fake = new FakeDriver().on("sources.findOneAndDelete", () => ({
      _id: "src_1",
      account_id: "acct_a",
      alt_id: "field-7",
      event_seq: 1,
      bbox: UNIT_BOX,
    }));
    expect(await fake.store().deleteByAltId("field-7", "acct_a", change())).toBe(true);
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    expect(fake.callsTo("sources", "findOneAndDelete")).toEqual([
      [deleteByAltIdFilter("field-7", "acct_a"), { ...DELETE_OPTIONS, session: fake.session }],
    ]);
    expect(fake.callsTo("sources", "deleteOne")).toEqual([]);
    expect(fake.callsTo("source_events", "insertMany")).toHaveLength(1);
  });

  it("reads a history in one query along source_seq, outside any transaction; nothing in scope is null", async () => {
    const at = new Date(Date.UTC(2030, 0, 1));
    const fake = new FakeDriver().on("source_events.find", (filter) =>
      JSON.stringify(filter) === JSON.stringify(historyFilter("src_1", "acct_a"))
        ? [
            {
              source_id: "src_1",
              seq: 1,
              account_id: "acct_a",
              type: "created",
              at,
              by: "c",
              record: toDocument(makeRecord()),
            },
            { source_id: "src_1", seq: 2, account_id: "acct_a", type: "deleted", at, by: "d" },
          ]
        : [],
    );
    const store = fake.store({ policy: true });
    const events = await store.history("src_1", "acct_a");
    expect(events?.map((e) => [e.seq, e.type, e.by, e.at])).toEqual([
      [1, "created", "c", at.getTime()],
      [2, "deleted", "d", at.getTime()],
    ]);
    expect(await store.history("src_1", "acct_b")).toBeNull();
    expect(fake.callsTo("source_events", "find")).toEqual([
      [historyFilter("src_1", "acct_a"), HISTORY_OPTIONS],
      [historyFilter("src_1", "acct_b"), HISTORY_OPTIONS],
    ]);
    expect(fake.transactions).toEqual([]);
  });

  it("reads a page of a history from its seq on with its limit; an empty page past the end asks whether the source ever was", async () => {
    const at = new Date(Date.UTC(2030, 0, 1));
    const fake = new FakeDriver()
      .on("source_events.find", (filter) =>
        JSON.stringify(filter) === JSON.stringify(historyPageFilter("src_1", null, 1))
          ? [{ source_id: "src_1", seq: 2, account_id: "acct_a", type: "deleted", at, by: "d" }]
          : [],
      )
      .on("source_events.findOne", (filter) =>
        JSON.stringify(filter) === JSON.stringify(historyFilter("src_1", "acct_a"))
          ? { _id: "src_1:0000000001" }
          : null,
      );
    const store = fake.store({ policy: true });

    expect((await store.history("src_1", null, { afterSeq: 1, limit: 3 }))?.map((e) => e.seq)).toEqual([2]);
    expect(await store.history("src_1", "acct_a", { afterSeq: 2, limit: 3 })).toEqual([]);
    expect(await store.history("src_1", "acct_b", { afterSeq: 2, limit: 3 })).toBeNull();
    // A first page with nothing on it: no event in scope at all, without asking again.
    expect(await store.history("src_9", "acct_a", { afterSeq: 0, limit: 3 })).toBeNull();
    expect(fake.callsTo("source_events", "find")).toEqual([
      [historyPageFilter("src_1", null, 1), historyPageOptions(3)],
      [historyPageFilter("src_1", "acct_a", 2), historyPageOptions(3)],
      [historyPageFilter("src_1", "acct_b", 2), historyPageOptions(3)],
      [historyPageFilter("src_9", "acct_a", 0), historyPageOptions(3)],
    ]);
    expect(fake.callsTo("source_events", "findOne")).toEqual([
      [historyFilter("src_1", "acct_a"), HISTORY_EXISTS_OPTIONS],
      [historyFilter("src_1", "acct_b"), HISTORY_EXISTS_OPTIONS],
    ]);
  });

  it("reads the ledger at an instant from the events: created events in list order, then what happened to them by then", async () => {
    const asOf = Date.UTC(2030, 0, 1);
    const kept = makeRecord({ createdAt: 10 });
    const gone = makeRecord({ createdAt: 20 });
    const flagged = makeRecord({ createdAt: 30 });
    const createdEvent = (r: NewSourceRecord) => ({
      source_id: r.id,
      at: new Date(r.createdAt),
      record: recordDocumentOf(toDocument(r)),
    });
    const fake = new FakeDriver().on("source_events.find", (filter) =>
      (filter as { type?: unknown }).type === "created"
        ? [createdEvent(kept), createdEvent(gone), createdEvent(flagged)]
        : [
            { source_id: gone.id, type: "deleted" },
            { source_id: flagged.id, type: "conflict_set" },
            { source_id: flagged.id, type: "conflict_set" },
            { source_id: flagged.id, type: "conflict_cleared" },
            { source_id: kept.id, type: "conflict_set" },
            { source_id: kept.id, type: "conflict_cleared" },
          ],
    );
    const store = fake.store({ policy: true });

    const page = await store.list(listQuery("acct_a", { asOf, limit: 10 }));

    expect(page.map((r) => [r.id, r.conflict])).toEqual([
      [kept.id, false],
      [flagged.id, true],
    ]);
    expect(fake.callsTo("source_events", "find")).toEqual([
      [asOfCreatedFilter(asOf, "acct_a", undefined, undefined), asOfCreatedOptions(asOfChunkSize(0, 10, 0))],
      [asOfChangesFilter([kept.id, gone.id, flagged.id], asOf), AS_OF_CHANGES_OPTIONS],
    ]);
    expect(fake.callsTo("sources", "find")).toEqual([]);
    expect(fake.transactions).toEqual([]);
  });

  it("reads the ledger at an instant within an area from source_boxes: the boxes in list order, their created events by _id, then what happened by then", async () => {
    const asOf = Date.UTC(2030, 0, 1);
    const bbox = { minX: 0, minY: 0, maxX: 10, maxY: 10 };
    // In the box entirely (kept untested), deleted by then, and an L whose box meets the area
    // ([5, 20] × [-5, 11]) but whose two bars pass above it and to its right.
    const inside = makeRecord({ createdAt: 10, geometry: square(1, 1, 1) });
    const gone = makeRecord({ createdAt: 20, geometry: square(2, 2, 1) });
    const missing = makeRecord({
      createdAt: 30,
      geometry: {
        type: "Polygon",
        coordinates: [
          [
            [5, 10.5],
            [19.5, 10.5],
            [19.5, -5],
            [20, -5],
            [20, 11],
            [5, 11],
            [5, 10.5],
          ],
        ],
      },
    });
    const boxOf = (r: NewSourceRecord) => ({
      _id: r.id,
      at: new Date(r.createdAt),
      bbox: sourceBoxOf(toDocument(r)).bbox,
    });
    const fake = new FakeDriver()
      .on("source_boxes.find", () => [boxOf(inside), boxOf(gone), boxOf(missing)])
      .on("source_events.find", (filter) =>
        "_id" in (filter as object)
          ? [missing, gone, inside].map((r) => ({
              source_id: r.id,
              at: new Date(r.createdAt),
              record: recordDocumentOf(toDocument(r)),
            }))
          : [{ source_id: gone.id, type: "deleted" }],
      );
    const store = fake.store({ policy: true });

    // Each source read costs POSITIONS_PER_TEST, a test its positions and as much again. Three
    // reads and a little: had `inside` (5 positions) been tested too, it would be spent before
    // `missing` and reading would stop there. Only `missing` (7 positions) is tested, and spends it.
    const exactTests = new ExactTestAllowance(3 * POSITIONS_PER_TEST + 4);
    const page = await store.list(listQuery("acct_a", { asOf, limit: 10, bbox, exactTests }));

    expect(page.map((r) => r.id)).toEqual([inside.id]);
    expect(exactTests.stoppedAt).toBeUndefined();
    expect(exactTests.exhausted).toBe(true);
    const chunk = asOfChunkSize(0, 10, 0, true);
    expect(fake.callsTo("source_boxes", "find")).toEqual([
      [asOfBoxesFilter(asOf, "acct_a", bbox, undefined, undefined), asOfBoxesOptions(chunk)],
    ]);
    expect(fake.callsTo("source_events", "find")).toEqual([
      [createdEventsFilter([inside.id, gone.id, missing.id]), CREATED_EVENTS_OPTIONS],
      [asOfChangesFilter([inside.id, gone.id, missing.id], asOf), AS_OF_CHANGES_OPTIONS],
    ]);
    expect(fake.callsTo("sources", "find")).toEqual([]);
    expect(fake.transactions).toEqual([]);
  });

  it("gets a source at an instant from its events along source_seq: null once deleted by then", async () => {
    const asOf = Date.UTC(2030, 0, 1);
    const record = makeRecord({ conflict: false });
    let deleted = false;
    const fake = new FakeDriver().on("source_events.find", () => [
      { type: "created", record: recordDocumentOf(toDocument(record)) },
      { type: "conflict_set" },
      ...(deleted ? [{ type: "deleted" }] : []),
    ]);
    const store = fake.store({ policy: true });
    expect(await store.getAsOf(record.id, "acct_a", asOf)).toEqual({ ...stored(record), conflict: true });
    expect(fake.callsTo("source_events", "find")).toEqual([
      [asOfHistoryFilter(record.id, "acct_a", asOf), AS_OF_HISTORY_OPTIONS],
    ]);
    deleted = true;
    expect(await store.getAsOf(record.id, "acct_a", asOf)).toBeNull();
  });

  it("reads a source's conflicts in one snapshot transaction: live check, a range of each side's pairs, counterparts; in its events' order, each from its side", async () => {
    const measure = (fraction: number) =>
      toMeasureDocument({
        overlapAreaM2: 10,
        overlapFraction: fraction,
        counterpartOverlapFraction: 0.9,
        overlapPeriod: { startAt: 0, endAt: 1 },
        sharedAttributeTypes: [],
      });
    const [sideA, sideB] = PAIR_SIDES;
    const fake = new FakeDriver()
      .on("sources.findOne", (filter) =>
        JSON.stringify(filter) === JSON.stringify(getFilter("src_1", "acct_a")) ? { _id: "src_1" } : null,
      )
      // Each side's range in its own order, as its index gives it.
      .on("conflict_pairs.find", (filter) =>
        (filter as { a?: string }).a === "src_1"
          ? [
              { a: "src_1", b: "src_a", measure: measure(0.3), detected_at: new Date(20), a_event: 3, b_event: 2 },
              { a: "src_1", b: "src_c", measure: measure(0.1), detected_at: new Date(20), a_event: 4, b_event: 5 },
            ]
          : [{ a: "src_b", b: "src_1", measure: measure(0.2), detected_at: new Date(10), a_event: 7, b_event: 2 }],
      )
      .on("sources.find", () => [
        { _id: "src_a", alt_id: "ay", account_id: "acct_a" },
        { _id: "src_b", alt_id: "bee", account_id: "acct_b" },
        { _id: "src_c", alt_id: "sea", account_id: "acct_c" },
      ]);
    const store = fake.store({ policy: true });

    const conflicts = await store.conflictsOf("src_1", "acct_a");

    expect(conflicts?.map((c) => [c.counterpart.id, c.detectedAt, c.measure.overlapFraction, c.seq])).toEqual([
      ["src_b", 10, 0.9, 2], // stored from src_b's side: turned round, src_1's event seq is its b_event
      ["src_a", 20, 0.3, 3],
      ["src_c", 20, 0.1, 4],
    ]);
    expect(conflicts?.[0].counterpart).toEqual({ id: "src_b", altId: "bee", accountId: "acct_b" });
    const session = fake.session;
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    expect(fake.callsTo("sources", "findOne")).toEqual([
      [getFilter("src_1", "acct_a"), { ...LIVE_SOURCE_OPTIONS, session }],
    ]);
    const whole = [sideA, sideB].map((side) => pairsPageQuery("src_1", side, { afterSeq: 0 }));
    expect(fake.callsTo("conflict_pairs", "find")).toEqual(
      whole.map(({ filter, options }) => [filter, { ...options, session }]),
    );
    expect(fake.callsTo("sources", "find")).toEqual([
      [sourcesByIdFilter(["src_b", "src_a", "src_c"]), { ...COUNTERPART_OPTIONS, session }],
    ]);

    // A page: each side's range from after the seq, at most the limit, merged and cut to the limit.
    const page = await store.conflictsOf("src_1", "acct_a", { afterSeq: 2, limit: 2 });
    expect(page?.map((c) => c.counterpart.id)).toEqual(["src_b", "src_a"]);
    const paged = [sideA, sideB].map((side) => pairsPageQuery("src_1", side, { afterSeq: 2, limit: 2 }));
    expect(fake.callsTo("conflict_pairs", "find").slice(2)).toEqual(
      paged.map(({ filter, options }) => [filter, { ...options, session }]),
    );

    expect(await store.conflictsOf("src_1", "acct_b")).toBeNull();
    expect(fake.callsTo("conflict_pairs", "find")).toHaveLength(4);
  });

  it("creates without a policy in a transaction too (all or nothing), keeping the flags given", async () => {
    const fake = new FakeDriver();
    const records = [makeRecord({ conflict: true }), makeRecord()];
    const returned = await fake.store().insertMany(records);
    expect(returned.map((r) => r.conflict)).toEqual([true, false]);
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    expect(fake.callsTo("sources", "insertMany")).toEqual([
      [records.map((r) => toDocument(r)), { session: fake.session, ordered: true }],
    ]);
    const [[events]] = fake.callsTo("source_events", "insertMany") as [{ _id: string; type: string }[]][];
    expect(events.map((e) => [e._id, e.type])).toEqual(records.map((r) => [`${r.id}:0000000001`, "created"]));
    expect(fake.callsTo("conflict_pairs", "insertMany")).toEqual([]);
  });
});

// --- failure injection ---

describe("failures (fake driver)", () => {
  it("a lost connection is StoreUnavailableError, and the next call works once the server is back", async () => {
    const fake = new FakeDriver().failTimes("sources.find", 1, networkError);
    const store = fake.store();

    const error = await failure(store.list(listQuery("acct_a")));

    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/^mongodb list failed: MongoNetworkError: connection 4/);
    expect((error as Error).cause).toBeInstanceOf(MongoNetworkError);
    await expect(store.list(listQuery("acct_a"))).resolves.toEqual([]);
    expect(fake.callsTo("client", "db")).toHaveLength(1); // the same client: the driver reconnects
  });

  it.each([
    ["server selection timeout", selectionError],
    ["not writable primary", () => serverError(10107, "NotWritablePrimary", "not primary")],
    ["primary stepped down", () => serverError(11602, "InterruptedDueToReplStateChange", "operation was interrupted")],
    [
      "shutdown in progress",
      () => serverError(91, "ShutdownInProgress", "The server is in quiesce mode and will shut down"),
    ],
    ["authentication failed", () => serverError(18, "AuthenticationFailed", "Authentication failed.")],
  ])("%s is StoreUnavailableError", async (_label, error) => {
    const fake = new FakeDriver().failTimes("sources.findOne", 1, error, () => null);
    await expect(fake.store().get("src_1", "acct_a")).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("a network error inside a create's transaction is StoreUnavailableError", async () => {
    const fake = new FakeDriver().failTimes("sources.insertMany", 1, networkError);
    await expect(fake.store().insertMany([makeRecord()])).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("a first connection that fails is made again on the next call (no dead client is kept)", async () => {
    const fake = new FakeDriver().failTimes("client.connect", 2, selectionError, () => undefined);
    const store = fake.store();
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).resolves.toBeUndefined();
    await expect(store.ping()).resolves.toBeUndefined();
    expect(fake.callsTo("client", "connect")).toHaveLength(3);
  });

  it("a topology closed behind the store's back is connected again on the next call", async () => {
    const fake = new FakeDriver().failTimes(
      "sources.findOne",
      1,
      () => new MongoTopologyClosedError(),
      () => null,
    );
    const store = fake.store();
    await expect(store.get("src_1", null)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.get("src_1", null)).resolves.toBeNull();
    expect(fake.callsTo("client", "connect")).toHaveLength(2);
  });

  it("index setup failing at start leaves ping failing until MongoDB answers, then setup runs once", async () => {
    const fake = new FakeDriver().failTimes("sources.createIndexes", 2, selectionError);
    const store = fake.store();

    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).resolves.toBeUndefined();
    await expect(store.list(listQuery(null))).resolves.toEqual([]);
    expect(fake.callsTo("sources", "createIndexes")).toHaveLength(3);
  });

  it("an index of the same name with other options needs an operator: unavailable, with the reason", async () => {
    const fake = new FakeDriver().on("sources.createIndexes", () => {
      throw serverError(85, "IndexOptionsConflict", "An existing index has the same name as the requested index");
    });
    const error = await failure(fake.store().ping());
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain("IndexOptionsConflict");
  });

  it("a duplicate key on alt_id is AltIdTakenError naming every taken alt_id, in request order", async () => {
    const fake = new FakeDriver()
      .on("sources.insertMany", () => {
        throw altIdDuplicate("acct_a", "taken-2");
      })
      .on("sources.find", (filter) =>
        JSON.stringify(filter).includes('"$in"') ? [{ alt_id: "taken-1" }, { alt_id: "taken-2" }] : [],
      );
    const batch = ["fresh-1", "taken-2", "fresh-2", "taken-1"].map((altId) => makeRecord({ altId }));

    const error = await failure(fake.store().insertMany(batch));

    expect(error).toBeInstanceOf(AltIdTakenError);
    expect((error as AltIdTakenError).accountId).toBe("acct_a");
    expect((error as AltIdTakenError).altIds).toEqual(["taken-2", "taken-1"]);
    expect(fake.callsTo("sources", "find")).toEqual([
      [takenAltIdsFilter("acct_a", ["fresh-1", "taken-2", "fresh-2", "taken-1"]), CLASHING_ALT_IDS_OPTIONS],
    ]);
  });

  it("also finds duplicates reported through a bulk-write error's write errors", async () => {
    const bulk = serverError(
      11000,
      "DuplicateKey",
      "E11000 duplicate key error collection: ledger.sources index: account_alt_id_unique dup key: { ... }",
    );
    const fake = new FakeDriver()
      .on("sources.insertMany", () => {
        throw bulk;
      })
      .on("sources.find", () => [{ alt_id: "b" }]);
    const error = await failure(fake.store().insertMany([makeRecord({ altId: "a" }), makeRecord({ altId: "b" })]));
    expect((error as AltIdTakenError).altIds).toEqual(["b"]);
  });

  it("reports repeats inside the batch together with stored ones, before touching the transaction", async () => {
    const fake = new FakeDriver().on("sources.find", () => [{ alt_id: "stored" }]);
    const batch: NewSourceRecord[] = ["twice", "stored", "once", "twice"].map((altId) => makeRecord({ altId }));
    const error = await failure(fake.store().insertMany(batch));
    expect((error as AltIdTakenError).altIds).toEqual(["twice", "stored"]);
    expect(fake.transactions).toEqual([]);
  });

  it("ping on a standalone server fails with the replica-set message; a replica set or mongos passes", async () => {
    const standalone = new FakeDriver().on("db.command", () => ({
      isWritablePrimary: true,
      maxWireVersion: 21,
      ok: 1,
    }));
    const error = await failure(standalone.store().ping());
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toBe(`mongodb ping failed: ${REPLICA_SET_REQUIRED}`);
    expect(REPLICA_SET_REQUIRED).toMatch(/replica set/);

    const mongos = new FakeDriver().on("db.command", () => ({ msg: "isdbgrid", isWritablePrimary: true, ok: 1 }));
    await expect(mongos.store().ping()).resolves.toBeUndefined();
    const member = new FakeDriver().on("db.command", () => ({ setName: "rs0", isWritablePrimary: true, ok: 1 }));
    await expect(member.store().ping()).resolves.toBeUndefined();
  });

  it("a transaction refused by a standalone server is unavailable with the replica-set message", async () => {
    const fake = new FakeDriver().failTimes("sources.insertMany", 1, () =>
      serverError(20, "IllegalOperation", "Transaction numbers are only allowed on a replica set member or mongos"),
    );
    const error = await failure(fake.store().insertMany([makeRecord()]));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain(REPLICA_SET_REQUIRED);
  });

  it("a write conflict on a guard runs the transaction again", async () => {
    const fake = new FakeDriver().failTimes("conflict_guards.bulkWrite", 2, writeConflict);
    const [record] = await fake.store({ policy: true }).insertMany([makeRecord()]);
    expect(record).toBeDefined();
    expect(fake.callsTo("session", "startTransaction")).toHaveLength(3);
  });

  it("two transactions inserting the same new guard: the duplicate key is retried like a write conflict", async () => {
    const fake = new FakeDriver().failTimes("conflict_guards.bulkWrite", 1, () =>
      serverError(
        11000,
        "DuplicateKey",
        'E11000 duplicate key error collection: ledger.conflict_guards index: _id_ dup key: { _id: "g11.25:16:8" }',
      ),
    );
    await expect(fake.store({ policy: true }).insertMany([makeRecord()])).resolves.toHaveLength(1);
    expect(fake.callsTo("session", "startTransaction")).toHaveLength(2);
  });

  it("a write conflict on a stored source's document (another writer of its history) runs a create or delete again", async () => {
    const stored = makeRecord({ geometry: square(10, 10, 1) });
    const create = new FakeDriver()
      .on("sources.find", () => [toDocument(stored)])
      .failTimes("sources.bulkWrite", 1, writeConflict);
    await expect(
      create.store({ policy: true }).insertMany([makeRecord({ geometry: square(10.5, 10, 1) })]),
    ).resolves.toHaveLength(1);
    expect(create.callsTo("session", "startTransaction")).toHaveLength(2);
    // The retry computes its seqs afresh: the same events, written once.
    expect(create.callsTo("source_events", "insertMany")).toHaveLength(1);

    const remove = new FakeDriver().failTimes("sources.findOneAndDelete", 1, writeConflict, () => ({
      _id: "src_1",
      account_id: "acct_a",
      alt_id: "a",
      event_seq: 1,
      bbox: UNIT_BOX,
    }));
    expect(await remove.store({ policy: true }).deleteById("src_1", null, change())).toBe(true);
    expect(remove.callsTo("session", "startTransaction")).toHaveLength(2);
  });

  it("transient failures past the budget end the call as unavailable instead of retrying for minutes", async () => {
    const fake = new FakeDriver().failTimes("conflict_guards.bulkWrite", 100, writeConflict);
    const error = await failure(fake.store({ policy: true, transactionBudgetMs: 0 }).insertMany([makeRecord()]));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain("transaction still failing");
    expect(fake.callsTo("session", "startTransaction")).toHaveLength(1);
    expect(fake.callsTo("session", "endSession")).toHaveLength(1);
  });

  it("an error that is not about availability surfaces as itself (a bug, answered 500)", async () => {
    const badValue = serverError(2, "BadValue", "unknown operator: $geoIntersect");
    const fake = new FakeDriver().failTimes("sources.find", 1, () => badValue);
    await expect(fake.store().list(listQuery(null))).rejects.toBe(badValue);
  });

  it("after close every call is unavailable and the driver is not touched again", async () => {
    const fake = new FakeDriver();
    const store = fake.store();
    await store.close();
    await store.close();
    const before = fake.calls.length;
    for (const call of [
      () => store.ping(),
      () => store.list(listQuery(null)),
      () => store.get("src_x", null),
      () => store.insertMany([makeRecord()]),
      () => store.deleteById("src_x", null, change()),
      () => store.deleteByAltId("x", "acct_a", change()),
      () => store.history("src_x", null),
      () => store.conflictsOf("src_x", null),
    ]) {
      await expect(call()).rejects.toBeInstanceOf(StoreUnavailableError);
    }
    expect(fake.calls.length).toBe(before);
    expect(fake.callsTo("client", "close")).toHaveLength(1);
  });
});

// --- the real driver, nothing listening ---

describe("the real driver with no server (unreachable MongoDB)", () => {
  let server: TestServer | undefined;
  let store: MongoSourceStore | undefined;

  afterEach(async () => {
    await server?.close();
    await store?.close();
    server = undefined;
    store = undefined;
  });

  it("opens anyway; ping, reads and writes are StoreUnavailableError", async () => {
    const port = await deadPort();
    store = await openMongoStore({
      uri: `mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300`,
      database: "ledger",
      conflictPolicy,
    });
    // Every call tries the server again (a fresh selection each time, never "Topology is closed").
    for (const call of [
      () => store?.ping(),
      () => store?.list(listQuery(null)),
      () => store?.insertMany([makeRecord()]),
    ]) {
      const error = await failure(Promise.resolve(call()));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).cause).toBeInstanceOf(MongoServerSelectionError);
    }
  });

  it("the protected-area CLI on LEDGER_STORE=mongodb fails at once, exit 2, when MongoDB cannot be reached", async () => {
    const port = await deadPort();
    let stdout = "";
    let stderr = "";
    const code = await runCli(["protected-areas", "status"], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { LEDGER_STORE: "mongodb", MONGODB_URI: `mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300` },
    });
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toMatch(/^error: the store is unavailable: mongodb /);
  });

  it("starts on an unreachable server (503 until setup succeeds), not on a ledger that needs repair or any other failure", () => {
    expect(stopsTheStart(new StoreUnavailableError("mongodb setup failed: connect ECONNREFUSED"))).toBe(false);
    expect(stopsTheStart(new StoreNeedsRepairError("mongodb conflict pair a|b has no conflict_set event"))).toBe(true);
    expect(stopsTheStart(new InvalidMongoUriError("MONGODB_URI is not a valid MongoDB connection string"))).toBe(true);
    expect(stopsTheStart(new Error("a bug"))).toBe(true);
  });

  it("refuses a URI that does not parse, without repeating its credentials", async () => {
    const uri = "mongodb://ledger:hunter2@";
    const error = await failure(openMongoStore({ uri, database: "ledger" }));
    expect(error).toBeInstanceOf(InvalidMongoUriError);
    expect((error as Error).message).not.toContain("hunter2");
    const config = loadConfig({ LEDGER_STORE: "mongodb", MONGODB_URI: "postgres://ledger:hunter2@db/x" });
    const viaConfig = await failure(
      openProductionStore(config, { conflictPolicy, protectedAreaPolicy: unepOverlapPolicy }),
    );
    expect((viaConfig as Error).name).toBe("ConfigError");
    expect((viaConfig as Error).message).not.toContain("hunter2");
  });

  it("the service starts on LEDGER_STORE=mongodb, /readyz is 503 and calls answer 503 unavailable without driver text", async () => {
    const port = await deadPort();
    server = await startTestServer({
      LEDGER_STORE: "mongodb",
      MONGODB_URI: `mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300&connectTimeoutMS=300`,
    });
    const ready = await server.request("GET", "/readyz");
    expect(ready.status).toBe(503);
    const token = await server.userToken("acct-mongo");
    const listed = await server.request("GET", "/sources", { token });
    expect(listed.status).toBe(503);
    const body = await listed.text();
    expect(JSON.parse(body)).toMatchObject({ status: 503, code: "unavailable" });
    for (const leak of ["Mongo", "127.0.0.1", String(port), "Server selection"]) expect(body).not.toContain(leak);
  });
});
