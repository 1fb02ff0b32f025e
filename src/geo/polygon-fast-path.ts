import { intersectingBoxPairs } from "./box-pairs.js";
import { boxContains } from "./planar.js";
import { ringsMayTouch } from "./ring-contact.js";
import { RingIndex } from "./ring-index.js";
import { isClearlySimpleRing } from "./ring-simplicity.js";
import type { PolygonCoordinates } from "./types.js";

/**
 * True only if the polygon is certainly valid under JTS's rules without building JTS's topology
 * graph, which is the bulk of validation time: every ring clearly simple, no two rings near each
 * other, every hole inside the exterior ring and outside the other holes. With no contacts
 * at all the interior is connected, so nothing JTS checks is left. Anything less clear-cut
 * answers false and goes to IsValidOp, which also explains the problem.
 */
export function isClearlyValidPolygon(rings: PolygonCoordinates): boolean {
  if (!rings.every(isClearlySimpleRing)) return false;
  if (rings.length === 1) return true;
  const indexes = rings.map((ring) => new RingIndex(ring));
  const shell = indexes[0];
  for (let hole = 1; hole < rings.length; hole++) {
    if (!boxContains(shell.box, indexes[hole].box) || !shell.contains(rings[hole][0])) return false;
  }
  // Too many rings whose boxes overlap to settle here: JTS's check, and its bound, decide.
  const pairs = intersectingBoxPairs(indexes.map((index) => index.box));
  if (pairs === null) return false;
  for (const [a, b] of pairs) {
    if (ringsMayTouch(indexes[a], indexes[b])) return false;
    const bothHoles = a > 0;
    if (bothHoles && (indexes[a].contains(rings[b][0]) || indexes[b].contains(rings[a][0]))) return false;
  }
  return true;
}
