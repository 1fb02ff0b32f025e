import type { BoundingBox } from "../../geo/types.js";

/**
 * Guard cells against write skew (docs/api.md §8 bookkeeping under concurrency; docs/mongodb.md
 * "Why guards").
 *
 * MongoDB transactions run on a snapshot and detect only write-write conflicts: two concurrent
 * creates of overlapping sources would each read a ledger without the other, both pass, and
 * neither flag the other. So every transaction that decides conflict flags also upserts (with an
 * `$inc`, which always modifies the document) one guard document per cell of a fixed grid meeting
 * the boxes it decides about: for each source, the rectangles holding its geometry
 * (`sourceRectanglesOf`: its bounding box, or for a source over 1° on a side the cells of its box
 * its geometry meets, so a country with islands does not guard the ocean between them). Two
 * sources that overlap share a point, which lies in a box of each; a point p of two closed boxes
 * lies in one cell (the index `floor((x + 180) / size)` is monotonic in x, and a box
 * guards every index from that of its minimum to that of its maximum, so p's cell is among the
 * cells of both, whichever way rounding goes, even when p lies on a cell line; the clamp at 180°
 * and 90° keeps it monotonic). The two transactions write that guard document, MongoDB aborts
 * one with a WriteConflict labelled TransientTransactionError, and `withTransaction` runs it again
 * on a snapshot that now holds the other source. `test/store/mongodb-guards.test.ts` checks this on
 * many random pairs of every size.
 *
 * **Why cells of 11.25°, and not a hierarchy.** With 1° cells a country-sized source upserted
 * about a hundred guards (the globe 64,800) and any concurrent create in one of them aborted it.
 * What a guard scheme can achieve is bounded: a source covering the whole globe overlaps every
 * other source, so it must share a document with each; if it writes k documents, sources that
 * are far apart (and never conflict) still fall into at most k groups, each sharing one document
 * and so running one at a time. Quadtree-like schemes (a source writes its cells at the level of
 * its size plus "intent" guards on the coarser cells above) do not escape this, since MongoDB has
 * no compatible intent writes — two writes of one document always conflict — so every create
 * writes the coarsest cells and those alone already decide which creates collide: the finer levels
 * only add writes. The grid size is therefore the one choice: 11.25° (1/32 of the circle) lets
 * a source up to 11.25° on a side — a field, a county, many states and countries — write one to
 * four guards and the globe 512 (32 × 16), and lets creates more than a cell apart (1,250 km of
 * latitude) never wait for each other; creates in one cell at the same moment run one after the
 * other, each waiting a few milliseconds per retry for the one holding the guard to commit.
 */
export const GUARD_CELL_DEGREES = 11.25;

const COLUMNS = 360 / GUARD_CELL_DEGREES;
const ROWS = 180 / GUARD_CELL_DEGREES;

function clampIndex(value: number, count: number): number {
  return Math.min(Math.max(value, 0), count - 1);
}

/**
 * The guard document id of cell (column, row): `g11.25:<column>:<row>`, columns from −180°, rows
 * from −90°. The prefix names the grid, so documents of another grid (the 1° `g1:` guards of
 * earlier versions) are never mistaken for these.
 */
export function guardCellId(column: number, row: number): string {
  return `g${GUARD_CELL_DEGREES}:${column}:${row}`;
}

/** The ids of every cell a closed box meets, west to east, then south to north. */
export function guardCellIds(box: BoundingBox): string[] {
  const firstColumn = clampIndex(Math.floor((box.minX + 180) / GUARD_CELL_DEGREES), COLUMNS);
  const lastColumn = clampIndex(Math.floor((box.maxX + 180) / GUARD_CELL_DEGREES), COLUMNS);
  const firstRow = clampIndex(Math.floor((box.minY + 90) / GUARD_CELL_DEGREES), ROWS);
  const lastRow = clampIndex(Math.floor((box.maxY + 90) / GUARD_CELL_DEGREES), ROWS);
  const ids: string[] = [];
  for (let column = firstColumn; column <= lastColumn; column++) {
    for (let row = firstRow; row <= lastRow; row++) ids.push(guardCellId(column, row));
  }
  return ids;
}

/** The union of the cells of `boxes`, each once, sorted so every transaction writes them in one order. */
export function guardCellsOf(boxes: Iterable<BoundingBox>): string[] {
  const ids = new Set<string>();
  for (const box of boxes) for (const id of guardCellIds(box)) ids.add(id);
  return [...ids].sort();
}
