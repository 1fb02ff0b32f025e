import { countPositions, polygonsOf } from "./parts.js";
import type { GeometryIssue, Position, SourceGeometry } from "./types.js";
import { formatPosition, partLabel, partPath, positionPath, ringLabel, ringPath } from "./validity-labels.js";

export const MAX_POSITIONS = 100_000;

/**
 * Floating-point noise accepted beyond the range limits (docs/api.md §5.4): reprojected data such
 * as Natural Earth's Russia has 180.00000000000006. The geometry is still stored as sent.
 */
export const RANGE_TOLERANCE_DEG = 1e-9;

/** Out-of-range positions listed one by one at most; past them one violation speaks for the geometry. */
export const MAX_LISTED_OUT_OF_RANGE = 10;

/** Positions out of range in a geometry, counted across its rings. */
interface RangeTally {
  outOfRange: number;
  finite: number;
}

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
  const tally: RangeTally = { outOfRange: 0, finite: 0 };
  polygons.forEach((rings, part) => {
    if (rings.length === 0) {
      const subject = g.type === "Polygon" ? "Polygon" : partLabel(g, part);
      issues.push({ path: partPath(g, part), detail: `${subject} has no rings; an exterior ring is required` });
    }
    rings.forEach((ring, index) => {
      checkRing(g, part, index, ring, issues, tally);
    });
  });
  if (tally.outOfRange > 0) {
    // Many positions out of range, or all of them, is a projected CRS: one clear instruction, not
    // one violation per vertex of a 100,000-vertex geometry. A lone typo is reported where it is.
    if (tally.outOfRange <= MAX_LISTED_OUT_OF_RANGE && tally.outOfRange < tally.finite) return issues;
    issues.push({
      path: [],
      detail:
        `${tally.outOfRange} position${tally.outOfRange === 1 ? " is" : "s are"} outside longitude -180..180 / ` +
        "latitude -90..90: the coordinates do not look like WGS 84 longitude/latitude; " +
        "reproject the geometry to EPSG:4326 (longitude, latitude in degrees)",
    });
    return issues;
  }
  polygons.forEach((rings, part) => {
    rings.forEach((ring, index) => {
      const crossing = antimeridianCrossing(ring);
      if (crossing === null) return;
      const [a, b] = crossing;
      issues.push({
        path: ringPath(g, part, index),
        detail:
          `${ringLabel(g, part, index)} crosses the antimeridian: the edge from position ${a} ` +
          `(longitude ${ring[a][0]}) to position ${b} (longitude ${ring[b][0]}) spans more than 180° of ` +
          "longitude. Longitudes are never wrapped: split the geometry into a MultiPolygon at ±180° " +
          "(RFC 7946 §3.1.9)",
      });
    });
  });
  return issues;
}

/**
 * The first edge of `ring` spanning more than 180° of longitude, as the indexes of its ends, or
 * null. An edge whose two ends lie on the same pole (latitude exactly ±90, as in Natural Earth's
 * Antarctica) is a point on the globe, not a crossing.
 */
export function antimeridianCrossing(ring: readonly Position[]): [number, number] | null {
  for (let i = 1; i < ring.length; i++) {
    const from = ring[i - 1];
    const to = ring[i];
    const x0 = from[0];
    const y0 = from[1];
    const x1 = to[0];
    const y1 = to[1];
    // Non-finite positions are reported on their own; an edge to one crosses nothing.
    if (!Number.isFinite(x0) || !Number.isFinite(x1) || Math.abs(x1 - x0) <= 180) continue;
    if (y0 === y1 && Math.abs(y0) === 90) continue;
    return [i - 1, i];
  }
  return null;
}

function checkRing(
  g: SourceGeometry,
  part: number,
  index: number,
  ring: Position[],
  issues: GeometryIssue[],
  tally: RangeTally,
): void {
  // Labels are built only on failure: this loop runs up to 100,000 times per geometry.
  const label = () => ringLabel(g, part, index);
  let allFinite = true;
  for (let position = 0; position < ring.length; position++) {
    const at = ring[position];
    const x = at[0];
    const y = at[1];
    const finite = Number.isFinite(x) && Number.isFinite(y);
    if (finite) tally.finite++;
    const lonOk = x >= -180 - RANGE_TOLERANCE_DEG && x <= 180 + RANGE_TOLERANCE_DEG;
    const latOk = y >= -90 - RANGE_TOLERANCE_DEG && y <= 90 + RANGE_TOLERANCE_DEG;
    if (finite && lonOk && latOk) continue;
    const path = positionPath(g, part, index, position);
    const where = `position ${position} of ${label()}`;
    if (!finite) {
      allFinite = false;
      issues.push({ path, detail: `${where} is not a pair of finite numbers: ${formatPosition(x, y)}` });
      continue;
    }
    tally.outOfRange++;
    if (tally.outOfRange > MAX_LISTED_OUT_OF_RANGE) continue;
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
