/**
 * Conflict measures (docs/api.md §14) of lon/lat rectangles, computed here without the overlay
 * engines and without src/geo/area.ts: the planar lon/lat intersection of two axis-aligned
 * rectangles is the rectangle of the inner edges, and the area of a lon/lat cell on the sphere of
 * docs/api.md §8.2 is R²·Δλ·(sin φ₂ − sin φ₁).
 */
import { expect } from "vitest";
import type { PolygonGeometry } from "../../src/geo/types.js";
import type { ConflictMeasure } from "../../src/model/history.js";
import { ring } from "../support/geometry-fixtures.js";

/** docs/api.md §8.2: the mean Earth radius. */
const R = 6_371_008.8;

export interface Rect {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

export function rectGeometry(r: Rect): PolygonGeometry {
  return { type: "Polygon", coordinates: [ring(r.minX, r.minY, r.maxX, r.maxY)] };
}

/** Square metres of a lon/lat cell on the sphere. */
export function rectAreaM2(r: Rect): number {
  const rad = Math.PI / 180;
  return R * R * (r.maxX - r.minX) * rad * (Math.sin(r.maxY * rad) - Math.sin(r.minY * rad));
}

/** The planar intersection of two rectangles, or null when it has no area (touching included). */
export function rectIntersection(a: Rect, b: Rect): Rect | null {
  const r = {
    minX: Math.max(a.minX, b.minX),
    minY: Math.max(a.minY, b.minY),
    maxX: Math.min(a.maxX, b.maxX),
    maxY: Math.min(a.maxY, b.maxY),
  };
  return r.maxX > r.minX && r.maxY > r.minY ? r : null;
}

/** What a side of a conflict claims: the parts of a record §8 and §14 look at. */
export interface Claim {
  rect: Rect;
  startAt: number;
  endAt: number;
  attributeType: readonly string[];
}

/** §8.1 rule 1: the overlap counts from 1% of the smaller area. */
export const MIN_OVERLAP_FRACTION = 0.01;

/**
 * How close (relative) an overlap may come to the 1% threshold before the decision depends on
 * rounding: a model that must agree with the store keeps its data away from it.
 */
export const THRESHOLD_MARGIN = 1e-7;

export type Decision = { measure: ConflictMeasure } | { measure: null; ambiguous: boolean };

/** The §8.1 decision for `a` against `b`, with the §14 measure from `a`'s side. */
export function decide(a: Claim, b: Claim): Decision {
  const none = (ambiguous = false): Decision => ({ measure: null, ambiguous });
  if (!(a.startAt < b.endAt && b.startAt < a.endAt)) return none();
  const typed = a.attributeType.length > 0 && b.attributeType.length > 0;
  const shared = a.attributeType.filter((t) => b.attributeType.includes(t));
  if (typed && shared.length === 0) return none();
  const common = rectIntersection(a.rect, b.rect);
  if (common === null) return none();
  const overlap = rectAreaM2(common);
  const areaA = rectAreaM2(a.rect);
  const areaB = rectAreaM2(b.rect);
  const threshold = MIN_OVERLAP_FRACTION * Math.min(areaA, areaB);
  if (Math.abs(overlap - threshold) <= THRESHOLD_MARGIN * threshold) return none(true);
  if (overlap < threshold) return none();
  return {
    measure: {
      overlapAreaM2: overlap,
      overlapFraction: Math.min(1, overlap / areaA),
      counterpartOverlapFraction: Math.min(1, overlap / areaB),
      overlapPeriod: { startAt: Math.max(a.startAt, b.startAt), endAt: Math.min(a.endAt, b.endAt) },
      sharedAttributeTypes: shared,
    },
  };
}

/** |actual − expected| within `relative` of expected (absolute for an expected 0). */
export function close(actual: number, expected: number, relative = 1e-6): boolean {
  return Math.abs(actual - expected) <= relative * Math.max(Math.abs(expected), 1e-300);
}

/**
 * Where `actual` differs from `expected`: the numbers to `relative`, the period exactly, the shared
 * attribute types as a set (their order is not part of the contract). Empty when they agree.
 */
export function measureDifferences(actual: ConflictMeasure | undefined, expected: ConflictMeasure, relative = 1e-6) {
  if (actual === undefined) return ["no measure"];
  const wrong: string[] = [];
  for (const key of ["overlapAreaM2", "overlapFraction", "counterpartOverlapFraction"] as const) {
    if (!close(actual[key], expected[key], relative)) wrong.push(`${key}: ${actual[key]} ≠ ${expected[key]}`);
  }
  if (actual.overlapPeriod.startAt !== expected.overlapPeriod.startAt) wrong.push("overlapPeriod.startAt");
  if (actual.overlapPeriod.endAt !== expected.overlapPeriod.endAt) wrong.push("overlapPeriod.endAt");
  const sorted = (types: readonly string[]) => JSON.stringify([...types].sort());
  if (sorted(actual.sharedAttributeTypes) !== sorted(expected.sharedAttributeTypes)) {
    wrong.push(
      `sharedAttributeTypes: ${sorted(actual.sharedAttributeTypes)} ≠ ${sorted(expected.sharedAttributeTypes)}`,
    );
  }
  const keys = Object.keys(actual).sort();
  const expectedKeys = Object.keys(expected).sort();
  if (JSON.stringify(keys) !== JSON.stringify(expectedKeys)) wrong.push(`keys ${keys} ≠ ${expectedKeys}`);
  return wrong;
}

/** Asserts `actual` is `expected` (see measureDifferences). */
export function expectMeasure(actual: ConflictMeasure | undefined, expected: ConflictMeasure, relative = 1e-9): void {
  expect(measureDifferences(actual, expected, relative)).toEqual([]);
}
