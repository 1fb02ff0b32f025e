import { geodesicAreaM2 } from "./area.js";
import { boundingBox, boxesIntersect } from "./bbox.js";
import { boundaryIndexOf, builtBoundaryIndexOf } from "./boundary-index.js";
import { CLIP_MIN_POSITIONS, nearParts } from "./clip.js";
import { type ConvexRing, convexIntersection, convexRingOf } from "./convex-clip.js";
import { DEFAULT_ENGINES, type OverlayEngine } from "./overlay-engines.js";
import { OverlayFailedError, type OverlayOperation, OverlayTooIntricateError } from "./overlay-errors.js";
import { type OverlayAllowance, type OverlayPlan, orientationFor, planOverlay } from "./overlay-plan.js";
import { countPositions, firstPosition, geometryFromPolygons, polygonsOf } from "./parts.js";
import type { BoundingBox, PolygonCoordinates, Position, SourceGeometry } from "./types.js";

export {
  DEFAULT_ENGINES,
  jstsEngine,
  type OverlayEngine,
  polyclipEngine,
  snappedJstsEngine,
} from "./overlay-engines.js";
export { type OverlayAttempt, OverlayFailedError, OverlayTooIntricateError } from "./overlay-errors.js";
export { OverlayAllowance } from "./overlay-plan.js";

/**
 * Geodesic area (square metres, see geodesicAreaM2) of the planar lon/lat intersection of a
 * and b. Touching boundaries give 0.
 */
export function intersectionAreaM2(
  a: SourceGeometry,
  b: SourceGeometry,
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
  allowance?: OverlayAllowance,
): number {
  const common = intersection(a, b, engines, allowance);
  return common === null ? 0 : geodesicAreaM2(common);
}

/**
 * The planar lon/lat intersection, or null when it has no area. Two small convex rings are
 * intersected without an engine (convex-clip.ts) when that is clear-cut. Large inputs are first cut down to
 * what lies near the other input (nearBox), when one of `engines` takes the cut's bridges. The
 * overlay is then counted (overlay-plan.ts) and run by the first of `engines` that may run within
 * its limits and does not throw, each in the orientation that keeps its sweep lean. Past every
 * engine's limits it throws OverlayTooIntricateError, an OverlayFailedError, without any engine
 * tried. With an `allowance`, the positions read to cut the inputs down and handed to the overlay,
 * its meeting edge pairs and its scan-beam work are spent from it, with the same refusal past its
 * limits.
 */
export function intersection(
  a: SourceGeometry,
  b: SourceGeometry,
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
  allowance?: OverlayAllowance,
): SourceGeometry | null {
  const boxA = boxOf(a);
  const boxB = boxOf(b);
  // Most pairs a conflict scan looks at are far apart; no engine needs to see those.
  if (!boxesIntersect(boxA, boxB)) return null;
  // A small input wholly inside or outside a large one needs no overlay (boundary-index.ts). Null
  // is an answer (wholly outside), not "unknown".
  let settled = settledIntersection(a, b);
  if (settled === undefined) settled = settledIntersection(b, a);
  if (settled !== undefined) {
    allowance?.spendPositions(Math.min(positionsOf(a), positionsOf(b)));
    return settled;
  }
  // Two small convex rings need no overlay engine (convex-clip.ts) when their intersection is
  // clear-cut. A large ring goes the way below, which reads only its boundary near the other's box.
  const convexA = convexOf(a);
  const convexB = convexA === null ? null : convexOf(b);
  if (convexA !== null && convexB !== null) {
    allowance?.refuseIfExhausted();
    const clear = convexIntersection(a, convexA, b, convexB);
    if (clear !== undefined) {
      // Linear in the positions, as handing them whole to an overlay is (whole()).
      allowance?.spendPositions(positionsOf(a) + positionsOf(b));
      return clear;
    }
  }
  // Clipping leaves zero-width bridges, which only some engines take.
  const mayClip = engines.some((engine) => engine.takesBridges);
  const nearA = mayClip ? nearBox(a, boxB, allowance) : whole(a, allowance);
  const nearB = mayClip ? nearBox(b, boxA, allowance) : whole(b, allowance);
  if (nearA.polygons.length === 0 || nearB.polygons.length === 0) return null;
  const inputs = [nearA.polygons, nearB.polygons];
  const plan = planOverlay("intersection", inputs);
  allowance?.spendPlan(plan);
  const clipped = nearA.clipped || nearB.clipped;
  return geometryFromPolygons(
    overlay("intersection", engines, plan, inputs, clipped, (engine, [first, second]) =>
      engine.intersection(first, second),
    ),
  );
}

/**
 * a ∩ b when b lies wholly inside or wholly outside a large a: b itself, or null. Undefined when
 * a is small, is in its first overlay (its boundary is indexed from its second, boundaryIndexOf),
 * or its boundary comes near b's box. Exact: a's boundary does not meet b's box, so every point of
 * the box is on one side of it, and one of b's positions tells which.
 */
export function settledIntersection(a: SourceGeometry, b: SourceGeometry): SourceGeometry | null | undefined {
  if (positionsOf(a) <= CLIP_MIN_POSITIONS) return undefined;
  const index = boundaryIndexOf(a);
  if (index === undefined || index.someSegmentNear(boxOf(b))) return undefined;
  const [x, y] = firstPosition(b);
  return index.locate(x, y) === "inside" ? b : null;
}

interface Near {
  polygons: PolygonCoordinates[];
  clipped: boolean;
}

/** All of `g`, its positions spent from the allowance. */
function whole(g: SourceGeometry, allowance: OverlayAllowance | undefined): Near {
  allowance?.spendPositions(positionsOf(g));
  return { polygons: polygonsOf(g), clipped: false };
}

/**
 * What of `g` can meet a geometry whose box is `box` (nearParts), when it has more than
 * CLIP_MIN_POSITIONS positions (counted once per geometry object, measuredOf). A field under a
 * 99,000-position jurisdiction then costs a few milliseconds instead of a quarter of a second, for
 * the same area; once the jurisdiction's boundary is indexed (from its second overlay), a few
 * hundred of its positions are read rather than all. Smaller inputs are returned as they are.
 * What is read is spent from the allowance: every position, before, without an index; with one,
 * after, what the index gave (O(k log n) for k segments near the box; a few passes at worst).
 */
function nearBox(g: SourceGeometry, box: BoundingBox, allowance: OverlayAllowance | undefined): Near {
  if (positionsOf(g) <= CLIP_MIN_POSITIONS) return whole(g, allowance);
  const index = builtBoundaryIndexOf(g);
  if (index === undefined) allowance?.spendPositions(positionsOf(g));
  else allowance?.refuseIfExhausted();
  const { near, clipped, read } = nearParts(polygonsOf(g), box, index);
  if (index !== undefined) allowance?.spendPositions(read);
  return { polygons: near, clipped };
}

/** The planar lon/lat union, or null for an empty list; counted and limited as intersection is. */
export function unionOf(
  geoms: SourceGeometry[],
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
): SourceGeometry | null {
  if (geoms.length === 0) return null;
  const inputs = geoms.map(polygonsOf);
  const plan = planOverlay("union", inputs);
  return geometryFromPolygons(overlay("union", engines, plan, inputs, false, (engine, all) => engine.union(all)));
}

/**
 * The overlay by the first engine that may run (within its limits and its own position limit, and
 * on clipped inputs only if it takes their bridges) and does not throw, in its own orientation.
 */
function overlay(
  operation: OverlayOperation,
  engines: readonly OverlayEngine[],
  plan: OverlayPlan,
  inputs: PolygonCoordinates[][],
  clipped: boolean,
  run: (engine: OverlayEngine, inputs: PolygonCoordinates[][]) => PolygonCoordinates[],
): PolygonCoordinates[] {
  const attempts: OverlayFailedError["attempts"] = [];
  for (const engine of engines) {
    if (clipped && !engine.takesBridges) continue;
    if (engine.maxPositions !== undefined && plan.positions > engine.maxPositions) continue;
    const orientation = orientationFor(engine.sweep, plan);
    if (orientation === null) continue;
    try {
      if (!orientation.transposed) return run(engine, inputs);
      return run(
        engine,
        inputs.map((polygons) => polygons.map(transposed)),
      ).map(transposed);
    } catch (error) {
      attempts.push({ engine: engine.name, error });
    }
  }
  if (attempts.length === 0) {
    throw new OverlayTooIntricateError(operation, "no overlay engine may run on these inputs within its limits");
  }
  throw new OverlayFailedError(operation, attempts);
}

/** What intersection() reads of a geometry, found once (convex: undefined until first asked). */
interface Measured {
  box: BoundingBox;
  positions: number;
  convex?: ConvexRing | null;
}

/**
 * Geometries are values, never changed once parsed: a conflict scan overlays one new source with
 * each of its candidates, and need not measure its box, count its positions or test its convexity
 * (each O(n)) again for every one.
 */
const measured = new WeakMap<SourceGeometry, Measured>();

function measuredOf(g: SourceGeometry): Measured {
  let found = measured.get(g);
  if (found === undefined) {
    found = { box: boundingBox(g), positions: countPositions(g) };
    measured.set(g, found);
  }
  return found;
}

/** `g` as a convex ring (convexRingOf) when it has at most CLIP_MIN_POSITIONS positions; else null. */
function convexOf(g: SourceGeometry): ConvexRing | null {
  const found = measuredOf(g);
  if (found.convex === undefined) found.convex = found.positions <= CLIP_MIN_POSITIONS ? convexRingOf(g) : null;
  return found.convex;
}

function boxOf(g: SourceGeometry): BoundingBox {
  return measuredOf(g).box;
}

function positionsOf(g: SourceGeometry): number {
  return measuredOf(g).positions;
}

/**
 * x and y swapped, each ring reversed: a reflection flips a ring's orientation, so the reversal
 * keeps it. Applied twice, the identity.
 */
function transposed(rings: PolygonCoordinates): PolygonCoordinates {
  return rings.map((ring) => {
    const swapped: Position[] = new Array(ring.length);
    for (let i = 0; i < ring.length; i++) {
      const x = ring[ring.length - 1 - i][0];
      const y = ring[ring.length - 1 - i][1];
      swapped[i] = [y, x];
    }
    return swapped;
  });
}
