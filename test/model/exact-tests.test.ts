/**
 * The one stop rule of every store's page (src/model/exact-tests.ts, docs/api.md §13): a read stops
 * before its next candidate once the allowance is spent, only if it tested one, and records where
 * reading goes on.
 */
import { describe, expect, it } from "vitest";
import { ExactTestAllowance, POSITIONS_PER_TEST } from "../../src/model/exact-tests.js";
import type { ListCursor } from "../../src/model/list-query.js";

const at = (n: number): ListCursor => ({ createdAt: 1_700_000_000_000 + n, id: `src_${n}` });
const itself = (cursor: ListCursor) => cursor;

describe("ExactTestAllowance.stopsBefore", () => {
  it("does not stop while the allowance lasts", () => {
    const allowance = new ExactTestAllowance(2 * POSITIONS_PER_TEST);
    allowance.spendOnRead();
    expect(allowance.stopsBefore(at(1), itself, 0)).toBe(false);
    expect(allowance.stoppedAt).toBeUndefined();
  });

  it("does not stop before a read's first candidate, spent or not: every read tests one", () => {
    const allowance = new ExactTestAllowance(1);
    allowance.spendOnPassedOver(5);
    expect(allowance.exhausted).toBe(true);
    expect(allowance.stopsBefore(null, itself, 0)).toBe(false);
    expect(allowance.stoppedAt).toBeUndefined();
  });

  it("once spent, stops after the candidate tested, with the offset's matches still to skip", () => {
    const allowance = new ExactTestAllowance(POSITIONS_PER_TEST);
    allowance.spendOnRead();
    const tested = { doc: at(7) };
    expect(allowance.stopsBefore(tested, (t) => t.doc, 3)).toBe(true);
    expect(allowance.stoppedAt).toEqual({ ...at(7), skip: 3 });
  });

  it("counts each event passed over as one position and each source read as POSITIONS_PER_TEST", () => {
    const allowance = new ExactTestAllowance(POSITIONS_PER_TEST + 10);
    allowance.spendOnRead();
    allowance.spendOnPassedOver(9);
    expect(allowance.exhausted).toBe(false);
    allowance.spendOnPassedOver(1);
    expect(allowance.exhausted).toBe(true);
  });
});
