import type { BoundingBox } from "../../geo/types.js";

/**
 * Guard cells against write skew (docs/api.md §8 bookkeeping under concurrency).
 *
 * MongoDB transactions run on a snapshot and detect only write-write conflicts: two concurrent
 * creates of overlapping sources would each read a ledger without the other, both pass, and
 * neither flag the other. So every transaction that decides conflict flags also upserts (with an
 * `$inc`, which always modifies the document) one guard document per cell of a fixed 1° grid
 * meeting the boxes it decides about. Two sources that overlap have boxes that meet, so their
 * cell sets share a cell (the ranges are computed on closed boxes, so even touching boxes share
 * one): the two transactions write the same guard document, MongoDB aborts one with a
 * WriteConflict labelled TransientTransactionError, and `withTransaction` runs it again on a
 * snapshot that now holds the other source.
 *
 * 1° cells (about 111 km) keep the number of guards small for real sources (one to four for a
 * field) while unrelated creates far apart never collide; creates in the same cell at the same
 * moment are serialised by retries. The worst case is a box spanning the whole globe: 64,800
 * upserts in one transaction.
 */
export const GUARD_CELL_DEGREES = 1;

const COLUMNS = 360 / GUARD_CELL_DEGREES;
const ROWS = 180 / GUARD_CELL_DEGREES;

function clampIndex(value: number, count: number): number {
  return Math.min(Math.max(value, 0), count - 1);
}

/** The guard document id of cell (column, row): `g1:<column>:<row>`, columns from −180°, rows from −90°. */
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
