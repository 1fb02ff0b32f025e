import { describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { nearParts } from "../../src/geo/clip.js";
import { clipperEngine } from "../../src/geo/clipper-engine.js";
import { clipIndexed, type IndexedClip } from "../../src/geo/indexed-clip.js";
import { SegmentIndex } from "../../src/geo/intersects.js";
import { geometryFromPolygons, polygonsOf } from "../../src/geo/parts.js";
import type { BoundingBox, PolygonCoordinates, Position, SourceGeometry } from "../../src/geo/types.js";
import { prng } from "../support/geometry-fixtures.js";
import { circleRing, combGeometry, multiPolygon, polygon, starRing } from "./fixtures.js";

/** The winding number of a closed ring about a point not on it, by summing turns. */
function winding(ring: readonly Position[], [x, y]: Position): number {
  let angle = 0;
  for (let i = 1; i < ring.length; i++) {
    const ax = ring[i - 1][0] - x;
    const ay = ring[i - 1][1] - y;
    const bx = ring[i][0] - x;
    const by = ring[i][1] - y;
    angle += Math.atan2(ax * by - ay * bx, ax * bx + ay * by);
  }
  return Math.round(angle / (2 * Math.PI));
}

/** Whether a point lies in the polygons: the sum of its rings' winding numbers, per part, is odd. */
function covers(parts: readonly PolygonCoordinates[], p: Position): number {
  let count = 0;
  for (const rings of parts) {
    const total = rings.reduce((n, ring) => n + winding(ring, p), 0);
    if (total !== 0) count++;
  }
  return count;
}

/** A square ring spiralling `turns` times around the origin between radii 1 and 2, closed by coming back. */
function spiral(turns: number, perTurn: number): Position[] {
  const out: Position[] = [];
  const steps = turns * perTurn;
  for (let i = 0; i <= steps; i++) {
    const a = (2 * Math.PI * i) / perTurn;
    const r = 1 + i / steps;
    out.push([r * Math.cos(a), r * Math.sin(a)]);
  }
  for (let i = steps; i >= 0; i--) {
    const a = (2 * Math.PI * i) / perTurn;
    const r = 1.02 + i / steps;
    out.push([r * Math.cos(a), r * Math.sin(a)]);
  }
  out.push(out[0]);
  return out;
}

/** The indexed clip, with no limit on what it may read. */
function clippedTo(parts: PolygonCoordinates[], index: SegmentIndex, box: BoundingBox): IndexedClip {
  const clip = clipIndexed(parts, index, box, 0);
  if (clip === null) throw new Error("an unlimited clip is never refused");
  return clip;
}

function clipBoth(g: SourceGeometry, box: BoundingBox) {
  const parts = polygonsOf(g);
  return { indexed: clippedTo(parts, new SegmentIndex(parts), box), plain: nearParts(parts, box) };
}

function randomBox(random: () => number, extent: BoundingBox, largest: number): BoundingBox {
  const w = random() * largest;
  const h = random() * largest;
  const x = extent.minX + random() * (extent.maxX - extent.minX);
  const y = extent.minY + random() * (extent.maxY - extent.minY);
  return { minX: x, minY: y, maxX: x + w, maxY: y + h };
}

describe("clipping an indexed geometry to a box (indexed-clip.ts)", () => {
  it("keeps the winding number of every point inside the box, on stars with holes and MultiPolygons", () => {
    const random = prng(20261127);
    let points = 0;
    let clippedRings = 0;
    for (let round = 0; round < 60; round++) {
      const vertices = 20 + Math.floor(random() * 400);
      const hole = circleRing(0, 0, 0.1 + random() * 0.15, 30).reverse();
      const g = multiPolygon(
        [starRing(random, 0, 0, 1, vertices, 0.3 + random() * 0.6), hole],
        [starRing(random, 2.5, 0, 1, vertices, 0.5)],
      );
      const parts = polygonsOf(g);
      const index = new SegmentIndex(parts);
      for (let query = 0; query < 20; query++) {
        const box = randomBox(random, { minX: -1.5, minY: -1.5, maxX: 3.5, maxY: 1.5 }, query % 4 === 0 ? 2.5 : 0.4);
        const clip = clippedTo(parts, index, box);
        clippedRings += clip.near.reduce((n, rings) => n + rings.length, 0);
        for (let k = 0; k < 30; k++) {
          const p: Position = [
            box.minX + (0.001 + 0.998 * random()) * (box.maxX - box.minX),
            box.minY + (0.001 + 0.998 * random()) * (box.maxY - box.minY),
          ];
          expect(covers(clip.near, p)).toBe(covers(parts, p));
          points++;
        }
        // Every ring of the result lies in the closed box.
        for (const ring of clip.near.flat()) {
          for (const [x, y] of ring) {
            expect(x >= box.minX && x <= box.maxX && y >= box.minY && y <= box.maxY).toBe(true);
          }
        }
      }
    }
    expect(points).toBe(60 * 20 * 30);
    expect(clippedRings).toBeGreaterThan(500);
  });

  it("turns a spiral's stretches round the box as often as they go round it", () => {
    const ring = spiral(3, 64);
    const g = polygon(ring);
    const box = { minX: -0.5, minY: -0.5, maxX: 0.5, maxY: 0.5 };
    // No segment meets the box, and the ring does not wind about it (out three turns, back three).
    expect(clipBoth(g, box).indexed.near).toEqual([]);
    // A box the spiral's arms cross: each point inside keeps its winding number.
    const random = prng(3);
    const crossed = { minX: 0.9, minY: -0.3, maxX: 2.2, maxY: 0.3 };
    const { indexed } = clipBoth(g, crossed);
    for (let k = 0; k < 2_000; k++) {
      const p: Position = [0.9 + random() * 1.3, -0.3 + random() * 0.6];
      expect(covers(indexed.near, p)).toBe(covers([[ring]], p));
    }
  });

  it("gives a box inside a shell as the box's outline, and drops a polygon whose hole holds the box", () => {
    const shell = circleRing(0, 0, 1, 2_000);
    const hole = circleRing(0, 0, 0.5, 2_000).reverse();
    const parts = polygonsOf(polygon(shell, hole));
    const index = new SegmentIndex(parts);
    const inShell = clippedTo(parts, index, { minX: 0.6, minY: -0.1, maxX: 0.8, maxY: 0.1 });
    expect(inShell.near).toEqual([
      [
        [
          [0.6, -0.1],
          [0.8, -0.1],
          [0.8, 0.1],
          [0.6, 0.1],
          [0.6, -0.1],
        ],
      ],
    ]);
    expect(clippedTo(parts, index, { minX: -0.1, minY: -0.1, maxX: 0.1, maxY: 0.1 }).near).toEqual([]);
    expect(clippedTo(parts, index, { minX: 1.1, minY: 1.1, maxX: 1.2, maxY: 1.2 }).near).toEqual([]);
  });

  it("keeps a corner however thin the box: points are placed by their distance along its outline", () => {
    // A simple ring wrapping the west end of a box 1e-12 high, its arms entering 1e-4 and 2e-4
    // from the west corners: by angle about the centre, the entry and the corner cannot be told apart.
    const ring: Position[] = [
      [1e-4, -1],
      [1e-4, 5e-13],
      [0.9, 5e-13],
      [0.9, 6e-13],
      [2e-4, 6e-13],
      [2e-4, 2],
      [-1, 2],
      [-1, -2],
      [2, -2],
      [2, -1],
      [1e-4, -1],
    ];
    const parts = polygonsOf(polygon(ring));
    const box = { minX: 0, maxX: 1, minY: 0, maxY: 1e-12 };
    const { near } = clippedTo(parts, new SegmentIndex(parts), box);
    for (const p of [
      [5e-7, 1e-13],
      [0.5, 5.5e-13],
      [0.5, 2e-13],
      [0.95, 9e-13],
    ] as Position[]) {
      expect(covers(near, p)).toBe(covers(parts, p));
    }
  });

  it("keeps every position inside the box when rounding leaves a segment's end an ulp outside it", () => {
    const ring: Position[] = [
      [54.46025442896855, 41.07661548041541],
      [7.110960460467872, 58.28489141166249],
      [7.110960460467872, 30],
      [54.46025442896855, 41.07661548041541],
    ];
    const parts = polygonsOf(polygon(ring));
    const box = { minX: 7.110960460467873, maxX: 7.4, minY: 32, maxY: 58.28489141166249 };
    const { near } = clippedTo(parts, new SegmentIndex(parts), box);
    expect(near).toHaveLength(1);
    for (const [x, y] of near.flat(2)) {
      expect(x >= box.minX && x <= box.maxX && y >= box.minY && y <= box.maxY).toBe(true);
    }
  });

  it("leaves a box over much of the geometry to the plain clip, which reads every position once", () => {
    // A comb of 500 teeth (2,005 positions) running east: a box over most of them meets most of its segments.
    const comb = combGeometry({ x: 0, y: 0, teeth: 500, height: 5, length: 1, spine: 0.1 });
    const parts = polygonsOf(comb);
    const index = new SegmentIndex(parts);
    const box = { minX: 0.2, minY: 0.2, maxX: 0.9, maxY: 4.8 };
    expect(clipIndexed(parts, index, box, 0, comb.coordinates[0].length / 8)).toBeNull();
    // Through nearParts: the plain clip's answer, what the index read before giving up charged too.
    const plain = nearParts(parts, box);
    const indexed = nearParts(parts, box, index);
    expect(indexed.near).toEqual(plain.near);
    expect(indexed.read).toBeGreaterThan(plain.read);
    expect(indexed.read).toBeLessThan(plain.read * 1.5);
    // A small box among the last teeth is still served by the index.
    const small = nearParts(parts, { minX: 0.5, minY: 4.9, maxX: 0.6, maxY: 4.92 }, index);
    expect(small.near[0][0].length).toBeLessThan(20);
    expect(small.read).toBeLessThan(300);
  });

  it("gives the same intersection areas as the Sutherland–Hodgman clip", () => {
    const random = prng(99);
    const shell = starRing(random, 0, 0, 1, 3_000, 0.7);
    const hole = circleRing(0.1, 0, 0.15, 500).reverse();
    const g = polygon(shell, hole);
    let compared = 0;
    for (let i = 0; i < 200; i++) {
      const x = -1 + random() * 2;
      const y = -1 + random() * 2;
      const field = polygon(circleRing(x, y, 0.01 + random() * 0.05, 12));
      const fieldBox = { minX: x - 0.07, minY: y - 0.07, maxX: x + 0.07, maxY: y + 0.07 };
      const { indexed, plain } = clipBoth(g, fieldBox);
      const areaOf = (near: PolygonCoordinates[]) => {
        if (near.length === 0) return 0;
        const common = geometryFromPolygons(clipperEngine.intersection(polygonsOf(field), near));
        return common === null ? 0 : geodesicAreaM2(common);
      };
      const expected = areaOf(plain.near);
      expect(areaOf(indexed.near)).toBeCloseTo(expected, 3);
      if (expected > 0) compared++;
    }
    expect(compared).toBeGreaterThan(50);
  });

  it("reads the index, not every position: a box on a 100,000-position boundary visits a few hundred nodes", () => {
    const shell = circleRing(0, 0, 1, 100_000);
    const parts = polygonsOf(polygon(shell));
    const index = new SegmentIndex(parts);
    const before = index.visited;
    const clip = clippedTo(parts, index, { minX: 0.99, minY: -0.001, maxX: 1.01, maxY: 0.001 });
    const visited = index.visited - before;
    expect(clip.near).toHaveLength(1);
    expect(clip.near[0][0].length).toBeLessThan(100);
    expect(visited).toBeGreaterThan(0);
    expect(visited).toBeLessThan(1_000);
  });
});
