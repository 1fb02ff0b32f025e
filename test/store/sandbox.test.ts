import { afterEach, describe, expect, it, vi } from "vitest";
import { CapacityExceededError, StoreUnavailableError } from "../../src/store/port.js";
import { createSandboxStore, type SandboxSourceStore } from "../../src/store/sandbox/index.js";
import { change, listQuery, makeRecord, stored } from "../contract/fixtures.js";
import { describeSourceStoreContract } from "../contract/source-store-contract.js";

// The sandbox finds no conflicts (docs/api.md §7), so it runs the plain history part only, and
// lets a deleted source's record go with it (its memory is its budget).
describeSourceStoreContract(
  "sandbox (memory)",
  async () => {
    const store = createSandboxStore({ ttlMs: 60 * 60 * 1000 });
    return { store, cleanup: () => store.close() };
  },
  { keepsRecordOfDeleted: false },
);

const TTL = 1_000;

/** A store on a hand-driven clock, with the periodic sweep effectively off. */
function storeOnClock(options: { maxPerSession?: number } = {}) {
  const clock = { now: 0 };
  const store = createSandboxStore({ ttlMs: TTL, now: () => clock.now, sweepIntervalMs: 24 * 3600_000, ...options });
  return { store, clock };
}

describe("sandbox store", () => {
  let store: SandboxSourceStore | undefined;

  afterEach(async () => {
    await store?.close();
    vi.useRealTimers();
  });

  describe("idle expiry", () => {
    it("keeps a session used within the TTL and drops it once idle for longer", async () => {
      const setup = storeOnClock();
      store = setup.store;
      const record = makeRecord({ accountId: "a" });
      await store.insertMany([record]);

      setup.clock.now = TTL;
      expect(await store.get(record.id, "a")).toStrictEqual(stored(record));

      setup.clock.now = 2 * TTL + 1;
      expect(await store.get(record.id, "a")).toBeNull();
      expect(await store.list(listQuery("a"))).toEqual([]);
      expect(store.sessionCount()).toBe(0);
    });

    it("restarts the idle timer on reads as well as writes", async () => {
      const setup = storeOnClock();
      store = setup.store;
      const record = makeRecord({ accountId: "a" });
      await store.insertMany([record]);

      for (const at of [800, 1600, 2400, 3200]) {
        setup.clock.now = at;
        expect(await store.list(listQuery("a"))).toHaveLength(1);
      }
      setup.clock.now = 3200 + TTL;
      expect(await store.deleteByAltId("missing", "a", change())).toBe(false);
      setup.clock.now = 3200 + 2 * TTL;
      expect(await store.get(record.id, "a")).toStrictEqual(stored(record));
    });

    it("starts an expired account over with an empty session, its alt_ids free", async () => {
      const setup = storeOnClock();
      store = setup.store;
      await store.insertMany([makeRecord({ accountId: "a", altId: "x" })]);

      setup.clock.now = TTL + 1;
      const again = makeRecord({ accountId: "a", altId: "x" });
      await store.insertMany([again]);
      expect(await store.list(listQuery("a"))).toStrictEqual([stored(again)]);
    });

    it("does not keep sessions alive through admin reads across accounts", async () => {
      const setup = storeOnClock();
      store = setup.store;
      const record = makeRecord({ accountId: "a" });
      await store.insertMany([record]);

      setup.clock.now = 800;
      expect(await store.list(listQuery(null))).toHaveLength(1);
      expect(await store.get(record.id, null)).not.toBeNull();
      setup.clock.now = TTL + 1;
      expect(await store.list(listQuery(null))).toEqual([]);
      expect(await store.get(record.id, null)).toBeNull();
    });

    it("frees expired sessions with the periodic sweep, without any access", async () => {
      vi.useFakeTimers();
      store = createSandboxStore({ ttlMs: TTL, sweepIntervalMs: 100 });
      await store.insertMany([makeRecord({ accountId: "a" })]);
      await store.insertMany([makeRecord({ accountId: "b" })]);
      vi.advanceTimersByTime(500);
      await store.insertMany([makeRecord({ accountId: "c" })]);
      expect(store.sessionCount()).toBe(3);

      vi.advanceTimersByTime(TTL);
      expect(store.sessionCount()).toBe(1);
      vi.advanceTimersByTime(200);
      expect(store.sessionCount()).toBe(0);
    });

    it("stops the sweep and drops everything on close", async () => {
      vi.useFakeTimers();
      store = createSandboxStore({ ttlMs: TTL, sweepIntervalMs: 100 });
      await store.insertMany([makeRecord({ accountId: "a" })]);
      expect(vi.getTimerCount()).toBe(1);

      await store.close();
      expect(vi.getTimerCount()).toBe(0);
      expect(store.sessionCount()).toBe(0);
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it("rejects a non-positive TTL", () => {
      expect(() => createSandboxStore({ ttlMs: 0 })).toThrow(RangeError);
    });
  });

  describe("capacity", () => {
    const DEFAULT_CAPACITY = 10_000;
    const batch = (count: number, accountId = "a") => Array.from({ length: count }, () => makeRecord({ accountId }));

    it("holds 10,000 sources a session by default and rejects the next, storing nothing", async () => {
      store = createSandboxStore({ ttlMs: TTL * 3600 });
      for (let i = 0; i < 10; i++) await store.insertMany(batch(DEFAULT_CAPACITY / 10));

      const error = await store.insertMany(batch(2)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CapacityExceededError);
      expect((error as CapacityExceededError).limit).toBe(DEFAULT_CAPACITY);
      expect(await store.list(listQuery("a", { limit: DEFAULT_CAPACITY + 10 }))).toHaveLength(DEFAULT_CAPACITY);
    });

    it("rejects a single batch over the cap without creating the session", async () => {
      store = createSandboxStore({ ttlMs: TTL * 3600 });

      await expect(store.insertMany(batch(DEFAULT_CAPACITY + 1))).rejects.toBeInstanceOf(CapacityExceededError);
      expect(store.sessionCount()).toBe(0);
    });

    it("counts per account, and deleting frees room", async () => {
      store = storeOnClock({ maxPerSession: 3 }).store;
      const [first] = await store.insertMany(batch(3, "a"));
      await store.insertMany(batch(3, "b"));

      await expect(store.insertMany(batch(1, "a"))).rejects.toBeInstanceOf(CapacityExceededError);
      expect(await store.deleteById(first.id, "a", change())).toBe(true);
      await expect(store.insertMany(batch(1, "a"))).resolves.toHaveLength(1);
    });
  });
});
