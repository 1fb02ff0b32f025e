import { describe, expect, it } from "vitest";
import { formatRfc3339, parseRfc3339 } from "../../src/http/rfc3339.js";

describe("formatRfc3339", () => {
  it("formats epoch milliseconds as UTC with milliseconds", () => {
    expect(formatRfc3339(Date.UTC(2024, 0, 1))).toBe("2024-01-01T00:00:00.000Z");
    expect(formatRfc3339(Date.UTC(2025, 11, 31, 23, 59, 59, 999))).toBe("2025-12-31T23:59:59.999Z");
    expect(formatRfc3339(-1)).toBe("1969-12-31T23:59:59.999Z");
  });

  it("gives the right text for every value, also once more values were formatted than it remembers", () => {
    const base = Date.UTC(2024, 0, 1);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 10_000; i++) {
        const ms = base + i * 86_399_999;
        expect(formatRfc3339(ms)).toBe(new Date(ms).toISOString());
      }
    }
  });

  it("refuses an instant outside the representable range instead of remembering anything", () => {
    expect(() => formatRfc3339(8.64e15 + 1)).toThrow(RangeError);
    expect(() => formatRfc3339(8.64e15 + 1)).toThrow(RangeError);
  });

  it("round-trips through parseRfc3339", () => {
    const ms = Date.UTC(2024, 1, 29, 12, 30, 15, 250);
    const parsed = parseRfc3339(formatRfc3339(ms));
    expect(parsed).toEqual({ seconds: BigInt(Math.floor(ms / 1000)), nanos: 250_000_000 });
  });
});
