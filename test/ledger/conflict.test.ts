/**
 * The pure conflict policy of docs/api.md §8 (src/ledger/conflict.ts), on hand-built cases whose
 * answers are known analytically: overlap ≥ 1% of the smaller source's geodesic area, overlapping
 * half-open periods, and a shared attribute type (or none on either side); and the measure of a
 * conflict that docs/api.md §14 explains (conflictMeasure).
 */
import { describe, expect, it } from "vitest";
import { EARTH_RADIUS_M, geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import { intersectionAreaM2, OverlayAllowance, OverlayFailedError, polyclipEngine } from "../../src/geo/overlap.js";
import { shareOverlayAllowances } from "../../src/geo/overlay-allowances.js";
import { SUBJECT_LIMITS } from "../../src/geo/overlay-plan.js";
import type { MultiPolygonGeometry, PolygonGeometry, SourceGeometry } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import {
  attributesCompatible,
  conflictMeasure,
  conflictPolicy,
  MIN_OVERLAP_FRACTION,
  type OverlapArea,
  overlapAreaOf,
  periodsOverlap,
  sourcesConflict,
} from "../../src/ledger/conflict.js";
import { fromOtherSide } from "../../src/model/history.js";
import type { SpatialSubject } from "../../src/model/spatial.js";
import { digitisedTwice, notchedUnitSquare, prng, ring } from "../support/geometry-fixtures.js";

const RAD = Math.PI / 180;
const Y2024 = Date.UTC(2024, 0, 1);
const Y2025 = Date.UTC(2025, 0, 1);
const Y2026 = Date.UTC(2026, 0, 1);

/** Closed counter-clockwise lon/lat cell [lon1, lon2] × [lat1, lat2]. */
function cell(lon1: number, lat1: number, lon2: number, lat2: number): PolygonGeometry {
  return { type: "Polygon", coordinates: [ring(lon1, lat1, lon2, lat2)] };
}

/** Exact area of a lon/lat cell on the sphere of docs/api.md §8: R²·Δλ·(sin φ₂ − sin φ₁). */
function cellArea(lon1: number, lat1: number, lon2: number, lat2: number): number {
  return EARTH_RADIUS_M ** 2 * (lon2 - lon1) * RAD * (Math.sin(lat2 * RAD) - Math.sin(lat1 * RAD));
}

interface SubjectOptions {
  start?: number;
  end?: number;
  attributeType?: string[];
}

/** A source as the policy sees it, with bbox and area derived from the geometry as the service does. */
function subject(
  geometry: SourceGeometry,
  { start = Y2024, end = Y2025, attributeType = [] }: SubjectOptions = {},
): SpatialSubject {
  return {
    geometry,
    bbox: boundingBox(geometry),
    areaM2: geodesicAreaM2(geometry),
    startAt: start,
    endAt: end,
    attributeType,
  };
}

/** The decision, checked to be the same in both argument orders and through the exported policy. */
function conflicts(a: SpatialSubject, b: SpatialSubject): boolean {
  const forward = sourcesConflict(a, b);
  expect(sourcesConflict(b, a), "the decision is symmetric").toBe(forward);
  expect(conflictPolicy.conflicts(a, b), "conflictPolicy applies sourcesConflict").toBe(forward);
  return forward;
}

const unit = cell(0, 0, 1, 1);

/** polyclip-ts's sweep line throws on this pair. */
function defeatsPolyclip(a: PolygonGeometry, b: PolygonGeometry): boolean {
  try {
    polyclipEngine.intersection([a.coordinates], [b.coordinates]);
    return false;
  } catch {
    return true;
  }
}

describe("the 1% overlap rule on the exact geometry", () => {
  it("50% overlap conflicts", () => {
    expect(intersectionAreaM2(unit, cell(0.5, 0, 1.5, 1)) / geodesicAreaM2(unit)).toBeCloseTo(0.5, 12);
    expect(conflicts(subject(unit), subject(cell(0.5, 0, 1.5, 1)))).toBe(true);
  });

  it("identical geometries conflict", () => {
    expect(conflicts(subject(unit), subject(cell(0, 0, 1, 1)))).toBe(true);
  });

  it("touching edges and touching corners do not conflict", () => {
    expect(conflicts(subject(unit), subject(cell(1, 0, 2, 1)))).toBe(false); // shared east edge
    expect(conflicts(subject(unit), subject(cell(0, 1, 1, 2)))).toBe(false); // shared north edge
    expect(conflicts(subject(unit), subject(cell(1, 1, 2, 2)))).toBe(false); // shared corner
    expect(conflicts(subject(unit), subject(cell(0.25, 1, 0.75, 1.5)))).toBe(false); // part of an edge
  });

  it("field-sized neighbours sharing a digitised boundary (nearly coincident edges) do not conflict and do not throw", () => {
    // ~100 m fields at 50° N; the second field's western edge wobbles by 1e-12° around the first's eastern edge.
    const size = 0.001;
    const east = 10 + size;
    const e = 1e-12;
    const a = cell(10, 50, east, 50 + size);
    const b: PolygonGeometry = {
      type: "Polygon",
      coordinates: [
        [
          [east + e, 50],
          [east + size, 50],
          [east + size, 50 + size],
          [east - e, 50 + size],
          [east + e, 50 + size / 2],
          [east - e, 50 + size / 4],
          [east + e, 50],
        ],
      ],
    };
    expect(checkGeometry(b)).toEqual([]);
    expect(conflicts(subject(a), subject(b))).toBe(false);
  });

  it("neighbours whose shared boundary defeats the first overlay engine do not conflict (the fallback decides)", () => {
    const random = prng(2048);
    let defeated = 0;
    for (let n = 0; n < 400 && defeated < 3; n++) {
      const [a, b] = digitisedTwice(10 + (n % 20) * 0.01, 50 + Math.floor(n / 20) * 0.01, 0.001, random);
      if (!defeatsPolyclip(a, b)) continue;
      defeated += 1;
      expect(checkGeometry(a)).toEqual([]);
      expect(checkGeometry(b)).toEqual([]);
      expect(conflicts(subject(a), subject(b))).toBe(false);
    }
    expect(defeated, "the fixture really reaches the fallback").toBe(3);
  });

  it("a 0.5% sliver does not conflict", () => {
    const b = cell(0.995, 0, 1.995, 1);
    expect(intersectionAreaM2(unit, b) / geodesicAreaM2(unit)).toBeCloseTo(0.005, 10);
    expect(conflicts(subject(unit), subject(b))).toBe(false);
  });

  it("a 1 cm sliver along a 100 m field boundary does not conflict", () => {
    const a = cell(10, 50, 10.001, 50.001);
    const b = cell(10.001 - 1e-7, 50, 10.002, 50.001);
    expect(intersectionAreaM2(a, b)).toBeGreaterThan(0);
    expect(conflicts(subject(a), subject(b))).toBe(false);
  });

  it("conflicts just above 1% of the smaller area and not just below (overlap across a meridian)", () => {
    // Equal cells in the same latitude band: the overlap's share is exactly its share of longitude.
    const above = 0.01 * (1 + 1e-6);
    const below = 0.01 * (1 - 1e-6);
    expect(conflicts(subject(unit), subject(cell(1 - above, 0, 2 - above, 1)))).toBe(true);
    expect(conflicts(subject(unit), subject(cell(1 - below, 0, 2 - below, 1)))).toBe(false);
  });

  it("measures the 1% on geodesic areas, not on degrees (overlap across a parallel at 60° N)", () => {
    // A = [0,1]×[60,61]. B starts inside A at latitude 61 − h and extends 2° north, so A is the
    // smaller one. Choose h so the overlap band is exactly f of A's geodesic area:
    // sin(61 − h) = sin 61 − f·(sin 61 − sin 60).
    const s60 = Math.sin(60 * RAD);
    const s61 = Math.sin(61 * RAD);
    const southEdgeFor = (f: number) => Math.asin(s61 - f * (s61 - s60)) / RAD;
    const a = cell(0, 60, 1, 61);
    // 0.995% geodesically, but about 1.01% of the cell's height in degrees (the band near 61° is narrower).
    const lat995 = southEdgeFor(0.00995);
    expect((61 - lat995) / 1).toBeGreaterThan(0.01);
    const b995 = cell(0, lat995, 1, lat995 + 2);
    expect(geodesicAreaM2(b995)).toBeGreaterThan(geodesicAreaM2(a));
    expect(intersectionAreaM2(a, b995) / cellArea(0, 60, 1, 61)).toBeCloseTo(0.00995, 8);
    expect(conflicts(subject(a), subject(b995))).toBe(false);
    const lat1005 = southEdgeFor(0.01005);
    expect(conflicts(subject(a), subject(cell(0, lat1005, 1, lat1005 + 2)))).toBe(true);
  });

  it("applies the threshold inclusively, at exactly MIN_OVERLAP_FRACTION of the smaller area", () => {
    expect(MIN_OVERLAP_FRACTION).toBe(0.01);
    const a = subject(unit);
    const b = subject(cell(0.5, 0.5, 2.5, 2.5));
    const smaller = Math.min(a.areaM2, b.areaM2);
    const exactly: OverlapArea = () => MIN_OVERLAP_FRACTION * smaller;
    const justBelow: OverlapArea = () => MIN_OVERLAP_FRACTION * smaller * (1 - 1e-12);
    expect(sourcesConflict(a, b, exactly)).toBe(true);
    expect(sourcesConflict(b, a, exactly)).toBe(true);
    expect(sourcesConflict(a, b, justBelow)).toBe(false);
    expect(sourcesConflict(a, b, () => 0)).toBe(false);
  });

  it("measures against the smaller source: half of a small field inside a large one conflicts", () => {
    const large = cell(0, 0, 10, 10);
    const small = cell(9.5, 5, 10.5, 6); // half inside: 0.5% of the large one, 50% of the small one
    expect(intersectionAreaM2(large, small) / geodesicAreaM2(large)).toBeLessThan(0.01);
    expect(conflicts(subject(large), subject(small))).toBe(true);
  });

  it("a source contained in another conflicts", () => {
    expect(conflicts(subject(cell(0, 0, 10, 10)), subject(cell(4, 4, 4.01, 4.01)))).toBe(true);
    expect(conflicts(subject(cell(0, 0, 10, 10)), subject(cell(0, 0, 5, 5)))).toBe(true); // contained, sharing two edges
  });

  it("a MultiPolygon partly overlapping another source conflicts on its whole area's share", () => {
    const parts: MultiPolygonGeometry = {
      type: "MultiPolygon",
      coordinates: [[ring(0, 0, 1, 1)], [ring(5, 0, 6, 1)]],
    };
    expect(checkGeometry(parts)).toEqual([]);
    // Half of the second part: 25% of the MultiPolygon.
    expect(conflicts(subject(parts), subject(cell(5.5, 0, 7, 1)))).toBe(true);
    // Overlaps spread over both parts add up: 0.6% + 0.6% of a part is 0.6% of the whole (below 1%)...
    expect(conflicts(subject(parts), subject(cell(0.994, -1, 5.006, 2)))).toBe(false);
    // ...while 1.2% + 1.2% of a part is 1.2% of the whole.
    expect(conflicts(subject(parts), subject(cell(0.988, -1, 5.012, 2)))).toBe(true);
    // Between the parts, inside the MultiPolygon's box but touching neither part.
    expect(conflicts(subject(parts), subject(cell(2, 0, 4, 1)))).toBe(false);
    // Two MultiPolygons whose parts interleave without overlapping.
    const interleaved: MultiPolygonGeometry = {
      type: "MultiPolygon",
      coordinates: [[ring(1, 0, 2, 1)], [ring(6, 0, 7, 1)]],
    };
    expect(conflicts(subject(parts), subject(interleaved))).toBe(false);
  });

  it("a polygon lying in another's hole does not conflict; one reaching out of the hole does", () => {
    const framed: PolygonGeometry = {
      type: "Polygon",
      coordinates: [ring(0, 0, 10, 10), [...ring(2, 2, 8, 8)].reverse()],
    };
    expect(checkGeometry(framed)).toEqual([]);
    expect(conflicts(subject(framed), subject(cell(3, 3, 4, 4)))).toBe(false); // strictly inside the hole
    expect(conflicts(subject(framed), subject(cell(2, 2, 8, 8)))).toBe(false); // exactly the hole
    expect(conflicts(subject(framed), subject(cell(1, 4, 3, 5)))).toBe(true); // half in the frame
  });

  it("a hole covering the other polygon inside a MultiPolygon part does not conflict", () => {
    const parts: MultiPolygonGeometry = {
      type: "MultiPolygon",
      coordinates: [[ring(0, 0, 4, 4), [...ring(1, 1, 3, 3)].reverse()], [ring(10, 10, 11, 11)]],
    };
    expect(checkGeometry(parts)).toEqual([]);
    expect(conflicts(subject(parts), subject(cell(1.5, 1.5, 2.5, 2.5)))).toBe(false);
  });

  it("a source near the antimeridian conflicts with its overlapping neighbour only", () => {
    expect(conflicts(subject(cell(179.9, -16.1, 180, -16)), subject(cell(179.95, -16.05, 180, -15.9)))).toBe(true);
    // The other side of the antimeridian is far away in lon/lat, as GeoJSON splits such geometries.
    expect(conflicts(subject(cell(179.9, -16.1, 180, -16)), subject(cell(-180, -16.1, -179.9, -16)))).toBe(false);
  });
});

describe("periods", () => {
  const at = (start: number, end: number) => subject(unit, { start, end });
  const b = (start: number, end: number) => subject(cell(0.5, 0, 1.5, 1), { start, end });

  it("overlapping, nested and identical periods conflict", () => {
    expect(conflicts(at(Y2024, Y2025), b(Date.UTC(2024, 6, 1), Y2026))).toBe(true);
    expect(conflicts(at(Y2024, Y2026), b(Date.UTC(2024, 6, 1), Date.UTC(2024, 7, 1)))).toBe(true);
    expect(conflicts(at(Y2024, Y2025), b(Y2024, Y2025))).toBe(true);
  });

  it("disjoint periods do not conflict", () => {
    expect(conflicts(at(Y2024, Y2025), b(Date.UTC(2025, 6, 1), Y2026))).toBe(false);
  });

  it("are half-open: one ending exactly when the other starts does not conflict, one millisecond more does", () => {
    expect(conflicts(at(Y2024, Y2025), b(Y2025, Y2026))).toBe(false);
    expect(conflicts(at(Y2025, Y2026), b(Y2024, Y2025))).toBe(false);
    expect(conflicts(at(Y2024, Y2025 + 1), b(Y2025, Y2026))).toBe(true);
  });

  it("periodsOverlap is the half-open test", () => {
    expect(periodsOverlap(at(0, 10), at(9, 20))).toBe(true);
    expect(periodsOverlap(at(0, 10), at(10, 20))).toBe(false);
    expect(periodsOverlap(at(10, 20), at(0, 10))).toBe(false);
    expect(periodsOverlap(at(0, 10), at(2, 3))).toBe(true);
  });
});

describe("attribute types", () => {
  const a = (attributeType: string[]) => subject(unit, { attributeType });
  const b = (attributeType: string[]) => subject(cell(0.5, 0, 1.5, 1), { attributeType });

  it("disjoint attribute types do not conflict", () => {
    expect(conflicts(a(["CARBON_REMOVAL"]), b(["BIODIVERSITY"]))).toBe(false);
    expect(conflicts(a(["CARBON_REMOVAL", "CI_SCORE"]), b(["BIODIVERSITY", "WATER_QUALITY"]))).toBe(false);
  });

  it("one shared attribute type is enough", () => {
    expect(conflicts(a(["CARBON_REMOVAL", "CI_SCORE"]), b(["BIODIVERSITY", "CI_SCORE"]))).toBe(true);
    expect(conflicts(a(["WATER_QUANTITY"]), b(["WATER_QUANTITY"]))).toBe(true);
  });

  it("missing attribute types on either side (or both) are compatible with anything", () => {
    expect(conflicts(a([]), b(["BIODIVERSITY"]))).toBe(true);
    expect(conflicts(a(["CARBON_REMOVAL"]), b([]))).toBe(true);
    expect(conflicts(a([]), b([]))).toBe(true);
    expect(attributesCompatible(a([]), b(["BIODIVERSITY"]))).toBe(true);
    expect(attributesCompatible(a(["BIODIVERSITY"]), b([]))).toBe(true);
    expect(attributesCompatible(a(["CI_SCORE"]), b(["BIODIVERSITY"]))).toBe(false);
  });

  it("no shared attribute type wins over a full overlap", () => {
    expect(
      conflicts(subject(unit, { attributeType: ["CI_SCORE"] }), subject(unit, { attributeType: ["RENEWABLE_ENERGY"] })),
    ).toBe(false);
  });
});

describe("overlay failures", () => {
  const a = subject(unit);
  const b = subject(cell(0.5, 0, 1.5, 1));
  const failed: OverlapArea = () => {
    throw new OverlayFailedError("intersection", [
      { engine: "first", error: new Error("gave up") },
      { engine: "second", error: new Error("gave up too") },
    ]);
  };

  it("take a pair as conflicting when every overlay engine failed (conservative)", () => {
    expect(sourcesConflict(a, b, failed)).toBe(true);
    expect(sourcesConflict(b, a, failed)).toBe(true);
  });

  it("let other errors propagate", () => {
    const bug = new TypeError("a bug, not a clipping failure");
    expect(() =>
      sourcesConflict(a, b, () => {
        throw bug;
      }),
    ).toThrow(bug);
    const plain = new Error("gave up");
    expect(() =>
      sourcesConflict(a, b, () => {
        throw plain;
      }),
    ).toThrow(plain);
  });

  it("are not reached when periods, attribute types or boxes already rule the pair out", () => {
    const never: OverlapArea = () => {
      throw new TypeError("the overlay must not run");
    };
    expect(sourcesConflict(a, subject(cell(0.5, 0, 1.5, 1), { start: Y2025, end: Y2026 }), never)).toBe(false);
    expect(
      sourcesConflict(
        subject(unit, { attributeType: ["CI_SCORE"] }),
        subject(unit, { attributeType: ["BIODIVERSITY"] }),
        never,
      ),
    ).toBe(false);
    expect(sourcesConflict(a, subject(cell(3, 3, 4, 4)), never)).toBe(false);
  });

  it("decide conservatively for any pair whose boxes meet, even boxes meeting at a corner", () => {
    // The box test passes, so the overlay runs; its failure flags the pair although it only touches.
    expect(sourcesConflict(a, subject(cell(1, 1, 2, 2)), failed)).toBe(true);
    expect(sourcesConflict(a, subject(cell(1, 1, 2, 2)))).toBe(false);
  });
});

describe("conflictMeasure (docs/api.md §14)", () => {
  const rel = (actual: number, expected: number) => Math.abs(actual - expected) / expected;

  it("measures the overlap on the sphere, each side's fraction, the overlap period and the shared types", () => {
    // a: 1° × 1° at 45° N; b: 2° wide, covering a's east half; periods and types overlap in part.
    const a = subject(cell(10, 45, 11, 46), {
      start: Y2024,
      end: Y2026,
      attributeType: ["CARBON_REMOVAL", "CI_SCORE"],
    });
    const b = subject(cell(10.5, 45, 12.5, 46), {
      start: Date.UTC(2024, 6, 1),
      end: Date.UTC(2027, 0, 1),
      attributeType: ["BIODIVERSITY", "CI_SCORE", "CARBON_REMOVAL"],
    });
    const measure = conflictMeasure(a, b);
    expect(measure).not.toBeNull();
    const overlap = cellArea(10.5, 45, 11, 46);
    expect(rel(measure?.overlapAreaM2 ?? 0, overlap)).toBeLessThan(1e-9);
    expect(rel(measure?.overlapFraction ?? 0, overlap / cellArea(10, 45, 11, 46))).toBeLessThan(1e-9);
    expect(rel(measure?.counterpartOverlapFraction ?? 0, overlap / cellArea(10.5, 45, 12.5, 46))).toBeLessThan(1e-9);
    expect(measure?.overlapPeriod).toEqual({ startAt: Date.UTC(2024, 6, 1), endAt: Y2026 });
    // In a's order.
    expect(measure?.sharedAttributeTypes).toEqual(["CARBON_REMOVAL", "CI_SCORE"]);
    expect(conflictPolicy.measure(a, b)).toEqual(measure);
  });

  it("is the same conflict from the other side: fractions swapped, the rest equal", () => {
    const a = subject(cell(0, 0, 1, 1), { attributeType: ["CI_SCORE"] });
    const b = subject(cell(0.25, 0.25, 3, 3), { attributeType: ["CI_SCORE"] });
    const ab = conflictMeasure(a, b);
    const ba = conflictMeasure(b, a);
    expect(ab).not.toBeNull();
    expect(ba?.overlapFraction).toBeCloseTo(ab?.counterpartOverlapFraction ?? Number.NaN, 12);
    expect(ba?.counterpartOverlapFraction).toBeCloseTo(ab?.overlapFraction ?? Number.NaN, 12);
    expect(rel(ba?.overlapAreaM2 ?? 0, ab?.overlapAreaM2 ?? 0)).toBeLessThan(1e-9);
    expect(ba?.overlapPeriod).toEqual(ab?.overlapPeriod);
    const swapped = fromOtherSide(ab ?? (null as never));
    expect(swapped.overlapFraction).toBe(ab?.counterpartOverlapFraction);
    expect(swapped.counterpartOverlapFraction).toBe(ab?.overlapFraction);
    expect(swapped.overlapAreaM2).toBe(ab?.overlapAreaM2);
  });

  it("shares no attribute type when either side is untyped, and still measures", () => {
    const typed = subject(unit, { attributeType: ["CI_SCORE"] });
    const untyped = subject(cell(0.5, 0, 1.5, 1));
    expect(conflictMeasure(typed, untyped)?.sharedAttributeTypes).toEqual([]);
    expect(conflictMeasure(untyped, typed)?.sharedAttributeTypes).toEqual([]);
    expect(conflictMeasure(untyped, subject(unit))?.sharedAttributeTypes).toEqual([]);
  });

  it("keeps fractions within 0..1: a source inside another is covered wholly", () => {
    const outer = subject(cell(0, 0, 2, 2));
    const inner = subject(cell(0.5, 0.5, 1, 1));
    expect(conflictMeasure(inner, outer)?.overlapFraction).toBeCloseTo(1, 12);
    expect(conflictMeasure(inner, outer)?.overlapFraction).toBeLessThanOrEqual(1);
    // Identical geometries: an overlay's rounding must not push either fraction past 1.
    const same = conflictMeasure(subject(cell(0.1, 0.2, 0.7, 0.9)), subject(cell(0.1, 0.2, 0.7, 0.9)));
    expect(same?.overlapFraction).toBeLessThanOrEqual(1);
    expect(same?.counterpartOverlapFraction).toBeLessThanOrEqual(1);
    expect(same?.overlapFraction).toBeCloseTo(1, 12);
  });

  it("is null exactly when sourcesConflict is false", () => {
    const a = subject(unit, { attributeType: ["CI_SCORE"] });
    const others = [
      subject(cell(1, 0, 2, 1)), // touches
      subject(cell(0.995, 0, 1.995, 1)), // 0.5% sliver
      subject(unit, { start: Y2025, end: Y2026 }), // later period
      subject(unit, { attributeType: ["BIODIVERSITY"] }), // other type
      subject(cell(0.5, 0, 1.5, 1)), // conflicts
      subject(cell(0.98, 0, 1.98, 1)), // 2%: conflicts
    ];
    for (const other of others) {
      expect(conflictMeasure(a, other) !== null).toBe(sourcesConflict(a, other));
      expect(conflictMeasure(other, a) !== null).toBe(sourcesConflict(other, a));
    }
    expect(others.map((o) => conflictMeasure(a, o) !== null)).toEqual([false, false, false, false, true, true]);
  });

  it("takes the smaller source's whole area as the overlap when every overlay engine failed", () => {
    const failed: OverlapArea = () => {
      throw new OverlayFailedError("intersection", [{ engine: "only", error: new Error("gave up") }]);
    };
    const small = subject(unit);
    const large = subject(cell(0.5, 0, 3.5, 1));
    const measure = conflictMeasure(small, large, failed);
    expect(measure?.overlapAreaM2).toBe(small.areaM2);
    expect(measure?.overlapFraction).toBe(1);
    // Marked as a bound, not a measure (docs/api.md §14); a measured pair carries no mark.
    expect(measure?.overlapAreaUpperBound).toBe(true);
    expect(conflictMeasure(small, large)).not.toHaveProperty("overlapAreaUpperBound");
    expect(rel(measure?.counterpartOverlapFraction ?? 0, small.areaM2 / large.areaM2)).toBeLessThan(1e-12);
    expect(conflictMeasure(large, small, failed)?.counterpartOverlapFraction).toBe(1);
    const bug = new TypeError("a bug");
    expect(() =>
      conflictMeasure(small, large, () => {
        throw bug;
      }),
    ).toThrow(bug);
  });
});

describe("one source's overlays are limited together (docs/api.md §8.5)", () => {
  it("hands every check of one subject the same allowance, each subject its own, and one create's subjects one", () => {
    const seen: OverlayAllowance[] = [];
    const recording: OverlapArea = (a, b, allowance) => {
      seen.push(allowance);
      return intersectionAreaM2(a.geometry, b.geometry, undefined, allowance);
    };
    // Distinct geometry objects, as two parsed sources have; a store's copies of a record keep theirs.
    const first = subject(cell(0, 0, 1, 1));
    const second = subject(cell(0, 0, 1, 1));
    const firstCopied = { ...first, conflict: true };
    const others = [subject(cell(0.5, 0, 1.5, 1)), subject(cell(0, 0.5, 1, 1.5))];
    for (const other of others) {
      expect(conflictMeasure(first, other, recording)).not.toBeNull();
      expect(conflictMeasure(second, other, recording)).not.toBeNull();
      expect(conflictMeasure(firstCopied, other, recording)).not.toBeNull();
    }
    const [a1, b1, c1, a2, b2, c2] = seen;
    expect(a1).toBeInstanceOf(OverlayAllowance);
    expect(a2).toBe(a1);
    expect(c1).toBe(a1);
    expect(c2).toBe(a1);
    expect(b2).toBe(b1);
    expect(b1).not.toBe(a1);

    // One create request's sources share one allowance.
    const batch = [subject(cell(0, 0, 1, 1)), subject(cell(0, 0, 1, 1))];
    shareOverlayAllowances(batch.map((s) => s.geometry));
    seen.length = 0;
    for (const s of batch) conflictMeasure(s, others[0], recording);
    expect(seen).toHaveLength(2);
    expect(seen[1]).toBe(seen[0]);
    expect(seen[0]).not.toBe(a1);
  });

  it("once the allowance has run out, refuses before reading the other source's geometry (a large stored one costs its parse)", () => {
    const a = subject(unit);
    const other = subject(cell(0.5, 0, 1.5, 1));
    let reads = 0;
    const counted: SpatialSubject = {
      ...other,
      get geometry() {
        reads++;
        return other.geometry;
      },
    };
    const allowance = new OverlayAllowance({ positions: 5, edgePairs: 1_000, beamWork: 1_000_000 });
    expect(() => overlapAreaOf(a, counted, allowance)).toThrow("came to 10 positions, more than 5");
    expect(reads).toBe(1);
    expect(() => overlapAreaOf(a, counted, allowance)).toThrow("came to 10 positions, more than 5");
    expect(reads).toBe(1);
  });

  it("refuses the overlays past an allowance, which the conflict decision then takes as conflicting", () => {
    const allowance = new OverlayAllowance({ positions: 25, edgePairs: 1_000, beamWork: 1_000_000 });
    const a = subject(unit);
    const b = subject(cell(0.95, 0.95, 1.95, 1.95));
    // Two squares are 10 positions: the first two overlays fit, the third is refused before any work.
    const limited: OverlapArea = (x, y) => intersectionAreaM2(x.geometry, y.geometry, undefined, allowance);
    expect(conflictMeasure(a, b, limited)).toBeNull();
    expect(conflictMeasure(a, b, limited)).toBeNull();
    expect(() => limited(a, b, allowance)).toThrow(
      "polygon intersection not attempted: this source's overlays together came to 30 positions, more than 25",
    );
    // A quarter of a percent of each overlaps, but unmeasured the pair conflicts, with the smaller whole area.
    const flagged = conflictMeasure(a, b, limited);
    expect(flagged?.overlapAreaM2).toBe(Math.min(a.areaM2, b.areaM2));
    expect(flagged?.overlapAreaUpperBound).toBe(true);

    // Two squares crossing at two points: 2 meeting edge pairs each time. The first is not convex:
    // two convex rings are intersected without an overlay, spending positions only (convex-clip.ts).
    const notched = notchedUnitSquare();
    const pairs = new OverlayAllowance({ positions: 1_000_000, edgePairs: 3, beamWork: 1_000_000 });
    expect(() => intersectionAreaM2(notched, cell(0.5, 0.5, 1.5, 1.5), undefined, pairs)).not.toThrow();
    expect(() => intersectionAreaM2(notched, cell(0.5, 0.5, 1.5, 1.5), undefined, pairs)).toThrow(
      /^polygon intersection not attempted: this source's overlays together came to \d+ meeting edge pairs, more than 3$/,
    );
  });

  it("uses the service's limits by default: 40,000,000 positions, 800,000 meeting edge pairs, 120,000,000 units of scan-beam work", () => {
    expect(SUBJECT_LIMITS).toEqual({ positions: 40_000_000, edgePairs: 800_000, beamWork: 120_000_000 });
  });
});
