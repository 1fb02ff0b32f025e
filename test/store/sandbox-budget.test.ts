/**
 * The sandbox's global bounds (docs/api.md §7): one memory budget and one session count for all
 * sessions together, least recently used idle sessions evicted to make room, a create refused with
 * a retry hint when only sessions in flight hold the room.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { NewSourceRecord } from "../../src/model/records.js";
import { AltIdTakenError, CapacityExceededError } from "../../src/store/port.js";
import { createSandboxStore, type SandboxSourceStore } from "../../src/store/sandbox/index.js";
import { CREATED_HISTORY_BYTES, EVENT_BYTES, SESSION_OVERHEAD_BYTES } from "../../src/store/sandbox/session.js";

/** What a deleted source leaves counted: its history entry, its created and its deleted event. */
const DELETED_HISTORY = CREATED_HISTORY_BYTES + EVENT_BYTES;

import { RETRY_AFTER_S, type SandboxStoreOptions } from "../../src/store/sandbox/store.js";
import { SOURCE_OVERHEAD_BYTES } from "../../src/store/sandbox/stored-source.js";
import { change, listQuery, makeRecord } from "../contract/fixtures.js";

/** The next turn of the event loop: calls of this turn are no longer in flight. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

let serial = 0;
/** `n` sources for `accountId`, each the same size (fixed-width alt_ids, fixture squares). */
function sources(accountId: string, n: number): NewSourceRecord[] {
  return Array.from({ length: n }, () => makeRecord({ accountId, altId: `alt-${String(++serial).padStart(6, "0")}` }));
}

/** What one fixture source counts against the budget, measured on a store of its own. */
async function bytesPerSource(): Promise<number> {
  const probe = createSandboxStore({ ttlMs: 60_000 });
  await probe.insertMany(sources("probe", 1));
  const bytes = probe.bytesUsed() - SESSION_OVERHEAD_BYTES;
  await probe.close();
  return bytes;
}

async function refusal(call: Promise<unknown>): Promise<CapacityExceededError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CapacityExceededError);
  return error as CapacityExceededError;
}

describe("sandbox budget", () => {
  let store: SandboxSourceStore;
  let perSource: number;
  /** A session of two fixture sources. */
  let pair: number;

  beforeAll(async () => {
    perSource = await bytesPerSource();
    pair = SESSION_OVERHEAD_BYTES + 2 * perSource;
  });

  afterEach(async () => store?.close());

  function open(options: Partial<SandboxStoreOptions> = {}): SandboxSourceStore {
    store = createSandboxStore({ ttlMs: 60_000, sweepIntervalMs: 3_600_000, ...options });
    return store;
  }

  /** Whether the account's session still holds exactly these sources, by id and in its list. */
  async function holds(accountId: string, records: readonly NewSourceRecord[]): Promise<boolean> {
    const got = await Promise.all(records.map((r) => store.get(r.id, accountId)));
    const listed = await store.list(listQuery(accountId));
    return got.every((r) => r !== null) && listed.length === records.length;
  }

  describe("accounting", () => {
    it("counts each source from its stored form: the overhead, the packed doubles, its strings", async () => {
      open();
      // A fixture square: 5 positions, a 4-double header.
      expect(perSource).toBeGreaterThanOrEqual(SOURCE_OVERHEAD_BYTES + 8 * (4 + 10));
      // Its strings (under 300 bytes here) and its history's entry and created event on top.
      expect(perSource).toBeLessThan(SOURCE_OVERHEAD_BYTES + 8 * (4 + 10) + 300 + CREATED_HISTORY_BYTES);
      const tagged = makeRecord({ accountId: "x", altId: "alt-tagged", tags: ["ü".repeat(100), "✓".repeat(100)] });
      await store.insertMany([tagged]);
      // Latin-1 text takes a byte a character, other text two; each tag a list slot and a header too.
      expect(store.bytesUsed() - SESSION_OVERHEAD_BYTES - perSource).toBe(8 + 16 + 104 + 8 + 16 + 200);
    });

    it("adds a session's sources, gives them back on delete, and drops them with the session", async () => {
      const clock = { now: 0 };
      open({ ttlMs: 1_000, now: () => clock.now });
      expect(store.bytesUsed()).toBe(0);
      const [first, second] = await store.insertMany(sources("a", 2));
      expect(store.bytesUsed()).toBe(pair);
      await store.insertMany(sources("b", 2));
      expect(store.bytesUsed()).toBe(2 * pair);

      // A delete gives the source back but keeps its history: its entry and created event stay, a
      // deleted event joins them (docs/api.md §14; perSource counts the created history).
      expect(await store.deleteById(first.id, "a", change())).toBe(true);
      expect(store.bytesUsed()).toBe(2 * pair - perSource + DELETED_HISTORY);
      expect(await store.deleteByAltId(second.altId, "a", change())).toBe(true);
      // An empty session still costs its overhead, and its history, until it expires.
      expect(store.bytesUsed()).toBe(SESSION_OVERHEAD_BYTES + 2 * DELETED_HISTORY + pair);

      clock.now = 1_001;
      expect(await store.list(listQuery("b"))).toEqual([]);
      // b expired on its read; a (not read) still holds its overhead and its history.
      expect(store.bytesUsed()).toBe(SESSION_OVERHEAD_BYTES + 2 * DELETED_HISTORY);
      await store.close();
      expect(store.bytesUsed()).toBe(0);
    });
  });

  describe("eviction", () => {
    it("evicts the least recently used idle session first, and only as many as needed", async () => {
      open({ maxBytes: 3 * pair });
      const [a, b, c] = [sources("a", 2), sources("b", 2), sources("c", 2)];
      for (const records of [a, b, c]) await store.insertMany(records);
      await nextTurn();
      // a's use makes b the least recently used.
      expect(await store.list(listQuery("a"))).toHaveLength(2);
      await nextTurn();

      const d = sources("d", 2);
      await store.insertMany(d);
      await nextTurn();
      expect(store.sessionCount()).toBe(3);
      expect(store.bytesUsed()).toBe(3 * pair);
      expect(await store.list(listQuery("b"))).toEqual([]);
      // These reads use a, c and d in this order: a is now the least recently used.
      expect(await holds("a", a)).toBe(true);
      expect(await holds("c", c)).toBe(true);
      expect(await holds("d", d)).toBe(true);
      // The evicted session's ids are gone, for its account and for an admin alike.
      for (const record of b) {
        expect(await store.get(record.id, "b")).toBeNull();
        expect(await store.get(record.id, null)).toBeNull();
        expect(await store.deleteById(record.id, null, change())).toBe(false);
      }
      await nextTurn();
      // Its alt_ids are free again; opening it anew evicts a.
      const again = await store.insertMany(b.map((r) => makeRecord({ accountId: "b", altId: r.altId })));
      expect(again.map((r) => r.altId)).toEqual(b.map((r) => r.altId));
      expect(await store.get(a[0].id, "a")).toBeNull();
      expect(await store.get(c[0].id, "c")).not.toBeNull();
      expect(store.bytesUsed()).toBeLessThanOrEqual(3 * pair);
    });

    it("evicts several idle sessions when one create needs their room, oldest first", async () => {
      open({ maxBytes: 4 * pair });
      const held = new Map<string, NewSourceRecord[]>();
      for (const account of ["a", "b", "c", "d"]) {
        const records = sources(account, 2);
        await store.insertMany(records);
        held.set(account, records);
      }
      await nextTurn();
      // Four sources and a session: a and b go (a pair each is not enough alone), c and d stay.
      await store.insertMany(sources("e", 4));
      expect(store.sessionCount()).toBe(3);
      expect(await store.get(held.get("a")?.[0].id ?? "", "a")).toBeNull();
      expect(await store.get(held.get("b")?.[0].id ?? "", "b")).toBeNull();
      expect(await store.get(held.get("c")?.[0].id ?? "", "c")).not.toBeNull();
      expect(await store.get(held.get("d")?.[0].id ?? "", "d")).not.toBeNull();
    });

    it("never evicts a session with a call in flight, even the least recently used one", async () => {
      open({ maxBytes: 3 * pair });
      const [a] = await store.insertMany(sources("a", 2));
      const [b] = await store.insertMany(sources("b", 2));
      const [c] = await store.insertMany(sources("c", 2));
      await nextTurn();

      // An admin's read holds a in flight for this turn without making it more recent: a is still
      // the least recently used, yet b is the one evicted.
      expect(await store.get(a.id, null)).not.toBeNull();
      await store.insertMany(sources("d", 2));
      expect(await store.get(a.id, null)).not.toBeNull();
      expect(await store.get(b.id, null)).toBeNull();
      expect(await store.get(c.id, null)).not.toBeNull();
    });

    it("refuses with a retry hint, evicting nobody, while only sessions in flight hold the room", async () => {
      open({ maxBytes: 3 * pair });
      for (const account of ["a", "b", "c"]) await store.insertMany(sources(account, 2));
      await nextTurn();

      // An admin's list holds every session it answers from.
      expect(await store.list(listQuery(null))).toHaveLength(6);
      const error = await refusal(store.insertMany(sources("d", 2)));
      expect([error.unit, error.limit, error.retryAfterS]).toEqual(["bytes", 3 * pair, RETRY_AFTER_S]);
      expect(store.sessionCount()).toBe(3);
      expect(await store.list(listQuery("d"))).toEqual([]);

      // A turn later nothing is in flight any more: the same create evicts the oldest and succeeds.
      await nextTurn();
      await expect(store.insertMany(sources("d", 2))).resolves.toHaveLength(2);
      expect(store.sessionCount()).toBe(3);
    });

    it("evicts nobody when the idle sessions cannot free enough: the refusal is all or nothing", async () => {
      open({ maxBytes: 3 * pair });
      const [a] = await store.insertMany(sources("a", 2));
      const [b] = await store.insertMany(sources("b", 2));
      const [c] = await store.insertMany(sources("c", 2));
      await nextTurn();

      // a is in flight; b and c together (two overheads, four sources) free less than a new session
      // of this many sources needs, which alone would fit the budget.
      const needed = Math.floor(SESSION_OVERHEAD_BYTES / perSource) + 6;
      expect(await store.get(a.id, null)).not.toBeNull();
      const error = await refusal(store.insertMany(sources("d", needed)));
      expect([error.unit, error.retryAfterS]).toEqual(["bytes", RETRY_AFTER_S]);
      for (const [id, account] of [
        [a.id, "a"],
        [b.id, "b"],
        [c.id, "c"],
      ]) {
        expect(await store.get(id, account)).not.toBeNull();
      }
      expect(store.bytesUsed()).toBe(3 * pair);
    });

    it("refuses a session that alone would outgrow the budget like a full session: no retry hint, nobody evicted", async () => {
      open({ maxBytes: pair + perSource });
      const [a] = await store.insertMany(sources("a", 2));
      await nextTurn();

      const error = await refusal(store.insertMany(sources("b", 4)));
      expect([error.unit, error.limit, error.retryAfterS]).toEqual(["bytes", pair + perSource, undefined]);
      expect(await store.get(a.id, "a")).not.toBeNull();
      // Growing one's own session past the budget is refused the same way.
      await store.insertMany(sources("a", 1));
      const own = await refusal(store.insertMany(sources("a", 1)));
      expect([own.unit, own.retryAfterS]).toEqual(["bytes", undefined]);
    });

    it("counts each new source's created event in the room a create needs: the budget is never passed", async () => {
      // perSource counts the created history (CREATED_HISTORY_BYTES) with the source: a create adds both.
      // A budget 50 bytes short of two full sessions of two: b's second source fits only once the
      // idle session a is evicted; counting the sources without their events, it seems to fit as is.
      const maxBytes = 2 * pair - 50;
      open({ maxBytes });
      const [a] = await store.insertMany(sources("a", 2));
      await store.insertMany(sources("b", 1));
      await nextTurn();

      await store.insertMany(sources("b", 1));
      expect(store.bytesUsed()).toBeLessThanOrEqual(maxBytes);
      expect(await store.get(a.id, "a")).toBeNull();

      // A lone session that fits the budget only without its events is refused.
      await store.close();
      open({ maxBytes: SESSION_OVERHEAD_BYTES + 2 * perSource - EVENT_BYTES });
      const outcome = await store.insertMany(sources("c", 2)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(store.bytesUsed()).toBeLessThanOrEqual(SESSION_OVERHEAD_BYTES + 2 * perSource - EVENT_BYTES);
      expect(outcome).toBeInstanceOf(CapacityExceededError);
    });

    it("evicts nobody for a create refused for another reason (a taken alt_id, a full session)", async () => {
      // Room for a and b as they are, not for one more source in b without evicting a.
      open({ maxBytes: pair + SESSION_OVERHEAD_BYTES + perSource, maxPerSession: 2 });
      const [a] = await store.insertMany(sources("a", 2));
      const [b] = await store.insertMany(sources("b", 1));
      await nextTurn();

      const clash = [makeRecord({ accountId: "b", altId: b.altId })];
      await expect(store.insertMany(clash)).rejects.toBeInstanceOf(AltIdTakenError);
      await expect(store.insertMany(sources("b", 3))).rejects.toBeInstanceOf(CapacityExceededError);
      expect(await store.get(a.id, "a")).not.toBeNull();
      expect(store.sessionCount()).toBe(2);
    });
  });

  describe("session count", () => {
    it("a create that opens one session too many evicts the least recently used idle session", async () => {
      open({ maxSessions: 2 });
      const [a] = await store.insertMany(sources("a", 1));
      const [b] = await store.insertMany(sources("b", 1));
      await nextTurn();

      const [c] = await store.insertMany(sources("c", 1));
      expect(store.sessionCount()).toBe(2);
      expect(await store.get(a.id, null)).toBeNull();
      // Creates in sessions that exist open none, and evict nobody.
      await store.insertMany(sources("b", 3));
      await store.insertMany(sources("c", 3));
      expect(store.sessionCount()).toBe(2);
      expect(await store.get(b.id, null)).not.toBeNull();
      expect(await store.get(c.id, null)).not.toBeNull();
    });

    it("is refused with a retry hint when every session is in flight", async () => {
      open({ maxSessions: 2 });
      await store.insertMany(sources("a", 1));
      await store.insertMany(sources("b", 1));
      // Both were written this turn: both are in flight.
      const error = await refusal(store.insertMany(sources("c", 1)));
      expect([error.unit, error.limit, error.retryAfterS]).toEqual(["sessions", 2, RETRY_AFTER_S]);
      expect(store.sessionCount()).toBe(2);
      await nextTurn();
      await expect(store.insertMany(sources("c", 1))).resolves.toHaveLength(1);
    });

    it("counts an expired session as the least recently used, whatever it holds", async () => {
      const clock = { now: 0 };
      open({ maxSessions: 2, ttlMs: 1_000, now: () => clock.now });
      await store.insertMany(sources("a", 1));
      clock.now = 600;
      const [b] = await store.insertMany(sources("b", 1));
      clock.now = 1_200;
      await nextTurn();
      await store.insertMany(sources("c", 1));
      expect(await store.get(b.id, "b")).not.toBeNull();
      expect(store.sessionCount()).toBe(2);
    });
  });

  describe("a flood of accounts", () => {
    it("50 accounts past the budget: the accounted bytes never pass it, the newest sessions are kept", async () => {
      const maxBytes = 8 * (SESSION_OVERHEAD_BYTES + 20 * perSource);
      open({ maxBytes, maxSessions: 20 });
      const firstIds: string[] = [];
      for (let account = 0; account < 50; account++) {
        const [first] = await store.insertMany(sources(`acct-${account}`, 20));
        firstIds.push(first.id);
        expect(store.bytesUsed()).toBeLessThanOrEqual(maxBytes);
        await nextTurn();
      }
      expect(store.sessionCount()).toBe(8);
      for (let account = 0; account < 50; account++) {
        const kept = (await store.get(firstIds[account], `acct-${account}`)) !== null;
        expect(kept, `acct-${account}`).toBe(account >= 42);
      }
    });
  });
});
