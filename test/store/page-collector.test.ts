/** collectPage (src/store/page-collector.ts): the page loop every store with an exact test shares. */
import { describe, expect, it } from "vitest";
import { collectPage } from "../../src/store/page-collector.js";

const even = (n: number) => (n % 2 === 0 ? n : null);
const numbers = (count: number) => Array.from({ length: count }, (_, i) => i);

describe("collectPage", () => {
  it("keeps what read accepts, skips offset of those (not of the candidates), stops at limit", () => {
    expect(collectPage(numbers(20), even, { offset: 2, limit: 3 }, () => 0)).toEqual([4, 6, 8]);
  });

  it("stops one record past where the kept text reaches the budget", () => {
    // Each record is worth its value in characters: 0+2+4 = 6 reaches 5 after 4; 6 is the one past.
    expect(collectPage(numbers(20), even, { offset: 0, limit: 100, maxGeometryChars: 5 }, (n) => n)).toEqual([
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
      ),
    ).toEqual([]);
    expect(closed).toBe(true);
  });
});
