import { ClipType, FillRule } from "clipper2-ts";
import { describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { BoundedClipper64, clipperEngine } from "../../src/geo/clipper-engine.js";
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

describe("clipperEngine on near-coincident vertices and zero-width spikes (clipper2-ts 2.0.1's failures)", () => {
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
  const reference = (a: PolygonCoordinates[], b: PolygonCoordinates[]) => area(polyclipEngine.intersection(a, b));
  const relativeDifference = (value: number, expected: number) => Math.abs(value - expected) / expected;

  it("measures the overlay that spun without end, in both orientations, as polyclip-ts does", () => {
    const expected = reference([clippedJurisdiction], [field]);
    expect(expected).toBeGreaterThan(0);
    expect(relativeDifference(area(clipperEngine.intersection([clippedJurisdiction], [field])), expected)).toBeLessThan(
      1e-12,
    );
    // Swapped, it is another place on the sphere: compared with polyclip-ts there.
    const [across, fieldAcross] = [[swapped(clippedJurisdiction)], [swapped(field)]];
    const turned = area(clipperEngine.intersection(across, fieldAcross));
    expect(relativeDifference(turned, reference(across, fieldAcross))).toBeLessThan(1e-12);
  });

  it("stops a sweep that turns back, in milliseconds, reporting the overlay failed (the backstop)", () => {
    // The integer paths the engine made of it, swapped, before it dropped the collinear run that
    // misled clipper2-ts (two vertices one unit apart at the end of a horizontal edge).
    const clipper = new BoundedClipper64(12);
    clipper.addSubject([
      [
        { x: -2109947269091427, y: 3795237080813012 },
        { x: -2109947269091426, y: 3849280276341458 },
        { x: -2137864381793381, y: 3849280276341458 },
        { x: -2134762614480370, y: 3842984126489031 },
        { x: -2122466749170501, y: 3818023134149086 },
        { x: -2111244025195985, y: 3795237080813012 },
        { x: -2163990464619872, y: 3795237080813012 },
        { x: -2163990464619873, y: 3795237080813012 },
      ],
    ]);
    clipper.addClip([
      [
        { x: -2159486864992502, y: 3799740680440382 },
        { x: -2114450868718797, y: 3799740680440382 },
        { x: -2114450868718797, y: 3844776676714087 },
        { x: -2159486864992502, y: 3844776676714087 },
      ],
    ]);
    const started = performance.now();
    expect(clipper.execute(ClipType.Intersection, FillRule.NonZero, [])).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("measures valid inputs with a 1-ulp back-track on a horizontal edge as the other engines do (it gave 1.63 for 1.96)", () => {
    const a: PolygonCoordinates = [
      [
        [-55.21506913751364, 150.10757391620427],
        [-59.21506913751364, 147.07323507941328],
        [-59.21506913751364, 145.10757391620427],
        [-55.21506913751364, 150.10757391620427],
      ],
    ];
    const b: PolygonCoordinates = [
      [
        [-57.21506913751364, 148.10757391620427],
        [-60.215069137513645, 148.10757391620427],
        [-60.21506913751364, 148.10757391620427],
        [-60.21506913751364, 144.10757391620427],
        [-57.21506913751364, 148.10757391620427],
      ],
    ];
    expect(relativeDifference(area(clipperEngine.intersection([a], [b])), reference([a], [b]))).toBeLessThan(1e-12);
    // A spike along a top edge: the union's area came out negative.
    const c: PolygonCoordinates = [
      [
        [-109.40385524071756, 73.73383754596583],
        [-109.41779459425015, 73.96009767055511],
        [-109.4576570977843, 73.96009767055511],
        [-109.45385524071753, 73.96009767055511],
        [-109.40385524071756, 73.73383754596583],
      ],
    ];
    const d: PolygonCoordinates = [
      [
        [-109.45385524071753, 73.76009767055511],
        [-109.50385524071753, 73.76009767055511],
        [-109.50385524071757, 73.76009767055508],
        [-109.45385524071753, 73.76009767055511],
      ],
    ];
    expect(
      relativeDifference(area(clipperEngine.union([[c], [d]])), area(polyclipEngine.union([[c], [d]]))),
    ).toBeLessThan(1e-12);
  });
});
