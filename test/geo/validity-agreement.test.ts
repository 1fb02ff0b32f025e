import IsValidOp from "jsts/org/locationtech/jts/operation/valid/IsValidOp.js";
import { describe, expect, it } from "vitest";
import { polygonsToJsts, polygonToJsts } from "../../src/geo/jsts-convert.js";
import { isClearlyValidPolygon } from "../../src/geo/polygon-fast-path.js";
import { isClearlySimpleRing } from "../../src/geo/ring-simplicity.js";
import type { PolygonCoordinates, Position } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { circleRing, multiPolygon, polygon, squareRing as sq, starRing } from "./fixtures.js";

// checkGeometry reaches JTS's verdict by shortcuts (certainly-valid parts skip IsValidOp, parts
// are compared pairwise); these tests hold it to IsValidOp on the whole geometry.

/** Deterministic PRNG (mulberry32) so a failure can be reproduced. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random rings on a coarse integer grid, so touches, shared edges and collinear runs are common. */
function gridRing(next: () => number, originX: number, originY: number, span: number): Position[] {
  const count = 3 + Math.floor(next() * 5);
  const ring: Position[] = [];
  for (let i = 0; i < count; i++) ring.push([originX + Math.floor(next() * span), originY + Math.floor(next() * span)]);
  ring.push(ring[0]);
  return ring;
}

function jtsSaysValid(polygons: PolygonCoordinates[], asMulti: boolean): boolean {
  const geometry = asMulti ? polygonsToJsts(polygons) : polygonToJsts(polygons[0]);
  return new IsValidOp(geometry).getValidationError() === null;
}

describe("checkGeometry agrees with IsValidOp on the whole geometry", () => {
  it("for random single polygons with holes on a coarse grid", () => {
    const next = random(1);
    let invalid = 0;
    for (let n = 0; n < 1500; n++) {
      const rings = [gridRing(next, 0, 0, 8)];
      const holes = Math.floor(next() * 3);
      for (let h = 0; h < holes; h++) rings.push(gridRing(next, 1, 1, 6));
      const issues = checkGeometry(polygon(...rings));
      // Structural failures (fewer than 3 distinct vertices) never reach the OGC check.
      if (issues.some((issue) => issue.detail.includes("distinct"))) continue;
      const valid = jtsSaysValid([rings], false);
      if (!valid) invalid++;
      expect(issues.length === 0, JSON.stringify(rings)).toBe(valid);
    }
    expect(invalid).toBeGreaterThan(300);
  });

  it("for random MultiPolygons of touching, overlapping and nested parts", () => {
    const next = random(2);
    let valid = 0;
    let invalid = 0;
    for (let n = 0; n < 800; n++) {
      const parts: PolygonCoordinates[] = [];
      const count = 2 + Math.floor(next() * 4);
      for (let p = 0; p < count; p++) {
        const x = Math.floor(next() * 12);
        const y = Math.floor(next() * 12);
        const size = 1 + Math.floor(next() * 4);
        const rings = [sq(x, y, size)];
        if (size >= 3 && next() < 0.5) rings.push([...sq(x + 1, y + 1, 1)].reverse());
        parts.push(rings);
      }
      const jts = jtsSaysValid(parts, true);
      if (jts) valid++;
      else invalid++;
      expect(checkGeometry(multiPolygon(...parts)).length === 0, JSON.stringify(parts)).toBe(jts);
    }
    expect(valid).toBeGreaterThan(50);
    expect(invalid).toBeGreaterThan(50);
  });

  it("for random star-shaped parts, including islands in holes", () => {
    const next = random(3);
    for (let n = 0; n < 300; n++) {
      const parts: PolygonCoordinates[] = [];
      const count = 2 + Math.floor(next() * 5);
      for (let p = 0; p < count; p++) {
        const cx = next() * 10;
        const cy = next() * 10;
        const radius = 0.5 + next() * 2;
        const rings = [starRing(next, cx, cy, radius, 5 + Math.floor(next() * 40))];
        if (next() < 0.4) rings.push(starRing(next, cx, cy, radius * 0.4, 5 + Math.floor(next() * 20)));
        parts.push(rings);
      }
      expect(checkGeometry(multiPolygon(...parts)).length === 0, JSON.stringify(parts)).toBe(jtsSaysValid(parts, true));
    }
  });
});

describe("certainly-valid shortcuts", () => {
  it("recognise simple rings and decline anything that needs JTS", () => {
    expect(isClearlySimpleRing(sq(0, 0))).toBe(true);
    expect(
      isClearlySimpleRing([
        [0, 0],
        [1, 0],
        [0, 1],
        [0, 0],
      ]),
    ).toBe(true);
    expect(isClearlySimpleRing(circleRing(0, 0, 1, 5000))).toBe(true);
    // Bow tie, figure eight, collinear run, repeated position, spike.
    expect(
      isClearlySimpleRing([
        [0, 0],
        [1, 1],
        [1, 0],
        [0, 1],
        [0, 0],
      ]),
    ).toBe(false);
    expect(
      isClearlySimpleRing([
        [0, 0],
        [2, 0],
        [1, 1],
        [2, 2],
        [0, 2],
        [1, 1],
        [0, 0],
      ]),
    ).toBe(false);
    expect(
      isClearlySimpleRing([
        [0, 0],
        [1, 0],
        [2, 0],
        [2, 1],
        [0, 0],
      ]),
    ).toBe(false);
    expect(
      isClearlySimpleRing([
        [0, 0],
        [1, 0],
        [1, 0],
        [1, 1],
        [0, 0],
      ]),
    ).toBe(false);
    expect(
      isClearlySimpleRing([
        [0, 0],
        [2, 0],
        [2, 2],
        [2, 3],
        [2, 2],
        [0, 2],
        [0, 0],
      ]),
    ).toBe(false);
  });

  it("accept separated holes and decline holes that touch, stray or nest", () => {
    expect(isClearlyValidPolygon([sq(0, 0, 10), sq(1, 1), sq(3, 3)])).toBe(true);
    expect(
      isClearlyValidPolygon([
        sq(0, 0, 10),
        [
          [0, 0],
          [2, 1],
          [1, 2],
          [0, 0],
        ],
      ]),
    ).toBe(false);
    expect(isClearlyValidPolygon([sq(0, 0, 10), sq(1, 1), sq(2, 1)])).toBe(false);
    expect(isClearlyValidPolygon([sq(0, 0, 10), sq(20, 20)])).toBe(false);
    expect(isClearlyValidPolygon([sq(0, 0, 10), sq(1, 1, 5), sq(2, 2)])).toBe(false);
  });
});
