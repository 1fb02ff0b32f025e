import { describe, expect, it } from "vitest";
import { HEAP_GROWING_PERCENT, limitHeapGrowth } from "../src/heap.js";

describe("the heap's growth", () => {
  it("is set to 2× unless the command line sets it, in either spelling", () => {
    expect(HEAP_GROWING_PERCENT).toBe(100);
    const set: string[] = [];
    const record = (flags: string) => void set.push(flags);
    expect(limitHeapGrowth(["--max-semi-space-size=8", "--import", "tsx"], record)).toBe(true);
    expect(set).toEqual(["--heap-growing-percent=100"]);
    for (const operator of [
      ["--heap-growing-percent=50"],
      ["--heap_growing_percent=50"],
      ["--heap-growing_percent=50"],
    ]) {
      expect(limitHeapGrowth(operator, record)).toBe(false);
    }
    expect(limitHeapGrowth(["--heap-growing-percentage=50"], record)).toBe(true);
    expect(set).toHaveLength(2);
  });
});
