import { countPositions, polygonsOf } from "./parts.js";
import type { GeometryIssue, Position, SourceGeometry } from "./types.js";
import { formatPosition, partLabel, partPath, positionPath, ringLabel, ringPath } from "./validity-labels.js";

export const MAX_POSITIONS = 100_000;

/**
 * Everything that can be judged without topology: counts, numbers, ranges, ring closure.
 * `maxPositions` is the limit on what a client may submit; protected areas are checked without it.
 */
export function checkStructure(g: SourceGeometry, maxPositions = MAX_POSITIONS): GeometryIssue[] {
  const polygons = polygonsOf(g);
  const positions = countPositions(g);
  // Past the limit every further check would be wasted work on a request that fails anyway.
  if (positions > maxPositions) {
    return [{ path: [], detail: `geometry has ${positions} positions; at most ${maxPositions} are allowed` }];
  }
  if (polygons.length === 0) {
    return [{ path: [], detail: "MultiPolygon has no polygons; at least one is required" }];
  }
  const issues: GeometryIssue[] = [];
  polygons.forEach((rings, part) => {
    if (rings.length === 0) {
      const subject = g.type === "Polygon" ? "Polygon" : partLabel(g, part);
      issues.push({ path: partPath(g, part), detail: `${subject} has no rings; an exterior ring is required` });
    }
    rings.forEach((ring, index) => {
      checkRing(g, part, index, ring, issues);
    });
  });
  return issues;
}

function checkRing(g: SourceGeometry, part: number, index: number, ring: Position[], issues: GeometryIssue[]): void {
  // Labels are built only on failure: this loop runs up to 100,000 times per geometry.
  const label = () => ringLabel(g, part, index);
  let allFinite = true;
  for (let position = 0; position < ring.length; position++) {
    const [x, y] = ring[position];
    const finite = Number.isFinite(x) && Number.isFinite(y);
    const lonOk = x >= -180 && x <= 180;
    const latOk = y >= -90 && y <= 90;
    if (finite && lonOk && latOk) continue;
    const path = positionPath(g, part, index, position);
    const where = `position ${position} of ${label()}`;
    if (!finite) {
      allFinite = false;
      issues.push({ path, detail: `${where} is not a pair of finite numbers: ${formatPosition(x, y)}` });
      continue;
    }
    const problems = [
      ...(lonOk ? [] : ["longitude must be within -180..180"]),
      ...(latOk ? [] : ["latitude must be within -90..90"]),
    ];
    issues.push({ path, detail: `${where} is out of range at ${formatPosition(x, y)}: ${problems.join(" and ")}` });
  }
  // Closure and distinctness compare values; with NaN in the ring they would only add noise.
  if (!allFinite) return;

  const path = ringPath(g, part, index);
  if (ring.length < 4) {
    issues.push({
      path,
      detail: `${label()} has ${ring.length} position${ring.length === 1 ? "" : "s"}; a ring needs at least 4`,
    });
  }
  if (ring.length === 0) return;
  const first = ring[0];
  const last = ring[ring.length - 1];
  if (first[0] !== last[0] || first[1] !== last[1]) {
    issues.push({
      path,
      detail:
        `${label()} is not closed: its last position ${formatPosition(last[0], last[1])} ` +
        `differs from its first ${formatPosition(first[0], first[1])}`,
    });
  }
  const distinct = countDistinctUpTo(ring, 3);
  if (distinct < 3) {
    issues.push({
      path,
      detail:
        `${label()} has only ${distinct} distinct ${distinct === 1 ? "vertex" : "vertices"}; ` +
        "at least 3 are required",
    });
  }
}

/** Stops at `limit` so a 100,000-position ring costs a few comparisons, not a hash set. */
export function countDistinctUpTo(ring: readonly Position[], limit: number): number {
  const seen: Position[] = [];
  for (const p of ring) {
    if (!seen.some((s) => s[0] === p[0] && s[1] === p[1])) {
      seen.push(p);
      if (seen.length === limit) break;
    }
  }
  return seen.length;
}
