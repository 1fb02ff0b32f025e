import { describe, expect, it } from "vitest";
import { boundingBox, boxesIntersect } from "../../src/geo/bbox.js";
import { multiPolygon, polygon, square, squareRing } from "./fixtures.js";

describe("boundingBox", () => {
  it("spans a Polygon's exterior ring", () => {
    expect(
      boundingBox(
        polygon([
          [10, 50],
          [10.5, 49.5],
          [11, 50.25],
          [10, 50],
        ]),
      ),
    ).toEqual({ minX: 10, minY: 49.5, maxX: 11, maxY: 50.25 });
  });

  it("ignores holes, which lie inside the exterior ring", () => {
    expect(boundingBox(polygon(squareRing(0, 0, 10), squareRing(2, 2)))).toEqual({
      minX: 0,
      minY: 0,
      maxX: 10,
      maxY: 10,
    });
  });

  it("spans every part of a MultiPolygon", () => {
    expect(boundingBox(multiPolygon([squareRing(-179.5, -10)], [squareRing(170, 80, 2)]))).toEqual({
      minX: -179.5,
      minY: -10,
      maxX: 172,
      maxY: 82,
    });
  });

  it("refuses a geometry without positions", () => {
    expect(() => boundingBox(multiPolygon())).toThrow(RangeError);
  });
});

describe("boxesIntersect", () => {
  it("counts touching boxes as intersecting and separated ones as not", () => {
    const a = boundingBox(square(0, 0));
    expect(boxesIntersect(a, boundingBox(square(0.5, 0.5)))).toBe(true);
    expect(boxesIntersect(a, boundingBox(square(1, 1)))).toBe(true);
    expect(boxesIntersect(a, boundingBox(square(1.001, 0)))).toBe(false);
    expect(boxesIntersect(a, boundingBox(square(0, -1.5)))).toBe(false);
  });
});
