import IsValidOp from "jsts/org/locationtech/jts/operation/valid/IsValidOp.js";
import { describe, expect, it, vi } from "vitest";
import type { PolygonCoordinates, Position } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { circleRing, multiPolygon, polygon, squareRing as sq } from "./fixtures.js";

describe("checkGeometry: OGC validity of one polygon", () => {
  it("accepts rings in either orientation and holes touching the shell or each other at single points", () => {
    expect(checkGeometry(polygon([...sq(0, 0)].reverse()))).toEqual([]);
    expect(
      checkGeometry(
        polygon(sq(0, 0, 10), [
          [0, 0],
          [2, 1],
          [1, 2],
          [0, 0],
        ]),
      ),
    ).toEqual([]);
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(1, 1, 2), sq(3, 3, 2)))).toEqual([]);
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(1, 1), sq(5, 5), [...sq(7, 1)].reverse()))).toEqual([]);
  });

  it("reports a self-intersecting (bow-tie) ring at the crossing", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 1],
          [1, 0],
          [0, 1],
          [0, 0],
        ]),
      ),
    ).toEqual([{ path: [0], detail: "the exterior ring self-intersects near (0.5, 0.5)" }]);
  });

  it("rounds computed crossing points to 1e-9 degrees", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [0.3, 0.3],
          [0.3, 0],
          [0, 0.3],
          [0, 0],
        ]),
      ),
    ).toEqual([{ path: [0], detail: "the exterior ring self-intersects near (0.15, 0.15)" }]);
  });

  it("reports a ring whose vertices are all collinear as having zero area", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [1, 0],
          [2, 0],
          [0, 0],
        ]),
      ),
    ).toEqual([
      { path: [0], detail: "the exterior ring has zero area: all its vertices lie on one line through (0, 0)" },
    ]);
  });

  it("reports a spike (an edge that doubles back) as a self-intersection", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [2, 0],
          [2, 2],
          [2, 3],
          [2, 2],
          [0, 2],
          [0, 0],
        ]),
      ),
    ).toEqual([{ path: [0], detail: "the exterior ring self-intersects near (2, 2)" }]);
  });

  it("reports a ring that touches itself (figure eight, or an inverted hole)", () => {
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [2, 0],
          [1, 1],
          [2, 2],
          [0, 2],
          [1, 1],
          [0, 0],
        ]),
      ),
    ).toEqual([
      {
        path: [0],
        detail: "the exterior ring touches itself at (1, 1); a ring must not pass through the same point twice",
      },
    ]);
    expect(
      checkGeometry(
        polygon([
          [0, 0],
          [10, 0],
          [10, 10],
          [5, 10],
          [7, 5],
          [3, 5],
          [5, 10],
          [0, 10],
          [0, 0],
        ]),
      ),
    ).toEqual([
      {
        path: [0],
        detail: "the exterior ring touches itself at (5, 10); a ring must not pass through the same point twice",
      },
    ]);
  });

  it("reports a hole outside its shell", () => {
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(20, 20)))).toEqual([
      { path: [1], detail: "hole 1 lies outside the exterior ring near (20, 20)" },
    ]);
  });

  it("reports a hole crossing the shell or sharing an edge with it", () => {
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(8, 8, 5)))).toEqual([
      { path: [1], detail: "hole 1 crosses or shares an edge with the exterior ring near (10, 8)" },
    ]);
    expect(
      checkGeometry(
        polygon(sq(0, 0, 10), [
          [0, 1],
          [2, 1],
          [2, 2],
          [0, 2],
          [0, 1],
        ]),
      ),
    ).toEqual([{ path: [1], detail: "hole 1 crosses or shares an edge with the exterior ring near (0, 1)" }]);
  });

  it("reports nested holes, naming both", () => {
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(1, 1, 5), sq(2, 2, 1)))).toEqual([
      { path: [2], detail: "hole 2 lies inside hole 1 near (2, 2); holes must not be nested" },
    ]);
  });

  it("reports overlapping holes and holes sharing an edge, at the later hole", () => {
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(1, 1, 3), sq(2, 2, 3)))).toEqual([
      { path: [2], detail: "hole 1 and hole 2 overlap or share an edge near (4, 2)" },
    ]);
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(1, 1, 2), sq(3, 1, 2)))).toEqual([
      { path: [2], detail: "hole 1 and hole 2 overlap or share an edge near (3, 1)" },
    ]);
  });

  it("reports duplicate holes", () => {
    expect(checkGeometry(polygon(sq(0, 0, 10), sq(1, 1), sq(1, 1)))).toEqual([
      { path: [2], detail: "hole 1 and hole 2 are the same ring near (1, 1)" },
    ]);
  });

  it("reports a hole that cuts the interior in two by touching the shell at two points", () => {
    expect(
      checkGeometry(
        polygon(sq(0, 0, 10), [
          [0, 5],
          [5, 0],
          [10, 5],
          [5, 10],
          [0, 5],
        ]),
      ),
    ).toEqual([
      {
        path: [],
        detail:
          "the interior of the polygon is split into disconnected pieces near (10, 5): its holes touch the exterior ring or each other so that they cut it apart",
      },
    ]);
  });
});

describe("checkGeometry: OGC validity of a MultiPolygon", () => {
  it("accepts separate parts, parts touching at a point, and a part inside another's hole", () => {
    expect(checkGeometry(multiPolygon([sq(0, 0)], [sq(2, 0)]))).toEqual([]);
    expect(checkGeometry(multiPolygon([sq(0, 0)], [sq(1, 1)]))).toEqual([]);
    expect(checkGeometry(multiPolygon([sq(0, 0, 10), sq(1, 1, 5)], [sq(2, 2, 1)]))).toEqual([]);
    // An island touching the lake shore at two points splits the water, not the land: valid.
    expect(
      checkGeometry(
        multiPolygon(
          [sq(0, 0, 10), sq(2, 2, 6)],
          [
            [
              [2, 5],
              [5, 2],
              [8, 5],
              [5, 8],
              [2, 5],
            ],
          ],
        ),
      ),
    ).toEqual([]);
  });

  it("reports a problem inside one part with polygon-first paths", () => {
    expect(
      checkGeometry(
        multiPolygon(
          [sq(0, 0)],
          [
            [
              [5, 5],
              [6, 6],
              [6, 5],
              [5, 6],
              [5, 5],
            ],
          ],
        ),
      ),
    ).toEqual([{ path: [1, 0], detail: "the exterior ring of polygon 1 self-intersects near (5.5, 5.5)" }]);
    expect(checkGeometry(multiPolygon([sq(20, 20)], [sq(0, 0, 10), sq(20, 20)]))).toEqual([
      { path: [1, 1], detail: "hole 1 of polygon 1 lies outside the exterior ring of polygon 1 near (20, 20)" },
    ]);
    expect(
      checkGeometry(
        multiPolygon(
          [sq(20, 20)],
          [
            sq(0, 0, 10),
            [
              [0, 5],
              [5, 0],
              [10, 5],
              [5, 10],
              [0, 5],
            ],
          ],
        ),
      ),
    ).toEqual([
      {
        path: [1],
        detail:
          "the interior of polygon 1 is split into disconnected pieces near (10, 5): its holes touch the exterior ring or each other so that they cut it apart",
      },
    ]);
  });

  it("asks to dissolve parts that share an edge", () => {
    expect(checkGeometry(multiPolygon([sq(0, 0)], [sq(1, 0)]))).toEqual([
      { path: [1], detail: "polygons 0 and 1 overlap or share an edge near (1, 0); dissolve them into one polygon" },
    ]);
    expect(checkGeometry(multiPolygon([sq(0, 0)], [sq(1, 0.5)]))).toEqual([
      { path: [1], detail: "polygons 0 and 1 overlap or share an edge near (1, 0.5); dissolve them into one polygon" },
    ]);
  });

  it("asks to dissolve overlapping, duplicate and hole-filling parts", () => {
    expect(checkGeometry(multiPolygon([sq(0, 0, 2)], [sq(1, 1, 2)]))).toEqual([
      { path: [1], detail: "polygons 0 and 1 overlap or share an edge near (2, 1); dissolve them into one polygon" },
    ]);
    expect(checkGeometry(multiPolygon([sq(0, 0)], [sq(0, 0)]))).toEqual([
      { path: [1], detail: "polygons 0 and 1 overlap or share an edge near (0, 0); dissolve them into one polygon" },
    ]);
    expect(checkGeometry(multiPolygon([sq(0, 0, 10), sq(2, 2, 4)], [sq(2, 2, 4)]))).toEqual([
      { path: [1], detail: "polygons 0 and 1 overlap or share an edge near (2, 2); dissolve them into one polygon" },
    ]);
  });

  it("reports a part inside another, whichever comes first", () => {
    expect(checkGeometry(multiPolygon([sq(0, 0, 10)], [sq(1, 1, 2)]))).toEqual([
      {
        path: [1],
        detail: "polygons 0 and 1 overlap: polygon 1 lies inside polygon 0 near (1, 1); dissolve them into one polygon",
      },
    ]);
    expect(checkGeometry(multiPolygon([sq(1, 1, 2)], [sq(0, 0, 10)]))).toEqual([
      {
        path: [1],
        detail: "polygons 0 and 1 overlap: polygon 0 lies inside polygon 1 near (1, 1); dissolve them into one polygon",
      },
    ]);
    // A hole-free polygon inside a hole-free polygon with a vertex on its boundary: JTS reports where the boundaries meet.
    expect(checkGeometry(multiPolygon([sq(0, 0, 10)], [sq(0, 0, 2)]))).toEqual([
      { path: [1], detail: "polygons 0 and 1 overlap or share an edge near (0, 2); dissolve them into one polygon" },
    ]);
  });

  it("reports the pair with the lowest indices first", () => {
    const g = multiPolygon([sq(0, 0)], [sq(10, 0)], [sq(10.5, 0)], [sq(0.5, 0)]);
    expect(checkGeometry(g)).toEqual([
      { path: [3], detail: "polygons 0 and 3 overlap or share an edge near (0.5, 0); dissolve them into one polygon" },
    ]);
  });

  it("treats neighbouring fields whose shared boundary differs by 1e-12 degrees as overlapping", () => {
    const a: Position[] = [
      [10, 50],
      [10.001, 50],
      [10.001, 50.001],
      [10, 50.001],
      [10, 50],
    ];
    const b: Position[] = [
      [10.001 - 1e-12, 50],
      [10.002, 50],
      [10.002, 50.001],
      [10.001 - 1e-12, 50.001],
      [10.001 - 1e-12, 50],
    ];
    const issues = checkGeometry(multiPolygon([a], [b]));
    expect(issues).toHaveLength(1);
    expect(issues[0].path).toEqual([1]);
    expect(issues[0].detail).toMatch(
      /^polygons 0 and 1 overlap or share an edge near \(10\.001, 50(\.001)?\); dissolve them into one polygon$/,
    );
  });

  it("accepts many parts, islands in a lake, and a field with many holes", () => {
    const grid: PolygonCoordinates[] = [];
    for (let i = 0; i < 400; i++) grid.push([circleRing((i % 20) * 0.01, Math.floor(i / 20) * 0.01, 0.004, 24)]);
    expect(checkGeometry(multiPolygon(...grid))).toEqual([]);

    const lake: PolygonCoordinates = [circleRing(0, 0, 10, 2000), circleRing(0, 0, 9, 1000)];
    const islands: PolygonCoordinates[] = [];
    for (let i = 0; i < 100; i++) islands.push([circleRing(-4.5 + (i % 10), -4.5 + Math.floor(i / 10), 0.2, 40)]);
    expect(checkGeometry(multiPolygon(lake, ...islands))).toEqual([]);

    const field: PolygonCoordinates = [circleRing(0, 0, 10, 2000)];
    for (let i = 0; i < 100; i++) field.push(circleRing(-4.5 + (i % 10), -4.5 + Math.floor(i / 10), 0.2, 40));
    expect(checkGeometry(polygon(...field))).toEqual([]);
  });

  it("finds a hole outside the shell, nested holes and an island overlapping the shore among many rings", () => {
    const field: PolygonCoordinates = [circleRing(0, 0, 10, 2000)];
    for (let i = 0; i < 50; i++) field.push(circleRing(-4.5 + (i % 10), -4.5 + Math.floor(i / 10), 0.2, 40));
    expect(checkGeometry(polygon(...field, sq(30, 30)))).toEqual([
      { path: [51], detail: "hole 51 lies outside the exterior ring near (30, 30)" },
    ]);
    // Hole 50 is centred on (4.5, -0.5).
    expect(checkGeometry(polygon(...field, circleRing(4.5, -0.5, 0.1, 40)))).toEqual([
      { path: [51], detail: "hole 51 lies inside hole 50 near (4.6, -0.5); holes must not be nested" },
    ]);
    const lake: PolygonCoordinates = [circleRing(0, 0, 10, 2000), circleRing(0, 0, 9, 1000)];
    expect(checkGeometry(multiPolygon(lake, [sq(-0.5, -0.5)], [sq(8.5, -0.5)]))).toEqual([
      {
        path: [2],
        detail: "polygons 0 and 2 overlap or share an edge near (8.986077261, -0.5); dissolve them into one polygon",
      },
    ]);
  });
});

describe("checkGeometry when JTS itself fails", () => {
  it("reports the failure as an issue on the whole geometry instead of throwing", () => {
    const spy = vi.spyOn(IsValidOp.prototype, "getValidationError").mockImplementation(() => {
      throw new Error("Should never reach here: points in shell and hole appear to be equal");
    });
    try {
      // A hole touching the shell is not certainly valid, so it goes to JTS.
      expect(
        checkGeometry(
          polygon(sq(0, 0, 10), [
            [0, 0],
            [2, 1],
            [1, 2],
            [0, 0],
          ]),
        ),
      ).toEqual([
        {
          path: [],
          detail:
            "geometry could not be checked for OGC validity (Should never reach here: points in shell and hole appear to be equal)",
        },
      ]);
    } finally {
      spy.mockRestore();
    }
    expect(
      checkGeometry(
        polygon(sq(0, 0, 10), [
          [0, 0],
          [2, 1],
          [1, 2],
          [0, 0],
        ]),
      ),
    ).toEqual([]);
  });
});
