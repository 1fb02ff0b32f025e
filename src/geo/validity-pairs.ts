import { intersectingBoxPairs, MAX_INTERSECTING_BOX_PAIRS, MAX_SWEPT_BOX_PAIRS } from "./box-pairs.js";
import { boxContains, ringBox } from "./planar.js";
import { ringsMayTouch } from "./ring-contact.js";
import { RingIndex } from "./ring-index.js";
import type { GeometryIssue, PolygonCoordinates, Position } from "./types.js";
import { nestedPartsIssue } from "./validity-messages.js";

/** Decides, exactly, whether two parts whose boundaries may touch are valid together. */
export type ExactPairCheck = (first: number, second: number) => GeometryIssue | null;

/**
 * The first (by part indices) pair of parts of a MultiPolygon that breaks the OGC pair rules,
 * given that each part is valid on its own.
 *
 * Only parts with intersecting boxes can interact. Of those, a pair whose boundaries may touch
 * goes to `exact` (JTS); a pair whose boundaries certainly do not meet is either disjoint or
 * nested, which one point-in-polygon test settles. That keeps JTS away from the common cases:
 * separate fields, and islands inside a large part's hole.
 */
export function findPartInteraction(parts: PolygonCoordinates[], exact: ExactPairCheck): GeometryIssue | null {
  const indexes: (RingIndex[] | undefined)[] = [];
  const indexOf = (part: number): RingIndex[] => (indexes[part] ??= parts[part].map((ring) => new RingIndex(ring)));
  const boxes = parts.map((rings) => ringBox(rings[0]));

  const pairs = intersectingBoxPairs(boxes);
  if (pairs === null) {
    return {
      path: [],
      detail:
        "the multipolygon is too intricate to check for OGC validity: too many of its polygons' bounding boxes " +
        `overlap (over ${MAX_INTERSECTING_BOX_PAIRS.toLocaleString("en-US")} pairs, or ${MAX_SWEPT_BOX_PAIRS.toLocaleString("en-US")} ` +
        "along one axis); simplify it or split it into several sources",
    };
  }
  for (const [first, second] of pairs) {
    const a = indexOf(first);
    const b = indexOf(second);
    const touching = a.some((p) => b.some((q) => ringsMayTouch(p, q)));
    const issue = touching ? exact(first, second) : nestingIssue(first, second, parts, a, b);
    if (issue !== null) return issue;
  }
  return null;
}

/** With no boundary contact, any vertex of one part is inside the other or the whole part is not. */
function nestingIssue(
  first: number,
  second: number,
  parts: PolygonCoordinates[],
  a: RingIndex[],
  b: RingIndex[],
): GeometryIssue | null {
  const candidates: [number, RingIndex[], RingIndex[]][] = [
    [second, b, a],
    [first, a, b],
  ];
  for (const [inner, innerRings, outerRings] of candidates) {
    const probe: Position = parts[inner][0][0];
    if (boxContains(outerRings[0].box, innerRings[0].box) && insidePolygon(probe, outerRings)) {
      return nestedPartsIssue(first, second, inner, probe);
    }
  }
  return null;
}

function insidePolygon(p: Position, rings: RingIndex[]): boolean {
  return rings[0].contains(p) && !rings.slice(1).some((hole) => hole.contains(p));
}
