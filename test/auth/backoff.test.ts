import { describe, expect, it } from "vitest";
import { Backoff } from "../../src/auth/backoff.js";

describe("Backoff", () => {
  it("doubles from the initial delay up to the cap and stays there", () => {
    const backoff = new Backoff(1_000, 60_000);
    const delays = Array.from({ length: 10 }, () => backoff.fail());
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000]);
  });

  it("stays at the cap however many failures follow", () => {
    const backoff = new Backoff(1, 60_000);
    for (let i = 0; i < 10_000; i += 1) backoff.fail();
    expect(backoff.fail()).toBe(60_000);
  });

  it("starts over after a success", () => {
    const backoff = new Backoff(1_000, 60_000);
    backoff.fail();
    backoff.fail();
    backoff.fail();
    backoff.succeed();
    expect(backoff.fail()).toBe(1_000);
    expect(backoff.fail()).toBe(2_000);
  });

  it("refuses a non-positive initial delay or a cap below it", () => {
    expect(() => new Backoff(0, 1_000)).toThrow(RangeError);
    expect(() => new Backoff(2_000, 1_000)).toThrow(RangeError);
    expect(() => new Backoff(Number.NaN, 1_000)).toThrow(RangeError);
  });
});
