import type Polygon from "jsts/org/locationtech/jts/geom/Polygon.js";
import IsValidOp from "jsts/org/locationtech/jts/operation/valid/IsValidOp.js";
import { MAX_CROWDED_EDGE_PAIRS, xOverlappingEdgePairs } from "./edge-crowding.js";
import { jstsFactory, polygonToJsts } from "./jsts-convert.js";
import { polygonsOf } from "./parts.js";
import { isClearlyValidPolygon } from "./polygon-fast-path.js";
import type { GeometryIssue, PolygonCoordinates, SourceGeometry } from "./types.js";
import { partPath } from "./validity-labels.js";
import { describePairError, describePartError } from "./validity-messages.js";
import { findPartInteraction } from "./validity-pairs.js";

/**
 * OGC validity as JTS defines it, for a geometry whose structure is already sound.
 *
 * JTS's IsValidOp on a whole MultiPolygon compares every part with every other (checking nested
 * shells is quadratic), which takes seconds for thousands of parts. The OGC rules for a
 * MultiPolygon are each polygon valid plus conditions on pairs of polygons (interiors disjoint,
 * boundaries meeting at finitely many points), so the same verdict comes from IsValidOp on each
 * part alone and on the few pairs of parts that could interact. Parts that are certainly
 * valid (see isClearlyValidPolygon) skip IsValidOp altogether.
 */
export function checkTopology(g: SourceGeometry): GeometryIssue | null {
  try {
    return findTopologyIssue(g);
  } catch (error) {
    // IsValidOp has internal assertions; if one fires, refuse the geometry rather than fail the
    // request or store something no one could check.
    const reason = error instanceof Error ? error.message : String(error);
    return { path: [], detail: `geometry could not be checked for OGC validity (${reason})` };
  }
}

function findTopologyIssue(g: SourceGeometry): GeometryIssue | null {
  const parts = polygonsOf(g);
  const jsts: (Polygon | undefined)[] = [];
  const jstsPart = (index: number): Polygon => (jsts[index] ??= polygonToJsts(parts[index]));
  const budget = new CrowdingBudget(g);

  for (let index = 0; index < parts.length; index++) {
    if (isClearlyValidPolygon(parts[index])) continue;
    const crowded = budget.spend(parts[index], index);
    if (crowded !== null) return crowded;
    const error = new IsValidOp(jstsPart(index)).getValidationError();
    if (error !== null) return describePartError(g, index, parts[index], error);
  }
  if (parts.length < 2) return null;

  return findPartInteraction(parts, (first, second) => {
    const crowded = budget.spend([...parts[first], ...parts[second]], second);
    if (crowded !== null) return crowded;
    const pair = jstsFactory.createMultiPolygon([jstsPart(first), jstsPart(second)]);
    const error = new IsValidOp(pair).getValidationError();
    return error === null ? null : describePairError(first, second, parts, error);
  });
}

/**
 * What JTS may be asked to sweep for one geometry, in pairs of edges overlapping in longitude
 * (MAX_CROWDED_EDGE_PAIRS for the parts and part pairs JTS checks, together): past it, a clear 422
 * instead of an event loop held for seconds or minutes.
 */
class CrowdingBudget {
  #counted = 0;

  constructor(private readonly g: SourceGeometry) {}

  /** Counts the rings JTS is about to sweep; an issue (at `part`) once the geometry is over budget. */
  spend(rings: PolygonCoordinates, part: number): GeometryIssue | null {
    this.#counted += xOverlappingEdgePairs(rings);
    if (this.#counted <= MAX_CROWDED_EDGE_PAIRS) return null;
    const multi = this.g.type === "MultiPolygon";
    return {
      path: partPath(this.g, part),
      detail:
        `${multi ? "the multipolygon" : "the polygon"} is too intricate to check for OGC validity: ` +
        `${this.#counted.toLocaleString("en-US")} pairs of its edge runs (monotone chains) overlap in longitude` +
        `${multi ? ` (counted up to polygon ${part})` : ""}, at most ${MAX_CROWDED_EDGE_PAIRS.toLocaleString("en-US")} ` +
        "are checked; simplify it or split it into several sources",
    };
  }
}
