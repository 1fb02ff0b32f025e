/**
 * docs/api.md §5.4, the input rules real GIS data needs: no edge spans more than 180° of longitude
 * (the antimeridian; pole edges excepted), floating-point noise at the range limits is accepted,
 * and a projected file gets one instruction to reproject instead of a violation per vertex.
 */
import { describe, expect, it } from "vitest";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { antimeridianCrossing, MAX_LISTED_OUT_OF_RANGE } from "../../src/geo/validity-structure.js";
import { ring } from "../support/geometry-fixtures.js";

const polygon = (...rings: Position[][]): SourceGeometry => ({ type: "Polygon", coordinates: rings });
const REPROJECT = /the coordinates do not look like WGS 84 longitude\/latitude; reproject the geometry to EPSG:4326/;

describe("the antimeridian", () => {
  it("refuses a 2° square from longitude 179 to -179 at its ring, with the RFC 7946 advice", () => {
    expect(checkGeometry(polygon(ring(179, 0, -179, 2)))).toEqual([
      {
        path: [0],
        detail:
          "the exterior ring crosses the antimeridian: the edge from position 0 (longitude 179) to position 1 " +
          "(longitude -179) spans more than 180° of longitude. Longitudes are never wrapped: split the geometry " +
          "into a MultiPolygon at ±180° (RFC 7946 §3.1.9)",
      },
    ]);
  });

  it("accepts the same area split at ±180° as a MultiPolygon", () => {
    const split: SourceGeometry = {
      type: "MultiPolygon",
      coordinates: [[ring(179, 0, 180, 2)], [ring(-180, 0, -179, 2)]],
    };
    expect(checkGeometry(split)).toEqual([]);
  });

  it("points at the crossing ring of a MultiPolygon", () => {
    const g: SourceGeometry = { type: "MultiPolygon", coordinates: [[ring(0, 0, 1, 1)], [ring(170, 0, -170, 1)]] };
    const issues = checkGeometry(g);
    expect(issues.map((i) => i.path)).toEqual([[1, 0]]);
    expect(issues[0].detail).toMatch(/^the exterior ring of polygon 1 crosses the antimeridian/);
  });

  it("accepts an edge along a pole (latitude exactly ±90), as in Natural Earth's Antarctica", () => {
    const antarctica: Position[] = [
      [-180, -90],
      [-180, -80],
      [0, -70],
      [180, -80],
      [180, -90],
      [-180, -90],
    ];
    expect(antimeridianCrossing(antarctica)).toBeNull();
    expect(checkGeometry(polygon(antarctica))).toEqual([]);
    // Off the pole, the same 360° edge is a crossing.
    expect(
      antimeridianCrossing([
        [-180, -89],
        [180, -89],
      ]),
    ).toEqual([0, 1]);
  });

  it("is not judged for a ring whose coordinates are out of range or not finite (those are reported instead)", () => {
    expect(
      antimeridianCrossing([
        [0, 0],
        [Number.POSITIVE_INFINITY, 0],
      ]),
    ).toBeNull();
  });
});

describe("range limits and projected coordinates", () => {
  it("accepts noise within 1e-9° beyond ±180 and ±90 (Natural Earth's Russia: 180.00000000000006)", () => {
    expect(checkGeometry(polygon(ring(179, 60, 180.00000000000006, 61)))).toEqual([]);
    expect(checkGeometry(polygon(ring(10, 89, 11, 90.0000000005)))).toEqual([]);
  });

  it("refuses a longitude beyond the tolerance at its position, without the reprojection advice", () => {
    const issues = checkGeometry(polygon(ring(179, 60, 180.000001, 61)));
    expect(issues).toHaveLength(2);
    expect(issues.every((i) => /longitude must be within -180..180/.test(i.detail))).toBe(true);
    expect(issues.some((i) => REPROJECT.test(i.detail))).toBe(false);
  });

  it("a projected ring (EPSG:2263 feet): the first 10 positions, then one violation for the geometry", () => {
    const projected: Position[] = Array.from({ length: 400 }, (_, i) => [980_000 + i * 10, 190_000 + (i % 7) * 10]);
    projected.push(projected[0]);
    const issues = checkGeometry(polygon(projected));
    expect(issues).toHaveLength(MAX_LISTED_OUT_OF_RANGE + 1);
    expect(issues.slice(0, 10).map((i) => i.path)).toEqual(Array.from({ length: 10 }, (_, i) => [0, i]));
    expect(issues[10]).toEqual({
      path: [],
      detail:
        "401 positions are outside longitude -180..180 / latitude -90..90: the coordinates do not look like " +
        "WGS 84 longitude/latitude; reproject the geometry to EPSG:4326 (longitude, latitude in degrees)",
    });
  });

  it("a small ring wholly out of range also gets the advice", () => {
    const issues = checkGeometry(polygon(ring(500_000, 4_000_000, 500_100, 4_000_100)));
    expect(issues).toHaveLength(6);
    expect(issues[5].path).toEqual([]);
    expect(issues[5].detail).toMatch(REPROJECT);
  });
});
