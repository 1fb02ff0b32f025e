/** collectPage and collectInBatches (src/store/page-collector.ts): the page loops the stores share. */
import { describe, expect, it } from "vitest";
import { ExactTestAllowance, POSITIONS_PER_TEST } from "../../src/model/exact-tests.js";
import { collectInBatches, collectPage, FIRST_BATCH } from "../../src/store/page-collector.js";
import { square } from "../contract/fixtures.js";

const even = (n: number) => (n % 2 === 0 ? n : null);
const numbers = (count: number) => Array.from({ length: count }, (_, i) => i);
/** Candidate n stands at (n, "n") in list order. */
const cursorOf = (n: number) => ({ createdAt: n, id: String(n) });
/** Five positions: one exact test of it spends TEST. */
const SQUARE = square(0, 0, 1);
const TEST = 5 + POSITIONS_PER_TEST;

describe("collectPage", () => {
  it("keeps what read accepts, skips offset of those (not of the candidates), stops at limit", () => {
    expect(collectPage(numbers(20), even, { offset: 2, limit: 3 }, () => 0, cursorOf)).toEqual([4, 6, 8]);
  });

  it("stops one record past where the kept text reaches the budget", () => {
    // Each record is worth its value in characters: 0+2+4 = 6 reaches 5 after 4; 6 is the one past.
    expect(collectPage(numbers(20), even, { offset: 0, limit: 100, maxGeometryChars: 5 }, (n) => n, cursorOf)).toEqual([
      0, 2, 4, 6,
    ]);
  });

  it("reads candidates lazily and closes the iterator when it stops", () => {
    let read = 0;
    let closed = false;
    function* candidates() {
      try {
        for (const n of numbers(1000)) {
          read += 1;
          yield n;
        }
      } finally {
        closed = true;
      }
    }
    expect(
      collectPage(
        candidates(),
        (n) => n,
        { offset: 0, limit: 2 },
        () => 0,
        cursorOf,
      ),
    ).toEqual([0, 1]);
    expect(read).toBe(2);
    expect(closed).toBe(true);
    closed = false;
    expect(
      collectPage(
        candidates(),
        (n) => n,
        { offset: 0, limit: 0 },
        () => 0,
        cursorOf,
      ),
    ).toEqual([]);
    expect(closed).toBe(true);
  });
});

describe("collectPage with an exact tests' allowance", () => {
  /** Every candidate is tested (spending TEST); multiples of three match. */
  const testing = (exactTests: ExactTestAllowance) => (n: number) => {
    exactTests.spendOn(SQUARE);
    return n % 3 === 0 ? n : null;
  };

  it("stops after the candidate that spends it when another follows, and says where to resume", () => {
    const exactTests = new ExactTestAllowance(TEST * 8);
    // Tests of 0..7: matches 0, 3, 6; the offset skips 0; the eighth test (candidate 7) spends it.
    const page = collectPage(
      numbers(100),
      testing(exactTests),
      { offset: 1, limit: 10, exactTests },
      () => 0,
      cursorOf,
    );
    expect(page).toEqual([3, 6]);
    expect(exactTests.stoppedAt).toEqual({ createdAt: 7, id: "7", skip: 0 });
  });

  it("stopped within the offset, keeps the matches still to skip", () => {
    const exactTests = new ExactTestAllowance(TEST * 4);
    // Tests of 0..3: matches 0 and 3, both skipped of an offset of 5: 3 more to skip after candidate 3.
    const page = collectPage(
      numbers(100),
      testing(exactTests),
      { offset: 5, limit: 10, exactTests },
      () => 0,
      cursorOf,
    );
    expect(page).toEqual([]);
    expect(exactTests.stoppedAt).toEqual({ createdAt: 3, id: "3", skip: 3 });
  });

  it("a page that fills as the allowance runs out is full, not stopped", () => {
    const exactTests = new ExactTestAllowance(TEST * 7);
    // The seventh test (candidate 6) both spends it and fills the page of three.
    const page = collectPage(numbers(100), testing(exactTests), { offset: 0, limit: 3, exactTests }, () => 0, cursorOf);
    expect(page).toEqual([0, 3, 6]);
    expect(exactTests.stoppedAt).toBeUndefined();
  });

  it("spent by the last candidate, the listing ends: nothing is left to resume", () => {
    const exactTests = new ExactTestAllowance(TEST * 7);
    const page = collectPage(numbers(7), testing(exactTests), { offset: 0, limit: 10, exactTests }, () => 0, cursorOf);
    expect(page).toEqual([0, 3, 6]);
    expect(exactTests.exhausted).toBe(true);
    expect(exactTests.stoppedAt).toBeUndefined();
  });

  it("reads every candidate while the allowance lasts", () => {
    const exactTests = new ExactTestAllowance(TEST * 100);
    const page = collectPage(
      numbers(30),
      testing(exactTests),
      { offset: 0, limit: 100, exactTests },
      () => 0,
      cursorOf,
    );
    expect(page).toEqual([0, 3, 6, 9, 12, 15, 18, 21, 24, 27]);
    expect(exactTests.exhausted).toBe(false);
    expect(exactTests.stoppedAt).toBeUndefined();
  });
});

describe("collectInBatches", () => {
  /** A listing of records whose sizes are `sizes`, with the batches asked for recorded. */
  function listing(sizes: number[]) {
    const asked: [number, number][] = [];
    const fetch = (count: number, skip: number) => {
      asked.push([count, skip]);
      return sizes.slice(skip, skip + count).map((size, i) => ({ at: skip + i, size }));
    };
    return { asked, fetch };
  }
  const sizeOf = (r: { size: number }) => r.size;

  it("keeps what collectPage keeps, for any sizes, limit and budget", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 500; round++) {
      const sizes = Array.from({ length: Math.floor(random() * 60) }, () => Math.floor(random() ** 3 * 1_000));
      const limit = 1 + Math.floor(random() * 70);
      const maxGeometryChars = Math.floor(random() * 5_000);
      const { fetch } = listing(sizes);
      const batched = collectInBatches(fetch, { limit, maxGeometryChars }, sizeOf).map((r) => r.at);
      const expected = collectPage(
        sizes.map((size, at) => ({ at, size })),
        (r) => r,
        { offset: 0, limit, maxGeometryChars },
        sizeOf,
        (r) => ({ createdAt: r.at, id: String(r.at) }),
      ).map((r) => r.at);
      expect(batched, JSON.stringify({ sizes, limit, maxGeometryChars })).toEqual(expected);
    }
  });

  it("reads a page of small records in two batches: the first FIRST_BATCH, then the rest the budget holds", () => {
    const { asked, fetch } = listing(Array.from({ length: 500 }, () => 10));
    expect(collectInBatches(fetch, { limit: 101, maxGeometryChars: 1_000_000 }, sizeOf)).toHaveLength(101);
    expect(asked).toEqual([
      [FIRST_BATCH, 0],
      [101 - FIRST_BATCH, FIRST_BATCH],
    ]);
  });

  it("reads large records a few at a time: never much past the budget", () => {
    const { asked, fetch } = listing(Array.from({ length: 1_000 }, () => 1_000));
    const page = collectInBatches(fetch, { limit: 1_000, maxGeometryChars: 20_000 }, sizeOf);
    // 20 records reach the budget; the 21st is the one past it.
    expect(page).toHaveLength(21);
    const read = asked.reduce((total, [count]) => total + count, 0);
    expect(read).toBeLessThanOrEqual(2 * 21);
    expect(asked[0]).toEqual([FIRST_BATCH, 0]);
    expect(asked[1]).toEqual([13, FIRST_BATCH]);
  });

  it("stops asking once the listing ends", () => {
    const { asked, fetch } = listing([1, 1, 1]);
    expect(collectInBatches(fetch, { limit: 100, maxGeometryChars: 1_000 }, sizeOf)).toHaveLength(3);
    expect(asked).toEqual([[FIRST_BATCH, 0]]);
  });
});
