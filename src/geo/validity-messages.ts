import TopologyValidationError from "jsts/org/locationtech/jts/operation/valid/TopologyValidationError.js";
import { countSegmentsNear, isCollinear, pointInRing } from "./planar.js";
import type { GeometryIssue, PolygonCoordinates, Position, SourceGeometry } from "./types.js";
import { formatLocation, partLabel, partPath, ringLabel, ringPath } from "./validity-labels.js";

// JTS reports an error type and one coordinate. These functions turn that into a sentence that
// names the rings or polygons involved, found as the rings passing through the coordinate.

const DISSOLVE = "dissolve them into one polygon";

/** An error JTS found in one polygon (part) checked on its own. */
export function describePartError(
  g: SourceGeometry,
  part: number,
  rings: PolygonCoordinates,
  error: TopologyValidationError,
): GeometryIssue {
  const at = errorLocation(error, rings);
  const near = formatLocation(at[0], at[1]);
  const through = rings.flatMap((ring, index) => (countSegmentsNear(at, ring) > 0 ? [index] : []));
  const holes = through.filter((index) => index > 0);
  const label = (ring: number) => ringLabel(g, part, ring);
  const issue = (ring: number | undefined, detail: string): GeometryIssue => ({
    path: ring === undefined ? partPath(g, part) : ringPath(g, part, ring),
    detail,
  });

  switch (error.getErrorType()) {
    case TopologyValidationError.SELF_INTERSECTION: {
      if (through.length === 1) {
        const ring = through[0];
        return isCollinear(rings[ring])
          ? issue(ring, `${label(ring)} has zero area: all its vertices lie on one line through ${near}`)
          : issue(ring, `${label(ring)} self-intersects near ${near}`);
      }
      if (through.includes(0) && holes.length > 0) {
        return issue(holes[0], `${label(holes[0])} crosses or shares an edge with ${label(0)} near ${near}`);
      }
      if (holes.length >= 2) {
        return issue(holes[1], `${label(holes[0])} and ${label(holes[1])} overlap or share an edge near ${near}`);
      }
      return issue(undefined, `the rings of ${partLabel(g, part)} intersect near ${near}`);
    }
    case TopologyValidationError.RING_SELF_INTERSECTION: {
      // A ring merely passing through a vertex has two segments there; touching itself adds more.
      const ring = through.find((index) => countSegmentsNear(at, rings[index]) > 2) ?? through[0];
      if (ring === undefined) return issue(undefined, `a ring of ${partLabel(g, part)} touches itself at ${near}`);
      return issue(ring, `${label(ring)} touches itself at ${near}; a ring must not pass through the same point twice`);
    }
    case TopologyValidationError.HOLE_OUTSIDE_SHELL: {
      const hole = holes[0];
      if (hole === undefined)
        return issue(undefined, `a hole of ${partLabel(g, part)} lies outside its exterior ring near ${near}`);
      return issue(hole, `${label(hole)} lies outside ${label(0)} near ${near}`);
    }
    case TopologyValidationError.NESTED_HOLES: {
      const inner = holes[0];
      if (inner === undefined) return issue(undefined, `holes of ${partLabel(g, part)} are nested near ${near}`);
      const outer = rings.findIndex((ring, index) => index > 0 && index !== inner && pointInRing(at, ring));
      const container = outer > 0 ? label(outer) : "another hole";
      return issue(inner, `${label(inner)} lies inside ${container} near ${near}; holes must not be nested`);
    }
    case TopologyValidationError.DISCONNECTED_INTERIOR:
      return issue(
        undefined,
        `the interior of ${partLabel(g, part)} is split into disconnected pieces near ${near}: ` +
          "its holes touch the exterior ring or each other so that they cut it apart",
      );
    case TopologyValidationError.DUPLICATE_RINGS: {
      if (through.length >= 2) {
        return issue(through[1], `${label(through[0])} and ${label(through[1])} are the same ring near ${near}`);
      }
      return issue(undefined, `${partLabel(g, part)} repeats a ring near ${near}`);
    }
    default:
      return issue(
        through[0],
        `${through.length > 0 ? label(through[0]) : partLabel(g, part)} is invalid near ${near}: ${error.getMessage()}`,
      );
  }
}

/** An error JTS found in the two-part MultiPolygon of parts `first` < `second`, each valid alone. */
export function describePairError(
  first: number,
  second: number,
  parts: PolygonCoordinates[],
  error: TopologyValidationError,
): GeometryIssue {
  const at = errorLocation(error, parts[second]);
  const near = formatLocation(at[0], at[1]);
  if (error.getErrorType() === TopologyValidationError.NESTED_SHELLS) {
    // JTS reports a point of the inner polygon's exterior ring.
    const inner = countSegmentsNear(at, parts[second][0]) > 0 ? second : first;
    return nestedPartsIssue(first, second, inner, at);
  }
  if (
    error.getErrorType() === TopologyValidationError.SELF_INTERSECTION ||
    error.getErrorType() === TopologyValidationError.DUPLICATE_RINGS
  ) {
    return {
      path: [second],
      detail: `polygons ${first} and ${second} overlap or share an edge near ${near}; ${DISSOLVE}`,
    };
  }
  return {
    path: [second],
    detail: `polygons ${first} and ${second} together are invalid near ${near} (${error.getMessage()}); ${DISSOLVE}`,
  };
}

/** One part lies inside the other, found either by JTS or by a point-in-polygon test. */
export function nestedPartsIssue(first: number, second: number, inner: number, at: Position): GeometryIssue {
  const outer = inner === first ? second : first;
  return {
    path: [second],
    detail:
      `polygons ${first} and ${second} overlap: polygon ${inner} lies inside polygon ${outer} ` +
      `near ${formatLocation(at[0], at[1])}; ${DISSOLVE}`,
  };
}

function errorLocation(error: TopologyValidationError, fallbackRings: PolygonCoordinates): Position {
  const c = error.getCoordinate();
  return c === null ? fallbackRings[0][0] : [c.x, c.y];
}
