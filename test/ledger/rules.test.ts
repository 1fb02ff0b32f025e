/**
 * The field rules of docs/api.md §5 (src/ledger/rules.ts), each at its edges with the exact
 * message a caller reads.
 */
import { describe, expect, it } from "vitest";
import {
  altIdProblem,
  characters,
  DEFAULT_LIST_LIMIT,
  limitProblem,
  MAX_LIST_LIMIT,
  MAX_SOURCES_PER_REQUEST,
  MAX_TAG,
  MAX_TAGS,
  MAX_TEXT,
  MAX_YEAR,
  MIN_YEAR,
  offsetProblem,
  tagCountProblem,
  tagProblem,
  textProblem,
  yearProblem,
} from "../../src/ledger/rules.js";

/** U+1F33E, outside the BMP: two UTF-16 units, four UTF-8 bytes, one character. */
const SHEAF = "🌾";

describe("the limits", () => {
  it("are the numbers of docs/api.md §5 and §4.5", () => {
    expect({
      MAX_SOURCES_PER_REQUEST,
      MAX_TEXT,
      MAX_TAGS,
      MAX_TAG,
      MIN_YEAR,
      MAX_YEAR,
      DEFAULT_LIST_LIMIT,
      MAX_LIST_LIMIT,
    }).toEqual({
      MAX_SOURCES_PER_REQUEST: 1000,
      MAX_TEXT: 256,
      MAX_TAGS: 64,
      MAX_TAG: 128,
      MIN_YEAR: 1000,
      MAX_YEAR: 9999,
      DEFAULT_LIST_LIMIT: 100,
      MAX_LIST_LIMIT: 1000,
    });
  });
});

describe("characters", () => {
  it("counts code points, not UTF-16 units", () => {
    expect(SHEAF.length).toBe(2);
    expect(characters(SHEAF)).toBe(1);
    expect(characters(SHEAF.repeat(256))).toBe(256);
    expect(characters("")).toBe(0);
    expect(characters("abc")).toBe(3);
  });

  it("counts a combining mark as a character of its own and a lone surrogate as one", () => {
    expect(characters("e\u0301")).toBe(2);
    expect(characters("\ud800")).toBe(1);
    expect(characters(`a\ud800${SHEAF}`)).toBe(3);
  });
});

describe("textProblem (1–256 characters)", () => {
  it("refuses the empty string", () => {
    expect(textProblem("", "methodology")).toBe("methodology must not be empty");
  });

  it("accepts 1 and 256 characters and refuses 257", () => {
    expect(textProblem("x", "methodology")).toBeNull();
    expect(textProblem("x".repeat(256), "methodology")).toBeNull();
    expect(textProblem("x".repeat(257), "methodology")).toBe("methodology must be at most 256 characters, got 257");
  });

  it("counts a 4-byte emoji as one character", () => {
    expect(textProblem(SHEAF.repeat(256), "steward_id")).toBeNull();
    expect(textProblem(SHEAF.repeat(257), "steward_id")).toBe("steward_id must be at most 256 characters, got 257");
  });

  it("names the field it is given", () => {
    expect(textProblem("", "account_id")).toBe("account_id must not be empty");
    expect(textProblem("p".repeat(300), "project_id")).toBe("project_id must be at most 256 characters, got 300");
  });

  it("accepts white space and control characters (only alt_id restricts them)", () => {
    expect(textProblem(" ", "methodology")).toBeNull();
    expect(textProblem("\u0000\t", "methodology")).toBeNull();
  });
  it("refuses an unpaired surrogate, which UTF-8 storage would turn into U+FFFD, and accepts pairs", () => {
    expect(textProblem("sur\ud801", "methodology")).toBe(
      "methodology must be Unicode text: it has an unpaired surrogate (U+D801) at character 4",
    );
    expect(textProblem(`${SHEAF}\udc00x`, "steward_id")).toBe(
      "steward_id must be Unicode text: it has an unpaired surrogate (U+DC00) at character 2",
    );
    expect(altIdProblem("a\ud800")).toBe(
      "alt_id must be Unicode text: it has an unpaired surrogate (U+D800) at character 2",
    );
    expect(tagProblem("\udfff")).toBe(
      "a tag must be Unicode text: it has an unpaired surrogate (U+DFFF) at character 1",
    );
    expect(textProblem(`${SHEAF}\ud83d\ude00`, "methodology")).toBeNull();
    expect(tagProblem("\ufffd")).toBeNull();
  });
});

describe("altIdProblem", () => {
  it("refuses the empty alt_id as missing", () => {
    expect(altIdProblem("")).toBe("alt_id is required");
  });

  it("accepts 256 characters (emoji included) and refuses 257", () => {
    expect(altIdProblem("a".repeat(256))).toBeNull();
    expect(altIdProblem(SHEAF.repeat(256))).toBeNull();
    expect(altIdProblem("a".repeat(257))).toBe("alt_id must be at most 256 characters, got 257");
    expect(altIdProblem(SHEAF.repeat(257))).toBe("alt_id must be at most 256 characters, got 257");
  });

  it.each([
    ["NUL (C0)", "a\u0000b"],
    ["U+001F (C0)", "a\u001fb"],
    ["line feed (C0)", "a\nb"],
    ["DEL", "a\u007fb"],
    ["U+0080 (C1)", "a\u0080b"],
    ["NEL U+0085 (C1)", "a\u0085b"],
    ["U+009F (C1)", "a\u009fb"],
  ])("refuses a control character: %s", (_name, altId) => {
    expect(altIdProblem(altId)).toBe("alt_id must not contain control characters");
  });

  it("accepts the characters just outside the control ranges", () => {
    expect(altIdProblem("a\u0020b")).toBeNull();
    expect(altIdProblem("a\u007eb")).toBeNull();
    expect(altIdProblem("a\u00a0b")).toBeNull();
  });

  it.each([
    ["a leading space", " plot-1"],
    ["a trailing space", "plot-1 "],
    ["a leading no-break space", "\u00a0plot-1"],
    ["a trailing ideographic space", "plot-1\u3000"],
    ["a trailing BOM", "plot-1\ufeff"],
    ["a leading line separator", "\u2028plot-1"],
    ["only a space", " "],
  ])("refuses %s", (_name, altId) => {
    expect(altIdProblem(altId)).toBe("alt_id must not start or end with white space");
  });

  it("accepts white space inside", () => {
    expect(altIdProblem("north field 40")).toBeNull();
  });

  it("reports one problem, in the order length, control characters, white space", () => {
    expect(altIdProblem(`\t${"a".repeat(300)}`)).toBe("alt_id must be at most 256 characters, got 301");
    // A tab is both a control character and white space at the start: the control rule speaks.
    expect(altIdProblem("\tplot")).toBe("alt_id must not contain control characters");
    expect(altIdProblem(" plot\u0000")).toBe("alt_id must not contain control characters");
  });
});

describe("yearProblem", () => {
  it("accepts 1000 and 9999 and refuses 999 and 10000", () => {
    expect(yearProblem(999, "outcome_reporting_year")).toBe(
      "outcome_reporting_year must be a year from 1000 to 9999, got 999",
    );
    expect(yearProblem(1000, "outcome_reporting_year")).toBeNull();
    expect(yearProblem(9999, "outcome_reporting_year")).toBeNull();
    expect(yearProblem(10000, "outcome_reporting_year")).toBe(
      "outcome_reporting_year must be a year from 1000 to 9999, got 10000",
    );
  });

  it("refuses 0 (an explicit proto default) and NaN", () => {
    expect(yearProblem(0, "outcome_reporting_year")).toBe(
      "outcome_reporting_year must be a year from 1000 to 9999, got 0",
    );
    expect(yearProblem(Number.NaN, "outcome_reporting_year")).toBe(
      "outcome_reporting_year must be a year from 1000 to 9999, got NaN",
    );
  });
});

describe("tags", () => {
  it("allows 64 tags and refuses 65", () => {
    expect(tagCountProblem(0)).toBeNull();
    expect(tagCountProblem(64)).toBeNull();
    expect(tagCountProblem(65)).toBe("at most 64 tags are allowed, got 65");
  });

  it("allows a tag of 1 or 128 characters and refuses 0 or 129", () => {
    expect(tagProblem("")).toBe("a tag must be 1 to 128 characters, got 0");
    expect(tagProblem("t")).toBeNull();
    expect(tagProblem("t".repeat(128))).toBeNull();
    expect(tagProblem("t".repeat(129))).toBe("a tag must be 1 to 128 characters, got 129");
  });

  it("counts a tag's characters as code points", () => {
    expect(tagProblem(SHEAF.repeat(128))).toBeNull();
    expect(tagProblem(SHEAF.repeat(129))).toBe("a tag must be 1 to 128 characters, got 129");
  });
});

describe("paging", () => {
  it("allows limit 1 and 1000 and refuses 0 and 1001", () => {
    expect(limitProblem(0)).toBe("limit must be from 1 to 1000, got 0");
    expect(limitProblem(1)).toBeNull();
    expect(limitProblem(1000)).toBeNull();
    expect(limitProblem(1001)).toBe("limit must be from 1 to 1000, got 1001");
    expect(limitProblem(-5)).toBe("limit must be from 1 to 1000, got -5");
  });

  it("allows offset 0 and refuses -1", () => {
    expect(offsetProblem(-1)).toBe("offset must be 0 or more, got -1");
    expect(offsetProblem(0)).toBeNull();
    expect(offsetProblem(2_147_483_647)).toBeNull();
  });
});
