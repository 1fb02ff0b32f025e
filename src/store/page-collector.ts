import type { ListCursor, ListQuery } from "../model/list-query.js";

/**
 * A page read from candidates in list order (docs/api.md §12): `read` turns each into a record or
 * rejects it (null: an exact test failed), the first `offset` records are skipped, and reading
 * stops at `limit` records, or, with `maxGeometryChars`, one record past where the geometry text
 * kept reaches it (ListQuery.maxGeometryChars: the caller learns more follow), or, with
 * `exactTests`, after the candidate that spent the allowance when another follows (`cursorOf`
 * says where it stands).
 * Candidates are read lazily, so an iterator over a statement or a cursor is read no further than
 * the page needs.
 */
export function collectPage<C extends NonNullable<unknown>, R>(
  candidates: Iterable<C>,
  read: (candidate: C) => R | null,
  page: Pick<ListQuery, "offset" | "limit" | "maxGeometryChars" | "exactTests">,
  charsOf: (record: R) => number,
  cursorOf: (candidate: C) => ListCursor,
): R[] {
  const records: R[] = [];
  const budget = page.maxGeometryChars ?? Number.POSITIVE_INFINITY;
  let skip = page.offset;
  let chars = 0;
  // None tested yet (a candidate is never null).
  let tested: C | null = null;
  for (const candidate of candidates) {
    // Inside the loop, not before it: leaving it closes an iterator over a statement or a cursor.
    if (page.limit <= 0) break;
    if (page.exactTests?.stopsBefore(tested, cursorOf, skip)) break;
    tested = candidate;
    const record = read(candidate);
    if (record === null) continue;
    if (skip > 0) {
      skip -= 1;
      continue;
    }
    records.push(record);
    if (records.length === page.limit || chars >= budget) break;
    chars += charsOf(record);
  }
  return records;
}

/** `map` over `rows` lazily: read no further than the reader goes (and closed when it stops). */
export function* mapRows<R, T>(rows: Iterable<R>, map: (row: R) => T): Generator<T> {
  for (const row of rows) yield map(row);
}

/** Where a record (or a stored source) stands in list order. */
export function cursorOfRecord(record: { readonly createdAt: number; readonly id: string }): ListCursor {
  return { createdAt: record.createdAt, id: record.id };
}

/** Records a batched read asks for first, before it knows how large they are. */
export const FIRST_BATCH = 8;

/**
 * The page collectPage keeps when every candidate is kept (no exact test), read in batches:
 * `fetch(count, skip)` gives the listing's records `skip` to `skip + count - 1` (the page's offset
 * already applied). A statement read in batches costs ~3 µs a row less than one stepped row by
 * row (better-sqlite3's iterate). The first batch is FIRST_BATCH records; each next one at most as
 * many as the budget left holds at the widest record read so far (and one more), so a page of
 * large sources reads at most about twice its budget, as row-by-row reading would read once.
 */
export function collectInBatches<R>(
  fetch: (count: number, skip: number) => R[],
  page: Pick<ListQuery, "limit"> & { maxGeometryChars: number },
  charsOf: (record: R) => number,
): R[] {
  const records: R[] = [];
  let chars = 0;
  let widest = 1;
  let batch = FIRST_BATCH;
  while (records.length < page.limit) {
    const count = Math.min(batch, page.limit - records.length);
    const found = fetch(count, records.length);
    for (const record of found) {
      records.push(record);
      // As collectPage: the record past where the budget was reached ends the page.
      if (records.length === page.limit || chars >= page.maxGeometryChars) return records;
      const size = charsOf(record);
      chars += size;
      widest = Math.max(widest, size);
    }
    if (found.length < count) break;
    batch = Math.floor(Math.max(0, page.maxGeometryChars - chars) / widest) + 1;
  }
  return records;
}
