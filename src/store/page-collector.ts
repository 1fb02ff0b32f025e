import type { ListQuery } from "../model/list-query.js";

/**
 * A page read from candidates in list order (docs/api.md §12): `read` turns each into a record or
 * rejects it (null: an exact test failed), the first `offset` records are skipped, and reading
 * stops at `limit` records, or, with `maxGeometryChars`, one record past where the geometry text
 * kept reaches it (ListQuery.maxGeometryChars: the caller learns more follow). Candidates are read
 * lazily, so an iterator over a statement or a cursor is read no further than the page needs.
 */
export function collectPage<C, R>(
  candidates: Iterable<C>,
  read: (candidate: C) => R | null,
  page: Pick<ListQuery, "offset" | "limit" | "maxGeometryChars">,
  charsOf: (record: R) => number,
): R[] {
  const records: R[] = [];
  const budget = page.maxGeometryChars ?? Number.POSITIVE_INFINITY;
  let skip = page.offset;
  let chars = 0;
  for (const candidate of candidates) {
    // Inside the loop, not before it: leaving it closes an iterator over a statement or a cursor.
    if (page.limit <= 0) break;
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
