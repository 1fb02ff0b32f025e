import type { ListQuery, SourceRecord } from "../port.js";

type EqualityFilter =
  | "methodology"
  | "stewardId"
  | "projectId"
  | "outcomeReportingYear"
  | "sourceType"
  | "geometrySource"
  | "id"
  | "altId";

const EQUALITY_FILTERS: readonly EqualityFilter[] = [
  "methodology",
  "stewardId",
  "projectId",
  "outcomeReportingYear",
  "sourceType",
  "geometrySource",
  "id",
  "altId",
];

/** A predicate for every filter of `query` except the account, which picks sessions instead. */
export function matcher(query: ListQuery): (record: SourceRecord) => boolean {
  const equalities = EQUALITY_FILTERS.filter((f) => query[f] !== undefined);
  const wanted = new Set(query.attributeTypes);
  return (record) =>
    equalities.every((f) => record[f] === query[f]) &&
    (wanted.size === 0 || record.attributeType.some((t) => wanted.has(t)));
}

/**
 * The list order: createdAt, then id. Ids are compared as UTF-16 code units, which agrees with
 * SQLite's byte-wise BINARY collation for the ASCII ids the service generates.
 */
export function byCreatedThenId(a: SourceRecord, b: SourceRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  if (a.id === b.id) return 0;
  return a.id < b.id ? -1 : 1;
}

export function page<T>(items: T[], { limit, offset }: Pick<ListQuery, "limit" | "offset">): T[] {
  return items.slice(offset, offset + limit);
}
