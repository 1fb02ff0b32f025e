import { polygonsOf } from "./parts.js";
import type { Position, SourceGeometry } from "./types.js";

/** Mean Earth radius (IUGG R1), one of the two area models docs/api.md §8 allows. */
export const EARTH_RADIUS_M = 6371008.8;

const RADIANS_PER_DEGREE = Math.PI / 180;

/**
 * Area in square metres on the sphere of radius EARTH_RADIUS_M: exterior rings minus holes,
 * summed over parts.
 *
 * Formula: the spherical-trapezoid (Chamberlain–Duquette) sum, which is the shoelace formula in
 * Lambert's cylindrical equal-area projection x = λ, y = sin φ, scaled by R². That projection
 * preserves area, so the result is exact for the region whose edges are straight lines in it,
 * i.e. edges along which sin φ varies linearly with λ. Meridians and parallels are such lines,
 * so lon/lat cells (grid squares, tiles, most cadastral rectangles) come out exact. An oblique
 * edge differs from the great circle and from the straight lon/lat segment (the model the
 * overlays in overlap.ts use) by an amount quadratic in its length, negligible for field-sized
 * edges. Longitudes are not wrapped: a ring is the planar lon/lat region it encloses, matching
 * GeoJSON's rule that geometries crossing the antimeridian are split.
 *
 * @turf/area implements the same sum but fixes the radius inside the library (6378137 m in v6,
 * 6371008.8 m in v7, not configurable) and subtracts raw sines; a dependency for twenty lines
 * whose radius could change under us on an upgrade was not worth it.
 */
export function geodesicAreaM2(g: SourceGeometry): number {
  let steradians = 0;
  for (const rings of polygonsOf(g)) {
    rings.forEach((ring, index) => {
      const area = Math.abs(ringAreaSteradians(ring));
      steradians += index === 0 ? area : -area;
    });
  }
  // A hole may not exceed its shell, but rounding in overlay output could leave a tiny negative.
  return Math.max(0, steradians) * EARTH_RADIUS_M * EARTH_RADIUS_M;
}

/**
 * Signed shoelace area in (λ, sin φ), positive for counter-clockwise rings. Coordinates are taken
 * relative to the first vertex, and sin φ − sin φ₀ is computed as 2·sin(Δφ/2)·cos(φ̄) rather than
 * as a difference of two nearly equal sines, which would lose about six of the sixteen digits on a
 * 10 m ring. Works for closed and unclosed rings.
 */
function ringAreaSteradians(ring: Position[]): number {
  if (ring.length < 3) return 0;
  const lon0 = ring[0][0];
  const lat0 = ring[0][1];
  const phi0 = lat0 * RADIANS_PER_DEGREE;
  let doubled = 0;
  let prevX = 0;
  let prevY = 0;
  for (let i = 1; i < ring.length; i++) {
    const lon = ring[i][0];
    const lat = ring[i][1];
    const phi = lat * RADIANS_PER_DEGREE;
    const x = (lon - lon0) * RADIANS_PER_DEGREE;
    const y = 2 * Math.sin((phi - phi0) / 2) * Math.cos((phi + phi0) / 2);
    doubled += prevX * y - x * prevY;
    prevX = x;
    prevY = y;
  }
  return doubled / 2;
}
