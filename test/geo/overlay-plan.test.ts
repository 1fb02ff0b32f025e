import { describe, expect, it } from "vitest";
import { addChainBoxes, emptyChainBoxes } from "../../src/geo/monotone-chains.js";
import { OverlayFailedError, OverlayTooIntricateError } from "../../src/geo/overlay-errors.js";
import {
  BEAM_SWEEP_LIMITS,
  beamSweepWork,
  beamWork,
  CHAIN_SWEEP_LIMITS,
  type OverlayPlan,
  orientationFor,
  planOverlay,
} from "../../src/geo/overlay-plan.js";
import type { PolygonCoordinates, Position } from "../../src/geo/types.js";
import { prng } from "../support/geometry-fixtures.js";
import { circleRing, combGeometry, squareRing, starRing, zigzag } from "./fixtures.js";

const comb = (teeth: number, y = 0, staggered = false) =>
  combGeometry({ x: 10, y: 10 + y, teeth, height: 0.1, length: 0.1, spine: 0.005, staggered }).coordinates;
/** The same comb with x and y swapped: its teeth run north–south. */
const upright = (rings: PolygonCoordinates): PolygonCoordinates =>
  rings.map((ring) => ring.map(([x, y]): Position => [y, x]).reverse());
const intersectionPlan = (a: PolygonCoordinates[], b: PolygonCoordinates[]) => planOverlay("intersection", [a, b]);

type Edge = [Position, Position];
const edgesOf = (polygons: PolygonCoordinates[]): Edge[] =>
  polygons.flat().flatMap((ring) => ring.slice(1).map((end, i): Edge => [ring[i], end]));

/** Pairs of edges, one from each input, whose boxes meet: what the plan counts, by brute force. */
function bruteForceEdgePairs(a: PolygonCoordinates[], b: PolygonCoordinates[]): number {
  const meet = ([p, q]: Edge, [r, s]: Edge) =>
    Math.max(r[0], s[0]) >= Math.min(p[0], q[0]) &&
    Math.max(p[0], q[0]) >= Math.min(r[0], s[0]) &&
    Math.max(r[1], s[1]) >= Math.min(p[1], q[1]) &&
    Math.max(p[1], q[1]) >= Math.min(r[1], s[1]);
  let pairs = 0;
  for (const e of edgesOf(a)) for (const f of edgesOf(b)) if (meet(e, f)) pairs++;
  return pairs;
}

/** Edges times the distinct vertex coordinates strictly inside their extent, by brute force. */
function bruteForceBeamVisits(inputs: PolygonCoordinates[][], axis: 0 | 1): number {
  const levels = [...new Set(inputs.flatMap((polygons) => polygons.flat(2).map((p) => p[axis])))];
  let visits = 0;
  for (const [p, q] of inputs.flatMap(edgesOf)) {
    const [lo, hi] = [Math.min(p[axis], q[axis]), Math.max(p[axis], q[axis])];
    visits += levels.filter((level) => level > lo && level < hi).length;
  }
  return visits;
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

describe("planOverlay", () => {
  it("counts meeting edge pairs and scan-beam visits exactly (random stars, against brute force)", () => {
    const random = prng(20261127);
    const star = (cx: number, cy: number) => starRing(random, cx, cy, 1.2, 3 + Math.floor(random() * 40), 1 / 6);
    for (let round = 0; round < 200; round++) {
      const a = [[star(0, 0)]];
      const b = [[star(random() * 2 - 1, random() * 2 - 1)]];
      const plan = intersectionPlan(a, b);
      expect(plan.edgePairs).toBe(bruteForceEdgePairs(a, b));
      expect(plan.beamVisits).toEqual({
        alongX: bruteForceBeamVisits([a, b], 0),
        alongY: bruteForceBeamVisits([a, b], 1),
      });
      expect(plan.positions).toBe(a[0][0].length + b[0][0].length);
      expect(plan.partPairs).toBe(1);
      expect(plan.holeWork).toBe(0);
    }
  });

  it("counts scan-beam visits exactly over repeated positions, axis-parallel edges and coordinates shared by both inputs", () => {
    const repeated = (ring: Position[]): Position[] => ring.flatMap((p, i) => (i % 3 === 0 ? [p, p] : [p]));
    const cases: [PolygonCoordinates[], PolygonCoordinates[]][] = [
      [[comb(12)], [comb(12, 0.0002)]],
      [[upright(comb(9, 0, true))], [comb(7, 0.03)]],
      [
        [[repeated(squareRing(0, 0, 2)), repeated(squareRing(0.5, 0.5, 0.5))]],
        [[squareRing(1, 1, 2)], [squareRing(3, 0, 1)]],
      ],
      [[[repeated(circleRing(0, 0, 1, 40))]], [[repeated(circleRing(0.5, 0, 1, 40))]]],
      [[zigzag(0, 0, 0.1, 30, 0.2).coordinates], [zigzag(0, 0, 0.1, 30, 0.2, true).coordinates]],
    ];
    for (const [a, b] of cases) {
      expect(intersectionPlan(a, b).beamVisits).toEqual({
        alongX: bruteForceBeamVisits([a, b], 0),
        alongY: bruteForceBeamVisits([a, b], 1),
      });
    }
  });

  it("lets two fields run in every engine's usual orientation", () => {
    const plan = intersectionPlan([[squareRing(0, 0)]], [[circleRing(1, 1, 0.5, 200)]]);
    expect(orientationFor("beams", plan)).toEqual({ transposed: false });
    expect(orientationFor("chains", plan)).toEqual({ transposed: false });
  });

  it("turns each engine so that its own sweep is lean: JTS across a comb running east–west, Clipper2 across one running north–south", () => {
    const eastWest = intersectionPlan([comb(60)], [comb(60, 0.0002)]);
    // Along x every tooth overlaps every other: ~29,000 chain pairs; along y only its neighbours.
    expect(eastWest.chainPairs.alongX).toBeGreaterThan(20_000);
    expect(eastWest.chainPairs.alongY).toBeLessThan(2_000);
    expect(orientationFor("chains", eastWest)).toEqual({ transposed: true });

    // Along x, Clipper2 would join each tooth's runs to a list of all the others: ~128 million pairs.
    expect(beamWork(eastWest, "alongX")).toBeGreaterThan(20_000);
    expect(orientationFor("beams", eastWest)).toEqual({ transposed: false });

    const northSouth = intersectionPlan([upright(comb(4_000, 0, true))], [[squareRing(9, 9, 2)]]);
    // Every tip at its own latitude: 16 million beam visits along y.
    expect(beamWork(northSouth, "alongY")).toBeGreaterThan(BEAM_SWEEP_LIMITS.work);
    expect(beamWork(northSouth, "alongX")).toBeLessThan(1_000_000);
    expect(orientationFor("beams", northSouth)).toEqual({ transposed: true });
  });

  it("keeps the chain-sweeping fallbacks to small inputs: edge pairs, parts and positions", () => {
    expect(orientationFor("chains", intersectionPlan([comb(1_000)], [comb(1_000, 0.00001)]))).toBeNull();
    const grid = (shift: number, cells: number) => {
      const parts: PolygonCoordinates[] = [];
      for (let i = 0; i < cells; i++)
        for (let j = 0; j < cells; j++) parts.push([squareRing(i + shift, j + shift, 0.9)]);
      return parts;
    };
    const small = intersectionPlan(grid(0, 3), grid(0.5, 3));
    expect(small.partPairs).toBe(81);
    expect(orientationFor("chains", small)).not.toBeNull();
    const large = intersectionPlan(grid(0, 20), grid(0.5, 20));
    expect(large.partPairs).toBeGreaterThan(CHAIN_SWEEP_LIMITS.partPairs);
    expect(orientationFor("chains", large)).toBeNull();
    expect(orientationFor("beams", large)).toEqual({ transposed: false });
    expect(planOverlay("union", [grid(0, 20), grid(0.5, 20)]).partPairs).toBe(800);
  });

  it("refuses, naming the count, inputs that even Clipper2 would take seconds over", () => {
    const crossing = () =>
      intersectionPlan([zigzag(0, 0, 0.1, 4_000, 0.2).coordinates], [zigzag(0, 0, 0.1, 4_000, 0.2, true).coordinates]);
    expect(crossing).toThrow(OverlayTooIntricateError);
    expect(crossing).toThrow(
      `polygon intersection not attempted: more than ${BEAM_SWEEP_LIMITS.edgePairs.toLocaleString("en-US")} pairs of edges of different inputs meet`,
    );
    // Thin zig-zags, one across the other: crowded along both axes.
    const thin = () =>
      intersectionPlan(
        [zigzag(0, 0, 0.1, 20_000, 0.02).coordinates],
        [zigzag(0, 0, 0.1, 20_000, 0.02, true).coordinates],
      );
    expect(thin).toThrow(
      /^polygon intersection not attempted: [\d,]+ pairs of edge runs \(monotone chains\) overlap along either axis, more than 40,000,000$/,
    );
    // A comb standing north–south inside one lying east–west: crowded for both sweeps.
    const crossed = () => intersectionPlan([upright(comb(3_000, 0, true))], [comb(3_000, 0, true)]);
    expect(crossed).toThrow(/^polygon intersection not attempted: /);
    try {
      thin();
    } catch (error) {
      // Callers handle it as every engine failing.
      expect(error).toBeInstanceOf(OverlayFailedError);
      expect((error as OverlayFailedError).attempts).toEqual([]);
    }
  });
});

describe("orientationFor", () => {
  const plan = (change: Partial<OverlayPlan>): OverlayPlan => ({
    chainPairs: { alongX: 10, alongY: 10 },
    beamVisits: { alongX: 10, alongY: 10 },
    edgePairs: 10,
    positions: 100,
    partPairs: 1,
    holeWork: 0,
    ...change,
  });

  it("holds each kind of sweep to its own limits", () => {
    expect(orientationFor("beams", plan({ edgePairs: BEAM_SWEEP_LIMITS.edgePairs }))).not.toBeNull();
    expect(orientationFor("beams", plan({ edgePairs: BEAM_SWEEP_LIMITS.edgePairs + 1 }))).toBeNull();
    // Work: chain pairs plus 8 × beam visits, along the leaner axis.
    const work = BEAM_SWEEP_LIMITS.work;
    const beams = (alongX: number, alongY: number) => ({ beamVisits: { alongX, alongY } });
    expect(orientationFor("beams", plan(beams(work / 8, work / 8)))).toBeNull();
    expect(orientationFor("beams", plan(beams(work / 8 - 10, work / 8)))).toEqual({ transposed: true });
    expect(orientationFor("beams", plan(beams(work / 8, work / 8 - 10)))).toEqual({ transposed: false });
    // Within the limit, Clipper2 is turned only when that halves its work: turning copies every position.
    expect(orientationFor("beams", plan(beams(100, 150)))).toEqual({ transposed: false });
    expect(orientationFor("beams", plan(beams(100, 250)))).toEqual({ transposed: true });
    expect(beamSweepWork(plan(beams(100, 150)))).toBe(10 + 8 * 150);
    expect(beamSweepWork(plan(beams(100, 250)))).toBe(10 + 8 * 100);
    expect(orientationFor("chains", plan({ edgePairs: CHAIN_SWEEP_LIMITS.edgePairs + 1 }))).toBeNull();
    expect(orientationFor("chains", plan({ partPairs: CHAIN_SWEEP_LIMITS.partPairs + 1 }))).toBeNull();
    expect(orientationFor("chains", plan({ positions: CHAIN_SWEEP_LIMITS.positions + 1 }))).toBeNull();
    expect(orientationFor("chains", plan({ holeWork: CHAIN_SWEEP_LIMITS.holeWork + 1 }))).toBeNull();
    expect(orientationFor("beams", plan({ holeWork: CHAIN_SWEEP_LIMITS.holeWork + 1 }))).not.toBeNull();
    const chains = CHAIN_SWEEP_LIMITS.chainPairs;
    expect(orientationFor("chains", plan({ chainPairs: { alongX: chains + 1, alongY: chains + 1 } }))).toBeNull();
    expect(orientationFor("chains", plan({ chainPairs: { alongX: chains + 1, alongY: 5 } }))).toEqual({
      transposed: true,
    });
    // Turned when that is the only way within the limit, though it does not halve the sweep.
    expect(orientationFor("chains", plan({ chainPairs: { alongX: chains + 1, alongY: chains } }))).toEqual({
      transposed: true,
    });
    expect(orientationFor("chains", plan({ chainPairs: { alongX: 15_000, alongY: 10_000 } }))).toEqual({
      transposed: false,
    });
  });
});
