import { describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { clipperEngine } from "../../src/geo/clipper-engine.js";
import { jstsEngine, polyclipEngine } from "../../src/geo/overlay-engines.js";
import { geometryFromPolygons } from "../../src/geo/parts.js";
import type { PolygonCoordinates, Position } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { prng, ring } from "../support/geometry-fixtures.js";
import { circleRing, starRing } from "./fixtures.js";

const area = (polygons: PolygonCoordinates[]) => {
  const g = geometryFromPolygons(polygons);
  return g === null ? 0 : geodesicAreaM2(g);
};
const clockwise = (positions: Position[]) => [...positions].reverse();

describe("clipperEngine", () => {
  it("agrees with JTS on a field with a hole against a circle, to 1e-10", () => {
    const field: PolygonCoordinates = [ring(30, 10, 30.01, 10.01), ring(30.003, 10.003, 30.006, 10.006)];
    const circle: PolygonCoordinates = [circleRing(30.005, 10.005, 0.004, 500)];
    const expected = area(jstsEngine.intersection([field], [circle]));
    const result = clipperEngine.intersection([field], [circle]);
    expect(Math.abs(area(result) - expected) / expected).toBeLessThan(1e-10);
    // One polygon, its hole kept, closed rings, valid.
    expect(result).toHaveLength(1);
    expect(result[0]).toHaveLength(2);
    const g = geometryFromPolygons(result);
    expect(g && checkGeometry(g)).toEqual([]);
  });

  it("reads rings whichever way round they are given", () => {
    const field: PolygonCoordinates = [clockwise(ring(0, 0, 1, 1)), clockwise(clockwise(ring(0.25, 0.25, 0.75, 0.75)))];
    const result = clipperEngine.intersection([field], [[ring(0, 0, 0.5, 1)]]);
    expect(area(result)).toBeCloseTo(area([[ring(0, 0, 0.5, 1)]]) - area([[ring(0.25, 0.25, 0.5, 0.75)]]), 0);
  });

  it("keeps an island inside a hole as a polygon of its own", () => {
    const frame: PolygonCoordinates = [ring(0, 0, 3, 3), ring(1, 1, 2, 2)];
    const island: PolygonCoordinates = [ring(1.25, 1.25, 1.75, 1.75)];
    const result = clipperEngine.union([[frame], [island]]);
    expect(result).toHaveLength(2);
    expect(result.map((polygon) => polygon.length).sort()).toEqual([1, 2]);
    expect(area(result)).toBeCloseTo(area([frame]) + area([island]), 0);
  });

  it("places each hole in its own ring when there are several: two fields with three holes each, and an island", () => {
    const field = (x: number): PolygonCoordinates => [
      ring(x, 0, x + 3, 1),
      clockwise(ring(x + 0.25, 0.25, x + 0.75, 0.75)),
      clockwise(ring(x + 1.25, 0.25, x + 1.75, 0.75)),
      clockwise(ring(x + 2.25, 0.25, x + 2.75, 0.75)),
    ];
    const island: PolygonCoordinates = [ring(10.4, 0.4, 10.6, 0.6)];
    const result = clipperEngine.intersection([field(0), field(10), island], [[ring(-1, -1, 20, 2)]]);
    expect(result.map((polygon) => polygon.length).sort()).toEqual([1, 4, 4]);
    for (const polygon of result) {
      const g = geometryFromPolygons([polygon]);
      expect(g && checkGeometry(g)).toEqual([]);
    }
    expect(area(result)).toBeCloseTo(area([field(0)]) + area([field(10)]) + area([island]), 0);
  });

  it("unions overlapping inputs once, and gives nothing for disjoint intersections", () => {
    const union = clipperEngine.union([[[ring(0, 0, 1, 1)]], [[clockwise(ring(0.5, 0, 1.5, 1))]]]);
    expect(union).toHaveLength(1);
    expect(area(union)).toBeCloseTo(area([[ring(0, 0, 1.5, 1)]]), 0);
    expect(clipperEngine.intersection([[ring(0, 0, 1, 1)]], [[ring(2, 0, 3, 1)]])).toEqual([]);
    expect(clipperEngine.intersection([[ring(0, 0, 1, 1)]], [[ring(1, 0, 2, 1)]])).toEqual([]);
  });
});

describe("clipperEngine against JTS", () => {
  it("agrees on 500 random pairs of stars, with and without holes, fields to regions, equator to poles and ±180°", () => {
    const random = prng(27_11_2026);
    let compared = 0;
    for (let round = 0; round < 500; round++) {
      const r = 10 ** (-3 + random() * 3); // 0.001° to 1°
      // A fifth of them reach to within a thousandth of r of the antimeridian.
      const cx = random() < 0.2 ? 180 - 1.501 * r : -178 + random() * 356;
      const cy = -85 + random() * 170;
      const polygonAt = (x: number, y: number): PolygonCoordinates => {
        const shell = starRing(random, x, y, r, 3 + Math.floor(random() * 58), 0.3);
        // A hole: a small square around the centre, inside every star (radii ≥ 0.3 r).
        return random() < 0.3 ? [shell, clockwise(ring(x - 0.1 * r, y - 0.1 * r, x + 0.1 * r, y + 0.1 * r))] : [shell];
      };
      const a = polygonAt(cx, cy);
      const b = polygonAt(cx - random() * 0.5 * r, cy + (random() - 0.5) * r);
      for (const input of [a, b]) expect(checkGeometry({ type: "Polygon", coordinates: input })).toEqual([]);
      const expected = area(jstsEngine.intersection([a], [b]));
      const measured = area(clipperEngine.intersection([a], [b]));
      // Relative to the smaller input: a sliver of nothing may come out as a sliver of nearly nothing.
      const scale = Math.min(area([a]), area([b]));
      expect(Math.abs(measured - expected) / scale, `round ${round}`).toBeLessThan(1e-11);
      const union = area(clipperEngine.union([[a], [b]]));
      expect(Math.abs(union - area(jstsEngine.union([[a], [b]]))) / scale, `union, round ${round}`).toBeLessThan(1e-11);
      if (expected > 0) compared++;
    }
    expect(compared).toBeGreaterThan(300);
  });
});

describe("clipperEngine's bounded sweep", () => {
  // A field's square against a 20,000-position jurisdiction clipped to the square's box (its
  // zero-width bridge leaves two vertices 6e-17 apart), x and y swapped: clipper2-ts 2.0.1 spun
  // on it without end, re-inserting scan-lines.
  const clippedJurisdiction: PolygonCoordinates = [
    [
      [0.42135595910297713, -0.23425120388902732],
      [0.42135595910297713, -0.24025120388902732],
      [0.42135595910297713, -0.24025120388902726],
      [0.42135595910297713, -0.23439517273748767],
      [0.4238857192083818, -0.2356411453930397],
      [0.4266569460497117, -0.2370062606705104],
      [0.42735595910297713, -0.2373506260193038],
      [0.42735595910297713, -0.23425120388902726],
      [0.42135595910297713, -0.23425120388902732],
    ],
  ];
  const [x, y, size] = [0.42185595910297713, -0.23975120388902726, 0.005];
  const field: PolygonCoordinates = [ring(x, y, x + size, y + size)];
  const swapped = (rings: PolygonCoordinates): PolygonCoordinates =>
    rings.map((r) => r.map(([a, b]): Position => [b, a]).reverse());

  it("stops a sweep that would not end, reporting the overlay failed, and leaves sound ones alone", () => {
    const started = performance.now();
    expect(() => clipperEngine.intersection([swapped(clippedJurisdiction)], [swapped(field)])).toThrow(
      "Clipper2 could not complete the overlay",
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    // The same overlay unswapped completes, with the polyclip-ts's area.
    const common = clipperEngine.intersection([clippedJurisdiction], [field]);
    expect(area(common)).toBeCloseTo(area(polyclipEngine.intersection([clippedJurisdiction], [field])), 0);
    expect(area(common)).toBeGreaterThan(0);
  });
});
