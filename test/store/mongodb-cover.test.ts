/**
 * The 2dsphere cover of a source's box (src/store/mongodb/cover.ts), checked with spherical
 * geometry: drawn with great-circle edges as MongoDB draws them, the cover must contain every
 * point of the planar lon/lat box, so `$geoIntersects` on covers misses no pair whose boxes meet.
 * Also checks the shape rules that keep MongoDB from refusing or inverting a cover.
 */
import { describe, expect, it } from "vitest";
import { boundingBox } from "../../src/geo/bbox.js";
import { prepareSearchArea } from "../../src/geo/intersects.js";
import type { BoundingBox, Position, SourceGeometry } from "../../src/geo/types.js";
import {
  CELL_COVER_CELLS_PER_AXIS,
  CELL_COVER_MIN_DEGREES,
  cellCoverRectangles,
  coverOf,
  coverRings,
  MAX_MERIDIAN_STEP,
  MAX_PARALLEL_STEP,
  MAX_TILE_WIDTH,
  maxGeodesicBulge,
  PAD_DEGREES,
  POLE_LIMIT,
  sourceCoverOf,
} from "../../src/store/mongodb/cover.js";

type Vec = [number, number, number];
const RAD = Math.PI / 180;

function toVec([lon, lat]: Position): Vec {
  return [Math.cos(lat * RAD) * Math.cos(lon * RAD), Math.cos(lat * RAD) * Math.sin(lon * RAD), Math.sin(lat * RAD)];
}

function cross(a: Vec, b: Vec): Vec {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}

function dot(a: Vec, b: Vec): number {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/**
 * Whether `p` lies at least `margin` (the sine of an angle) on the left of every great-circle edge
 * of a counter-clockwise ring, i.e. in its interior (for a convex ring; for any ring the test can
 * only be stricter than "inside"). A margin of -1e-15 accepts points on the boundary up to
 * rounding: far below the cover's padding (1e-7° is 1.7e-9 rad), so it cannot hide a missing pad.
 */
function insideRing(ring: Position[], p: Position, margin: number): boolean {
  const point = toVec(p);
  for (let i = 0; i + 1 < ring.length; i++) {
    const normal = cross(toVec(ring[i]), toVec(ring[i + 1]));
    if (dot(normal, point) / Math.hypot(...normal) < margin) return false;
  }
  return true;
}

const ON_BOUNDARY = -1e-15;

/**
 * In the closed cover: in a tile, or on the meridian two tiles share, or on an outer side that
 * clamping put exactly at ±180° or ±POLE_LIMIT.
 */
function insideCover(box: BoundingBox, p: Position, margin = ON_BOUNDARY): boolean {
  return coverRings(coverOf(box)).some((ring) => insideRing(ring, p, margin));
}

/** Points of the planar box: its sides densely, its corners, and some inside; latitudes kept off the poles. */
function samples(box: BoundingBox, random: () => number): Position[] {
  const lat = (y: number) => Math.max(-POLE_LIMIT, Math.min(POLE_LIMIT, y));
  const points: Position[] = [];
  const n = 200;
  for (let i = 0; i <= n; i++) {
    const x = box.minX + ((box.maxX - box.minX) * i) / n;
    const y = box.minY + ((box.maxY - box.minY) * i) / n;
    points.push([x, lat(box.minY)], [x, lat(box.maxY)], [box.minX, lat(y)], [box.maxX, lat(y)]);
  }
  for (let i = 0; i < 50; i++) {
    points.push([box.minX + random() * (box.maxX - box.minX), lat(box.minY + random() * (box.maxY - box.minY))]);
  }
  return points;
}

function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMED_BOXES: [string, BoundingBox][] = [
  ["a field in Iowa", { minX: -93.6, minY: 41.6, maxX: -93.59, maxY: 41.61 }],
  ["a degree square at 45° N", { minX: 10, minY: 45, maxX: 11, maxY: 46 }],
  ["a long strip along 60° N", { minX: -85, minY: 60, maxX: 85, maxY: 60.5 }],
  ["a long strip along 30° S", { minX: -170, minY: -30.5, maxX: 170, maxY: -30 }],
  ["across the equator", { minX: 100, minY: -5, maxX: 140, maxY: 5 }],
  ["on the equator, north side", { minX: 0, minY: 0, maxX: 60, maxY: 1 }],
  ["the whole globe", { minX: -180, minY: -90, maxX: 180, maxY: 90 }],
  ["at the south pole", { minX: -180, minY: -90, maxX: -179.999999, maxY: -89.999999 }],
  ["a cap around the north pole", { minX: -180, minY: 80, maxX: 180, maxY: 90 }],
  ["at the antimeridian", { minX: 179.5, minY: -10, maxX: 180, maxY: 10 }],
  ["a point", { minX: 7, minY: 8, maxX: 7, maxY: 8 }],
  ["a meridian segment", { minX: 7, minY: -60, maxX: 7, maxY: 60 }],
  ["tall and narrow", { minX: -1, minY: -89, maxX: 1, maxY: 89 }],
];

function randomBox(random: () => number): BoundingBox {
  const kind = random();
  const w = kind < 0.4 ? random() * 0.1 : kind < 0.7 ? random() * 10 : random() * 360;
  const h = kind < 0.4 ? random() * 0.1 : kind < 0.8 ? random() * 20 : random() * 180;
  const minX = -180 + random() * (360 - w);
  const minY = -90 + random() * (180 - h);
  return { minX, minY, maxX: minX + w, maxY: minY + h };
}

describe("2dsphere cover of a box", () => {
  it.each(NAMED_BOXES)("contains every point of the planar box: %s", (_label, box) => {
    const random = prng(1);
    const outside = samples(box, random).filter((p) => !insideCover(box, p));
    expect(outside).toEqual([]);
  });

  it("contains every point of 400 random boxes, from fields to the globe", () => {
    const random = prng(7);
    const failures: string[] = [];
    for (let i = 0; i < 400; i++) {
      const box = randomBox(random);
      const outside = samples(box, random).filter((p) => !insideCover(box, p));
      if (outside.length > 0) failures.push(`${JSON.stringify(box)}: ${JSON.stringify(outside.slice(0, 3))}`);
    }
    expect(failures).toEqual([]);
  });

  it("contains boxes away from the poles and ±180° strictly, by at least a fifth of the padding", () => {
    const random = prng(5);
    const margin = 0.2 * PAD_DEGREES * RAD;
    const failures: string[] = [];
    for (let i = 0; i < 300; i++) {
      const w = random() < 0.5 ? random() * 0.5 : random() * 80;
      const h = random() < 0.5 ? random() * 0.5 : random() * 40;
      const minX = -170 + random() * (340 - w);
      const minY = -60 + random() * (120 - h);
      const box = { minX, minY, maxX: minX + w, maxY: minY + h };
      const outside = samples(box, random).filter((p) => !insideCover(box, p, margin));
      if (outside.length > 0) failures.push(`${JSON.stringify(box)}: ${JSON.stringify(outside.slice(0, 3))}`);
    }
    expect(failures).toEqual([]);
  });

  it("is shaped so MongoDB accepts it as drawn: closed rings, no repeated vertex, tiles under a hemisphere, off the poles", () => {
    const random = prng(11);
    const boxes = [...NAMED_BOXES.map(([, box]) => box), ...Array.from({ length: 200 }, () => randomBox(random))];
    for (const box of boxes) {
      const cover = coverOf(box);
      const rings = coverRings(cover);
      expect(cover.type).toBe(rings.length === 1 ? "Polygon" : "MultiPolygon");
      for (const ring of rings) {
        expect(ring.length).toBeGreaterThanOrEqual(5);
        expect(ring[0]).toEqual(ring[ring.length - 1]);
        const keys = ring.slice(0, -1).map(([x, y]) => `${x},${y}`);
        expect(new Set(keys).size).toBe(keys.length);
        const xs = ring.map(([x]) => x);
        const ys = ring.map(([, y]) => y);
        expect(Math.max(...xs) - Math.min(...xs)).toBeLessThanOrEqual(MAX_TILE_WIDTH + 1e-9);
        for (const [x, y] of ring) {
          expect(Math.abs(x)).toBeLessThanOrEqual(180);
          expect(Math.abs(y)).toBeLessThanOrEqual(POLE_LIMIT);
        }
        expect(Math.max(...ys) - Math.min(...ys)).toBeGreaterThan(0);
        for (let i = 0; i + 1 < ring.length; i++) {
          const [a, b] = [ring[i], ring[i + 1]];
          // No side too short for the index to tell its ends apart: at least ~1e-6° of arc.
          const arc = Math.atan2(Math.hypot(...cross(toVec(a), toVec(b))), dot(toVec(a), toVec(b))) / RAD;
          expect(arc).toBeGreaterThan(0.9e-6);
          // Each side runs along a meridian or a parallel, in short enough steps.
          if (a[0] === b[0]) expect(Math.abs(b[1] - a[1])).toBeLessThanOrEqual(MAX_MERIDIAN_STEP + 1e-9);
          else expect(a[1]).toBe(b[1]);
        }
      }
    }
  });

  it("steps the equatorward side by at most 1° and leaves the poleward side straight", () => {
    const [ring] = coverRings(coverOf({ minX: 0, minY: 40, maxX: 10, maxY: 50 }));
    const south = ring.filter(([, y]) => y < 45);
    const north = ring.filter(([, y]) => y > 45);
    // 10° plus the padding takes 11 steps of under 1°: 12 vertices, and the closing one.
    expect(south.length).toBe(13);
    expect(north.length).toBe(2);
    for (let i = 0; i + 1 < south.length - 1; i++)
      expect(south[i + 1][0] - south[i][0]).toBeLessThanOrEqual(MAX_PARALLEL_STEP + 1e-9);
    expect(south[0][1]).toBeCloseTo(40 - PAD_DEGREES - maxGeodesicBulge((10 + 2 * PAD_DEGREES) / 11), 12);
  });

  it("bounds the rise of a great circle above a parallel", () => {
    for (const step of [1, 0.25, 0.001]) {
      let worst = 0;
      for (let lat = 0.5; lat < 90; lat += 0.5) {
        const peak = Math.atan(Math.tan(lat * RAD) / Math.cos((step * RAD) / 2)) / RAD;
        worst = Math.max(worst, peak - lat);
      }
      expect(worst).toBeLessThanOrEqual(maxGeodesicBulge(step) + 1e-12);
      expect(worst).toBeGreaterThan(maxGeodesicBulge(step) * 0.99);
    }
    expect(maxGeodesicBulge(1)).toBeCloseTo(0.00109, 5);
  });

  it("keeps boxes that meet only inside a polar cap meeting", () => {
    const a = { minX: 10, minY: 89.99995, maxX: 20, maxY: 90 };
    const b = { minX: 15, minY: 89.99999, maxX: 25, maxY: 90 };
    // Both covers reach the cap's edge over the longitudes the boxes share.
    const shared: Position = [17.5, POLE_LIMIT - 1e-7];
    expect(insideCover(a, shared)).toBe(true);
    expect(insideCover(b, shared)).toBe(true);
  });

  it("splits a box wider than 90° into equal tiles", () => {
    expect(coverOf({ minX: -50, minY: 0, maxX: 50, maxY: 1 }).type).toBe("MultiPolygon");
    expect(coverRings(coverOf({ minX: -180, minY: -90, maxX: 180, maxY: 90 }))).toHaveLength(4);
    expect(coverOf({ minX: 0, minY: 0, maxX: 89, maxY: 1 }).type).toBe("Polygon");
  });
});

describe("2dsphere cover of a large source: the cells its geometry meets", () => {
  /** Random rectangles and triangles scattered in a random box 1°–300° wide: a jurisdiction with islands. */
  function scattered(random: () => number): { geometry: SourceGeometry; parts: BoundingBox[] } {
    const w = 1 + random() * 299;
    const h = Math.min(178, 1 + random() * 120);
    const x0 = -180 + random() * (360 - w);
    const y0 = -90 + random() * (180 - h);
    const parts: BoundingBox[] = [];
    const coordinates: Position[][][] = [];
    const count = 1 + Math.floor(random() * 6);
    for (let k = 0; k < count; k++) {
      const pw = random() < 0.5 ? random() * 0.5 : random() * w * 0.4;
      const ph = random() < 0.5 ? random() * 0.5 : random() * h * 0.4;
      const minX = x0 + random() * (w - pw);
      const minY = y0 + random() * (h - ph);
      const part = { minX, minY, maxX: minX + pw, maxY: minY + ph };
      parts.push(part);
      coordinates.push(
        random() < 0.5
          ? [
              [
                [minX, minY],
                [part.maxX, minY],
                [part.maxX, part.maxY],
                [minX, part.maxY],
                [minX, minY],
              ],
            ]
          : [
              [
                [minX, minY],
                [part.maxX, minY],
                [minX, part.maxY],
                [minX, minY],
              ],
            ],
      );
    }
    return { geometry: { type: "MultiPolygon", coordinates }, parts };
  }

  /** Points of the geometry: every vertex, points along every edge, and some inside each part. */
  function geometryPoints(geometry: SourceGeometry, random: () => number): Position[] {
    const points: Position[] = [];
    const polygons = geometry.type === "Polygon" ? [geometry.coordinates] : geometry.coordinates;
    for (const [ring] of polygons) {
      for (let i = 0; i + 1 < ring.length; i++) {
        const [a, b] = [ring[i], ring[i + 1]];
        for (let t = 0; t <= 20; t++) points.push([a[0] + ((b[0] - a[0]) * t) / 20, a[1] + ((b[1] - a[1]) * t) / 20]);
      }
      // Inside a triangle or a rectangle: a convex combination of its first three vertices.
      for (let k = 0; k < 10; k++) {
        const [u, v] = [random(), random()];
        const [s, t] = u + v > 1 ? [1 - u, 1 - v] : [u, v];
        const [a, b, c] = ring;
        points.push([a[0] + s * (b[0] - a[0]) + t * (c[0] - a[0]), a[1] + s * (b[1] - a[1]) + t * (c[1] - a[1])]);
      }
    }
    // Only points truly of the geometry (an interpolated one may land an ulp outside it), decided exactly.
    return points.filter((p) => prepareSearchArea({ type: "Point", coordinates: p }).intersects(geometry));
  }

  it("holds every point of 300 scattered geometries, in its rectangles and drawn as MongoDB draws it", () => {
    const random = prng(21);
    const failures: string[] = [];
    let tighter = 0;
    for (let i = 0; i < 300; i++) {
      const { geometry } = scattered(random);
      const box = boundingBox(geometry);
      const rectangles = cellCoverRectangles(geometry, box);
      expect(rectangles.length).toBeLessThanOrEqual(CELL_COVER_CELLS_PER_AXIS ** 2);
      if (rectangles.length > 1 || rectangles[0] !== box) tighter++;
      const rings = coverRings(sourceCoverOf(geometry, box));
      for (const p of geometryPoints(geometry, random)) {
        const inRectangle = rectangles.some(
          (r) => r.minX <= p[0] && p[0] <= r.maxX && r.minY <= p[1] && p[1] <= r.maxY,
        );
        const onSphere: Position = [p[0], Math.max(-POLE_LIMIT, Math.min(POLE_LIMIT, p[1]))];
        const inCover = rings.some((ring) => insideRing(ring, onSphere, ON_BOUNDARY));
        if (!inRectangle || !inCover) failures.push(`${JSON.stringify(geometry)}: ${JSON.stringify(p)}`);
      }
      // Each polygon is a box cover, shaped as MongoDB accepts it (checked for box covers above).
      for (const ring of rings) {
        expect(ring[0]).toEqual(ring[ring.length - 1]);
        const xs = ring.map(([x]) => x);
        expect(Math.max(...xs) - Math.min(...xs)).toBeLessThanOrEqual(MAX_TILE_WIDTH + 1e-9);
      }
    }
    expect(failures.slice(0, 5)).toEqual([]);
    // The point of it: most scattered sources get a cover smaller than their box.
    expect(tighter).toBeGreaterThan(200);
  });

  it("keeps the box cover for a source up to 1° on a side", () => {
    const field: SourceGeometry = {
      type: "Polygon",
      coordinates: [
        [
          [10, 10],
          [11, 10],
          [10, 11],
          [10, 10],
        ],
      ],
    };
    expect(CELL_COVER_MIN_DEGREES).toBe(1);
    expect(sourceCoverOf(field, boundingBox(field))).toStrictEqual(coverOf(boundingBox(field)));
  });
});
