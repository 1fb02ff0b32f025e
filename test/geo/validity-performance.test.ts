import { describe, expect, it } from "vitest";
import type { PolygonCoordinates } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { circleRing, multiPolygon, polygon, squareRing } from "./fixtures.js";

// Real timings are benchmarked elsewhere (target: well under 150 ms); these generous bounds only
// catch a return to JTS's quadratic whole-MultiPolygon checks, which take tens of seconds here.
const PATHOLOGY_MS = 1500;

function timed<T>(run: () => T): { result: T; ms: number } {
  const start = performance.now();
  const result = run();
  return { result, ms: performance.now() - start };
}

describe("checkGeometry performance", () => {
  it("checks a valid 100,000-position MultiPolygon of 10,000 small parts quickly", () => {
    const parts: PolygonCoordinates[] = [];
    for (let i = 0; i < 10_000; i++) parts.push([circleRing((i % 100) * 0.01, Math.floor(i / 100) * 0.01, 0.004, 9)]);
    const { result, ms } = timed(() => checkGeometry(multiPolygon(...parts)));
    expect(result).toEqual([]);
    expect(ms).toBeLessThan(PATHOLOGY_MS);
  });

  it("checks a valid 100,000-position MultiPolygon of 100 parts with holes quickly", () => {
    const parts: PolygonCoordinates[] = [];
    for (let i = 0; i < 100; i++) {
      const cx = (i % 10) * 0.01;
      const cy = Math.floor(i / 10) * 0.01;
      parts.push([circleRing(cx, cy, 0.004, 799), circleRing(cx, cy, 0.002, 199)]);
    }
    const { result, ms } = timed(() => checkGeometry(multiPolygon(...parts)));
    expect(result).toEqual([]);
    expect(ms).toBeLessThan(PATHOLOGY_MS);
  });

  it("checks a valid 100,000-position Polygon quickly", () => {
    const { result, ms } = timed(() => checkGeometry(polygon(circleRing(10, 50, 0.01, 99_999))));
    expect(result).toEqual([]);
    expect(ms).toBeLessThan(PATHOLOGY_MS);
  });

  it("finds the one overlapping pair among 10,000 parts quickly", () => {
    const parts: PolygonCoordinates[] = [];
    for (let i = 0; i < 10_000; i++) parts.push([squareRing((i % 100) * 0.01, Math.floor(i / 100) * 0.01, 0.005)]);
    parts.push([squareRing(0.504, 0.504, 0.002)]);
    const { result, ms } = timed(() => checkGeometry(multiPolygon(...parts)));
    expect(result).toEqual([
      {
        path: [10_000],
        detail: "polygons 5050 and 10000 overlap or share an edge near (0.505, 0.504); dissolve them into one polygon",
      },
    ]);
    expect(ms).toBeLessThan(PATHOLOGY_MS);
  });
});
