import { LIST_FILTERS, type ListQuery } from "../../model/list-query.js";
import { selectList } from "./rows.js";

/** The equality filters, each on its own column; the ANY filter reads the attribute side table. */
const EQUALITY_FILTERS = LIST_FILTERS.filter((filter) => filter.kind !== "anyOf");

export interface ListStatement {
  /** Identifies the SQL text: equal keys mean equal SQL, so the prepared statement can be reused. */
  key: string;
  sql: string;
  params: (string | number)[];
}

/**
 * The SQL depends only on which filters are present, never on their values (those are bound), so
 * at most one statement exists per filter combination. The attribute ANY filter binds its values
 * as one JSON array, so the number of values does not multiply the combinations either.
 */
export function buildListStatement(query: ListQuery): ListStatement {
  const conditions: string[] = [];
  const params: (string | number)[] = [];
  const keyParts: string[] = [];

  if (query.accountId !== null) {
    conditions.push("s.account_id = ?");
    params.push(query.accountId);
    keyParts.push("account");
  }
  for (const filter of EQUALITY_FILTERS) {
    const value = query[filter.queryKey] as string | number | undefined;
    if (value === undefined) continue;
    conditions.push(`s.${filter.column} = ?`);
    params.push(value);
    keyParts.push(filter.queryKey);
  }
  if (query.attributeTypes !== undefined && query.attributeTypes.length > 0) {
    // IN rather than a join, so a source having several of the values still comes back once. The
    // set is read from the attribute index; the unary + keeps the planner from driving the query
    // by it, which would lose the list order and sort every match before LIMIT applies.
    conditions.push(
      `+s.seq IN (SELECT a.source_seq FROM source_attribute_types a
                  WHERE a.attribute_type IN (SELECT value FROM json_each(?)))`,
    );
    params.push(JSON.stringify(query.attributeTypes));
    keyParts.push("attributeTypes");
  }
  params.push(query.limit, query.offset);

  const where = conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : "";
  return {
    key: keyParts.join(","),
    sql: `SELECT ${selectList("s")} FROM sources s ${where} ORDER BY s.created_at, s.id LIMIT ? OFFSET ?`,
    params,
  };
}
