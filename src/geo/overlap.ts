import { geodesicAreaM2 } from "./area.js";
import { boundingBox, boxesIntersect } from "./bbox.js";
import { DEFAULT_ENGINES, type OverlayEngine } from "./overlay-engines.js";
import { geometryFromPolygons, polygonsOf } from "./parts.js";
import type { PolygonCoordinates, SourceGeometry } from "./types.js";

export {
  DEFAULT_ENGINES,
  jstsEngine,
  type OverlayEngine,
  polyclipEngine,
  snappedJstsEngine,
} from "./overlay-engines.js";

export interface OverlayAttempt {
  engine: string;
  error: unknown;
}

/** Every engine threw; `attempts` holds each engine's error, in the order they were tried. */
export class OverlayFailedError extends Error {
  override readonly name = "OverlayFailedError";

  constructor(
    readonly operation: "intersection" | "union",
    readonly attempts: OverlayAttempt[],
  ) {
    const reasons = attempts.map(
      ({ engine, error }) => `${engine}: ${error instanceof Error ? error.message : String(error)}`,
    );
    super(`polygon ${operation} failed in every overlay engine (${reasons.join("; ") || "no engines given"})`);
  }
}

/**
 * Geodesic area (square metres, see geodesicAreaM2) of the planar lon/lat intersection of a
 * and b. Touching boundaries give 0.
 */
export function intersectionAreaM2(
  a: SourceGeometry,
  b: SourceGeometry,
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
): number {
  const common = intersection(a, b, engines);
  return common === null ? 0 : geodesicAreaM2(common);
}

/** The planar lon/lat intersection, or null when it has no area. */
export function intersection(
  a: SourceGeometry,
  b: SourceGeometry,
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
): SourceGeometry | null {
  // Most pairs a conflict scan looks at are far apart; no engine needs to see those.
  if (!boxesIntersect(boundingBox(a), boundingBox(b))) return null;
  const result = firstSuccess("intersection", engines, (engine) => engine.intersection(polygonsOf(a), polygonsOf(b)));
  return geometryFromPolygons(result);
}

/** The planar lon/lat union, or null for an empty list. */
export function unionOf(
  geoms: SourceGeometry[],
  engines: readonly OverlayEngine[] = DEFAULT_ENGINES,
): SourceGeometry | null {
  if (geoms.length === 0) return null;
  const result = firstSuccess("union", engines, (engine) => engine.union(geoms.map(polygonsOf)));
  return geometryFromPolygons(result);
}

function firstSuccess(
  operation: OverlayFailedError["operation"],
  engines: readonly OverlayEngine[],
  run: (engine: OverlayEngine) => PolygonCoordinates[],
): PolygonCoordinates[] {
  const attempts: OverlayAttempt[] = [];
  for (const engine of engines) {
    try {
      return run(engine);
    } catch (error) {
      attempts.push({ engine: engine.name, error });
    }
  }
  throw new OverlayFailedError(operation, attempts);
}
