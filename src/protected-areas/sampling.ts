import { boundingBox } from "../geo/bbox.js";
import { polygonsOf } from "../geo/parts.js";
import { ringBox } from "../geo/planar.js";
import { countBelow } from "../geo/sorted-count.js";
import type { BoundingBox, PolygonCoordinates, SourceGeometry } from "../geo/types.js";

/** Rows and columns of the sample grid laid over the subject's bounding box. */
export const SAMPLE_RESOLUTION = 64;

const RADIANS_PER_DEGREE = Math.PI / 180;

/** One polygon part with its exterior ring's latitude span, to skip rows it cannot cross. */
interface Part {
  rings: PolygonCoordinates;
  minY: number;
  maxY: number;
}

function partsOf(g: SourceGeometry): Part[] {
  return polygonsOf(g).map((rings) => {
    // A valid polygon's holes lie inside its exterior ring: that ring's box is the part's box.
    const { minY, maxY } = ringBox(rings[0]);
    return { rings, minY, maxY };
  });
}

/**
 * Sorted longitudes where the horizontal line at latitude `y` crosses an edge of `parts`. An edge
 * counts when exactly one of its ends lies above the line (the half-open rule of point-in-polygon
 * ray casting), so a vertex on the line is counted once and horizontal edges never.
 */
function crossings(parts: readonly Part[], y: number): number[] {
  const xs: number[] = [];
  for (const part of parts) {
    if (y < part.minY || y > part.maxY) continue;
    for (const ring of part.rings) {
      for (let i = 1; i < ring.length; i++) {
        const x1 = ring[i - 1][0];
        const y1 = ring[i - 1][1];
        const x2 = ring[i][0];
        const y2 = ring[i][1];
        if (y1 > y !== y2 > y) xs.push(x1 + ((y - y1) * (x2 - x1)) / (y2 - y1));
      }
    }
  }
  return xs.sort((a, b) => a - b);
}

/** Even-odd rule: inside when an odd number of crossings lie west of x. */
function inside(sortedCrossings: readonly number[], x: number): boolean {
  return countBelow(sortedCrossings, x) % 2 === 1;
}

export interface SampledFractions {
  /** Per group: the share of the subject's area inside any geometry of that group. */
  perGroup: number[];
  /** The share of the subject's area inside any geometry of any group. */
  union: number;
}

/**
 * Estimates which share of `subject` lies inside each group of geometries, and inside their union,
 * by classifying the centres of a `resolution` × `resolution` grid over the subject's bounding
 * box, each weighted by cos(latitude) (the relative area of its lon/lat cell). It needs no
 * polygon overlay, only point-in-polygon tests, so it cannot fail where the overlay engines do;
 * it is the fallback when they do. Each grid row costs one pass over the edges of the parts that
 * span its latitude. The error is of the order of one grid cell along the boundaries, about
 * 1–3% of the subject's area.
 */
export function sampleOverlapFractions(
  subject: SourceGeometry,
  groups: readonly (readonly SourceGeometry[])[],
  resolution: number = SAMPLE_RESOLUTION,
  bbox: BoundingBox = boundingBox(subject),
): SampledFractions {
  const subjectParts = partsOf(subject);
  // Group → geometry → parts: the parts of one valid geometry never overlap, so even-odd over them
  // is that geometry; geometries of one group (parcels of a site) may overlap and are tested apart.
  const groupParts = groups.map((geometries) => geometries.map(partsOf));
  const width = (bbox.maxX - bbox.minX) / resolution;
  const height = (bbox.maxY - bbox.minY) / resolution;
  let subjectWeight = 0;
  let unionWeight = 0;
  const groupWeight = groups.map(() => 0);
  for (let row = 0; row < resolution; row++) {
    const y = bbox.minY + (row + 0.5) * height;
    const subjectXs = crossings(subjectParts, y);
    if (subjectXs.length === 0) continue;
    const groupXs = groupParts.map((geometries) => geometries.map((parts) => crossings(parts, y)));
    const weight = Math.cos(y * RADIANS_PER_DEGREE);
    for (let column = 0; column < resolution; column++) {
      const x = bbox.minX + (column + 0.5) * width;
      if (!inside(subjectXs, x)) continue;
      subjectWeight += weight;
      let inAny = false;
      groupXs.forEach((geometries, group) => {
        if (geometries.some((xs) => xs.length > 0 && inside(xs, x))) {
          groupWeight[group] += weight;
          inAny = true;
        }
      });
      if (inAny) unionWeight += weight;
    }
  }
  if (!(subjectWeight > 0)) return { perGroup: groups.map(() => 0), union: 0 };
  return { perGroup: groupWeight.map((w) => w / subjectWeight), union: unionWeight / subjectWeight };
}
