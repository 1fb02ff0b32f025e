import type { GeometryIssue, SourceGeometry } from "./types.js";
import { checkStructure } from "./validity-structure.js";
import { checkTopology } from "./validity-topology.js";

/**
 * docs/api.md §5 geometry rules. Structural problems are all reported; OGC validity (as JTS defines
 * it) is only meaningful once the structure is sound, and yields at most one issue because JTS
 * stops at the first error it finds.
 */
export function checkGeometry(g: SourceGeometry): GeometryIssue[] {
  const structural = checkStructure(g);
  if (structural.length > 0) return structural;
  const topological = checkTopology(g);
  return topological === null ? [] : [topological];
}
