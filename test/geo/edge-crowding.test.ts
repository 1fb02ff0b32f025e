import { describe, expect, it } from "vitest";
import { MAX_CROWDED_EDGE_PAIRS, xOverlappingEdgePairs } from "../../src/geo/edge-crowding.js";
import type { Position } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { circleRing, multiPolygon, polygon } from "./fixtures.js";

/** The rings' monotone chains (maximal runs of edges heading into one quadrant, repeated positions dropped) by brute force, then every pair of them whose longitude extents overlap or touch. */
function bruteForce(rings: Position[][]): number {
  const extents: [number, number][] = [];
  for (const ring of rings) {
    const points = ring.filter((p, i) => i === 0 || p[0] !== ring[i - 1][0] || p[1] !== ring[i - 1][1]);
    const quadrantOf = (i: number) => {
      const dx = points[i + 1][0] - points[i][0];
      const dy = points[i + 1][1] - points[i][1];
      return `${dx >= 0}${dy >= 0}`;
    };
    let first = 0;
    for (let i = 0; i < points.length - 1; i++) {
      if (i === points.length - 2 || quadrantOf(i + 1) !== quadrantOf(i)) {
        const xs = points.slice(first, i + 2).map((p) => p[0]);
        extents.push([Math.min(...xs), Math.max(...xs)]);
        first = i + 1;
      }
    }
  }
  let pairs = 0;
  for (let i = 0; i < extents.length; i++) {
    for (let j = i + 1; j < extents.length; j++) {
      if (extents[i][0] <= extents[j][1] && extents[j][0] <= extents[i][1]) pairs++;
    }
  }
  return pairs;
}

/** A closed ring whose vertices alternate between two radii: a valid polygon whose edges all cross in longitude. */
function zigZagStar(positions: number, x = 30.5, y = 30.5): Position[] {
  const ring: Position[] = [];
  for (let i = 0; i < positions - 1; i++) {
    const angle = (2 * Math.PI * i) / (positions - 1);
    const radius = i % 2 === 1 ? 1 : 0.5;
    ring.push([x + radius * Math.cos(angle), y + radius * Math.sin(angle)]);
  }
  ring.push(ring[0]);
  return ring;
}

describe("xOverlappingEdgePairs", () => {
  it("counts the pairs of monotone chains overlapping or touching in longitude, as building and trying every pair does", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 200; round++) {
      const rings = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
        const ring = Array.from(
          { length: 3 + Math.floor(random() * 30) },
          (): Position => [
            // Coarse values, so that equal and touching extents happen.
            Math.round(random() * 20) / 2,
            random(),
          ],
        );
        ring.push(ring[0]);
        return ring;
      });
      expect(xOverlappingEdgePairs(rings)).toBe(bruteForce(rings));
    }
  });

  it("is 0 for no edges and for edges apart in longitude", () => {
    expect(xOverlappingEdgePairs([])).toBe(0);
    expect(xOverlappingEdgePairs([[[0, 0]]])).toBe(0);
    expect(
      xOverlappingEdgePairs([
        [
          [0, 0],
          [1, 0],
        ],
        [
          [2, 0],
          [3, 5],
        ],
      ]),
    ).toBe(0);
  });
});

describe("OGC validity of crowded rings (docs/api.md §5.4)", () => {
  it("refuses a 16,000-position zig-zag star, whose JTS check took seconds, naming the limit", () => {
    const ring = zigZagStar(16_000);
    const pairs = xOverlappingEdgePairs([ring]);
    expect(pairs).toBeGreaterThan(MAX_CROWDED_EDGE_PAIRS);
    expect(checkGeometry(polygon(ring))).toEqual([
      {
        path: [],
        detail:
          `the polygon is too intricate to check for OGC validity: ${pairs.toLocaleString("en-US")} pairs of its ` +
          "edge runs (monotone chains) overlap in longitude, at most 10,000,000 are checked; simplify it or split it into several sources",
      },
    ]);
  });

  it("counts a multipolygon's parts together: two stars each under the limit are over it", () => {
    const star = zigZagStar(8_000);
    const one = xOverlappingEdgePairs([star]);
    expect(one).toBeLessThan(MAX_CROWDED_EDGE_PAIRS);
    const issues = checkGeometry(multiPolygon([star], [zigZagStar(8_000, 33.5)]));
    expect(issues).toHaveLength(1);
    expect(issues[0].path).toEqual([1]);
    expect(issues[0].detail).toMatch(
      /^the multipolygon is too intricate to check for OGC validity: [\d,]+ pairs of its edge runs \(monotone chains\) overlap in longitude \(counted up to polygon 1\), at most 10,000,000 are checked/,
    );
  });

  it("still checks a star under the limit; a circle, a densified meridian and meanders never meet it", () => {
    expect(checkGeometry(polygon(zigZagStar(4_000)))).toEqual([]);
    const circle = circleRing(10, 50, 0.01, 99_999);
    expect(xOverlappingEdgePairs([circle])).toBeLessThan(MAX_CROWDED_EDGE_PAIRS / 10);
    expect(checkGeometry(polygon(circle))).toEqual([]);
    // A 1° square whose west side (a meridian) has 4,500 positions: 10 million pairs of edges, but
    // one chain to JTS (it was refused when edges were counted).
    const west: Position[] = Array.from({ length: 4_500 }, (_, i): Position => [0, 1 - i / 4_500]);
    const square: Position[] = [...west, [0, 0], [1, 0], [1, 1], [0, 1]];
    expect(xOverlappingEdgePairs([square])).toBeLessThan(100);
    expect(checkGeometry(polygon(square))).toEqual([]);
  });

  it("refuses thousands of parts whose boxes all overlap (4,000 took 32 s and 700 MB, 20,000 ran out of memory)", () => {
    for (const count of [4_000, 20_000]) {
      const strips = Array.from({ length: count }, (_, i): Position[][] => {
        const x = i * 1e-4;
        return [
          [
            [x, 0],
            [x + 0.00005, 0],
            [x + 10.00005, 10],
            [x + 10, 10],
            [x, 0],
          ],
        ];
      });
      expect(checkGeometry(multiPolygon(...strips))).toEqual([
        {
          path: [],
          detail:
            "the multipolygon is too intricate to check for OGC validity: too many of its polygons' bounding boxes " +
            "overlap (over 500,000 pairs, or 20,000,000 along one axis); simplify it or split it into several sources",
        },
      ]);
    }
  });
});
