import { describe, expect, it } from "vitest";
import { EARTH_RADIUS_M, geodesicAreaM2 } from "../../src/geo/area.js";
import type { Position } from "../../src/geo/types.js";
import { ring } from "../support/geometry-fixtures.js";
import { multiPolygon, polygon, squareRing } from "./fixtures.js";

const RAD = Math.PI / 180;
const R = EARTH_RADIUS_M;

/** R²·Δλ·(sin φ₂ − sin φ₁), with the sine difference in a form that does not cancel. */
function analyticCellArea(lon1: number, lat1: number, lon2: number, lat2: number): number {
  const dLambda = (lon2 - lon1) * RAD;
  const sineDifference = 2 * Math.cos(((lat1 + lat2) / 2) * RAD) * Math.sin(((lat2 - lat1) / 2) * RAD);
  return R * R * dLambda * sineDifference;
}

function cell(lon: number, lat: number, dLon: number, dLat: number): Position[] {
  return ring(lon, lat, lon + dLon, lat + dLat);
}

function relativeError(actual: number, expected: number): number {
  return Math.abs(actual - expected) / expected;
}

describe("geodesicAreaM2", () => {
  it("uses the mean Earth radius", () => {
    expect(EARTH_RADIUS_M).toBe(6371008.8);
  });

  // Widths in metres along the parallel; heights match so the cells are roughly square.
  const widthsM = [10, 100, 1_000, 10_000];
  for (const latitude of [0, 60]) {
    for (const widthM of widthsM) {
      it(`is within 0.1% of the analytic area for a ${widthM} m cell at ${latitude}° N`, () => {
        const dLat = widthM / (R * RAD);
        const dLon = widthM / (R * RAD * Math.cos(latitude * RAD));
        const expected = analyticCellArea(8, latitude, 8 + dLon, latitude + dLat);
        const actual = geodesicAreaM2(polygon(cell(8, latitude, dLon, dLat)));
        expect(relativeError(actual, expected)).toBeLessThan(1e-3);
        // The formula is exact for cells, so what is left is rounding.
        expect(relativeError(actual, expected)).toBeLessThan(1e-9);
        // And a cell this small is very nearly a flat rectangle.
        expect(relativeError(actual, widthM * widthM)).toBeLessThan(2e-3);
      });
    }
    it(`is within 0.1% of the analytic area for a 1° cell at ${latitude}° N`, () => {
      const expected = analyticCellArea(8, latitude, 9, latitude + 1);
      const actual = geodesicAreaM2(polygon(cell(8, latitude, 1, 1)));
      expect(relativeError(actual, expected)).toBeLessThan(1e-3);
      expect(relativeError(actual, expected)).toBeLessThan(1e-9);
    });
  }

  it("gives the known areas of a 1° cell at the equator and at 60° N", () => {
    // R²·(π/180)·sin 1° and R²·(π/180)·(sin 61° − sin 60°).
    expect(geodesicAreaM2(polygon(cell(0, 0, 1, 1)))).toBeCloseTo(12_363_718_145.18, 1);
    expect(geodesicAreaM2(polygon(cell(0, 60, 1, 1)))).toBeCloseTo(6_088_417_933.46, 1);
  });

  it("gives a hemisphere and the whole lon/lat rectangle of the sphere", () => {
    expect(relativeError(geodesicAreaM2(polygon(cell(-180, 0, 360, 90))), 2 * Math.PI * R * R)).toBeLessThan(1e-12);
    expect(relativeError(geodesicAreaM2(polygon(cell(-180, -90, 360, 180))), 4 * Math.PI * R * R)).toBeLessThan(1e-12);
  });

  it("does not depend on ring orientation, starting vertex or longitude", () => {
    const ring = cell(10, 45, 0.01, 0.01);
    const area = geodesicAreaM2(polygon(ring));
    expect(geodesicAreaM2(polygon([...ring].reverse()))).toBeCloseTo(area, 3);
    expect(geodesicAreaM2(polygon([...ring.slice(2, 4), ...ring.slice(0, 3)]))).toBeCloseTo(area, 3);
    expect(geodesicAreaM2(polygon(cell(-170, 45, 0.01, 0.01)))).toBeCloseTo(area, 3);
    expect(geodesicAreaM2(polygon(cell(179.99, 45, 0.01, 0.01)))).toBeCloseTo(area, 3);
  });

  it("is symmetric about the equator", () => {
    expect(geodesicAreaM2(polygon(cell(0, -61, 1, 1)))).toBeCloseTo(geodesicAreaM2(polygon(cell(0, 60, 1, 1))), 0);
  });

  it("treats an oblique edge as straight in (λ, sin φ): a right triangle is half its cell", () => {
    const triangle: Position[] = [
      [0, 30],
      [1, 30],
      [0, 31],
      [0, 30],
    ];
    expect(geodesicAreaM2(polygon(triangle))).toBeCloseTo(analyticCellArea(0, 30, 1, 31) / 2, 0);
  });

  it("subtracts holes and sums the parts of a MultiPolygon", () => {
    const outer = cell(0, 0, 0.02, 0.02);
    const hole = [...cell(0.005, 0.005, 0.01, 0.01)].reverse();
    const expected = analyticCellArea(0, 0, 0.02, 0.02) - analyticCellArea(0.005, 0.005, 0.015, 0.015);
    expect(geodesicAreaM2(polygon(outer, hole))).toBeCloseTo(expected, 2);
    // Hole orientation does not matter either.
    expect(geodesicAreaM2(polygon(outer, cell(0.005, 0.005, 0.01, 0.01)))).toBeCloseTo(expected, 2);

    const second = cell(1, 60, 0.01, 0.01);
    expect(geodesicAreaM2(multiPolygon([outer, hole], [second]))).toBeCloseTo(
      expected + analyticCellArea(1, 60, 1.01, 60.01),
      2,
    );
  });

  it("is zero for a degenerate ring", () => {
    expect(
      geodesicAreaM2(
        polygon([
          [0, 0],
          [1, 0],
          [2, 0],
          [0, 0],
        ]),
      ),
    ).toBe(0);
    expect(
      geodesicAreaM2(
        polygon([
          [5, 0],
          [5, 1],
          [5, 2],
          [5, 0],
        ]),
      ),
    ).toBe(0);
    expect(geodesicAreaM2(polygon(squareRing(0, 0, 0)))).toBe(0);
  });
});
