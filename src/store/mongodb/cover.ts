import { prepareSearchArea } from "../../geo/intersects.js";
import type { BoundingBox, Position, SourceGeometry } from "../../geo/types.js";

/**
 * The geometry MongoDB's 2dsphere index holds for a source: a "cover" of its planar bounding box,
 * never the submitted geometry itself.
 *
 * Why not index the submitted geometry: the API measures overlap on planar lon/lat edges,
 * 2dsphere on geodesic (great-circle) edges, so an index over the exact shape can miss a planar
 * overlap next to a long edge; and 2dsphere refuses or reinterprets some shapes the API
 * accepts (edges that cross once drawn as great circles, rings larger than a hemisphere, which it
 * inverts). The submitted geometry is stored untouched in another field and decides conflicts in
 * code; the index only finds candidates, like the embedded store's R*Tree of boxes.
 *
 * The cover is built so that, drawn with geodesic edges, it contains every point of the planar
 * box [minX, maxX] × [minY, maxY]. Two sources whose boxes meet therefore have covers that meet,
 * and `$geoIntersects` on the covers finds every pair the planar box test would:
 * - every side is pushed out by PAD_DEGREES (a centimetre), against rounding in the index;
 * - meridian sides are geodesics already; they get a vertex at least every 45° of latitude so no
 *   side comes near 180° of arc, where "the shorter great circle" becomes ambiguous;
 * - a parallel side on the pole side of the box bulges further poleward when drawn as a great
 *   circle, so it only grows the cover; the parallel side towards the equator bulges inwards, so
 *   it gets a vertex at least every degree of longitude and is moved equatorwards by the largest
 *   bulge such a step can have (about 0.0011° for a full degree, far less for small boxes);
 * - wide boxes are split into tiles at most 90° wide (a MultiPolygon), so no ring comes near a
 *   hemisphere, which MongoDB would read as its complement;
 * - latitudes are clamped to ±POLE_LIMIT (about 11 m from a pole), where vertices of different
 *   longitudes would nearly coincide, and no side is shorter on the ground than MIN_SPAN_DEGREES
 *   of arc (about 11 cm; narrow covers near a pole get wider in longitude), so no ring
 *   degenerates. Clamping and widening keep every intersection of two boxes (clamping is
 *   monotonic), so a box reaching into a polar cap still meets every box it met before.
 */
export type CoverGeometry =
  | { type: "Polygon"; coordinates: Position[][] }
  | { type: "MultiPolygon"; coordinates: Position[][][] };

/** Outward padding on every side, in degrees (about 1 cm). */
export const PAD_DEGREES = 1e-7;
/** Covers stay this far from the poles, where all longitudes meet. */
export const POLE_LIMIT = 90 - 1e-4;
/** The shortest side of a tile, in degrees of arc on the ground (narrow tiles near a pole are widened in longitude). */
export const MIN_SPAN_DEGREES = 1e-6;
/** The widest tile, in degrees of longitude. */
export const MAX_TILE_WIDTH = 90;
/** The longest step along the equatorward parallel side, in degrees of longitude. */
export const MAX_PARALLEL_STEP = 1;
/** The longest step along a meridian side, in degrees of latitude. */
export const MAX_MERIDIAN_STEP = 45;

const RADIANS = Math.PI / 180;

/**
 * The largest distance, in degrees of latitude, by which the great circle through two points of
 * one parallel `stepDegrees` apart rises above that parallel, over all latitudes. The great circle
 * peaks at its midpoint, where tan(peak) = tan(lat) / cos(step / 2); the rise is largest where
 * tan(lat) = √cos(step / 2).
 */
export function maxGeodesicBulge(stepDegrees: number): number {
  const root = Math.sqrt(Math.cos((stepDegrees * RADIANS) / 2));
  return (Math.atan(1 / root) - Math.atan(root)) / RADIANS;
}

/** [lo, hi] clamped to [floor, ceil] and widened to at least `min`, staying inside the bounds. */
function span(lo: number, hi: number, floor: number, ceil: number, min: number): [number, number] {
  let a = Math.max(lo, floor);
  let b = Math.min(hi, ceil);
  if (b - a < min) {
    const middle = Math.min(Math.max((a + b) / 2, floor + min / 2), ceil - min / 2);
    a = middle - min / 2;
    b = middle + min / 2;
  }
  return [a, b];
}

/** `count` + 1 evenly spaced values from `from` to `to`, both included. */
function steps(from: number, to: number, count: number): number[] {
  const values: number[] = [];
  for (let i = 0; i <= count; i++) values.push(i === count ? to : from + ((to - from) * i) / count);
  return values;
}

/** One counter-clockwise tile ring: south side eastwards, east side north, north side westwards, west side south. */
function tileRing(
  x0: number,
  x1: number,
  y0: number,
  y1: number,
  densifySouth: boolean,
  densifyNorth: boolean,
): Position[] {
  const parallelCount = Math.max(1, Math.ceil((x1 - x0) / MAX_PARALLEL_STEP));
  const meridianCount = Math.max(1, Math.ceil((y1 - y0) / MAX_MERIDIAN_STEP));
  const south = densifySouth ? steps(x0, x1, parallelCount) : [x0, x1];
  const north = densifyNorth ? steps(x1, x0, parallelCount) : [x1, x0];
  const up = steps(y0, y1, meridianCount);
  const down = steps(y1, y0, meridianCount);
  const ring: Position[] = [];
  for (const x of south) ring.push([x, y0]);
  for (const y of up.slice(1, -1)) ring.push([x1, y]);
  for (const x of north) ring.push([x, y1]);
  for (const y of down.slice(1, -1)) ring.push([x0, y]);
  ring.push([x0, y0]);
  return ring;
}

/** The 2dsphere-indexable cover of a planar bounding box (see the module comment). */
export function coverOf(box: BoundingBox): CoverGeometry {
  // Near a pole a degree of longitude is short: widen narrow covers so every side stays at least
  // MIN_SPAN_DEGREES of arc long on the ground (vertices the index cannot tell apart would be invalid).
  const highest = Math.min(
    POLE_LIMIT,
    Math.max(Math.abs(box.minY), Math.abs(box.maxY)) + PAD_DEGREES + MIN_SPAN_DEGREES,
  );
  const minWidth = Math.min(360, MIN_SPAN_DEGREES / Math.cos(highest * RADIANS));
  const [x0, x1] = span(box.minX - PAD_DEGREES, box.maxX + PAD_DEGREES, -180, 180, minWidth);
  const tiles = Math.max(1, Math.ceil((x1 - x0) / MAX_TILE_WIDTH));
  const tileWidth = (x1 - x0) / tiles;
  const step = tileWidth / Math.max(1, Math.ceil(tileWidth / MAX_PARALLEL_STEP));
  const bulge = maxGeodesicBulge(step);

  // Only a side on the equator's far side from the box's interior bulges inwards.
  const northOnly = box.minY > 0;
  const southOnly = box.maxY < 0;
  const [y0, y1] = span(
    box.minY - PAD_DEGREES - (northOnly ? bulge : 0),
    box.maxY + PAD_DEGREES + (southOnly ? bulge : 0),
    -POLE_LIMIT,
    POLE_LIMIT,
    MIN_SPAN_DEGREES,
  );

  const edges = steps(x0, x1, tiles);
  const rings: Position[][] = [];
  for (let i = 0; i < tiles; i++) rings.push(tileRing(edges[i], edges[i + 1], y0, y1, northOnly, southOnly));
  if (rings.length === 1) return { type: "Polygon", coordinates: [rings[0]] };
  return { type: "MultiPolygon", coordinates: rings.map((ring) => [ring]) };
}

/** Every ring of a cover, each closed, for tests and diagnostics. */
export function coverRings(cover: CoverGeometry): Position[][] {
  return cover.type === "Polygon" ? cover.coordinates : cover.coordinates.map((polygon) => polygon[0]);
}

/** A source whose box is at most this many degrees on each side is covered by its box (`coverOf`). */
export const CELL_COVER_MIN_DEGREES = 1;
/** A larger source's cell cover cuts its box into at most this many cells along each axis. */
export const CELL_COVER_CELLS_PER_AXIS = 8;

/**
 * The values from `from` to `to` at which a grid of `size`-degree cells aligned on `origin` cuts
 * the closed interval [from, to]: `from`, every grid line strictly between, `to`. Consecutive
 * values bound the pieces of the interval, which share their ends, so the pieces cover it exactly
 * whatever the rounding of the grid lines.
 */
function cuts(from: number, to: number, origin: number, size: number): number[] {
  const values = [from];
  for (let k = Math.floor((from - origin) / size) + 1; ; k++) {
    const line = origin + k * size;
    if (line >= to) break;
    if (line > from) values.push(line);
  }
  values.push(to);
  return values;
}

/** The cuts of the finest grid (cells of 360 / 2^L degrees) leaving at most CELL_COVER_CELLS_PER_AXIS pieces along each axis. */
function cellCuts(box: BoundingBox): { xs: number[]; ys: number[] } {
  let best = { xs: [box.minX, box.maxX], ys: [box.minY, box.maxY] };
  for (let level = 0; level <= 40; level++) {
    const size = 360 / 2 ** level;
    const xs = cuts(box.minX, box.maxX, -180, size);
    const ys = cuts(box.minY, box.maxY, -90, size);
    if (xs.length - 1 > CELL_COVER_CELLS_PER_AXIS || ys.length - 1 > CELL_COVER_CELLS_PER_AXIS) break;
    best = { xs, ys };
  }
  return best;
}

/**
 * The rectangles of a large source's cell cover: its box cut by a grid into at most
 * CELL_COVER_CELLS_PER_AXIS × CELL_COVER_CELLS_PER_AXIS closed cells, the cells the geometry
 * meets (touching included, decided exactly by `prepareSearchArea`); each row's runs of such cells
 * merged into one rectangle, and a run merged with the one right below it when both span the same
 * columns. South to north, then west to east. Every point of the geometry lies in its box, so in
 * a closed cell, which the geometry then meets: the rectangles hold the whole geometry. One
 * rectangle, the box itself, when the geometry meets every cell.
 */
export function cellCoverRectangles(geometry: SourceGeometry, box: BoundingBox): BoundingBox[] {
  const { xs, ys } = cellCuts(box);
  const shape = prepareSearchArea(geometry);
  const rectangles: BoundingBox[] = [];
  let every = true;
  for (let j = 0; j + 1 < ys.length; j++) {
    let run: BoundingBox | null = null;
    for (let i = 0; i + 1 < xs.length; i++) {
      const cell = { minX: xs[i], minY: ys[j], maxX: xs[i + 1], maxY: ys[j + 1] };
      if (shape.intersects(rectangleGeometry(cell))) {
        run = run === null ? cell : { minX: run.minX, minY: run.minY, maxX: cell.maxX, maxY: run.maxY };
        continue;
      }
      every = false;
      if (run !== null) addRun(rectangles, run);
      run = null;
    }
    if (run !== null) addRun(rectangles, run);
  }
  return every ? [box] : rectangles;
}

/** Adds a row's run, extending the rectangle right below it when that spans the same columns. */
function addRun(rectangles: BoundingBox[], run: BoundingBox): void {
  const below = rectangles.findIndex((r) => r.minX === run.minX && r.maxX === run.maxX && r.maxY === run.minY);
  if (below < 0) rectangles.push(run);
  else rectangles[below] = { ...rectangles[below], maxY: run.maxY };
}

function rectangleGeometry(box: BoundingBox): SourceGeometry {
  const { minX, minY, maxX, maxY } = box;
  const ring: Position[] = [
    [minX, minY],
    [maxX, minY],
    [maxX, maxY],
    [minX, maxY],
    [minX, minY],
  ];
  return { type: "Polygon", coordinates: [ring] };
}

/**
 * The 2dsphere-indexable cover of a source, stored with it and used to find its conflict
 * candidates. A source whose box is at most CELL_COVER_MIN_DEGREES on each side gets the cover of
 * its box (`coverOf`). A larger one — a jurisdiction, a programme — gets the covers of its cell
 * rectangles (`cellCoverRectangles`), one polygon each, so its cover follows its shape instead of
 * holding its whole box: an L-shaped or diagonal country, or one whose islands stretch its box
 * across a latitude band, no longer pulls in, or is pulled in by, every source of that box.
 *
 * Still conservative: each rectangle's cover holds the planar rectangle (coverOf), and the
 * rectangles hold the geometry, so two sources whose geometries meet have covers that meet
 * (their box covers and cell covers mix freely, each holds its geometry). The polygons of the
 * MultiPolygon may overlap by their padding: MongoDB validates each polygon of a MultiPolygon on
 * its own (`GeoParser::parseMultiPolygon`), as it does the tiles of a wide box cover.
 */
export function sourceCoverOf(geometry: SourceGeometry, box: BoundingBox): CoverGeometry {
  const rectangles = sourceRectanglesOf(geometry, box);
  if (rectangles.length === 1) return coverOf(rectangles[0]);
  const known = cellCovers.get(geometry);
  if (known?.cover !== undefined) return known.cover;
  const cover: CoverGeometry = {
    type: "MultiPolygon",
    coordinates: rectangles.flatMap((rectangle) => coverRings(coverOf(rectangle)).map((ring) => [ring])),
  };
  cellCovers.set(geometry, { box: { ...box }, rectangles, cover });
  return cover;
}

/**
 * The planar rectangles that hold a source's geometry, as its cover (sourceCoverOf) and its
 * guards (guards.ts) use them: its box for a source up to CELL_COVER_MIN_DEGREES on each side,
 * else its cell rectangles (cellCoverRectangles).
 */
export function sourceRectanglesOf(geometry: SourceGeometry, box: BoundingBox): BoundingBox[] {
  if (box.maxX - box.minX <= CELL_COVER_MIN_DEGREES && box.maxY - box.minY <= CELL_COVER_MIN_DEGREES) return [box];
  // A create guards, asks with the cover and then stores it: the cells of a large geometry (never
  // changed once validated) are found once.
  const known = cellCovers.get(geometry);
  if (known !== undefined && sameBox(known.box, box)) return known.rectangles;
  const rectangles = cellCoverRectangles(geometry, box);
  cellCovers.set(geometry, { box: { ...box }, rectangles });
  return rectangles;
}

/** What was found of the geometries still referenced (a request's records), by geometry object. */
const cellCovers = new WeakMap<
  SourceGeometry,
  { box: BoundingBox; rectangles: BoundingBox[]; cover?: CoverGeometry }
>();

function sameBox(a: BoundingBox, b: BoundingBox): boolean {
  return a.minX === b.minX && a.minY === b.minY && a.maxX === b.maxX && a.maxY === b.maxY;
}
