/**
 * The history part of the SourceStore contract (port.ts `history`, `conflictsOf`, docs/api.md
 * §14): `created` with the record, `deleted` with who and when, history outliving the source,
 * account scoping, `seq` 1..n; and, for a store given the production conflict policy, the stored
 * pairs with their measures (held to an independent computation), `conflict_set` on both sides,
 * `conflict_cleared` on delete and the flag as "has at least one live pair".
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SourceEvent } from "../../src/model/history.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { AltIdTakenError, type SourceStore, StoreUnavailableError } from "../../src/store/port.js";
import { change, DELETER, makeFullRecord, makeRecord, square, stored } from "./fixtures.js";
import { type Claim, decide, expectMeasure, type Rect, rectAreaM2, rectGeometry } from "./measures.js";

const A = "acct_a";
const B = "acct_b";

export interface HistoryContractOptions {
  /**
   * Whether the `created` event of a deleted source still carries its record. The sandbox lets the
   * record go with the source (its memory is its budget); the production stores keep it.
   */
  keepsRecordOfDeleted: boolean;
  /**
   * A fresh store of the same kind applying the production conflict policy (docs/api.md §8); the
   * conflict part of the contract runs only when given.
   */
  makeConflictStore?: () => Promise<{ store: SourceStore; cleanup(): Promise<void> }>;
}

/** The fields of an event other than `record`, `counterpart` and `measure`. */
function head(event: SourceEvent) {
  const { sourceId, accountId, seq, type, at, by } = event;
  return { sourceId, accountId, seq, type, at, by };
}

function createdEventOf(record: NewSourceRecord) {
  return {
    sourceId: record.id,
    accountId: record.accountId,
    seq: 1,
    type: "created",
    at: record.createdAt,
    by: record.createdBy,
  };
}

/** Plain history contract: every store, with or without a conflict policy. */
export function describeHistoryContract(storeOf: () => SourceStore, options: HistoryContractOptions): void {
  let store: SourceStore;
  beforeEach(() => {
    store = storeOf();
  });

  describe("history (docs/api.md §14)", () => {
    it("a create writes one created event: seq 1, at the created time, by the creator, with the record", async () => {
      const full = makeFullRecord({ accountId: A, createdBy: "creator-app" });
      await store.insertMany([full]);

      const history = await store.history(full.id, A);
      expect(history).toHaveLength(1);
      const [created] = history as SourceEvent[];
      expect(head(created)).toEqual(createdEventOf(full));
      expect(created.record).toStrictEqual(stored(full));
      expect(created.counterpart).toBeUndefined();
      expect(created.measure).toBeUndefined();
    });

    it("gives each member of a batch its own created event, and only its own", async () => {
      const batch = [makeRecord({ accountId: A }), makeRecord({ accountId: B }), makeRecord({ accountId: A })];
      await store.insertMany(batch);

      for (const record of batch) {
        const history = (await store.history(record.id, record.accountId)) as SourceEvent[];
        expect(history.map(head)).toEqual([createdEventOf(record)]);
        expect(history[0].record).toStrictEqual(stored(record));
      }
    });

    it("a delete by id writes a deleted event with who and when, after the created one", async () => {
      const record = makeRecord({ accountId: A });
      await store.insertMany([record]);
      const at = record.createdAt + 5_000;

      expect(await store.deleteById(record.id, A, change({ by: "deleting-app", at }))).toBe(true);

      const history = (await store.history(record.id, A)) as SourceEvent[];
      expect(history.map(head)).toEqual([
        createdEventOf(record),
        { sourceId: record.id, accountId: A, seq: 2, type: "deleted", at, by: "deleting-app" },
      ]);
      expect(history[1].record).toBeUndefined();
      expect(history[1].counterpart).toBeUndefined();
      expect(history[1].measure).toBeUndefined();
    });

    it("a delete by alt_id writes the same deleted event", async () => {
      const record = makeRecord({ accountId: A, altId: "by-alt" });
      await store.insertMany([record]);

      const at = record.createdAt + 77;
      expect(await store.deleteByAltId("by-alt", A, change({ by: "alt-deleter", at }))).toBe(true);

      const history = (await store.history(record.id, A)) as SourceEvent[];
      expect(history.map(head).at(-1)).toEqual({
        sourceId: record.id,
        accountId: A,
        seq: 2,
        type: "deleted",
        at,
        by: "alt-deleter",
      });
    });

    it("records no change before the last one it committed: an earlier request's change takes that instant", async () => {
      // All in one place: MongoDB keeps the order per place (its guard cells), the others globally.
      const here = { accountId: A, geometry: square(20, 20) };
      const first = makeRecord(here);
      const last = first.createdAt + 1_000;
      const latest = makeRecord({ ...here, createdAt: last });
      // One batch: each member keeps its own time, none being before the last change before it.
      await store.insertMany([latest, first]);
      expect((await store.get(first.id, A))?.createdAt).toBe(first.createdAt);

      // A create whose request came in before `latest` was committed (queued behind it).
      const queued = makeRecord({ ...here, createdAt: first.createdAt + 10 });
      const recorded = { ...stored(queued), createdAt: last, updatedAt: last };
      expect(await store.insertMany([queued])).toStrictEqual([recorded]);
      expect(await store.get(queued.id, A)).toStrictEqual(recorded);
      expect((await store.history(queued.id, A))?.map(head)).toEqual([{ ...createdEventOf(queued), at: last }]);
      expect((await store.list({ accountId: A, attributeTypes: [], limit: 10, offset: 0 })).map((r) => r.id)).toEqual([
        first.id,
        latest.id,
        queued.id,
      ]);

      // So is a delete; a later request keeps its own instant.
      expect(await store.deleteById(first.id, A, change({ at: first.createdAt + 20 }))).toBe(true);
      expect((await store.history(first.id, A))?.map((e) => [e.type, e.at])).toEqual([
        ["created", first.createdAt],
        ["deleted", last],
      ]);
      const next = makeRecord({ ...here, createdAt: last + 5 });
      expect((await store.insertMany([next]))[0].createdAt).toBe(last + 5);
      expect(await store.deleteById(latest.id, A, change({ at: last + 7 }))).toBe(true);
      expect((await store.history(latest.id, A))?.map((e) => e.at)).toEqual([last, last + 7]);
    });

    it("reads a page of events: after a seq, at most a limit; past the end [], and null out of scope whatever the page", async () => {
      const record = makeRecord({ accountId: A });
      await store.insertMany([record]);
      expect(await store.deleteById(record.id, A, change())).toBe(true);
      const seqs = async (scope: string | null, afterSeq: number, limit: number) =>
        (await store.history(record.id, scope, { afterSeq, limit }))?.map((e) => [e.seq, e.type]) ?? null;

      expect(await seqs(A, 0, 1)).toEqual([[1, "created"]]);
      expect(await seqs(A, 1, 1)).toEqual([[2, "deleted"]]);
      expect(await seqs(null, 0, 10)).toEqual([
        [1, "created"],
        [2, "deleted"],
      ]);
      expect(await seqs(A, 2, 10)).toEqual([]);
      expect(await seqs(A, 99, 10)).toEqual([]);
      // The record of a deleted source's created event is whole on a page without the deleted event.
      expect((await store.history(record.id, A, { afterSeq: 0, limit: 1 }))?.[0].record).toStrictEqual(
        options.keepsRecordOfDeleted ? stored(record) : undefined,
      );
      for (const afterSeq of [0, 1, 2, 99]) {
        expect(await seqs(B, afterSeq, 10), `after ${afterSeq}`).toBeNull();
        expect(await store.history("src_never", null, { afterSeq, limit: 10 }), `after ${afterSeq}`).toBeNull();
      }
    });

    it("an admin's delete names the admin, and the history stays the owning account's", async () => {
      const record = makeRecord({ accountId: B });
      await store.insertMany([record]);

      expect(await store.deleteById(record.id, null, change({ by: "admin-console" }))).toBe(true);

      for (const scope of [B, null]) {
        const history = (await store.history(record.id, scope)) as SourceEvent[];
        expect(history.map((e) => [e.accountId, e.type, e.by])).toEqual([
          [B, "created", record.createdBy],
          [B, "deleted", "admin-console"],
        ]);
      }
    });

    it("outlives the source: readable after the delete by its account and by an admin, while get is null", async () => {
      const record = makeFullRecord({ accountId: A });
      await store.insertMany([record]);
      await store.deleteById(record.id, A, change());

      expect(await store.get(record.id, A)).toBeNull();
      for (const scope of [A, null]) {
        const history = (await store.history(record.id, scope)) as SourceEvent[];
        expect(history.map((e) => [e.seq, e.type])).toEqual([
          [1, "created"],
          [2, "deleted"],
        ]);
        expect(head(history[0])).toEqual(createdEventOf(record));
        if (options.keepsRecordOfDeleted) expect(history[0].record).toStrictEqual(stored(record));
        else expect(history[0].record).toBeUndefined();
        expect(history[1].by).toBe(DELETER);
      }
    });

    it("is null for an id never stored, and for another account's source, live or deleted", async () => {
      const theirs = makeRecord({ accountId: B });
      const gone = makeRecord({ accountId: B });
      await store.insertMany([theirs, gone]);
      await store.deleteById(gone.id, B, change());

      expect(await store.history("src_never", A)).toBeNull();
      expect(await store.history("src_never", null)).toBeNull();
      expect(await store.history(theirs.id, A)).toBeNull();
      expect(await store.history(gone.id, A)).toBeNull();
      expect(await store.history(theirs.id, "acct_nobody")).toBeNull();
      expect(await store.history(theirs.id, B)).toHaveLength(1);
      expect(await store.history(gone.id, B)).toHaveLength(2);
    });

    it("writes nothing for a delete that deletes nothing: another account's, a missing one, a second one", async () => {
      const record = makeRecord({ accountId: B, altId: "kept" });
      await store.insertMany([record]);

      expect(await store.deleteById(record.id, A, change())).toBe(false);
      expect(await store.deleteByAltId("kept", A, change())).toBe(false);
      expect(await store.deleteById("src_missing", null, change())).toBe(false);
      expect(((await store.history(record.id, B)) as SourceEvent[]).map((e) => e.type)).toEqual(["created"]);
      expect(await store.history("src_missing", null)).toBeNull();

      expect(await store.deleteById(record.id, B, change())).toBe(true);
      expect(await store.deleteById(record.id, B, change())).toBe(false);
      expect(await store.deleteByAltId("kept", B, change())).toBe(false);
      expect(((await store.history(record.id, B)) as SourceEvent[]).map((e) => e.type)).toEqual(["created", "deleted"]);
    });

    it("writes nothing for a rejected batch", async () => {
      await store.insertMany([makeRecord({ accountId: A, altId: "taken" })]);
      const fresh = makeRecord({ accountId: A, altId: "fresh" });
      const clash = makeRecord({ accountId: A, altId: "taken" });

      await expect(store.insertMany([fresh, clash])).rejects.toBeInstanceOf(AltIdTakenError);

      expect(await store.history(fresh.id, A)).toBeNull();
      expect(await store.history(clash.id, null)).toBeNull();
    });

    it("numbers each source's events 1..n on its own: a source re-created under the same alt_id starts again", async () => {
      const first = makeRecord({ accountId: A, altId: "again" });
      await store.insertMany([first]);
      await store.deleteByAltId("again", A, change());
      const second = makeRecord({ accountId: A, altId: "again" });
      await store.insertMany([second]);

      expect(((await store.history(first.id, A)) as SourceEvent[]).map((e) => e.seq)).toEqual([1, 2]);
      expect(((await store.history(second.id, A)) as SourceEvent[]).map((e) => [e.seq, e.type])).toEqual([
        [1, "created"],
      ]);
    });

    it("hands out copies: changing a returned event changes nothing stored", async () => {
      const record = makeFullRecord({ accountId: A });
      await store.insertMany([record]);
      const [created] = (await store.history(record.id, A)) as SourceEvent[];
      created.record?.tags.push("changed");
      created.record?.attributeType.pop();
      created.seq = 99;

      const [again] = (await store.history(record.id, A)) as SourceEvent[];
      expect(again.seq).toBe(1);
      expect(again.record).toStrictEqual(stored(record));
    });
  });

  describe("conflictsOf (docs/api.md §14), no conflict found", () => {
    it("is [] for a live source without conflicts, for its account and for an admin", async () => {
      const record = makeRecord({ accountId: A });
      await store.insertMany([record]);

      expect(await store.conflictsOf(record.id, A)).toEqual([]);
      expect(await store.conflictsOf(record.id, null)).toEqual([]);
    });

    it("is null for an unknown id, a deleted source, and another account's source", async () => {
      const gone = makeRecord({ accountId: A });
      const theirs = makeRecord({ accountId: B });
      await store.insertMany([gone, theirs]);
      await store.deleteById(gone.id, A, change());

      expect(await store.conflictsOf("src_never", A)).toBeNull();
      expect(await store.conflictsOf("src_never", null)).toBeNull();
      expect(await store.conflictsOf(gone.id, A)).toBeNull();
      expect(await store.conflictsOf(gone.id, null)).toBeNull();
      expect(await store.conflictsOf(theirs.id, A)).toBeNull();
      expect(await store.conflictsOf(theirs.id, B)).toEqual([]);
    });
  });

  describe("history after close", () => {
    it("history and conflictsOf are unavailable once the store is closed", async () => {
      await store.close();
      await expect(store.history("src_x", null)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.conflictsOf("src_x", null)).rejects.toBeInstanceOf(StoreUnavailableError);
    });
  });

  if (options.makeConflictStore) describeConflictContract(options.makeConflictStore);
}

// --- with the production conflict policy ---

const Y2024 = Date.UTC(2024, 0, 1);
const Y2025 = Date.UTC(2025, 0, 1);
const Y2026 = Date.UTC(2026, 0, 1);

/** Rectangles near 45° N (where a degree of longitude is clearly shorter than one of latitude). */
const at = (minX: number, minY: number, maxX: number, maxY: number): Rect => ({
  minX: 10 + minX,
  minY: 45 + minY,
  maxX: 10 + maxX,
  maxY: 45 + maxY,
});

interface Placed {
  record: NewSourceRecord;
  claim: Claim;
}

let clock = Date.UTC(2024, 5, 1);

/** A record over `rect`, created one second after the previous one, and what it claims. */
function place(rect: Rect, overrides: Partial<NewSourceRecord> = {}): Placed {
  clock += 1_000;
  const record = makeRecord({
    geometry: rectGeometry(rect),
    startAt: Y2024,
    endAt: Y2025,
    createdAt: clock,
    ...overrides,
  });
  return {
    record,
    claim: { rect, startAt: record.startAt, endAt: record.endAt, attributeType: record.attributeType },
  };
}

/** The §14 measure of `a` against `b` from `a`'s side, computed independently; they must conflict. */
function expectedMeasure(a: Placed, b: Placed) {
  const decision = decide(a.claim, b.claim);
  if (decision.measure === null) throw new Error("the fixture pair does not conflict");
  return decision.measure;
}

const counterpartOf = (r: NewSourceRecord) => ({ id: r.id, altId: r.altId, accountId: r.accountId });

function describeConflictContract(makeConflictStore: NonNullable<HistoryContractOptions["makeConflictStore"]>): void {
  describe("conflict pairs and their events (docs/api.md §14), with the production policy", () => {
    let store: SourceStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeConflictStore());
    });

    afterEach(async () => {
      await cleanup();
    });

    const events = async (record: NewSourceRecord) => (await store.history(record.id, null)) as SourceEvent[];
    const flag = async (record: NewSourceRecord) => (await store.get(record.id, null))?.conflict;

    it("stores the pair with its measures, seen from each side, for each account and for an admin", async () => {
      // A 1° square, B 2° wide overlapping A's east half; partly overlapping periods and types.
      const a = place(at(0, 0, 1, 1), {
        accountId: A,
        attributeType: ["CARBON_REMOVAL", "BIODIVERSITY"],
        startAt: Y2024,
        endAt: Y2026,
      });
      const b = place(at(0.5, 0, 2.5, 1), {
        accountId: B,
        attributeType: ["WATER_QUALITY", "BIODIVERSITY"],
        startAt: Date.UTC(2024, 6, 1),
        endAt: Date.UTC(2027, 0, 1),
      });
      await store.insertMany([a.record]);
      const [returned] = await store.insertMany([b.record]);
      expect(returned.conflict).toBe(true);

      const fromA = expectedMeasure(a, b);
      // The numbers the independent computation gives, so a wrong model cannot pass unnoticed.
      expect(fromA.overlapAreaM2).toBeCloseTo(rectAreaM2(at(0.5, 0, 1, 1)), 3);
      expect(fromA.overlapFraction).toBeCloseTo(0.5, 12);
      expect(fromA.counterpartOverlapFraction).toBeCloseTo(0.25, 12);
      expect(fromA.overlapPeriod).toEqual({ startAt: Date.UTC(2024, 6, 1), endAt: Y2026 });
      expect(fromA.sharedAttributeTypes).toEqual(["BIODIVERSITY"]);

      for (const scope of [A, null]) {
        const conflicts = await store.conflictsOf(a.record.id, scope);
        expect(conflicts).toHaveLength(1);
        expect(conflicts?.[0].counterpart).toEqual(counterpartOf(b.record));
        expect(conflicts?.[0].detectedAt).toBe(b.record.createdAt);
        expectMeasure(conflicts?.[0].measure, fromA);
      }
      for (const scope of [B, null]) {
        const conflicts = await store.conflictsOf(b.record.id, scope);
        expect(conflicts).toHaveLength(1);
        expect(conflicts?.[0].counterpart).toEqual(counterpartOf(a.record));
        expect(conflicts?.[0].detectedAt).toBe(b.record.createdAt);
        expectMeasure(conflicts?.[0].measure, expectedMeasure(b, a));
      }
      expect(await store.conflictsOf(a.record.id, B)).toBeNull();
      expect(await store.conflictsOf(b.record.id, A)).toBeNull();
    });

    it("measures a source inside another: fraction 1 on its side, the area ratio on the other", async () => {
      const outer = place(at(0, 0, 2, 2));
      const inner = place(at(0.5, 0.5, 1, 1.5));
      await store.insertMany([outer.record, inner.record]);

      const [conflict] = (await store.conflictsOf(inner.record.id, null)) ?? [];
      expectMeasure(conflict?.measure, expectedMeasure(inner, outer));
      expect(conflict?.measure.overlapFraction).toBeCloseTo(1, 12);
      expect(conflict?.measure.counterpartOverlapFraction).toBeCloseTo(
        rectAreaM2(inner.claim.rect) / rectAreaM2(outer.claim.rect),
        12,
      );
    });

    it("shares no attribute type when one side or both are untyped, yet conflicts", async () => {
      const typed = place(at(0, 0, 1, 1), { attributeType: ["CARBON_REMOVAL"] });
      const untyped = place(at(0, 0.5, 1, 1.5), { attributeType: [] });
      const alsoUntyped = place(at(0, 0.8, 1, 1.8), { attributeType: [] });
      await store.insertMany([typed.record]);
      await store.insertMany([untyped.record]);
      await store.insertMany([alsoUntyped.record]);

      const ofTyped = (await store.conflictsOf(typed.record.id, null)) ?? [];
      expect(ofTyped.map((c) => c.counterpart.id)).toEqual([untyped.record.id, alsoUntyped.record.id]);
      for (const conflict of ofTyped) expect(conflict.measure.sharedAttributeTypes).toEqual([]);
      expectMeasure(ofTyped[1].measure, expectedMeasure(typed, alsoUntyped));
      const ofUntyped = (await store.conflictsOf(untyped.record.id, null)) ?? [];
      expect(ofUntyped.map((c) => c.counterpart.id)).toEqual([typed.record.id, alsoUntyped.record.id]);
      for (const conflict of ofUntyped) expect(conflict.measure.sharedAttributeTypes).toEqual([]);
    });

    it("writes conflict_set on both sides, naming the counterpart, by the creator at the create", async () => {
      const a = place(at(0, 0, 1, 1), { accountId: A, createdBy: "client-a", attributeType: ["BIODIVERSITY"] });
      const b = place(at(0.25, 0.25, 1.25, 1.25), {
        accountId: B,
        createdBy: "client-b",
        attributeType: ["BIODIVERSITY", "CI_SCORE"],
      });
      await store.insertMany([a.record]);
      await store.insertMany([b.record]);

      const ofA = await events(a.record);
      expect(ofA.map(head)).toEqual([
        createdEventOf(a.record),
        { sourceId: a.record.id, accountId: A, seq: 2, type: "conflict_set", at: b.record.createdAt, by: "client-b" },
      ]);
      expect(ofA[0].record).toStrictEqual(stored(a.record));
      expect(ofA[1].counterpart).toEqual(counterpartOf(b.record));
      expect(ofA[1].record).toBeUndefined();
      expectMeasure(ofA[1].measure, expectedMeasure(a, b));

      const ofB = await events(b.record);
      expect(ofB.map(head)).toEqual([
        createdEventOf(b.record),
        { sourceId: b.record.id, accountId: B, seq: 2, type: "conflict_set", at: b.record.createdAt, by: "client-b" },
      ]);
      // The created record is the record as stored: already flagged.
      expect(ofB[0].record).toStrictEqual({ ...stored(b.record), conflict: true });
      expect(ofB[1].counterpart).toEqual(counterpartOf(a.record));
      expectMeasure(ofB[1].measure, expectedMeasure(b, a));
    });

    it("stores a pair found within one batch once, with one conflict_set on each side", async () => {
      const first = place(at(0, 0, 1, 1));
      const second = place(at(0.5, 0, 1.5, 1));
      const alone = place(at(5, 5, 6, 6));
      const returned = await store.insertMany([first.record, alone.record, second.record]);
      expect(returned.map((r) => r.conflict)).toEqual([true, false, true]);

      expect(((await store.conflictsOf(first.record.id, null)) ?? []).map((c) => c.counterpart.id)).toEqual([
        second.record.id,
      ]);
      expect(((await store.conflictsOf(second.record.id, null)) ?? []).map((c) => c.counterpart.id)).toEqual([
        first.record.id,
      ]);
      expect(await store.conflictsOf(alone.record.id, null)).toEqual([]);
      expect((await events(first.record)).map((e) => [e.type, e.counterpart?.id])).toEqual([
        ["created", undefined],
        ["conflict_set", second.record.id],
      ]);
      expect((await events(second.record)).map((e) => [e.type, e.counterpart?.id])).toEqual([
        ["created", undefined],
        ["conflict_set", first.record.id],
      ]);
      expect((await events(alone.record)).map((e) => e.type)).toEqual(["created"]);
      // The first member was stored unflagged; its created record says so.
      expect((await events(first.record))[0].record?.conflict).toBe(false);
    });

    it("makes no pair and writes no event for neighbours that do not conflict", async () => {
      const a = place(at(0, 0, 1, 1), { attributeType: ["CARBON_REMOVAL"] });
      const neighbours = [
        place(at(1, 0, 2, 1)), // shares an edge
        place(at(-0.995, 0, 0.005, 1)), // a 0.5% sliver
        place(at(0, 0, 1, 1), { startAt: Y2025, endAt: Y2026 }), // starts when a ends
        place(at(0, 0, 1, 1), { attributeType: ["BIODIVERSITY"] }), // another attribute type
      ];
      await store.insertMany([a.record, ...neighbours.map((n) => n.record)]);

      for (const { record } of [a, ...neighbours]) {
        expect(await store.conflictsOf(record.id, null)).toEqual([]);
        expect((await events(record)).map((e) => e.type)).toEqual(["created"]);
        expect(await flag(record)).toBe(false);
      }
    });

    it("a delete writes deleted on the source and conflict_cleared on the counterpart, which loses pair and flag", async () => {
      const a = place(at(0, 0, 1, 1), { accountId: A });
      const b = place(at(0.5, 0, 1.5, 1), { accountId: B });
      await store.insertMany([a.record]);
      await store.insertMany([b.record]);
      const when = b.record.createdAt + 60_000;

      expect(await store.deleteById(b.record.id, null, change({ by: "admin-console", at: when }))).toBe(true);

      const ofA = await events(a.record);
      expect(ofA.map(head)).toEqual([
        createdEventOf(a.record),
        {
          sourceId: a.record.id,
          accountId: A,
          seq: 2,
          type: "conflict_set",
          at: b.record.createdAt,
          by: b.record.createdBy,
        },
        { sourceId: a.record.id, accountId: A, seq: 3, type: "conflict_cleared", at: when, by: "admin-console" },
      ]);
      expect(ofA[2].counterpart).toEqual(counterpartOf(b.record));
      expect(ofA[2].measure).toBeUndefined();
      expect((await events(b.record)).map((e) => [e.seq, e.type, e.at, e.by])).toEqual([
        [1, "created", b.record.createdAt, b.record.createdBy],
        [2, "conflict_set", b.record.createdAt, b.record.createdBy],
        [3, "deleted", when, "admin-console"],
      ]);
      expect(await store.conflictsOf(a.record.id, A)).toEqual([]);
      expect(await store.conflictsOf(b.record.id, null)).toBeNull();
      expect(await flag(a.record)).toBe(false);
    });

    it("a created event keeps the flag as created while the live flag changes, both ways", async () => {
      const a = place(at(0, 0, 1, 1), { accountId: A });
      const b = place(at(0.5, 0, 1.5, 1), { accountId: A });
      await store.insertMany([a.record]);
      await store.insertMany([b.record]);
      const createdFlag = async (record: NewSourceRecord) => (await events(record))[0].record?.conflict;
      // a: created alone, flagged by b's create.
      expect([await createdFlag(a.record), await flag(a.record)]).toEqual([false, true]);
      expect([await createdFlag(b.record), await flag(b.record)]).toEqual([true, true]);

      await store.deleteById(a.record.id, null, change({ at: b.record.createdAt + 1 }));

      // b: created in conflict, its last pair gone with a; a's history keeps it as created.
      expect([await createdFlag(b.record), await flag(b.record)]).toEqual([true, false]);
      expect(await createdFlag(a.record)).toBe(false);
      expect((await events(b.record))[0].record).toMatchObject({ id: b.record.id, geometry: b.record.geometry });
    });

    it("a counterpart keeps its flag while it has another pair; conflict_cleared for each pair it loses", async () => {
      // Hub A overlaps B (west) and C (east); B and C are apart.
      const a = place(at(0, 0, 2, 1));
      const b = place(at(-0.5, 0, 0.5, 1));
      const c = place(at(1.5, 0, 2.5, 1));
      await store.insertMany([a.record, b.record, c.record]);

      await store.deleteByAltId(b.record.altId, b.record.accountId, change({ at: 1 }));
      expect(await flag(a.record)).toBe(true);
      expect(((await store.conflictsOf(a.record.id, null)) ?? []).map((x) => x.counterpart.id)).toEqual([c.record.id]);
      expect(await flag(c.record)).toBe(true);

      await store.deleteById(c.record.id, null, change({ at: 2 }));
      expect(await flag(a.record)).toBe(false);
      expect(await store.conflictsOf(a.record.id, null)).toEqual([]);
      expect((await events(a.record)).map((e) => [e.seq, e.type, e.counterpart?.id])).toEqual([
        [1, "created", undefined],
        [2, "conflict_set", b.record.id],
        [3, "conflict_set", c.record.id],
        [4, "conflict_cleared", b.record.id],
        [5, "conflict_cleared", c.record.id],
      ]);
    });

    it("lists a source's conflicts oldest pair first, whatever the accounts", async () => {
      const hub = place(at(0, 0, 3, 1), { accountId: A });
      const later = [
        place(at(0, 0, 1, 1), { accountId: B }),
        place(at(1, 0, 2, 1), { accountId: A }),
        place(at(2, 0, 3, 1), { accountId: "acct_c" }),
      ];
      await store.insertMany([hub.record]);
      for (const { record } of later) await store.insertMany([record]);

      const conflicts = (await store.conflictsOf(hub.record.id, A)) ?? [];
      expect(conflicts.map((c) => c.counterpart.id)).toEqual(later.map((p) => p.record.id));
      expect(conflicts.map((c) => c.detectedAt)).toEqual(later.map((p) => p.record.createdAt));
      for (const [i, conflict] of conflicts.entries()) expectMeasure(conflict.measure, expectedMeasure(hub, later[i]));
    });

    it("pages a source's conflicts along its history: after an event seq, at most a limit, each once", async () => {
      const hub = place(at(0, 0, 6, 1), { accountId: A });
      const later = Array.from({ length: 6 }, (_, i) => place(at(i, 0, i + 1, 1), { accountId: i % 2 === 0 ? B : A }));
      await store.insertMany([hub.record]);
      for (const { record } of later) await store.insertMany([record]);
      // Deleting two takes their pairs away: the hub's conflicts are no longer its seqs 2, 3, ….
      expect(await store.deleteById(later[1].record.id, null, change())).toBe(true);
      expect(await store.deleteById(later[4].record.id, null, change())).toBe(true);

      const all = (await store.conflictsOf(hub.record.id, A)) ?? [];
      const kept = [0, 2, 3, 5].map((i) => later[i].record.id);
      expect(all.map((c) => c.counterpart.id)).toEqual(kept);
      // Each one's seq is that of its conflict_set event in the hub's history.
      const sets = (await events(hub.record)).filter((e) => e.type === "conflict_set");
      expect(all.map((c) => c.seq)).toEqual(kept.map((id) => sets.find((e) => e.counterpart?.id === id)?.seq));
      expect(all.map((c) => c.seq)).toEqual([2, 4, 5, 7]);

      const pages: string[][] = [];
      for (let afterSeq = 0; ; ) {
        const page = (await store.conflictsOf(hub.record.id, A, { afterSeq, limit: 3 })) ?? [];
        pages.push(page.map((c) => c.counterpart.id));
        if (page.length < 3) break;
        afterSeq = page[2].seq;
      }
      expect(pages).toEqual([kept.slice(0, 3), kept.slice(3)]);
      expect(await store.conflictsOf(hub.record.id, null, { afterSeq: 4, limit: 1 })).toEqual([all[2]]);
      expect(await store.conflictsOf(hub.record.id, A, { afterSeq: 7, limit: 5 })).toEqual([]);
      // From a counterpart's side: its own seq of the pair (its create's conflict_set).
      expect((await store.conflictsOf(later[5].record.id, A, { afterSeq: 0, limit: 5 }))?.map((c) => c.seq)).toEqual([
        2,
      ]);
      // Out of scope or unknown: null, whatever the page.
      expect(await store.conflictsOf(hub.record.id, B, { afterSeq: 0, limit: 5 })).toBeNull();
      expect(await store.conflictsOf("src_never", null, { afterSeq: 3, limit: 5 })).toBeNull();
    });

    it("a delete that deletes nothing writes nothing, on either side", async () => {
      const a = place(at(0, 0, 1, 1), { accountId: A });
      const b = place(at(0.5, 0, 1.5, 1), { accountId: B });
      await store.insertMany([a.record, b.record]);

      expect(await store.deleteById(b.record.id, A, change())).toBe(false);
      expect(await store.deleteByAltId(b.record.altId, A, change())).toBe(false);

      expect((await events(a.record)).map((e) => e.type)).toEqual(["created", "conflict_set"]);
      expect((await events(b.record)).map((e) => e.type)).toEqual(["created", "conflict_set"]);
      expect(await flag(a.record)).toBe(true);
    });
  });
}
