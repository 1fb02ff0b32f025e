import type { BoundingBox } from "../../geo/types.js";
import { EQUALITY_FILTERS, type ListQuery } from "../../model/list-query.js";
import { WIRE_COLUMN, WIRE_JOIN } from "./geometry-wire.js";
import { COLUMNS, selectList } from "./rows.js";

/**
 * How the R*Tree takes part in a spatial list: `driving` reads the few sources whose box meets the
 * envelope and sorts their keys (the rows are then read one by one, by key, only as far as the
 * page goes: recordBySeqStatement); `probing` walks the list order and looks each row's box up by
 * its key, for an envelope that meets so many sources that sorting them all would cost more than
 * a page.
 */
export type SpatialPlan = "driving" | "probing";

export interface ListStatement {
  /** Identifies the SQL text: equal keys mean equal SQL, so the prepared statement can be reused. */
  key: string;
  sql: string;
  params: (string | number)[];
}

/** A list of records: whether each row has the wire bytes after COLUMNS, and where a spatial row's box starts. */
export interface RecordListStatement extends ListStatement {
  withWire: boolean;
  /** Index of BOX_COLUMNS' first in a row (spatial lists; the row's length otherwise). */
  boxAt: number;
  /**
   * The rows are keys, `seq` and then the box (a driving spatial list): the records are read by
   * key (recordBySeqStatement). Sorting whole rows would copy every candidate's geometry into the
   * sort before the first row came out, megabytes each for large sources, however short the page.
   */
  keysOnly: boolean;
}

const RECORD_BY_SEQ: Readonly<Record<"plain" | "wire", ListStatement>> = {
  plain: { key: "by-seq", sql: `SELECT ${selectList("s")} FROM sources s WHERE s.seq = ?`, params: [] },
  wire: {
    key: "by-seq,wire",
    sql: `SELECT ${selectList("s")}, ${WIRE_COLUMN} FROM sources s ${WIRE_JOIN} WHERE s.seq = ?`,
    params: [],
  },
};

/** One record by its key, with its wire bytes when asked for: a driving spatial list's rows (COLUMNS, then the wire). */
export function recordBySeqStatement(withWire: boolean): ListStatement {
  return withWire ? RECORD_BY_SEQ.wire : RECORD_BY_SEQ.plain;
}

/**
 * A spatial list drives from the R*Tree while the envelope meets at most this many sources: reading
 * and sorting them costs a few milliseconds; past it, walking the list order costs less.
 */
export const DRIVING_CANDIDATES = 5_000;

/** The R*Tree's condition for a box meeting `envelope` (edges included), with its parameters. */
export function envelopeCondition(alias: string, envelope: BoundingBox) {
  return {
    sql: `${alias}.min_x <= ? AND ${alias}.max_x >= ? AND ${alias}.min_y <= ? AND ${alias}.max_y >= ?`,
    params: [envelope.maxX, envelope.minX, envelope.maxY, envelope.minY],
  };
}

/**
 * Counts the boxes of an R*Tree (the live sources', or every created source's: source_event_bbox)
 * that meet an envelope, stopping past DRIVING_CANDIDATES: picks the SpatialPlan.
 */
export function envelopeCountStatement(
  envelope: BoundingBox,
  rtree: "source_bbox" | "source_event_bbox" = "source_bbox",
): ListStatement {
  const condition = envelopeCondition("b", envelope);
  return {
    key: `envelope-count:${rtree}`,
    sql: `SELECT count(*) FROM (SELECT 1 FROM ${rtree} b WHERE ${condition.sql} LIMIT ?)`,
    params: [...condition.params, DRIVING_CANDIDATES + 1],
  };
}

/** The plan for an envelope that meets `candidates` boxes, as envelopeCountStatement counted them. */
export function spatialPlanFor(candidates: number): SpatialPlan {
  return candidates <= DRIVING_CANDIDATES ? "driving" : "probing";
}

/**
 * The SQL depends only on which filters are present, never on their values (those are bound), so
 * at most one statement exists per filter combination. The attribute ANY filter binds its values
 * as one JSON array, so the number of values does not multiply the combinations either.
 *
 * With a spatial `envelope`, the statement has no LIMIT: the store reads it in order and keeps the
 * rows whose exact geometry matches until the page is full (spatial-filter.ts).
 */
export function buildListStatement(
  query: ListQuery,
  spatial: { envelope: BoundingBox; plan: SpatialPlan } | null = null,
): RecordListStatement {
  const conditions: string[] = [];
  const params: (string | number)[] = [];
  const keyParts: string[] = [];
  // Driving from the R*Tree, no other index may drive: a unary + makes a column unindexable, so
  // the planner reads the candidates by their key and sorts them, instead of walking a whole
  // account in list order and looking each row up in the candidate list.
  const column = (name: string) => (spatial?.plan === "driving" ? `+s.${name}` : `s.${name}`);

  if (query.accountId !== null) {
    conditions.push(`${column("account_id")} = ?`);
    params.push(query.accountId);
    keyParts.push("account");
  }
  for (const filter of EQUALITY_FILTERS) {
    const value = query[filter.queryKey] as string | number | boolean | undefined;
    if (value === undefined) continue;
    conditions.push(`${column(filter.column)} = ?`);
    params.push(typeof value === "boolean" ? Number(value) : value);
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
  if (query.activeAt !== undefined) {
    // Half-open period: active from start_at, no longer at end_at (docs/api.md §13).
    conditions.push(`${column("start_at")} <= ? AND ${column("end_at")} > ?`);
    params.push(query.activeAt, query.activeAt);
    keyParts.push("activeAt");
  }
  const range = query.activeDuring;
  if (range?.end !== undefined) {
    // The period [start_at, end_at) meets the closed range: it starts by the range's end ...
    conditions.push(`${column("start_at")} <= ?`);
    params.push(range.end);
    keyParts.push("activeUntil");
  }
  if (range?.start !== undefined) {
    // ... and is still active after the range's start.
    conditions.push(`${column("end_at")} > ?`);
    params.push(range.start);
    keyParts.push("activeFrom");
  }
  if (query.after !== undefined) {
    // Keyset paging (docs/api.md §12): a row value compared against the list order's index
    // columns, which SQLite turns into a range on that index: the page starts where the last
    // ended, however deep it is.
    conditions.push(`(${column("created_at")}, ${column("id")}) > (?, ?)`);
    params.push(query.after.createdAt, query.after.id);
    keyParts.push("after");
  }
  if (spatial !== null) {
    const condition = envelopeCondition("b", spatial.envelope);
    conditions.push(condition.sql);
    params.push(...condition.params);
    keyParts.push(`spatial-${spatial.plan}`);
  }
  const where = conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : "";
  // The stored wire bytes, when asked for: right after the record's columns (geometry-wire.ts).
  const withWire = query.geometryWire === true;
  const select = withWire ? `${selectList("s")}, ${WIRE_COLUMN}` : selectList("s");
  const wireJoin = withWire ? ` ${WIRE_JOIN}` : "";
  if (withWire) keyParts.push("wire");
  const boxAt = COLUMNS.length + (withWire ? 1 : 0);
  if (spatial !== null) {
    // CROSS JOIN fixes the loop order (SQLite never reorders it): the R*Tree outside when it
    // drives, the list order's index outside when each row's box is probed by its key. The box
    // comes along, after the record's columns (or its key), so a candidate lying within a box area
    // is accepted without its geometry being parsed.
    if (spatial.plan === "driving") {
      return {
        key: keyParts.join(","),
        sql: `SELECT s.seq, ${BOX_COLUMNS} FROM source_bbox b CROSS JOIN sources s ON s.seq = b.seq ${where} ORDER BY s.created_at, s.id`,
        params,
        withWire,
        boxAt: 1,
        keysOnly: true,
      };
    }
    return {
      key: keyParts.join(","),
      sql: `SELECT ${select}, ${BOX_COLUMNS} FROM sources s CROSS JOIN source_bbox b ON b.seq = +s.seq${wireJoin} ${where} ORDER BY s.created_at, s.id`,
      params,
      withWire,
      boxAt,
      keysOnly: false,
    };
  }
  params.push(query.limit, query.offset);
  return {
    key: keyParts.join(","),
    sql: `SELECT ${select} FROM sources s${wireJoin} ${where} ORDER BY s.created_at, s.id LIMIT ? OFFSET ?`,
    params,
    withWire,
    boxAt,
    keysOnly: false,
  };
}

/** The R*Tree box a spatial list's rows end with, in this order (after the wire bytes, when asked for). */
export const BOX_COLUMNS = "b.min_x, b.max_x, b.min_y, b.max_y";
