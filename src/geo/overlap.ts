import { geodesicAreaM2 } from "./area.js";
import { boundingBox, boxesIntersect } from "./bbox.js";
import { CLIP_MIN_POSITIONS, nearParts } from "./clip.js";
import { clipperEngine } from "./clipper-engine.js";
import { DEFAULT_ENGINES, type OverlayEngine } from "./overlay-engines.js";
import { OverlayFailedError, type OverlayOperation } from "./overlay-errors.js";
import { type OverlayAllowance, type OverlayJob, planIntersection, planUnion } from "./overlay-plan.js";
import { countPositions, geometryFromPolygons, polygonsOf } from "./parts.js";
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
 * The planar lon/lat intersection, or null when it has no area. Large inputs are first cut down to
 * what lies near the other input (nearBox). Then planned (overlay-plan.ts): ordinary inputs go part
 * pair by part pair through `engines`; clipped inputs, and inputs beyond JTS's few hundred
 * milliseconds, go whole through Clipper2; inputs beyond that throw OverlayTooIntricateError, an
 * OverlayFailedError, without any engine tried. With an `allowance`, the overlay's positions and
 * meeting edge pairs are spent from it first, with the same refusal past its limits.
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
  allowance?.spendPositions(positionsOf(a) + positionsOf(b));
  const nearA = nearBox(polygonsOf(a), boxB);
  const nearB = nearBox(polygonsOf(b), boxA);
  if (nearA.polygons.length === 0 || nearB.polygons.length === 0) return null;
  const plan = planIntersection(nearA.polygons, nearB.polygons);
  allowance?.spendPlan(plan);
  // Clipping leaves zero-width bridges along the clipping box, which JTS cannot take and Clipper2's
  // winding rule reads as the nothing they are.
  if (plan.route === "intricate" || nearA.clipped || nearB.clipped) {
    const whole = [nearA.polygons, nearB.polygons];
    return geometryFromPolygons(
      firstSuccess("intersection", [clipperEngine], (engine) => engine.intersection(...pair(whole))),
    );
  }
  const pieces: PolygonCoordinates[] = [];
  for (const job of plan.jobs) {
    pieces.push(...run("intersection", engines, job, (engine, inputs) => engine.intersection(...pair(inputs))));
  }
  return geometryFromPolygons(pieces);
}

/**
 * Geometries are values, never changed once parsed: a conflict scan overlays one new source with
 * each of its candidates, and need not measure its box and count its positions (O(n)) again for
 * every one.
 */
const measured = new WeakMap<SourceGeometry, { box: BoundingBox; positions: number }>();

function measuredOf(g: SourceGeometry): { box: BoundingBox; positions: number } {
  let found = measured.get(g);
  if (found === undefined) {
    found = { box: boundingBox(g), positions: countPositions(g) };
    measured.set(g, found);
  }
  return found;
}

function boxOf(g: SourceGeometry): BoundingBox {
  return measuredOf(g).box;
}

function positionsOf(g: SourceGeometry): number {
  return measuredOf(g).positions;
}

/**
 * What of `polygons` can meet a geometry whose box is `box` (nearParts), when they have more than
 * CLIP_MIN_POSITIONS positions in all. A field under a 99,000-position jurisdiction then costs a few
 * milliseconds instead of a quarter of a second, for the same area. Smaller inputs are returned as
 * they are: their parts are paired by box in planIntersection anyway.
 */
function nearBox(
  polygons: PolygonCoordinates[],
  box: BoundingBox,
): { polygons: PolygonCoordinates[]; clipped: boolean } {
  let positions = 0;
  for (const rings of polygons) for (const ring of rings) positions += ring.length;
  if (positions <= CLIP_MIN_POSITIONS) return { polygons, clipped: false };
  const { near, clipped } = nearParts(polygons, box);
  return { polygons: near, clipped };
}

/** The planar lon/lat union, or null for an empty list; planned and limited as intersection is. */
export function unionOf(
  geoms: SourceGeometry[],
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
): SourceGeometry | null {
  if (geoms.length === 0) return null;
  const plan = planUnion(geoms.map(polygonsOf));
  const [job] = plan.jobs;
  const chain = plan.route === "intricate" ? [clipperEngine] : engines;
  return geometryFromPolygons(run("union", chain, job, (engine, inputs) => engine.union(inputs)));
}

function pair(inputs: PolygonCoordinates[][]): [PolygonCoordinates[], PolygonCoordinates[]] {
  return [inputs[0], inputs[1]];
}

/** The job's overlay by the first engine that does not throw, in the job's own orientation. */
function run(
  operation: OverlayOperation,
  engines: readonly OverlayEngine[],
  job: OverlayJob,
  overlay: (engine: OverlayEngine, inputs: PolygonCoordinates[][]) => PolygonCoordinates[],
): PolygonCoordinates[] {
  if (!job.transposed) return firstSuccess(operation, engines, (engine) => overlay(engine, job.inputs));
  const inputs = job.inputs.map((polygons) => polygons.map(transposed));
  return firstSuccess(operation, engines, (engine) => overlay(engine, inputs)).map(transposed);
}

/**
 * x and y swapped, each ring reversed: a reflection flips a ring's orientation, so the reversal
 * keeps it. Applied twice, the identity.
 */
function transposed(rings: PolygonCoordinates): PolygonCoordinates {
  return rings.map((ring) => {
    const swapped: Position[] = new Array(ring.length);
    for (let i = 0; i < ring.length; i++) {
      const [x, y] = ring[ring.length - 1 - i];
      swapped[i] = [y, x];
    }
    return swapped;
  });
}

function firstSuccess(
  operation: OverlayOperation,
  engines: readonly OverlayEngine[],
  run: (engine: OverlayEngine) => PolygonCoordinates[],
): PolygonCoordinates[] {
  const attempts: OverlayFailedError["attempts"] = [];
  for (const engine of engines) {
    try {
      return run(engine);
    } catch (error) {
      attempts.push({ engine: engine.name, error });
    }
  }
  throw new OverlayFailedError(operation, attempts);
}
