/**
 * The ledger's side of the exact-test allowance (docs/api.md §13), over the SQLite store on
 * `:memory:` and the sandbox store: a page whose store read stopped with a record ends there, its
 * token resuming after the last candidate tested (not after its last record, which would test the
 * same candidates again); a page that holds none reads on from where the read stopped, in a later
 * turn of the event loop (a callback queued before the search runs between the two reads), with
 * the offset's matches still skipped; no page is empty but the last, or one that found nothing in
 * READ_ON_TURNS reads (its token goes on from there, with the offset's matches still to skip).
 *
 * The ledger, in list order: a small source on a square "donut" area, three sources of 100,000
 * positions in its hole (two spend a read's allowance), two more small sources on the donut.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SearchArea, SourceGeometry } from "../../src/geo/types.js";
import { createLedger, type Ledger } from "../../src/ledger/ledger.js";
import { EXACT_TEST_POSITIONS, POSITIONS_PER_TEST, READ_ON_TURNS } from "../../src/model/exact-tests.js";
import type { ListQuery } from "../../src/model/list-query.js";
import type { Principal } from "../../src/model/principal.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import type { SourceStore } from "../../src/store/port.js";
import { createSandboxStore } from "../../src/store/sandbox/index.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { makeRecord } from "../contract/fixtures.js";
import { circleRing, polygon } from "../geo/fixtures.js";
import { ring } from "../support/geometry-fixtures.js";

const ACCOUNT = "acct_a";
const user: Principal = {
  subject: "client-a",
  accountId: ACCOUNT,
  role: null,
  isAdmin: false,
  scopes: new Set(["read:sources"]),
  actor: "Farm Co",
  expiresAt: 4_000_000_000,
};
const DECOY_POSITIONS = 100_000;

/** A circle of DECOY_POSITIONS positions (the last closing it) of radius 0.2° around (x, y). */
function circle(x: number, y: number): SourceGeometry {
  return polygon(circleRing(x, y, 0.2, DECOY_POSITIONS - 1));
}

/** [-1, 20]² with a hole [0.01, 19]²; and one around the decoys only, [-1, 5] × [-1, 20] with a hole. */
const DONUT: SearchArea = { type: "Polygon", coordinates: [ring(-1, -1, 20, 20), ring(0.01, 0.01, 19, 19).reverse()] };
const AROUND_DECOYS: SearchArea = {
  type: "Polygon",
  coordinates: [ring(-1, -1, 5, 20), ring(0.01, 0.01, 4.9, 19).reverse()],
};

const STORES: { name: string; open: () => SourceStore }[] = [
  { name: "SQLite :memory:", open: () => openSqliteStore({ path: ":memory:" }) },
  { name: "sandbox store", open: () => createSandboxStore({ ttlMs: 3_600_000 }) },
];

describe.each(STORES)("over the $name", ({ open }) => {
  let store: SourceStore;
  let ledger: Ledger;
  /** Every read of the store, with the number of turns of the event loop that had passed. */
  let reads: { query: ListQuery; turn: number }[];
  let turn: number;
  let matches: NewSourceRecord[];
  let decoys: NewSourceRecord[];

  beforeEach(async () => {
    expect(2 * DECOY_POSITIONS).toBeGreaterThanOrEqual(EXACT_TEST_POSITIONS);
    expect(DECOY_POSITIONS).toBeLessThan(EXACT_TEST_POSITIONS);
    store = open();
    reads = [];
    turn = 0;
    ledger = ledgerOver(spyOnList(store, (query) => reads.push({ query, turn })));
    // makeRecord's created times increase call by call: this is the list order.
    const onTheRing = (i: number) => makeRecord({ accountId: ACCOUNT, geometry: square(19.5, 1 + i) });
    const first = onTheRing(0);
    decoys = [0, 1, 2].map((i) => makeRecord({ accountId: ACCOUNT, geometry: circle(1 + i * 0.5, 1) }));
    matches = [first, onTheRing(1), onTheRing(2)];
    await store.insertMany([matches[0], ...decoys, matches[1], matches[2]]);
  });

  afterEach(async () => {
    await store.close();
  });

  /** Counts the turns of the event loop while `work` runs: a callback queued per turn. */
  async function countingTurns<T>(work: () => Promise<T>): Promise<T> {
    let running = true;
    const tick = () => {
      if (!running) return;
      turn += 1;
      setImmediate(tick);
    };
    setImmediate(tick);
    try {
      return await work();
    } finally {
      running = false;
    }
  }

  it("ends a page holding a record where the read stopped; the next page starts after the last candidate tested", async () => {
    const first = await ledger.search(user, { area: DONUT, filters: {}, limit: 10 });
    expect(first.records.map((r) => r.id)).toEqual([matches[0].id]);
    expect(first.nextPageToken).not.toBeNull();
    expect(reads).toHaveLength(1);
    const second = await ledger.search(user, {
      area: DONUT,
      filters: {},
      limit: 10,
      pageToken: first.nextPageToken ?? "",
    });
    expect(second.records.map((r) => r.id)).toEqual([matches[1].id, matches[2].id]);
    expect(second.nextPageToken).toBeNull();
    // After the second decoy, the last one tested: not after the page's record, which would test
    // both decoys again.
    expect(reads[1].query.after).toEqual({ createdAt: decoys[1].createdAt, id: decoys[1].id });
  });

  it("reads on in a later turn when a read stopped before any record, skipping the offset's matches", async () => {
    const page = await countingTurns(() => ledger.search(user, { area: DONUT, filters: {}, limit: 10, offset: 2 }));
    // The first read skipped the first match and stopped after two decoys; the second went on
    // after the second decoy with one match still to skip, in a later turn.
    expect(page.records.map((r) => r.id)).toEqual([matches[2].id]);
    expect(page.nextPageToken).toBeNull();
    expect(reads.map((r) => [r.query.after?.id, r.query.offset])).toEqual([
      [undefined, 2],
      [decoys[1].id, 1],
    ]);
    expect(reads[1].turn).toBeGreaterThan(reads[0].turn);
  });

  it("answers one empty last page, without a token, where only decoys meet the area", async () => {
    const page = await countingTurns(() => ledger.search(user, { area: AROUND_DECOYS, filters: {}, limit: 10 }));
    expect(page).toMatchObject({ records: [], nextPageToken: null });
    expect(reads).toHaveLength(2);
    expect(reads[1].turn).toBeGreaterThan(reads[0].turn);
  });
});

describe("over the SQLite store, an account of decoys past READ_ON_TURNS reads", () => {
  let store: SourceStore;
  let ledger: Ledger;
  let reads: ListQuery[];
  let decoys: NewSourceRecord[];
  let matches: NewSourceRecord[];

  beforeEach(async () => {
    store = openSqliteStore({ path: ":memory:" });
    reads = [];
    ledger = ledgerOver(spyOnList(store, (query) => reads.push(query)));
    // Two decoys a read: READ_ON_TURNS reads test 2 × READ_ON_TURNS of them, and one more follows.
    const geometry = circle(1, 1);
    decoys = Array.from({ length: 2 * READ_ON_TURNS + 1 }, () => makeRecord({ accountId: ACCOUNT, geometry }));
    matches = [0, 1].map((i) => makeRecord({ accountId: ACCOUNT, geometry: square(19.5, 1 + i) }));
    await store.insertMany([...decoys, ...matches]);
  }, 60_000);

  afterEach(async () => {
    await store.close();
  });

  it("answers an empty page after READ_ON_TURNS reads, with a token that goes on after the last decoy tested", async () => {
    const first = await ledger.search(user, { area: DONUT, filters: {}, limit: 10 });
    expect(first.records).toEqual([]);
    expect(first.nextPageToken).not.toBeNull();
    expect(reads).toHaveLength(READ_ON_TURNS);
    const second = await ledger.search(user, {
      area: DONUT,
      filters: {},
      limit: 10,
      pageToken: first.nextPageToken ?? "",
    });
    expect(second.records.map((r) => r.id)).toEqual(matches.map((m) => m.id));
    expect(second.nextPageToken).toBeNull();
    const lastTested = decoys[2 * READ_ON_TURNS - 1];
    expect(reads[READ_ON_TURNS].after).toEqual({ createdAt: lastTested.createdAt, id: lastTested.id });
  });

  it("reads no further once the caller's signal aborts: an empty page whose token goes on after the last read", async () => {
    const gone = new AbortController();
    ledger = ledgerOver(
      spyOnList(store, (query) => {
        reads.push(query);
        if (reads.length === 2) gone.abort();
      }),
    );
    const first = await ledger.search(user, { area: DONUT, filters: {}, limit: 10, signal: gone.signal });
    expect(first.records).toEqual([]);
    expect(reads).toHaveLength(2);
    const second = await ledger.search(user, {
      area: DONUT,
      filters: {},
      limit: 10,
      pageToken: first.nextPageToken ?? "",
    });
    // Two decoys a read: the next page starts after the fourth.
    expect(reads[2].after).toEqual({ createdAt: decoys[3].createdAt, id: decoys[3].id });
    expect(second.records.map((r) => r.id)).toEqual(matches.map((m) => m.id));
  });

  it("carries the offset's matches still to skip in that token", async () => {
    const first = await ledger.search(user, { area: DONUT, filters: {}, limit: 10, offset: 1 });
    expect(first.records).toEqual([]);
    const second = await ledger.search(user, {
      area: DONUT,
      filters: {},
      limit: 10,
      pageToken: first.nextPageToken ?? "",
    });
    // The first match skipped by the token, not by an offset given again.
    expect(second.records.map((r) => r.id)).toEqual([matches[1].id]);
    expect(reads[READ_ON_TURNS].offset).toBe(1);
  });
});

describe("over the SQLite store, an as_of list whose filter matches only its last sources", () => {
  it("reads on over turns, each bounded (every source read costs), and answers the matches; past them, the end; a caller gone stops it", async () => {
    const store = openSqliteStore({ path: ":memory:" });
    try {
      const reads: ListQuery[] = [];
      const ledger = ledgerOver(spyOnList(store, (query) => reads.push(query)));
      // One read takes EXACT_TEST_POSITIONS / POSITIONS_PER_TEST sources: these need two, and a bit.
      const perRead = EXACT_TEST_POSITIONS / POSITIONS_PER_TEST;
      const count = Math.ceil(perRead * 2.2);
      const records = Array.from({ length: count }, (_, i) =>
        makeRecord({ accountId: ACCOUNT, methodology: i >= count - 2 ? "M-kept" : "M-other" }),
      );
      let asOf = 0;
      for (let i = 0; i < count; i += 1_000) {
        for (const stored of await store.insertMany(records.slice(i, i + 1_000)))
          asOf = Math.max(asOf, stored.createdAt);
      }
      const page = await ledger.list(user, { filters: { methodology: "M-kept" }, limit: 10, asOf: asOf + 1 });
      expect(page.records.map((r) => r.id)).toEqual(records.slice(-2).map((r) => r.id));
      expect(page.nextPageToken).toBeNull();
      expect(reads).toHaveLength(3);
      // A list (not only a search) whose caller is gone after its first read reads no further.
      const gone = new AbortController();
      const counted: ListQuery[] = [];
      const abandoned = ledgerOver(
        spyOnList(store, (query) => {
          counted.push(query);
          gone.abort();
        }),
      );
      const cut = await abandoned.list(user, {
        filters: { methodology: "M-kept" },
        limit: 10,
        asOf: asOf + 1,
        signal: gone.signal,
      });
      expect(cut.records).toEqual([]);
      expect(cut.nextPageToken).not.toBeNull();
      expect(counted).toHaveLength(1);
    } finally {
      await store.close();
    }
  }, 60_000);
});

/** A production ledger over `store`. */
function ledgerOver(store: SourceStore): Ledger {
  let ids = 0;
  return createLedger({
    environment: "production",
    store,
    secret: new Uint8Array(32).fill(7),
    newId: () => `id-${++ids}`,
  });
}

/** `store`, telling `seen` of every list query before running it. */
function spyOnList(store: SourceStore, seen: (query: ListQuery) => void): SourceStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === "list") {
        return (query: ListQuery) => {
          seen(query);
          return target.list(query);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function square(x: number, y: number): SourceGeometry {
  return { type: "Polygon", coordinates: [ring(x, y, x + 0.2, y + 0.2)] };
}
