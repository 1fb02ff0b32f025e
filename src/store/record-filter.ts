import { EQUALITY_FILTERS, type ListQuery, type TimeRange } from "../model/list-query.js";
import type { SourceRecord } from "../model/records.js";

/** What the filters and the order read: a record's plain fields (a stored source has them too). */
export type Listable = Omit<SourceRecord, "geometry" | "geometryJson" | "tags" | "attributeType"> & {
  readonly attributeType: readonly string[];
};

/** Whether `query` has a plain filter that can refuse a record (the keyset cursor aside). */
export function narrows(query: ListQuery): boolean {
  return (
    EQUALITY_FILTERS.some((f) => query[f.queryKey] !== undefined) ||
    (query.attributeTypes?.length ?? 0) > 0 ||
    query.activeAt !== undefined ||
    query.activeDuring !== undefined
  );
}

/**
 * A predicate for every plain filter of `query` and its keyset cursor, over records in memory (the
 * sandbox's, and the embedded store's as they stood at an instant); not the account, which those
 * pick by other means, nor the spatial ones, which an index and the exact test apply.
 */
export function matcher(query: ListQuery): (record: Listable) => boolean {
  const equalities = EQUALITY_FILTERS.filter((f) => query[f.queryKey] !== undefined).map((f) => f.queryKey);
  const wanted = new Set(query.attributeTypes);
  const { activeAt, activeDuring, after } = query;
  return (record) =>
    equalities.every((key) => record[key as keyof Listable] === query[key]) &&
    (wanted.size === 0 || record.attributeType.some((t) => wanted.has(t))) &&
    (activeAt === undefined || (record.startAt <= activeAt && activeAt < record.endAt)) &&
    (activeDuring === undefined || meets(record, activeDuring)) &&
    (after === undefined || byCreatedThenId(record, after) > 0);
}

/**
 * The list order: createdAt, then id. Ids are compared as UTF-16 code units, which agrees with
 * SQLite's byte-wise BINARY collation for the ASCII ids the service generates.
 */
export function byCreatedThenId(a: Pick<Listable, "createdAt" | "id">, b: Pick<Listable, "createdAt" | "id">): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  if (a.id === b.id) return 0;
  return a.id < b.id ? -1 : 1;
}

/** Whether a record's period [startAt, endAt) meets the closed `range` (an end absent is open). */
function meets(record: Listable, range: TimeRange): boolean {
  return (
    (range.end === undefined || record.startAt <= range.end) &&
    (range.start === undefined || record.endAt > range.start)
  );
}
