import { describe, expect, it } from "vitest";
import { directionTurn } from "../../src/geo/intersects.js";
import { prng } from "../support/geometry-fixtures.js";

/** A double as an exact integer multiple of 2⁻¹¹⁰⁰ (every finite double of |x| < 2⁵³ with bits ≥ 2⁻¹⁰⁷⁴ is one). */
function exact(x: number): bigint {
  let scaled = x;
  let shift = 0n;
  // Multiplying by 2 is exact; stop once the value is an integer.
  while (!Number.isInteger(scaled)) {
    scaled *= 2;
    shift++;
  }
  return BigInt(scaled) << (1100n - shift);
}

/** The sign of (p2 − p1) × (q2 − q1) in exact integer arithmetic. */
function exactTurnSign(
  p1x: number,
  p1y: number,
  p2x: number,
  p2y: number,
  q1x: number,
  q1y: number,
  q2x: number,
  q2y: number,
): number {
  const cross =
    (exact(p2x) - exact(p1x)) * (exact(q2y) - exact(q1y)) - (exact(p2y) - exact(p1y)) * (exact(q2x) - exact(q1x));
  return cross > 0n ? 1 : cross < 0n ? -1 : 0;
}

describe("directionTurn", () => {
  it("is positive turning left, negative turning right, 0 for parallel directions along an axis", () => {
    expect(directionTurn(0, 0, 1, 0, 5, 5, 5, 6)).toBeGreaterThan(0);
    expect(directionTurn(0, 0, 1, 0, 5, 5, 5, 4)).toBeLessThan(0);
    expect(directionTurn(0, 0, 1, 0, 5, 5, 7, 5)).toBe(0);
    expect(directionTurn(0, 0, 1, 0, 5, 5, 3, 5)).toBe(0);
    expect(directionTurn(2, 1, 2, 3, -4, 9, -4, -9)).toBe(0);
  });

  it("gives the exact sign for directions too close to parallel for doubles, where the plain formula errs", () => {
    // Kettner et al.'s classroom example: p moved by whole ulps near (0.5, 0.5), then on to
    // (12, 12) and (24, 24). The turn at (12, 12) is 12 (py − px) exactly, but 12 − px rounds
    // away the ulps.
    const ulp = 2 ** -53;
    let plainWrong = 0;
    let zeros = 0;
    for (let i = 0; i < 64; i++) {
      for (let j = 0; j < 64; j++) {
        const px = 0.5 + i * ulp;
        const py = 0.5 + j * ulp;
        const expected = exactTurnSign(px, py, 12, 12, 12, 12, 24, 24);
        expect(expected).toBe(Math.sign(py - px));
        expect(Math.sign(directionTurn(px, py, 12, 12, 12, 12, 24, 24))).toBe(expected);
        const plain = (12 - px) * (24 - 12) - (12 - py) * (24 - 12);
        if (Math.sign(plain) !== expected) plainWrong++;
        if (expected === 0) zeros++;
      }
    }
    expect(plainWrong).toBeGreaterThan(1_000);
    expect(zeros).toBe(64);
  });

  it("agrees with exact arithmetic on nearly parallel segments near lon/lat 5°, 45°", () => {
    const random = prng(11);
    for (let i = 0; i < 2_000; i++) {
      const p1x = 5 + random() * 0.01;
      const p1y = 45 + random() * 0.01;
      const p2x = p1x + (random() - 0.5) * 0.001;
      const p2y = p1y + (random() - 0.5) * 0.001;
      // The same segment moved (its ends rounded), and sometimes turned by ~1e-15 rad.
      const dx = (random() - 0.5) * 0.01;
      const dy = (random() - 0.5) * 0.01;
      const wobble = i % 2 === 0 ? 0 : (random() - 0.5) * 1e-15;
      const args = [p1x, p1y, p2x, p2y, p1x + dx, p1y + dy, p2x + dx + wobble, p2y + dy] as const;
      expect(Math.sign(directionTurn(...args))).toBe(exactTurnSign(...args));
    }
  });
});
