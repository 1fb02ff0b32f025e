import { boxIntersection } from "../geo/bbox.js";
import { type PreparedSearchArea, prepareSearchArea } from "../geo/intersects.js";
import type { BoundingBox, SearchArea, SourceGeometry } from "../geo/types.js";
import { type ListQuery, spatialAreasOf } from "../model/list-query.js";

/**
 * A query's spatial conditions (the `bbox` filter, a search's area) as a store applies them: an
 * index narrows the candidates to those whose box meets `envelope`, then `matches` decides on the
 * exact geometry (docs/api.md §13).
 */
export interface SpatialFilter {
  envelope: BoundingBox;
  /** Every area the exact geometry must intersect. */
  areas: readonly PreparedSearchArea[];
  /** The exact test, spending the query's allowance (ListQuery.exactTests) on the geometry it reads. */
  matches(geometry: SourceGeometry): boolean;
  /**
   * True when every area holds all of `box`: a candidate whose box lies within is a match without
   * its geometry being read (a box filter's usual case: most candidates lie well inside).
   */
  covers(box: BoundingBox): boolean;
}

function planarArea(box: BoundingBox): number {
  return (box.maxX - box.minX) * (box.maxY - box.minY);
}

/**
 * The planar box an index narrows by, for areas with these envelopes: their common box when they
 * have one, else the smallest envelope.
 *
 * Why that never loses a match: a match's geometry G meets every area, so its planar bounding box
 * holds a point p_i of each envelope E_i. Per axis, the box's interval holds every p_i, and if the
 * common interval [max lo_i, min hi_i] is not empty it cannot lie wholly beyond either end of it
 * (the p_i of the envelope with the smallest hi is at most that hi; likewise for the largest lo),
 * so the box meets the common box on both axes, which for axis-aligned boxes means it meets it.
 * When the envelopes have no common box, a source can still meet them all (a long field reaching
 * from one to the other), so the list is not empty: any single envelope is then a sound, if
 * looser, narrowing, and the smallest is the most selective.
 */
export function narrowingBox(envelopes: readonly BoundingBox[]): BoundingBox {
  if (envelopes.length === 0) throw new RangeError("narrowingBox needs at least one envelope");
  let common: BoundingBox | null = envelopes[0];
  for (const envelope of envelopes.slice(1)) common = common === null ? null : boxIntersection(common, envelope);
  if (common !== null) return common;
  return envelopes.reduce((smallest, envelope) => (planarArea(envelope) < planarArea(smallest) ? envelope : smallest));
}

/**
 * Polygon areas prepared, by the area object a query names: a page read over several turns
 * (docs/api.md §13) prepares its area once; a 100,000-position area's edge index takes tens of
 * milliseconds. A point or a box costs nothing to prepare (and a `bbox` filter's area is a new
 * object each read), so it is not kept.
 */
const preparedAreas = new WeakMap<SearchArea, PreparedSearchArea>();

function prepared(area: SearchArea): PreparedSearchArea {
  if (area.type === "Point" || area.type === "Box") return prepareSearchArea(area);
  let ready = preparedAreas.get(area);
  if (ready === undefined) {
    ready = prepareSearchArea(area);
    preparedAreas.set(area, ready);
  }
  return ready;
}

/** The spatial filter of `query`, or null when it has none. */
export function spatialFilterOf(query: ListQuery): SpatialFilter | null {
  const areas = spatialAreasOf(query).map(prepared);
  if (areas.length === 0) return null;
  return {
    envelope: narrowingBox(areas.map((area) => area.envelope)),
    areas,
    matches: (geometry) => {
      query.exactTests?.spendOn(geometry);
      return areas.every((area) => area.intersects(geometry));
    },
    covers: (box) => areas.every((area) => area.covers(box)),
  };
}
