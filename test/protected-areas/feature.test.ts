import { describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import type { Position } from "../../src/geo/types.js";
import { protectedAreaFromFeature } from "../../src/protected-areas/feature.js";
import { paFeature, rect } from "./fixtures.js";

function rejection(value: unknown): { wdpaId: string | null; reason: string } {
  const verdict = protectedAreaFromFeature(value);
  if (verdict.ok) throw new Error("expected a rejection");
  return { wdpaId: verdict.wdpaId, reason: verdict.reason };
}

/** A regular polygon of `n` vertices around (x, y): convex, so valid however many vertices. */
function circle(n: number, x = 10, y = 10, r = 1): Position[] {
  const ring: Position[] = [];
  for (let i = 0; i < n; i++)
    ring.push([x + r * Math.cos((2 * Math.PI * i) / n), y + r * Math.sin((2 * Math.PI * i) / n)]);
  ring.push(ring[0]);
  return ring;
}

describe("protectedAreaFromFeature", () => {
  it("takes WDPAID, NAME, DESIG_ENG and IUCN_CAT, with bbox and geodesic area", () => {
    const verdict = protectedAreaFromFeature(
      paFeature(555, rect(0, 0, 1, 2), { NAME: "Reserva", DESIG_ENG: "Ramsar Site", IUCN_CAT: "Ia" }),
    );
    expect(verdict).toEqual({
      ok: true,
      area: {
        id: "555",
        name: "Reserva",
        designation: "Ramsar Site",
        iucnCategory: "Ia",
        geometry: rect(0, 0, 1, 2),
        bbox: { minX: 0, minY: 0, maxX: 1, maxY: 2 },
        areaM2: geodesicAreaM2(rect(0, 0, 1, 2)),
      },
    });
  });

  it("accepts a quoted WDPAID, missing optional text, and drops altitudes", () => {
    const verdict = protectedAreaFromFeature({
      type: "Feature",
      properties: { WDPAID: " 77 ", NAME: null },
      geometry: {
        type: "Polygon",
        coordinates: [
          [
            [0, 0, 5],
            [1, 0, 5],
            [1, 1, 5],
            [0, 0, 5],
          ],
        ],
      },
    });
    expect(verdict.ok && verdict.area).toMatchObject({
      id: "77",
      name: "",
      designation: "",
      iucnCategory: "",
      geometry: {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [1, 0],
            [1, 1],
            [0, 0],
          ],
        ],
      },
    });
  });

  it.each([
    ["a non-object", 42, null, /it is number 42, not a GeoJSON Feature object/],
    ["a non-Feature", { type: "Polygon" }, null, /"type" is "Polygon", not "Feature"/],
    ["no WDPAID", paFeature(undefined, rect(0, 0, 1, 1)), null, /no WDPAID property/],
    ["no properties", { type: "Feature", geometry: rect(0, 0, 1, 1) }, null, /no WDPAID property/],
    ["a WDPAID of the wrong kind", paFeature(true, rect(0, 0, 1, 1)), null, /WDPAID is boolean true/],
    ["an empty WDPAID", paFeature("  ", rect(0, 0, 1, 1)), null, /WDPAID is " {2}"/],
    ["no geometry", paFeature(1, null), "1", /has no geometry/],
    [
      "a Point",
      paFeature(1, { type: "Point", coordinates: [0, 0] }),
      "1",
      /geometry type is "Point"; only Polygon and MultiPolygon/,
    ],
    ["a GeometryCollection", paFeature(1, { type: "GeometryCollection", geometries: [] }), "1", /"GeometryCollection"/],
    [
      "malformed coordinates",
      paFeature(1, { type: "Polygon", coordinates: [[[0, "a"]]] }),
      "1",
      /position 0 of the exterior ring is not a position/,
    ],
    [
      "a MultiPolygon without arrays",
      paFeature(1, { type: "MultiPolygon", coordinates: 3 }),
      "1",
      /not an array of polygons/,
    ],
    [
      "an open ring",
      paFeature(1, {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [1, 0],
            [1, 1],
            [0, 1],
          ],
        ],
      }),
      "1",
      /not closed/,
    ],
    [
      "a self-intersecting ring",
      paFeature(1, {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [1, 1],
            [1, 0],
            [0, 1],
            [0, 0],
          ],
        ],
      }),
      "1",
      /self-intersect/,
    ],
    ["a latitude out of range", paFeature(1, rect(0, 80, 1, 91)), "1", /latitude must be within -90..90/],
    [
      "MultiPolygon parts sharing an edge",
      paFeature(2, { type: "MultiPolygon", coordinates: [rect(0, 0, 1, 1).coordinates, rect(1, 0, 2, 1).coordinates] }),
      "2",
      /invalid geometry/,
    ],
  ])("rejects %s with its reason", (_label, value, wdpaId, reason) => {
    const r = rejection(value);
    expect(r.wdpaId).toBe(wdpaId);
    expect(r.reason).toMatch(reason);
  });

  it("loads areas above the 100,000-position limit of sources, and still checks them", () => {
    const big = protectedAreaFromFeature(paFeature(9, { type: "Polygon", coordinates: [circle(120_000)] }));
    expect(big.ok).toBe(true);
    const open = circle(120_000).slice(0, -1);
    expect(rejection(paFeature(9, { type: "Polygon", coordinates: [open] })).reason).toMatch(/not closed/);
    const spike = circle(120_000);
    spike[60_000] = [20, 10];
    spike[60_001] = [0, 10];
    expect(rejection(paFeature(9, { type: "Polygon", coordinates: [spike] })).reason).toMatch(/invalid geometry/);
  });
});

describe("protected areas past the client's 100,000-position limit", () => {
  /** A closed circle of `n` positions (plus the closing one) around (10, 10). */
  const circle = (n: number): Position[] => {
    const ring: Position[] = Array.from({ length: n }, (_, i) => [
      10 + Math.cos((2 * Math.PI * i) / n),
      10 + Math.sin((2 * Math.PI * i) / n),
    ]);
    return [...ring, ring[0]];
  };

  it("accepts a valid area of 150,000 positions", () => {
    const verdict = protectedAreaFromFeature(paFeature(9, { type: "Polygon", coordinates: [circle(150_000)] }));
    expect(verdict.ok).toBe(true);
  });

  it("applies the structural rules without the limit: a position out of range, a ring not closed", () => {
    const outOfRange = circle(150_000);
    outOfRange[70_000] = [190, 10];
    const a = protectedAreaFromFeature(paFeature(10, { type: "Polygon", coordinates: [outOfRange] }));
    expect(a.ok).toBe(false);
    expect(!a.ok && a.reason).toMatch(/position 70000 of the exterior ring is out of range at \(190, 10\)/);
    expect(!a.ok && a.reason).not.toMatch(/at most 100000/);

    const open = circle(150_000).slice(0, -1);
    const b = protectedAreaFromFeature(paFeature(11, { type: "Polygon", coordinates: [open] }));
    expect(!b.ok && b.reason).toMatch(/the exterior ring is not closed/);
  });
});
