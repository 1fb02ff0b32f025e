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

describe("parseRfc3339: the days of a month", () => {
  it.each([
    ["0000-02-29T00:00:00Z", true], // year 0 is a leap year (divisible by 400)
    ["0004-02-29T00:00:00Z", true],
    ["0100-02-29T00:00:00Z", false],
    ["1900-02-29T00:00:00Z", false],
    ["2000-02-29T00:00:00Z", true],
    ["2023-02-29T00:00:00Z", false],
    ["2024-02-29T00:00:00Z", true],
    ["2024-04-31T00:00:00Z", false],
    ["2024-12-31T00:00:00Z", true],
    ["2024-00-10T00:00:00Z", false],
    ["2024-13-10T00:00:00Z", false],
  ])("%s is a real date: %s", (text, real) => {
    expect(parseRfc3339(text) !== null).toBe(real);
  });

  it("places year 0's 29 February one day before its 1 March", () => {
    const feb29 = parseRfc3339("0000-02-29T00:00:00Z");
    const mar1 = parseRfc3339("0000-03-01T00:00:00Z");
    expect(feb29 && mar1 && mar1.seconds - feb29.seconds).toBe(86_400n);
  });
});
