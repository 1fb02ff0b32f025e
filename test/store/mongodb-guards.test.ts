/**
 * The guard cells of the MongoDB store (src/store/mongodb/guards.ts), without a server: the
 * unit-level form of "no write skew". Two concurrent creates are serialised by MongoDB only if
 * their transactions write a common document, so the property that matters is that any two boxes
 * that meet — of any sizes, touching at an edge or a corner included, on cell lines, at the poles
 * and at ±180° — write at least one common guard id. Also the number of guards a create writes
 * for a field, a county, a country and the globe, before (1° cells) and now (docs/mongodb.md).
 */
import { describe, expect, it } from "vitest";
import { boundingBox, boxesIntersect } from "../../src/geo/bbox.js";
import { prepareSearchArea } from "../../src/geo/intersects.js";
import type { BoundingBox, MultiPolygonGeometry, Position, SourceGeometry } from "../../src/geo/types.js";
import { sourceRectanglesOf } from "../../src/store/mongodb/cover.js";
import { GUARD_CELL_DEGREES, guardCellId, guardCellIds, guardCellsOf } from "../../src/store/mongodb/guards.js";
import { prng } from "../support/geometry-fixtures.js";

const clamp = (value: number, low: number, high: number) => Math.min(Math.max(value, low), high);

function shareAGuard(a: BoundingBox, b: BoundingBox): boolean {
  const ids = new Set(guardCellIds(a));
  return guardCellIds(b).some((id) => ids.has(id));
}

/** The guard count of the scheme before this one: one guard per 1° cell a closed box meets. */
function oneDegreeGuardCount(box: BoundingBox): number {
  const index = (value: number, count: number) => clamp(Math.floor(value), 0, count - 1);
  const columns = index(box.maxX + 180, 360) - index(box.minX + 180, 360) + 1;
  const rows = index(box.maxY + 90, 180) - index(box.minY + 90, 180) + 1;
  return columns * rows;
}

/** Source sizes, in degrees on a side: a point, a field, a county, a state, a country, a continent, the globe. */
const SIZES = [0, 1e-6, 0.01, 0.5, 3, 10, 11.25, 40, 120, 360];

/** A coordinate the store accepts, often on a guard cell line, at a pole or at ±180°. */
function coordinate(next: () => number, low: number, high: number): number {
  const kind = next();
  if (kind < 0.15) return low;
  if (kind < 0.3) return high;
  if (kind < 0.55) {
    const lines = Math.floor((high - low) / GUARD_CELL_DEGREES);
    return low + Math.floor(next() * (lines + 1)) * GUARD_CELL_DEGREES;
  }
  return low + next() * (high - low);
}

/** A side of length about `size` through `p` (p anywhere in it, often on one of its ends), inside [low, high]. */
function sideThrough(next: () => number, p: number, size: number, low: number, high: number): [number, number] {
  const kind = next();
  const before = kind < 0.3 ? 0 : kind < 0.6 ? size : next() * size;
  // p itself is an end when `before` is 0 or `size`: no rounding moves it out of the side.
  return [clamp(Math.min(p, p - before), low, high), clamp(Math.max(p, p + (size - before)), low, high)];
}

function boxThrough(next: () => number, [x, y]: [number, number], width: number, height: number): BoundingBox {
  const [minX, maxX] = sideThrough(next, x, width, -180, 180);
  const [minY, maxY] = sideThrough(next, y, height, -90, 90);
  return { minX, minY, maxX, maxY };
}

function randomSize(next: () => number): number {
  return next() < 0.7 ? SIZES[Math.floor(next() * SIZES.length)] : 10 ** (-6 + next() * 8.6);
}

describe("guard cells: two boxes that meet always write a common guard", () => {
  it("holds for 40,000 random pairs of mixed sizes meeting at a point, touching ones included", () => {
    const next = prng(15);
    let touching = 0;
    for (let i = 0; i < 40_000; i++) {
      const p: [number, number] = [coordinate(next, -180, 180), coordinate(next, -90, 90)];
      const a = boxThrough(next, p, randomSize(next), randomSize(next) / 2);
      const b = boxThrough(next, p, randomSize(next), randomSize(next) / 2);
      expect(boxesIntersect(a, b)).toBe(true);
      if (a.maxX === b.minX || b.maxX === a.minX || a.maxY === b.minY || b.maxY === a.minY) touching++;
      if (!shareAGuard(a, b)) expect.fail(`no common guard for ${JSON.stringify(a)} and ${JSON.stringify(b)}`);
    }
    expect(touching).toBeGreaterThan(5_000);
  });

  it("the proof in guards.ts, fact by fact: monotonic cell indexes, whole ranges, and the witness cell of the meeting corner", () => {
    const bits = new Float64Array(1);
    const word = new BigInt64Array(bits.buffer);
    /** The next double after `x` towards +∞ or −∞ (x finite and not 0 here). */
    const step = (x: number, up: boolean): number => {
      bits[0] = x;
      word[0] += x > 0 === up ? 1n : -1n;
      return bits[0];
    };
    const cellOf = (x: number, y: number) => {
      const ids = guardCellIds({ minX: x, minY: y, maxX: x, maxY: y });
      expect(ids).toHaveLength(1);
      const [, column, row] = ids[0].split(":").map(Number);
      return { id: ids[0], column, row };
    };
    // 1. A coordinate's cell index never decreases as it grows: every cell line, the doubles either
    //    side of it, and the ends of the range, in order.
    for (const [low, high, of] of [
      [-180, 180, (v: number) => cellOf(v, 0).column],
      [-90, 90, (v: number) => cellOf(0, v).row],
    ] as const) {
      const values = new Set<number>([low, high]);
      for (let line: number = low; line <= high; line += GUARD_CELL_DEGREES) {
        for (const v of [
          line,
          line === 0 ? -Number.MIN_VALUE : step(line, false),
          line === 0 ? Number.MIN_VALUE : step(line, true),
        ]) {
          if (v >= low && v <= high) values.add(v);
        }
      }
      const sorted = [...values].sort((a, b) => a - b);
      const indexes = sorted.map(of);
      for (let i = 1; i < indexes.length; i++) expect(indexes[i]).toBeGreaterThanOrEqual(indexes[i - 1]);
      expect(indexes[0]).toBe(0);
      expect(indexes.at(-1)).toBe((high - low) / GUARD_CELL_DEGREES - 1);
    }
    const next = prng(17);
    for (let i = 0; i < 8_000; i++) {
      const p: [number, number] = [coordinate(next, -180, 180), coordinate(next, -90, 90)];
      const a = boxThrough(next, p, randomSize(next), randomSize(next) / 2);
      const b = boxThrough(next, p, randomSize(next), randomSize(next) / 2);
      // 2. A box guards the whole range of cells from its minimum's to its maximum's, nothing else.
      const low = cellOf(a.minX, a.minY);
      const high = cellOf(a.maxX, a.maxY);
      const range: string[] = [];
      for (let column = low.column; column <= high.column; column++) {
        for (let row = low.row; row <= high.row; row++) range.push(guardCellId(column, row));
      }
      expect(guardCellIds(a)).toEqual(range);
      // 3. The corner where the two minima meet lies in both boxes, so its cell is between each
      //    box's minimum and maximum cells (1), hence guarded by both (2).
      const corner = cellOf(Math.max(a.minX, b.minX), Math.max(a.minY, b.minY));
      expect(guardCellIds(a)).toContain(corner.id);
      expect(guardCellIds(b)).toContain(corner.id);
    }
  });

  it("holds for random boxes that happen to overlap, and never shares a guard between boxes a cell apart", () => {
    const next = prng(16);
    let overlapping = 0;
    for (let i = 0; i < 40_000; i++) {
      const a = boxThrough(next, [-180 + next() * 360, -90 + next() * 180], randomSize(next), randomSize(next) / 2);
      const b = boxThrough(next, [-180 + next() * 360, -90 + next() * 180], randomSize(next), randomSize(next) / 2);
      if (boxesIntersect(a, b)) {
        overlapping++;
        expect(shareAGuard(a, b)).toBe(true);
      }
      const apart =
        Math.max(a.minX - b.maxX, b.minX - a.maxX) > GUARD_CELL_DEGREES ||
        Math.max(a.minY - b.maxY, b.minY - a.maxY) > GUARD_CELL_DEGREES;
      if (apart) expect(shareAGuard(a, b)).toBe(false);
    }
    expect(overlapping).toBeGreaterThan(500);
  });

  it("serialises a field with the jurisdiction around it, at its edge, and in a batch", () => {
    const jurisdiction = { minX: -104.05, minY: 37, maxX: -94.6, maxY: 43 }; // about Kansas to Nebraska
    const fields = [
      { minX: -100.01, minY: 40.01, maxX: -100, maxY: 40.02 }, // inside
      { minX: -94.6, minY: 39, maxX: -94.59, maxY: 39.01 }, // touching its east side
      { minX: -104.06, minY: 42.99, maxX: -104.05, maxY: 43.01 }, // across its north-west corner
      { minX: -101.25, minY: 33.75, maxX: -101.24, maxY: 37 }, // from a cell corner up to its south side
    ];
    for (const field of fields) {
      expect(shareAGuard(field, jurisdiction)).toBe(true);
      expect(shareAGuard(jurisdiction, field)).toBe(true);
    }
    // A create of several sources writes the union: a batch holding the field collides as well.
    const batch = guardCellsOf([{ minX: 120, minY: -30, maxX: 120.01, maxY: -29.99 }, fields[0]]);
    expect(guardCellIds(jurisdiction).some((id) => batch.includes(id))).toBe(true);
    // The globe collides with everything, including a field at a pole on the antimeridian.
    const globe = { minX: -180, minY: -90, maxX: 180, maxY: 90 };
    expect(shareAGuard(globe, { minX: 179.99, minY: 89.99, maxX: 180, maxY: 90 })).toBe(true);
    expect(shareAGuard(globe, { minX: -180, minY: -90, maxX: -180, maxY: -90 })).toBe(true);
  });
});

describe("guard cells of a large source: the rectangles holding its geometry", () => {
  /** A few rectangles and triangles scattered in a box 1°–300° wide: a jurisdiction with islands. */
  function scattered(next: () => number): MultiPolygonGeometry {
    const w = 1 + next() * 299;
    const h = Math.min(178, 1 + next() * 120);
    const x0 = -180 + next() * (360 - w);
    const y0 = -90 + next() * (180 - h);
    const coordinates: Position[][][] = [];
    for (let k = 1 + Math.floor(next() * 5); k > 0; k--) {
      const pw = next() < 0.5 ? next() * 0.5 : next() * w * 0.4;
      const ph = next() < 0.5 ? next() * 0.5 : next() * h * 0.4;
      const x = x0 + next() * (w - pw);
      const y = y0 + next() * (h - ph);
      coordinates.push([
        [
          [x, y],
          [x + pw, y],
          [x, y + ph],
          [x, y],
        ],
      ]);
    }
    return { type: "MultiPolygon", coordinates };
  }

  const guardsOf = (geometry: SourceGeometry) => guardCellsOf(sourceRectanglesOf(geometry, boundingBox(geometry)));

  it("shares a guard with every source its geometry meets: fields on its vertices, other jurisdictions", () => {
    const next = prng(18);
    let meeting = 0;
    for (let i = 0; i < 300; i++) {
      const a = scattered(next);
      const guards = new Set(guardsOf(a));
      for (const [x, y] of a.coordinates.flatMap((part) => part[0])) {
        const field = { minX: x - 0.001 * next(), minY: y - 0.001 * next(), maxX: x, maxY: y };
        expect(guardCellIds(field).some((id) => guards.has(id))).toBe(true);
      }
      const b = scattered(next);
      if (prepareSearchArea(a).intersects(b)) {
        meeting++;
        expect(guardsOf(b).some((id) => guards.has(id))).toBe(true);
      }
    }
    expect(meeting).toBeGreaterThan(10);
  });

  it("guards fewer cells than its box: a country with two island groups, 44 → 33", () => {
    const part = (x0: number, y0: number, x1: number, y1: number): Position[][] => [
      [
        [x0, y0],
        [x1, y0],
        [x1, y1],
        [x0, y1],
        [x0, y0],
      ],
    ];
    const country: SourceGeometry = {
      type: "MultiPolygon",
      coordinates: [part(-125, 25, -67, 49), part(-178, 51, -177, 52), part(-160, 19, -155, 22)],
    };
    const box = boundingBox(country);
    expect(guardCellIds(box)).toHaveLength(44);
    expect(guardsOf(country)).toHaveLength(33);
    // A field in the ocean between the parts, in the box, waits for no such country.
    expect(guardsOf(country)).not.toContain(guardCellIds({ minX: -150, minY: 40, maxX: -149.99, maxY: 40.01 })[0]);
    // A source up to 1° on a side guards its box.
    const field = part(10, 10, 10.5, 10.5);
    expect(
      sourceRectanglesOf({ type: "Polygon", coordinates: field }, { minX: 10, minY: 10, maxX: 10.5, maxY: 10.5 }),
    ).toEqual([{ minX: 10, minY: 10, maxX: 10.5, maxY: 10.5 }]);
  });
});

describe("guard writes per create", () => {
  /** Min, median, max and mean (two decimals) over 10,000 placements of a square of `size` degrees, whole inside the map. */
  function counts(size: number, count: (box: BoundingBox) => number): [number, number, number, string] {
    const next = prng(17);
    const values: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      const minX = -180 + next() * (360 - size);
      const minY = -90 + next() * (180 - size);
      values.push(count({ minX, minY, maxX: minX + size, maxY: minY + size }));
    }
    values.sort((x, y) => x - y);
    const mean = (values.reduce((sum, value) => sum + value, 0) / values.length).toFixed(2);
    return [values[0], values[values.length >> 1], values[values.length - 1], mean];
  }

  const now = (box: BoundingBox) => guardCellIds(box).length;

  it("a field (0.01°, about 1 km): 1 (up to 4 at a cell corner) before and now", () => {
    expect(counts(0.01, oneDegreeGuardCount)).toEqual([1, 1, 4, "1.02"]);
    expect(counts(0.01, now)).toEqual([1, 1, 2, "1.00"]);
    expect(now({ minX: -0.005, minY: -0.005, maxX: 0.005, maxY: 0.005 })).toBe(4);
  });

  it("a county (0.5°, about 50 km): 1–4 before, 1–4 now (1 at the median)", () => {
    expect(counts(0.5, oneDegreeGuardCount)).toEqual([1, 2, 4, "2.24"]);
    expect(counts(0.5, now)).toEqual([1, 1, 4, "1.08"]);
  });

  it("a country (10°, about 1,100 km): 121 before, 1–4 now; a 40° one 1,681 before, 16–25 now", () => {
    expect(counts(10, oneDegreeGuardCount)).toEqual([121, 121, 121, "121.00"]);
    expect(counts(10, now)).toEqual([1, 4, 4, "3.55"]);
    expect(counts(40, oneDegreeGuardCount)).toEqual([1681, 1681, 1681, "1681.00"]);
    expect(counts(40, now)).toEqual([16, 20, 25, "20.64"]);
  });

  it("the globe: 64,800 before, 512 now", () => {
    const globe = { minX: -180, minY: -90, maxX: 180, maxY: 90 };
    expect(oneDegreeGuardCount(globe)).toBe(64_800);
    expect(now(globe)).toBe(512);
  });
});
