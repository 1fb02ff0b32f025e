import { describe, expect, it } from "vitest";
import type { Position } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { multiPolygon, polygon, square, squareRing } from "./fixtures.js";

describe("checkGeometry: structure", () => {
  it("accepts a closed square, a triangle and consecutive duplicate positions", () => {
    expect(checkGeometry(square(0, 0))).toEqual([]);
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 0],
          [0, 1],
          [0, 0],
        ]),
      ),
    ).toEqual([]);
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 0],
          [1, 0],
          [1, 1],
          [0, 1],
          [0, 1],
          [0, 0],
        ]),
      ),
    ).toEqual([]);
  });

  it("accepts the extreme longitudes and latitudes", () => {
    expect(
      checkGeometry(
        polygon([
          [-180, -90],
          [180, -90],
          [180, 90],
          [-180, 90],
          [-180, -90],
        ]),
      ),
    ).toEqual([]);
  });

  it("requires a MultiPolygon to have at least one polygon", () => {
    expect(checkGeometry(multiPolygon())).toEqual([
      { path: [], detail: "MultiPolygon has no polygons; at least one is required" },
    ]);
  });

  it("requires every polygon to have an exterior ring", () => {
    expect(checkGeometry(polygon())).toEqual([
      { path: [], detail: "Polygon has no rings; an exterior ring is required" },
    ]);
    expect(checkGeometry(multiPolygon([squareRing(0, 0)], []))).toEqual([
      { path: [1], detail: "polygon 1 has no rings; an exterior ring is required" },
    ]);
  });

  it("points at each non-finite position and skips ring checks that would only repeat the problem", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 0],
          [NaN, 1],
          [Infinity, 1],
          [0, 0],
        ]),
      ),
    ).toEqual([
      { path: [0, 2], detail: "position 2 of the exterior ring is not a pair of finite numbers: (NaN, 1)" },
      { path: [0, 3], detail: "position 3 of the exterior ring is not a pair of finite numbers: (Infinity, 1)" },
    ]);
    expect(
      checkGeometry(
        polygon([
          [NaN, 0],
          [1, 0],
          [1, -Infinity],
        ]),
      ),
    ).toEqual([
      { path: [0, 0], detail: "position 0 of the exterior ring is not a pair of finite numbers: (NaN, 0)" },
      { path: [0, 2], detail: "position 2 of the exterior ring is not a pair of finite numbers: (1, -Infinity)" },
    ]);
  });

  it("reports longitude and latitude out of range at the position, with the values as given", () => {
    const ring: Position[] = [
      [179, 0],
      [180.5, 0],
      [180.5, 1],
      [179, 90.25],
      [-181, -91],
      [179, 0],
    ];
    expect(checkGeometry(polygon(ring))).toEqual([
      {
        path: [0, 1],
        detail: "position 1 of the exterior ring is out of range at (180.5, 0): longitude must be within -180..180",
      },
      {
        path: [0, 2],
        detail: "position 2 of the exterior ring is out of range at (180.5, 1): longitude must be within -180..180",
      },
      {
        path: [0, 3],
        detail: "position 3 of the exterior ring is out of range at (179, 90.25): latitude must be within -90..90",
      },
      {
        path: [0, 4],
        detail:
          "position 4 of the exterior ring is out of range at (-181, -91): longitude must be within -180..180 and latitude must be within -90..90",
      },
    ]);
  });

  it("reports an unclosed ring with both ends", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 0],
          [1, 1],
          [0, 1],
        ]),
      ),
    ).toEqual([
      { path: [0], detail: "the exterior ring is not closed: its last position (0, 1) differs from its first (0, 0)" },
    ]);
  });

  it("reports rings with fewer than 4 positions or fewer than 3 distinct vertices", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 0],
          [0, 0],
        ]),
      ),
    ).toEqual([
      { path: [0], detail: "the exterior ring has 3 positions; a ring needs at least 4" },
      { path: [0], detail: "the exterior ring has only 2 distinct vertices; at least 3 are required" },
    ]);
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 0],
          [1, 0],
          [0, 0],
        ]),
      ),
    ).toEqual([{ path: [0], detail: "the exterior ring has only 2 distinct vertices; at least 3 are required" }]);
    expect(checkGeometry(polygon([[5, 5]]))).toEqual([
      { path: [0], detail: "the exterior ring has 1 position; a ring needs at least 4" },
      { path: [0], detail: "the exterior ring has only 1 distinct vertex; at least 3 are required" },
    ]);
    expect(checkGeometry(polygon(squareRing(0, 0, 10), []))).toEqual([
      { path: [1], detail: "hole 1 has 0 positions; a ring needs at least 4" },
    ]);
  });

  it("reports every structural problem of a MultiPolygon, with polygon-first paths, and no OGC check", () => {
    const g = multiPolygon(
      [
        squareRing(0, 0),
        [
          [0.2, 0.2],
          [0.4, 0.2],
          [0.4, 0.4],
          [0.2, 0.4],
        ],
      ],
      [squareRing(5, 5)],
      [
        [
          [0, 0],
          [200, 0],
          [0, 1],
          [0, 0],
        ],
      ],
      // Overlaps polygon 0, which would be an OGC error; structure problems come first.
      [squareRing(0.5, 0.5)],
    );
    expect(checkGeometry(g)).toEqual([
      {
        path: [0, 1],
        detail: "hole 1 of polygon 0 is not closed: its last position (0.2, 0.4) differs from its first (0.2, 0.2)",
      },
      {
        path: [2, 0, 1],
        detail:
          "position 1 of the exterior ring of polygon 2 is out of range at (200, 0): longitude must be within -180..180",
      },
    ]);
  });

  it("accepts exactly 100,000 positions and rejects 100,001 with a single whole-geometry issue", () => {
    const ringOf = (count: number): Position[] => {
      const ring: Position[] = [];
      for (let i = 0; i < count - 1; i++) {
        const angle = (2 * Math.PI * i) / (count - 1);
        ring.push([Math.cos(angle), Math.sin(angle)]);
      }
      ring.push(ring[0]);
      return ring;
    };
    expect(checkGeometry(polygon(ringOf(100_000)))).toEqual([]);

    const tooMany = multiPolygon([ringOf(99_996)], [squareRing(5, 5)]);
    tooMany.coordinates[1][0][1] = [NaN, 5];
    expect(checkGeometry(tooMany)).toEqual([
      { path: [], detail: "geometry has 100001 positions; at most 100000 are allowed" },
    ]);
  });
});
