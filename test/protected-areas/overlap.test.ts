import { describe, expect, it } from "vitest";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import { nearParts } from "../../src/geo/clip.js";
import { clipperEngine } from "../../src/geo/clipper-engine.js";
import {
  DEFAULT_ENGINES,
  intersection,
  jstsEngine,
  OverlayAllowance,
  type OverlayEngine,
  OverlayTooIntricateError,
} from "../../src/geo/overlap.js";
import {
  conflictAllowances,
  protectedAreaAllowances,
  shareOverlayAllowances,
} from "../../src/geo/overlay-allowances.js";
import { BEAM_SWEEP_LIMITS, type OverlayPlan, SUBJECT_LIMITS } from "../../src/geo/overlay-plan.js";
import { geometryFromPolygons, polygonsOf } from "../../src/geo/parts.js";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import type { ProtectedArea } from "../../src/model/spatial.js";
import { computeUnepOverlap, MAX_LISTED_AREAS, partsNear } from "../../src/protected-areas/overlap.js";
import { sampleOverlapFractions } from "../../src/protected-areas/sampling.js";
import { notchedUnitSquare } from "../support/geometry-fixtures.js";
import { rect } from "./fixtures.js";

function subjectOf(geometry: SourceGeometry) {
  return { geometry, bbox: boundingBox(geometry), areaM2: geodesicAreaM2(geometry) };
}

function area(id: string, geometry: SourceGeometry, name = `Area ${id}`): ProtectedArea {
  return { id, name, designation: "National Park", iucnCategory: "II", geometry, bbox: boundingBox(geometry) };
}

/** JTS's overlay of the whole inputs, unplanned and unclipped: the reference the tests hold the service to. */
function jtsArea(a: SourceGeometry, b: SourceGeometry): number {
  const common = geometryFromPolygons(jstsEngine.intersection(polygonsOf(a), polygonsOf(b)));
  return common === null ? 0 : geodesicAreaM2(common);
}

const failing: OverlayEngine = {
  name: "always-fails",
  sweep: "beams",
  takesBridges: true,
  intersection: () => {
    throw new Error("boom");
  },
  union: () => {
    throw new Error("boom");
  },
};

const source = rect(0, 0, 1, 1);
const half = geodesicAreaM2(rect(0.5, 0, 1, 1));

describe("computeUnepOverlap", () => {
  it("no candidates: overlaps false, zero area and fraction, no areas", () => {
    expect(computeUnepOverlap(subjectOf(source), "WDPA", [])).toEqual({
      dataset: "WDPA",
      overlaps: false,
      areaM2: 0,
      fraction: 0,
      areas: [],
    });
  });

  it("a source half inside one protected area: fraction 0.5 and the area of that half", () => {
    const result = computeUnepOverlap(subjectOf(source), "WDPA", [area("555", rect(0.5, -1, 2, 2), "Half Park")]);
    expect(result.overlaps).toBe(true);
    expect(result.fraction).toBeCloseTo(0.5, 9);
    expect(result.areaM2).toBeCloseTo(half, 3);
    expect(result.areas).toEqual([
      { id: "555", name: "Half Park", designation: "National Park", iucnCategory: "II", areaM2: result.areaM2 },
    ]);
  });

  it("two protected areas covering the same part: the total is not double-counted, both are listed", () => {
    const result = computeUnepOverlap(subjectOf(source), "WDPA", [
      area("1", rect(0.5, -1, 2, 2)),
      area("2", rect(0.5, -2, 3, 3)),
    ]);
    expect(result.areaM2).toBeCloseTo(half, 3);
    expect(result.fraction).toBeCloseTo(0.5, 9);
    expect(result.areas.map((a) => a.id)).toEqual(["1", "2"]);
    for (const a of result.areas) expect(a.areaM2).toBeCloseTo(half, 3);
  });

  it("partly overlapping areas: the total is the area of the union inside the source", () => {
    // [0,0.6] and [0.4,1] in longitude: union is the whole source, sum would be 1.2 of it.
    const result = computeUnepOverlap(subjectOf(source), "WDPA", [
      area("a", rect(-1, -1, 0.6, 2)),
      area("b", rect(0.4, -1, 2, 2)),
    ]);
    expect(result.fraction).toBeCloseTo(1, 9);
    expect(result.areas[0].areaM2).toBeCloseTo(geodesicAreaM2(rect(0, 0, 0.6, 1)), 3);
  });

  it("a source inside a protected area: fraction 1; touching or near-miss areas do not count", () => {
    const inside = computeUnepOverlap(subjectOf(source), "WDPA", [area("big", rect(-5, -5, 5, 5))]);
    expect(inside.fraction).toBeCloseTo(1, 12);
    expect(inside.areaM2).toBeCloseTo(subjectOf(source).areaM2, 3);
    const touching = computeUnepOverlap(subjectOf(source), "WDPA", [
      area("t", rect(1, 0, 2, 1)),
      area("n", rect(1.000001, 0, 2, 1)),
    ]);
    expect(touching).toEqual({ dataset: "WDPA", overlaps: false, areaM2: 0, fraction: 0, areas: [] });
  });

  it("sorts by overlap, largest first (ties by id), and lists at most 20", () => {
    // 25 vertical strips of growing width inside the source.
    const strips = Array.from({ length: 25 }, (_, i) =>
      area(`s${String(i).padStart(2, "0")}`, rect(i * 0.04, 0, i * 0.04 + 0.001 * (i + 1), 1)),
    );
    const result = computeUnepOverlap(subjectOf(source), "WDPA", strips);
    expect(result.areas).toHaveLength(MAX_LISTED_AREAS);
    expect(result.areas.map((a) => a.id)).toEqual(
      strips
        .map((s) => s.id)
        .reverse()
        .slice(0, 20),
    );
    const sum = strips.reduce((s, a) => s + geodesicAreaM2(a.geometry), 0);
    expect(result.areaM2).toBeCloseTo(sum, 3);
    const twins = computeUnepOverlap(subjectOf(source), "WDPA", [
      area("b", rect(0.5, 0, 1, 1)),
      area("a", rect(0, 0, 0.5, 1)),
    ]);
    expect(twins.areas.map((a) => a.id)).toEqual(["a", "b"]);
  });

  it("parcels sharing a WDPAID are one area", () => {
    const result = computeUnepOverlap(subjectOf(source), "WDPA", [
      area("7", rect(0, 0, 0.25, 1)),
      area("7", rect(0.75, 0, 1, 1)),
    ]);
    expect(result.areas).toHaveLength(1);
    expect(result.fraction).toBeCloseTo(0.5, 9);
    expect(result.areas[0].areaM2).toBeCloseTo(half, 3);
  });

  it("when every overlay engine fails, estimates by sampling instead of failing", () => {
    const candidates = [
      area("1", rect(0.5, -1, 2, 2)),
      area("2", rect(0.5, -2, 3, 3)),
      area("3", rect(-1, -1, 0.25, 2)),
    ];
    const result = computeUnepOverlap(subjectOf(source), "WDPA", candidates, {
      engines: [failing],
      clippedEngines: [failing],
    });
    expect(result.fraction).toBeGreaterThan(0.74);
    expect(result.fraction).toBeLessThan(0.76);
    expect(result.areas.map((a) => a.id)).toEqual(["1", "2", "3"]);
    expect(result.areas[0].areaM2 / half).toBeCloseTo(1, 1);
    expect(result.areas[2].areaM2 / (half / 2)).toBeCloseTo(1, 1);
  });

  it("when only the union fails, keeps the exact per-area figures and estimates the total", () => {
    const unionFails: OverlayEngine[] = DEFAULT_ENGINES.map((e) => ({ ...e, union: failing.union }));
    const result = computeUnepOverlap(
      subjectOf(source),
      "WDPA",
      [area("1", rect(0.5, -1, 2, 2)), area("2", rect(0.5, -2, 3, 3))],
      {
        engines: unionFails,
        clippedEngines: unionFails,
      },
    );
    expect(result.areas[0].areaM2).toBeCloseTo(half, 3);
    expect(result.fraction).toBeCloseTo(0.5, 2);
  });
});

/** A wavy ring of `n` vertices around (cx, cy): concave, valid, and far above the clipping threshold. */
describe("a large protected area met again: sources its boundary stays away from are settled without clipping", () => {
  it("a source wholly inside has all of its area in it, one wholly outside none, exactly; near the boundary, JTS's area", () => {
    const coast: Position[] = [];
    for (let i = 0; i < 3_000; i++) {
      const angle = (2 * Math.PI * i) / 3_000;
      const r = 1 + 0.05 * Math.sin(angle * 60);
      coast.push([r * Math.cos(angle), r * Math.sin(angle)]);
    }
    coast.push(coast[0]);
    const park = area("wiggly", { type: "Polygon", coordinates: [coast] });
    const fields = [
      ...Array.from({ length: 20 }, (_, i) => rect(-0.5 + i * 0.05, 0, -0.48 + i * 0.05, 0.02)),
      rect(1.2, 0, 1.22, 0.02),
      rect(0.99, -0.01, 1.01, 0.01),
    ];
    for (const [i, field] of fields.entries()) {
      const subject = subjectOf(field);
      const result = computeUnepOverlap(subject, "WDPA", [park]);
      if (i === 0) continue; // the area's first use: an ordinary overlay
      if (i < 20) expect(result.areaM2).toBe(subject.areaM2);
      else if (i === 20) expect(result.overlaps).toBe(false);
      else expect(result.areaM2).toBeCloseTo(jtsArea(park.geometry, field), 0);
    }
  });
});

describe("one create request's protected-area overlays are limited together (docs/api.md §8.5)", () => {
  // A triangle half over each of two areas: its overlaps are not a grid's cells, so sampling shows.
  const triangle = (): SourceGeometry => ({
    type: "Polygon",
    coordinates: [
      [
        [0, 0],
        [1, 0],
        [0.3, 0.9],
        [0, 0],
      ],
    ],
  });
  const parks = [area("1", rect(0.5, -1, 2, 2)), area("2", rect(-1, 0.4, 2, 2))];

  it("past the request's allowance every area is sampled, and the overlap stays within its bounds", () => {
    const geometry = triangle();
    const exact = computeUnepOverlap(subjectOf(triangle()), "WDPA", parks);
    shareOverlayAllowances([geometry]);
    const allowance = protectedAreaAllowances.of(geometry);
    expect(() => allowance.spendPositions(SUBJECT_LIMITS.positions + 1)).toThrow(OverlayTooIntricateError);
    const sampled = computeUnepOverlap(subjectOf(geometry), "WDPA", parks);
    const subject = subjectOf(geometry);
    const fractions = sampleOverlapFractions(
      geometry,
      parks.map((park) => [park.geometry]),
      undefined,
      subject.bbox,
    );
    expect(sampled.areaM2).toBeCloseTo(fractions.union * subject.areaM2, 6);
    expect(sampled.areaM2).not.toBeCloseTo(exact.areaM2, 3);
    expect(Math.abs(sampled.fraction - exact.fraction)).toBeLessThan(0.03);
    expect(sampled.areas.map((a) => a.id).sort()).toEqual(["1", "2"]);
  });

  it("is apart from the conflict checks' allowance: one running out leaves the other exact", () => {
    const geometry = triangle();
    const exact = computeUnepOverlap(subjectOf(triangle()), "WDPA", parks);
    shareOverlayAllowances([geometry]);
    expect(() => conflictAllowances.of(geometry).spendPositions(SUBJECT_LIMITS.positions + 1)).toThrow(
      OverlayTooIntricateError,
    );
    expect(computeUnepOverlap(subjectOf(geometry), "WDPA", parks)).toEqual(exact);
  });

  it("renews a request's allowance for a second run: the same limits and sharing, nothing spent", () => {
    const [first, second, alone, unknown] = [triangle(), triangle(), triangle(), triangle()];
    conflictAllowances.share([first, second], { positions: 10, edgePairs: 1_000, beamWork: 1_000 });
    conflictAllowances.of(alone).spendPositions(SUBJECT_LIMITS.positions);
    conflictAllowances.of(first).spendPositions(8);
    conflictAllowances.renew([first, second, alone, unknown]);
    const renewed = conflictAllowances.of(first);
    expect(conflictAllowances.of(second)).toBe(renewed);
    // Nothing spent: 8 fit again; the shared limit of 10 still holds for the two together.
    renewed.spendPositions(8);
    expect(() => conflictAllowances.of(second).spendPositions(3)).toThrow("came to 11 positions, more than 10");
    // Its own allowance, at the default limits, spent afresh.
    expect(() => conflictAllowances.of(alone).spendPositions(SUBJECT_LIMITS.positions)).not.toThrow();
    expect(conflictAllowances.of(alone)).not.toBe(renewed);
  });

  it("charges Clipper2's work only for overlays Clipper2 may run", () => {
    const allowance = new OverlayAllowance({ positions: 1_000_000, edgePairs: 1_000, beamWork: 100 });
    const plan = (beamVisits: number): OverlayPlan => ({
      chainPairs: { alongX: 10, alongY: 10 },
      beamVisits: { alongX: beamVisits, alongY: beamVisits },
      edgePairs: 1,
      positions: 10,
      partPairs: 1,
      holeWork: 0,
    });
    // Past Clipper2's limit (a fallback runs): nothing of its work is charged, however often.
    for (let i = 0; i < 3; i++) allowance.spendPlan(plan(BEAM_SWEEP_LIMITS.work));
    expect(allowance.exhausted).toBe(false);
    // Within it: 10 + 8 × 12 = 106 units, past the 100 allowed.
    expect(() => allowance.spendPlan(plan(12))).toThrow("came to 106 units of scan-beam work, more than 100");
  });

  it("once spent, refuses every later overlay before counting it, with the reason it ran out", () => {
    const allowance = new OverlayAllowance({ positions: 13, edgePairs: 1, beamWork: 1_000 });
    // Not convex: two convex rings are intersected without an overlay (convex-clip.ts).
    const square = notchedUnitSquare();
    const crossing = rect(0.5, 0.5, 1.5, 1.5);
    // Two meeting edge pairs: past the limit of one, after counting.
    expect(() => intersection(square, crossing, undefined, allowance)).toThrow(
      "polygon intersection not attempted: this source's overlays together came to 2 meeting edge pairs, more than 1",
    );
    expect(allowance.exhausted).toBe(true);
    // Far apart pairs cost nothing; any other is refused with the same reason, positions unspent.
    expect(intersection(square, rect(5, 5, 6, 6), undefined, allowance)).toBeNull();
    expect(() => intersection(square, crossing, undefined, allowance)).toThrow("came to 2 meeting edge pairs");
  });
});

function wavy(n: number, cx = 0, cy = 0, r0 = 1, waves = 40): Position[] {
  const ring: Position[] = [];
  for (let i = 0; i < n; i++) {
    const a = (2 * Math.PI * i) / n;
    const r = r0 * (1 + 0.2 * Math.sin(a * waves));
    ring.push([cx + r * Math.cos(a), cy + r * Math.sin(a)]);
  }
  ring.push(ring[0]);
  return ring;
}

describe("partsNear and clipping of large areas", () => {
  it("keeps only the parts of a MultiPolygon whose boxes meet the box; small parts are not clipped", () => {
    const multi: SourceGeometry = {
      type: "MultiPolygon",
      coordinates: [rect(0, 0, 1, 1).coordinates, rect(50, 50, 51, 51).coordinates],
    };
    expect(partsNear(multi, { minX: 0.5, minY: 0.5, maxX: 2, maxY: 2 })).toEqual({
      near: rect(0, 0, 1, 1),
      unclipped: null,
      // All 10 positions read; the 5 handed to the overlay are spent there.
      read: 5,
    });
    expect(partsNear(multi, { minX: 10, minY: 10, maxX: 11, maxY: 11 })).toBeNull();
    expect(partsNear(multi, { minX: 0, minY: 0, maxX: 60, maxY: 60 })).toEqual({
      near: multi,
      unclipped: null,
      // All 10 read and all 10 handed on: nothing beyond them.
      read: 0,
    });
  });

  it("clips a large ring to the box around the source, with the same overlap as the whole ring", () => {
    const big: SourceGeometry = { type: "Polygon", coordinates: [wavy(200_000)] };
    // Sources across the wavy boundary, inside, outside, and a large one.
    const sources = [
      rect(0.95, -0.05, 1.25, 0.02),
      rect(-0.1, -0.1, 0.1, 0.1),
      rect(1.3, 1.3, 1.4, 1.4),
      rect(-0.9, 0.2, 0.9, 1.3),
    ];
    for (const geometry of sources) {
      const parcel = partsNear(big, boundingBox(geometry));
      if (parcel !== null) expect(parcel.near.coordinates.flat(2).length).toBeLessThan(200_000);
      const started = performance.now();
      const result = computeUnepOverlap(subjectOf(geometry), "WDPA", [area("1", big)]);
      const elapsed = performance.now() - started;
      const exact = jtsArea(geometry, big);
      expect(result.areaM2).toBeCloseTo(exact, 1);
      if (geometry !== sources[3]) expect(elapsed).toBeLessThan(1_000);
    }
  });

  it("cuts a large area down through its boundary index from its second use: fields on a 99,000-position boundary read a few hundred positions each, with the same overlaps", () => {
    const big: SourceGeometry = { type: "Polygon", coordinates: [wavy(99_000)] };
    const cached = area("1", big);
    let straddling = 0;
    for (let i = 0; i < 120; i++) {
      // A field of ~0.01° across the boundary, at an angle spread round the ring.
      const a = (2 * Math.PI * (i + 0.37)) / 120;
      const r = 1 + 0.2 * Math.sin(a * 40);
      const field = rect(
        r * Math.cos(a) - 0.005,
        r * Math.sin(a) - 0.005,
        r * Math.cos(a) + 0.005,
        r * Math.sin(a) + 0.005,
      );
      const result = computeUnepOverlap(subjectOf(field), "WDPA", [cached]);
      // Sutherland–Hodgman's cut, which reads every position, and the same engine.
      const plain = nearParts(polygonsOf(big), boundingBox(field));
      expect(plain.read).toBe(99_001);
      const common = geometryFromPolygons(clipperEngine.intersection(polygonsOf(field), plain.near));
      expect(result.areaM2).toBeCloseTo(common === null ? 0 : geodesicAreaM2(common), 3);
      if (result.fraction > 0.01 && result.fraction < 0.99) straddling++;
      if (i >= 2) expect(partsNear(big, boundingBox(field))?.read).toBeLessThan(2_000);
    }
    expect(straddling).toBeGreaterThan(100);
  });

  it("spends what cutting an area down read from the request's allowance: past it, the overlap is sampled", () => {
    const big: SourceGeometry = { type: "Polygon", coordinates: [wavy(99_000)] };
    const across = (x: number) => rect(x - 0.005, -0.005, x + 0.005, 0.005);
    const [first, second] = [across(1), across(1.0001)];
    // Room for one unindexed area's 99,001 positions, not two.
    protectedAreaAllowances.share([first, second], { positions: 150_000, edgePairs: 1_000_000, beamWork: 1e9 });
    let sampled = 0;
    const onSampled = () => sampled++;
    // Copies met once each: no index, so each is cut down by reading every position.
    computeUnepOverlap(subjectOf(first), "WDPA", [area("1", structuredClone(big))], undefined, onSampled);
    expect(sampled).toBe(0);
    const result = computeUnepOverlap(
      subjectOf(second),
      "WDPA",
      [area("1", structuredClone(big))],
      undefined,
      onSampled,
    );
    expect(sampled).toBe(1);
    expect(result.fraction).toBeGreaterThan(0.3);
    expect(result.fraction).toBeLessThan(0.7);
  });

  it("samples a source wholly inside a large area, past the allowance, as wholly inside it", () => {
    const big: SourceGeometry = { type: "Polygon", coordinates: [wavy(20_000)] };
    const cached = area("1", big);
    const field = rect(0.1, 0.1, 0.11, 0.11);
    // Its second use indexes the area; the third is settled, and refused past a spent allowance.
    computeUnepOverlap(subjectOf(rect(0.2, 0.2, 0.21, 0.21)), "WDPA", [cached]);
    computeUnepOverlap(subjectOf(rect(0.3, 0.3, 0.31, 0.31)), "WDPA", [cached]);
    protectedAreaAllowances.share([field], { positions: 1, edgePairs: 1, beamWork: 1 });
    let sampled = 0;
    const result = computeUnepOverlap(subjectOf(field), "WDPA", [cached], undefined, () => sampled++);
    expect(sampled).toBe(1);
    expect(result.fraction).toBe(1);
    expect(result.areas.map((a) => a.id)).toEqual(["1"]);
  });

  it("a source in a large area's hole does not overlap it", () => {
    const withHole: SourceGeometry = { type: "Polygon", coordinates: [wavy(5_000, 0, 0, 3), wavy(5_000, 0, 0, 1)] };
    expect(computeUnepOverlap(subjectOf(rect(-0.1, -0.1, 0.1, 0.1)), "WDPA", [area("1", withHole)]).overlaps).toBe(
      false,
    );
    const across = rect(0.5, -0.1, 1.5, 0.1);
    const result = computeUnepOverlap(subjectOf(across), "WDPA", [area("1", withHole)]);
    expect(result.areaM2).toBeCloseTo(jtsArea(across, withHole), 1);
  });

  it("when the engine for clipped input fails, the unclipped parts go through the full chain", () => {
    const big: SourceGeometry = { type: "Polygon", coordinates: [wavy(20_000)] };
    const geometry = rect(0.95, -0.05, 1.25, 0.02);
    const result = computeUnepOverlap(subjectOf(geometry), "WDPA", [area("1", big)], {
      engines: [jstsEngine],
      clippedEngines: [failing],
    });
    expect(result.areaM2).toBeCloseTo(jtsArea(geometry, big), 3);
  });
});

describe("sampleOverlapFractions", () => {
  it("estimates shares of the subject, holes and overlapping parcels included", () => {
    const withHole: SourceGeometry = {
      type: "Polygon",
      coordinates: [
        rect(-1, -1, 2, 2).coordinates[0],
        [
          [0, 0],
          [0, 0.5],
          [1, 0.5],
          [1, 0],
          [0, 0],
        ],
      ],
    };
    const sampled = sampleOverlapFractions(source, [[withHole], [rect(0, 0, 0.5, 1), rect(0.25, 0, 0.75, 1)]]);
    expect(sampled.perGroup[0]).toBeCloseTo(0.5, 1);
    expect(sampled.perGroup[1]).toBeCloseTo(0.75, 1);
    expect(sampled.union).toBeCloseTo(0.875, 1);
  });
});
