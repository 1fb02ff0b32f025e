import { LIST_FILTERS, type ListQuery } from "../../model/list-query.js";
import type { SourceRecord } from "../../model/records.js";

const EQUALITY_FILTERS = LIST_FILTERS.filter((filter) => filter.kind !== "anyOf");

/** What the filters and the order read: a record's plain fields (a stored source has them too). */
export type Listable = Omit<SourceRecord, "geometry" | "geometryJson" | "tags" | "attributeType"> & {
  readonly attributeType: readonly string[];
};

/** A predicate for every filter of `query` except the account, which picks sessions instead. */
export function matcher(query: ListQuery): (record: Listable) => boolean {
  const equalities = EQUALITY_FILTERS.filter((f) => query[f.queryKey] !== undefined).map((f) => f.queryKey);
  const wanted = new Set(query.attributeTypes);
  return (record) =>
    equalities.every((key) => record[key as keyof Listable] === query[key]) &&
    (wanted.size === 0 || record.attributeType.some((t) => wanted.has(t)));
}

/**
 * The list order: createdAt, then id. Ids are compared as UTF-16 code units, which agrees with
 * SQLite's byte-wise BINARY collation for the ASCII ids the service generates.
 */
export function byCreatedThenId(a: Listable, b: Listable): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  if (a.id === b.id) return 0;
  return a.id < b.id ? -1 : 1;
}

export function page<T>(items: T[], { limit, offset }: Pick<ListQuery, "limit" | "offset">): T[] {
  return items.slice(offset, offset + limit);
}
