import { describe, expect, it } from "vitest";
import { addChainBoxes, emptyChainBoxes } from "../../src/geo/monotone-chains.js";
import { OverlayFailedError, OverlayTooIntricateError } from "../../src/geo/overlay-errors.js";
import { MAX_OVERLAY_EDGE_PAIRS, ORDINARY_LIMITS, planIntersection, planUnion } from "../../src/geo/overlay-plan.js";
import type { PolygonCoordinates, Position } from "../../src/geo/types.js";
import { prng } from "../support/geometry-fixtures.js";
import { circleRing, combGeometry, squareRing, starRing, zigzag } from "./fixtures.js";

const comb = (teeth: number, y = 0) =>
  combGeometry({ x: 10, y: 10 + y, teeth, height: 0.1, length: 0.1, spine: 0.005 }).coordinates;

/** Pairs of edges, one from each input, whose boxes meet: what the plan counts, by brute force. */
function bruteForceEdgePairs(a: PolygonCoordinates[], b: PolygonCoordinates[]): number {
  const edges = (polygons: PolygonCoordinates[]) =>
    polygons.flat().flatMap((ring) => ring.slice(1).map((end, i): [Position, Position] => [ring[i], end]));
  const meet = ([p, q]: [Position, Position], [r, s]: [Position, Position]) =>
    Math.max(r[0], s[0]) >= Math.min(p[0], q[0]) &&
    Math.max(p[0], q[0]) >= Math.min(r[0], s[0]) &&
    Math.max(r[1], s[1]) >= Math.min(p[1], q[1]) &&
    Math.max(p[1], q[1]) >= Math.min(r[1], s[1]);
  let pairs = 0;
  for (const e of edges(a)) for (const f of edges(b)) if (meet(e, f)) pairs++;
  return pairs;
}

describe("monotone chains", () => {
  it("splits a ring where its edges change quadrant, keeping each run's ends and box", () => {
    const chains = addChainBoxes(emptyChainBoxes(), [squareRing(0, 0, 2)], 3);
    // East then north (one quadrant), west, south.
    expect(chains.start).toEqual([0, 2, 3]);
    expect(chains.end).toEqual([2, 3, 4]);
    expect(chains.input).toEqual([3, 3, 3]);
    expect([chains.minX[0], chains.maxX[0], chains.minY[0], chains.maxY[0]]).toEqual([0, 2, 0, 2]);
    expect([chains.minX[1], chains.maxX[1], chains.minY[1], chains.maxY[1]]).toEqual([0, 2, 2, 2]);
  });
});

describe("planIntersection", () => {
  it("counts exactly the pairs of edges, one from each side, whose boxes meet (random stars, against brute force)", () => {
    const random = prng(20261127);
    for (let round = 0; round < 200; round++) {
      const a = [[starRing(random, 0, 0, 1.2, 3 + Math.floor(random() * 40), 1 / 6)]];
      const b = [[starRing(random, random() * 2 - 1, random() * 2 - 1, 1.2, 3 + Math.floor(random() * 40), 1 / 6)]];
      const plan = planIntersection(a, b);
      expect(plan.edgePairs).toBe(bruteForceEdgePairs(a, b));
    }
  });

  it("gives two fields one ordinary job in their own orientation", () => {
    const plan = planIntersection([[squareRing(0, 0)]], [[circleRing(1, 1, 0.5, 200)]]);
    expect(plan.route).toBe("ordinary");
    expect(plan.jobs).toHaveLength(1);
    expect(plan.jobs[0].transposed).toBe(false);
  });

  it("overlays a MultiPolygon part by part, only the pairs of parts whose boxes meet", () => {
    const a = [[squareRing(0, 0)], [squareRing(5, 0)], [squareRing(10, 0)]];
    const b = [[squareRing(0.5, 0.5)], [squareRing(10.5, 0.5)], [squareRing(20, 20)]];
    const plan = planIntersection(a, b);
    expect(plan.route).toBe("ordinary");
    expect(plan.jobs.map((job) => job.inputs)).toEqual([
      [[a[0]], [b[0]]],
      [[a[2]], [b[1]]],
    ]);
  });

  it("turns a comb whose teeth run east–west on its side: JTS then sweeps along y", () => {
    const plan = planIntersection([comb(60)], [comb(60, 0.0002)]);
    expect(plan.route).toBe("ordinary");
    expect(plan.jobs[0].transposed).toBe(true);
    // Along x every tooth overlaps every other: ~29,000 pairs; along y only its neighbours.
    expect(plan.sweptPairs).toBeLessThan(2_000);
  });

  it("sends inputs past any ordinary limit to Clipper2 whole", () => {
    const combs = planIntersection([comb(1_000)], [comb(1_000, 0.00001)]);
    expect(combs.route).toBe("intricate");
    expect(combs.edgePairs).toBeGreaterThan(ORDINARY_LIMITS.edgePairs);

    const grid = (shift: number) => {
      const parts: PolygonCoordinates[] = [];
      for (let i = 0; i < 20; i++) for (let j = 0; j < 20; j++) parts.push([squareRing(i + shift, j + shift, 0.9)]);
      return parts;
    };
    const grids = planIntersection(grid(0), grid(0.5));
    expect(grids.route).toBe("intricate");
    expect(grids.jobs.length).toBeGreaterThan(ORDINARY_LIMITS.partPairs);
  });

  it("refuses, naming the count, inputs that even Clipper2 would take seconds over", () => {
    const crossing = () =>
      planIntersection([zigzag(0, 0, 0.1, 4_000, 0.2).coordinates], [zigzag(0, 0, 0.1, 4_000, 0.2, true).coordinates]);
    expect(crossing).toThrow(OverlayTooIntricateError);
    expect(crossing).toThrow(
      `polygon intersection not attempted: more than ${MAX_OVERLAY_EDGE_PAIRS.toLocaleString("en-US")} pairs of edges of different inputs meet`,
    );
    // Thin zig-zags, one across the other: crowded along both axes.
    const thin = () =>
      planIntersection(
        [zigzag(0, 0, 0.1, 20_000, 0.02).coordinates],
        [zigzag(0, 0, 0.1, 20_000, 0.02, true).coordinates],
      );
    expect(thin).toThrow(
      /^polygon intersection not attempted: [\d,]+ pairs of edge runs \(monotone chains\) overlap along the sweep, more than 20,000,000$/,
    );
    try {
      thin();
    } catch (error) {
      // Callers handle it as every engine failing.
      expect(error).toBeInstanceOf(OverlayFailedError);
      expect((error as OverlayFailedError).attempts).toEqual([]);
    }
  });
});

describe("planUnion", () => {
  it("is one job over all inputs, routed like an intersection", () => {
    const ordinary = planUnion([[[squareRing(0, 0)]], [[squareRing(0.5, 0)]]]);
    expect(ordinary.route).toBe("ordinary");
    expect(ordinary.jobs).toHaveLength(1);
    expect(planUnion([[comb(1_000)], [comb(1_000, 0.00001)]]).route).toBe("intricate");
  });
});
