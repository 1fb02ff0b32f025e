import { describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import { boundaryIndexOf } from "../../src/geo/boundary-index.js";
import { SegmentIndex } from "../../src/geo/intersects.js";
import { intersection, intersectionAreaM2, jstsEngine, OverlayAllowance } from "../../src/geo/overlap.js";
import { geometryFromPolygons, polygonsOf } from "../../src/geo/parts.js";
import type { BoundingBox, Position, SourceGeometry } from "../../src/geo/types.js";
import { conflictMeasure } from "../../src/ledger/conflict.js";
import type { SpatialSubject } from "../../src/model/spatial.js";
import { prng } from "../support/geometry-fixtures.js";
import { circleRing, multiPolygon, square, starRing } from "./fixtures.js";

type Edge = [Position, Position];
const edgesOf = (g: SourceGeometry): Edge[] =>
  polygonsOf(g)
    .flat()
    .flatMap((ring) => ring.slice(1).map((end, i): Edge => [ring[i], end]));

/** Whether any edge's box meets the closed box, by brute force. */
function bruteNear(g: SourceGeometry | Edge[], box: BoundingBox): boolean {
  return (Array.isArray(g) ? g : edgesOf(g)).some(
    ([p, q]) =>
      Math.max(p[0], q[0]) >= box.minX &&
      Math.min(p[0], q[0]) <= box.maxX &&
      Math.max(p[1], q[1]) >= box.minY &&
      Math.min(p[1], q[1]) <= box.maxY,
  );
}

/** Even-odd ray casting over every edge, by brute force. */
function bruteInside(g: SourceGeometry | Edge[], [x, y]: Position): boolean {
  let inside = false;
  for (const [p, q] of Array.isArray(g) ? g : edgesOf(g)) {
    if (p[1] > y !== q[1] > y && x < p[0] + ((y - p[1]) * (q[0] - p[0])) / (q[1] - p[1])) inside = !inside;
  }
  return inside;
}

/** A star with a hole, and a second star beside it: shells, a hole and two parts. */
function starsWithHole(next: () => number, vertices: number): SourceGeometry {
  const hole = circleRing(0, 0, 0.3, 40).reverse();
  return multiPolygon([starRing(next, 0, 0, 1, vertices, 0.5), hole], [starRing(next, 3, 0, 1, vertices, 0.5)]);
}

function jtsArea(a: SourceGeometry, b: SourceGeometry): number {
  const common = geometryFromPolygons(jstsEngine.intersection(polygonsOf(a), polygonsOf(b)));
  return common === null ? 0 : geodesicAreaM2(common);
}

describe("a boundary index (intersects.ts's SegmentIndex) for settling overlays", () => {
  it("finds the boundary near a box, and the side a point is on, as brute force does", () => {
    const random = prng(20261127);
    for (let round = 0; round < 20; round++) {
      const g = starsWithHole(random, 50 + Math.floor(random() * 300));
      const index = new SegmentIndex(polygonsOf(g));
      let settled = 0;
      for (let query = 0; query < 200; query++) {
        const x = -1.2 + random() * 5.4;
        const y = -1.2 + random() * 2.4;
        const size = random() * 0.2;
        const box = { minX: x, minY: y, maxX: x + size, maxY: y + size };
        const near = bruteNear(g, box);
        expect(index.someSegmentNear(box)).toBe(near);
        if (!near) {
          settled++;
          expect(index.locate(x, y) === "inside").toBe(bruteInside(g, [x, y]));
          expect(index.locate(x + size, y + size) === "inside").toBe(bruteInside(g, [x, y]));
        }
      }
      expect(settled).toBeGreaterThan(50);
    }
  });

  it("is built on a geometry's second use, not its first", () => {
    const g = starsWithHole(prng(7), 600);
    expect(boundaryIndexOf(g)).toBeUndefined();
    const index = boundaryIndexOf(g);
    expect(index).toBeInstanceOf(SegmentIndex);
    expect(boundaryIndexOf(g)).toBe(index);
  });
});

describe("intersection with a large geometry: small inputs wholly inside or outside need no overlay", () => {
  it("answers the small input itself, or nothing, with JTS's areas; inputs the boundary passes near are overlaid", () => {
    const random = prng(11);
    const large = starsWithHole(random, 3_000);
    // Its first use is an ordinary overlay; the index serves it from the second.
    boundaryIndexOf(large);
    const index = boundaryIndexOf(large) as SegmentIndex;
    for (let i = 0; i < 300; i++) {
      const small = square(-1.2 + random() * 5.4, -1.2 + random() * 2.4, 0.02);
      const common = intersection(large, small);
      // JTS on the whole inputs for some (~100 ms each), the ordinary overlay (a copy met once) for all.
      const expected = i % 20 === 0 ? jtsArea(large, small) : intersectionAreaM2(structuredClone(large), small);
      expect(common === null ? 0 : geodesicAreaM2(common)).toBeCloseTo(expected, 0);
      if (!index.someSegmentNear(boundingBox(small))) expect(common === null || common === small).toBe(true);
    }
  });

  it("spends only the small input's positions from an allowance", () => {
    const large = starsWithHole(prng(3), 3_000);
    const inside = square(-0.05, 0.5, 0.02);
    const allowance = new OverlayAllowance({ positions: 6_100, edgePairs: 1_000, beamWork: 10_000_000 });
    // The first use overlays (3,000 + 3,000 + 40 + 5 positions); the index serves the second on.
    expect(intersectionAreaM2(large, inside, undefined, allowance)).toBeCloseTo(geodesicAreaM2(inside), 3);
    for (let i = 0; i < 10; i++) {
      expect(intersectionAreaM2(large, inside, undefined, allowance)).toBe(geodesicAreaM2(inside));
    }
    expect(allowance.exhausted).toBe(false);
  });

  it("measures a new jurisdiction against thousands of fields in its box exactly, none flagged for want of allowance", () => {
    // A 20,000-position jurisdiction with deep notches, and 3,000 fields over its box, many in
    // the notches (outside it). Each overlay would spend 20,000 positions: the allowance of
    // 40,000,000 would run out after 2,000 fields and flag the rest, those outside included.
    const random = prng(5);
    const vertices = 20_000;
    const shell: Position[] = [];
    for (let i = 0; i < vertices; i++) {
      const angle = (2 * Math.PI * i) / vertices;
      const r = 1 - 0.6 * Math.max(0, Math.cos(angle * 12)) ** 8;
      shell.push([r * Math.cos(angle), r * Math.sin(angle)]);
    }
    shell.push(shell[0]);
    const period = { startAt: 0, endAt: 1 };
    const subjectOf = (geometry: SourceGeometry): SpatialSubject => ({
      geometry,
      bbox: boundingBox(geometry),
      areaM2: geodesicAreaM2(geometry),
      attributeType: [],
      ...period,
    });
    const jurisdiction = subjectOf({ type: "Polygon", coordinates: [shell] });
    let inside = 0;
    let outside = 0;
    let nearBoundary = 0;
    const edges = edgesOf(jurisdiction.geometry);
    for (let i = 0; i < 3_000; i++) {
      const field = subjectOf(square(-1 + random() * 1.99, -1 + random() * 1.99, 0.005));
      const measure = conflictMeasure(jurisdiction, field);
      if (bruteNear(edges, field.bbox)) {
        // Overlaid: against JTS on the whole inputs for some (~150 ms each).
        if (nearBoundary++ % 25 === 0) {
          const reference = jtsArea(jurisdiction.geometry, field.geometry);
          if (reference < 0.01 * field.areaM2) expect(measure).toBeNull();
          else expect(measure?.overlapAreaM2).toBeCloseTo(reference, 0);
        }
      } else if (bruteInside(edges, field.geometry.coordinates[0][0] as Position)) {
        inside++;
        // Past the first field (an ordinary overlay), the field itself is the overlap.
        if (i > 0) expect(measure?.overlapAreaM2).toBe(field.areaM2);
      } else {
        outside++;
        expect(measure).toBeNull();
      }
    }
    expect(inside).toBeGreaterThan(1_000);
    expect(outside).toBeGreaterThan(500);
    expect(nearBoundary).toBeGreaterThan(10);
  });

  it("spends only the small input's positions for an input wholly outside, as for one wholly inside", () => {
    const large = starsWithHole(prng(3), 3_000);
    // In the large geometry's box, beside the star's hole: outside it.
    const outside = square(-0.05, -0.05, 0.02);
    const allowance = new OverlayAllowance({ positions: 7_000, edgePairs: 1_000, beamWork: 10_000_000 });
    expect(intersection(large, outside, undefined, allowance)).toBeNull();
    for (let i = 0; i < 100; i++) expect(intersection(large, outside, undefined, allowance)).toBeNull();
    expect(allowance.exhausted).toBe(false);
  });

  // Wavy, and a circle: a convex one is not walked whole per field (convex-clip.ts is for small rings).
  it.each([
    { shape: "wavy", waves: 0.2 },
    { shape: "convex", waves: 0 },
  ])(
    "measures every field along a 99,000-position $shape jurisdiction's boundary within one request's allowance, reading its index",
    ({ waves }) => {
      const vertices = 99_000;
      const shell: Position[] = [];
      for (let i = 0; i < vertices; i++) {
        const angle = (2 * Math.PI * i) / vertices;
        const r = 1 + waves * Math.sin(angle * 40);
        shell.push([r * Math.cos(angle), r * Math.sin(angle)]);
      }
      shell.push(shell[0]);
      const jurisdiction: SourceGeometry = { type: "Polygon", coordinates: [shell] };
      // One request's allowance: each field read all 99,000 positions before, and the ~400th ran it out.
      const allowance = new OverlayAllowance();
      let partial = 0;
      for (let i = 0; i < 1_000; i++) {
        const angle = (2 * Math.PI * (i + 0.37)) / 1_000;
        const r = 1 + waves * Math.sin(angle * 40);
        const field = square(r * Math.cos(angle) - 0.005, r * Math.sin(angle) - 0.005, 0.01);
        const measured = intersectionAreaM2(jurisdiction, field, undefined, allowance);
        if (measured > 0.01 * geodesicAreaM2(field) && measured < 0.99 * geodesicAreaM2(field)) partial++;
        // Against the ordinary overlay of a copy met once (read whole), for some.
        if (i % 50 === 0) expect(measured).toBeCloseTo(intersectionAreaM2(structuredClone(jurisdiction), field), 3);
      }
      expect(partial).toBeGreaterThan(900);
      expect(allowance.exhausted).toBe(false);
    },
  );
});
