import { geodesicAreaM2 } from "../geo/area.js";
import { boxesIntersect } from "../geo/bbox.js";
import { builtBoundaryIndexOf } from "../geo/boundary-index.js";
import { nearParts } from "../geo/clip.js";
import { clipperEngine } from "../geo/clipper-engine.js";
import {
  DEFAULT_ENGINES,
  intersection,
  type OverlayAllowance,
  type OverlayEngine,
  polyclipEngine,
  settledIntersection,
  unionOf,
} from "../geo/overlap.js";
import { protectedAreaAllowances } from "../geo/overlay-allowances.js";
import { countPositions, geometryFromPolygons, polygonsOf } from "../geo/parts.js";
import type { BoundingBox, SourceGeometry } from "../geo/types.js";
import type { UnepOverlapRecord } from "../model/records.js";
import type { ProtectedArea, ProtectedAreaPolicy, SpatialSubject } from "../model/spatial.js";
import { sampleOverlapFractions } from "./sampling.js";

/** docs/api.md §8: `areas` lists at most this many protected areas, the largest overlaps first. */
export const MAX_LISTED_AREAS = 20;

export type OverlapSubject = Pick<SpatialSubject, "geometry" | "bbox" | "areaM2">;

/** One protected-area feature, cut down to what can meet the source. */
export interface Parcel {
  /** Parts near the source, large rings clipped to the box around it (see partsNear). */
  near: SourceGeometry;
  /** The same parts unclipped, when clipping changed anything; otherwise null. */
  unclipped: SourceGeometry | null;
  /**
   * Positions read to cut the area down (clip.ts's NearParts.read) beyond `near`'s own, which the
   * overlay spends when it is handed them; spent from the request's allowance.
   */
  read: number;
  /**
   * What sampling (sampling.ts) reads for this parcel instead of `near`, when that is cheaper and
   * the same within the source: the source itself, for an area that holds all of it.
   */
  sampled?: SourceGeometry;
}

/** The parcels of one protected area (one WDPAID) near the subject. */
interface AreaGroup {
  area: ProtectedArea;
  parcels: Parcel[];
}

interface GroupResult {
  group: AreaGroup;
  /** Pieces of subject ∩ parcel. */
  pieces: SourceGeometry[];
  /** null until known: every overlay for this group failed and the area must be estimated. */
  areaM2: number | null;
}

/**
 * What of `g` can meet a source whose box is `box` (nearParts, through g's boundary index once it
 * is built: areas are cached between requests), or null when nothing is near.
 */
export function partsNear(g: SourceGeometry, box: BoundingBox): Parcel | null {
  const parts = polygonsOf(g);
  const { near, whole, clipped, read } = nearParts(parts, box, builtBoundaryIndexOf(g));
  const nearGeometry = whole.length === parts.length && !clipped ? g : geometryFromPolygons(near);
  if (nearGeometry === null) return null;
  return {
    near: nearGeometry,
    unclipped: clipped ? geometryFromPolygons(whole) : null,
    read: Math.max(0, read - countPositions(nearGeometry)),
  };
}

/**
 * The parcel of a large area whose boundary stays away from the subject's box (settledIntersection,
 * from the area's second use on: areas are cached between requests): the whole area, which the
 * overlay then settles without clipping it, or null when the subject lies outside it. Undefined
 * when that is not known, and the area must be cut down first.
 */
function settledParcel(area: ProtectedArea, subject: OverlapSubject): Parcel | null | undefined {
  const settled = settledIntersection(area.geometry, subject.geometry);
  if (settled === undefined || settled === null) return settled;
  // Sampled (past the allowance), the whole area would be read once per grid row; the source,
  // wholly inside it, gives the same fraction.
  return { near: area.geometry, unclipped: null, read: 0, sampled: subject.geometry };
}

/** WDPA splits some sites into parcels that share a WDPAID; docs/api.md §8 lists sites. */
function groupById(subject: OverlapSubject, candidates: readonly ProtectedArea[]): AreaGroup[] {
  const groups = new Map<string, AreaGroup>();
  for (const candidate of candidates) {
    // Index boxes are rounded outwards; recheck on the exact box before any geometry work.
    if (!boxesIntersect(candidate.bbox, subject.bbox)) continue;
    const settled = settledParcel(candidate, subject);
    const parcel = settled === undefined ? partsNear(candidate.geometry, subject.bbox) : settled;
    if (parcel === null) continue;
    const group = groups.get(candidate.id);
    if (group === undefined) groups.set(candidate.id, { area: candidate, parcels: [parcel] });
    else group.parcels.push(parcel);
  }
  return [...groups.values()];
}

/** Area of the union of `pieces`, or null when every overlay engine failed on it. */
function unionAreaM2(pieces: SourceGeometry[], engines: readonly OverlayEngine[]): number | null {
  if (pieces.length === 0) return 0;
  if (pieces.length === 1) return geodesicAreaM2(pieces[0]);
  try {
    const union = unionOf(pieces, engines);
    return union === null ? 0 : geodesicAreaM2(union);
  } catch {
    return null;
  }
}

export interface OverlapEngines {
  /** For whole geometries: the default chain, each engine a fallback for the one before. */
  engines: readonly OverlayEngine[];
  /**
   * For clipped geometries, whose zero-width bridges along the clipping box are degenerate
   * input: only engines that handle them exactly (Clipper2's winding rule and polyclip-ts do;
   * JSTS throws or, snapped, can lose the polygon). When they fail, the unclipped parts go to
   * `engines`.
   */
  clippedEngines: readonly OverlayEngine[];
}

const DEFAULT_OVERLAP_ENGINES: OverlapEngines = {
  engines: DEFAULT_ENGINES,
  clippedEngines: [clipperEngine, polyclipEngine],
};

function pieceOf(
  subject: OverlapSubject,
  parcel: Parcel,
  engines: OverlapEngines,
  allowance: OverlayAllowance,
): SourceGeometry | null {
  allowance.spendPositions(parcel.read);
  if (parcel.unclipped === null) return intersection(subject.geometry, parcel.near, engines.engines, allowance);
  try {
    return intersection(subject.geometry, parcel.near, engines.clippedEngines, allowance);
  } catch (error) {
    // Past the allowance, the unclipped parts would be refused too.
    if (allowance.exhausted) throw error;
    return intersection(subject.geometry, parcel.unclipped, engines.engines, allowance);
  }
}

function measureGroup(
  subject: OverlapSubject,
  group: AreaGroup,
  engines: OverlapEngines,
  allowance: OverlayAllowance,
): GroupResult {
  const pieces: SourceGeometry[] = [];
  for (const parcel of group.parcels) {
    try {
      const piece = pieceOf(subject, parcel, engines, allowance);
      if (piece !== null) pieces.push(piece);
    } catch {
      // Every engine failed (OverlayFailedError) or an engine broke in a way it does not report
      // as such: either way this group's area is estimated by sampling below.
      return { group, pieces: [], areaM2: null };
    }
  }
  return { group, pieces, areaM2: unionAreaM2(pieces, engines.engines) };
}

/**
 * docs/api.md §8: the `unep_overlap` of a source with the protected areas whose bounding boxes meet its
 * own (the candidates a store's spatial index found), decided on the exact geometry:
 *
 * - each area's `area_m2` is the geodesic area of source ∩ that area (parcels sharing a WDPAID
 *   are one area, their pieces unioned);
 * - the total `area_m2` is the area of source ∩ (union of the areas), computed as the union of
 *   the per-area pieces, which all lie inside the source and are therefore small, so overlapping
 *   protected areas (a national park inside a biosphere reserve) are not counted twice;
 * - `fraction` = total / source area, in 0..1; `overlaps` = total > 0;
 * - `areas` holds the areas with a positive overlap, largest first (ties by id), at most 20.
 *
 * Only the parts of each area near the source are overlaid, with rings of more than 1,000
 * positions first clipped to the source's box plus a margin (clip.ts): a field next to a
 * 200,000-vertex coastline costs milliseconds rather than seconds. Clipped input goes to
 * Clipper2, then polyclip-ts, which handle the clip's degenerate bridges exactly (past 1,000
 * positions, to Clipper2 alone: the overlay clips it again, docs/api.md §8.5); if that fails, the
 * unclipped parts go through intersection() as any input does.
 *
 * Overlay failures never escape: when every overlay engine fails for an area, or for the union,
 * or the overlay is past the limits of docs/api.md §8.5, that figure is estimated by sampling a 64 × 64 grid over the source (sampling.ts), and the
 * total is kept within [largest single area, min(sum of areas, source area)].
 */
export function computeUnepOverlap(
  subject: OverlapSubject,
  dataset: string,
  candidates: readonly ProtectedArea[],
  engines: OverlapEngines = DEFAULT_OVERLAP_ENGINES,
  onSampled?: () => void,
): UnepOverlapRecord {
  // One create request's protected-area overlays share an allowance (docs/api.md §8.5); past it,
  // the areas still unmeasured are sampled.
  const allowance = protectedAreaAllowances.of(subject.geometry);
  const results = groupById(subject, candidates).map((group) => measureGroup(subject, group, engines, allowance));

  const unknown = results.filter((r) => r.areaM2 === null);
  let total =
    unknown.length === 0
      ? unionAreaM2(
          results.flatMap((r) => r.pieces),
          engines.engines,
        )
      : null;
  if (unknown.length > 0 || total === null) {
    onSampled?.();
    const sampled = sampleOverlapFractions(
      subject.geometry,
      results.map((r) => r.group.parcels.map((p) => p.sampled ?? p.near)),
      undefined,
      subject.bbox,
    );
    results.forEach((r, index) => {
      if (r.areaM2 === null) r.areaM2 = sampled.perGroup[index] * subject.areaM2;
    });
    total = sampled.union * subject.areaM2;
  }

  const measured = results.map((r) => ({ group: r.group, areaM2: Math.min(r.areaM2 ?? 0, subject.areaM2) }));
  const largest = measured.reduce((max, r) => Math.max(max, r.areaM2), 0);
  const sum = measured.reduce((s, r) => s + r.areaM2, 0);
  const areaM2 = Math.max(largest, Math.min(total, sum, subject.areaM2));
  const fraction = subject.areaM2 > 0 ? Math.min(1, Math.max(0, areaM2 / subject.areaM2)) : 0;

  const areas = measured
    .filter((r) => r.areaM2 > 0)
    .sort(
      (a, b) =>
        b.areaM2 - a.areaM2 || (a.group.area.id < b.group.area.id ? -1 : a.group.area.id > b.group.area.id ? 1 : 0),
    )
    .slice(0, MAX_LISTED_AREAS)
    .map(({ group: { area }, areaM2: overlap }) => ({
      id: area.id,
      name: area.name,
      designation: area.designation,
      iucnCategory: area.iucnCategory,
      areaM2: overlap,
    }));

  return { dataset, overlaps: areaM2 > 0, areaM2, fraction, areas };
}

/** The policy the production stores apply; `onSampled` is told of each overlap estimated by sampling. */
export function countedUnepOverlapPolicy(onSampled: () => void): ProtectedAreaPolicy {
  return {
    overlap: (subject, dataset, candidates) =>
      computeUnepOverlap(subject, dataset, candidates, DEFAULT_OVERLAP_ENGINES, onSampled),
  };
}

/** The policy without a count (the CLI, tests and the bench). */
export const unepOverlapPolicy: ProtectedAreaPolicy = countedUnepOverlapPolicy(() => {});
