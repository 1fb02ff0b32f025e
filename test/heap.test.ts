import { describe, expect, it } from "vitest";
import { HEAP_GROWING_PERCENT, limitHeapGrowth } from "../src/heap.js";

describe("the heap's growth", () => {
  it("is set unless the command line sets it", () => {
    expect(HEAP_GROWING_PERCENT).toBe(150);
    expect(limitHeapGrowth(["--heap-growing-percent=50"])).toBe(false);
    expect(limitHeapGrowth(["--heap-growing-percent", "50"])).toBe(false);
    expect(limitHeapGrowth(["--max-semi-space-size=8"])).toBe(true);
  });
});
