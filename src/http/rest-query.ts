import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import {
  type BoundingBox,
  BoundingBoxSchema,
  type ListSourcesRequest,
  ListSourcesRequestSchema,
  type TimeRange,
  TimeRangeSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { preview } from "../ledger/preview.js";
import type { Violation } from "../ledger/violation.js";
import { type Environment, LIST_FILTERS } from "../model/list-query.js";
import type { Vocabulary } from "../model/vocabulary.js";
import { queryPointer } from "./json-pointer.js";
import { MALFORMED_QUERY, type ParsedQuery } from "./querystring.js";
import { parseRfc3339 } from "./rfc3339.js";

type RawQuery = Record<string, string | string[] | undefined>;

/**
 * Reads the fields of a listing by their kind, from a query string (QueryReader) or a search body
 * (rest-search.ts): one readListRequest serves both. Malformed values are violations.
 */
export interface ListFieldReader {
  text(name: string): string | undefined;
  integer(name: string): number | undefined;
  enumValue(name: string, vocabulary: Vocabulary): number;
  enumValues(name: string, vocabulary: Vocabulary): number[];
  bool(name: string): boolean | undefined;
  instant(name: string): Timestamp | undefined;
  range(name: string): TimeRange | undefined;
  box(name: string): BoundingBox | undefined;
}

/** What an instant must look like, said once for the query and the body. */
export const INSTANT_FORMAT = "an RFC 3339 date-time with an offset, e.g. 2024-01-01T00:00:00Z";
/** What a time range must look like (OGC API's datetime), said once for the query and the body. */
export const RANGE_FORMAT =
  "an RFC 3339 date-time, or an interval start/end of two whose open end is .. (e.g. 2024-01-01T00:00:00Z/..)";

/**
 * An instant or an interval in OGC API's `datetime` syntax as a TimeRange: `t` is [t, t], `a/b`
 * is [a, b], and an end written `..` or left empty is open. Undefined when it is not one.
 */
export function rangeOf(text: string): TimeRange | undefined {
  const parts = text.split("/");
  if (parts.length === 1) {
    const instant = instantOf(text);
    return instant === undefined ? undefined : create(TimeRangeSchema, { start: instant, end: instant });
  }
  // "/" alone says nothing; ".." says "open" in so many words.
  if (parts.length !== 2 || (parts[0] === "" && parts[1] === "")) return undefined;
  const ends = parts.map((part) => (part === ".." || part === "" ? null : instantOf(part)));
  if (ends.includes(undefined)) return undefined;
  const [start, end] = ends as (Timestamp | null)[];
  return create(TimeRangeSchema, { start: start ?? undefined, end: end ?? undefined });
}

/** What a box must look like, said once for the query and the body. */
export const BOX_FORMAT = "4 numbers minLon,minLat,maxLon,maxLat";

/** An RFC 3339 text as a Timestamp, or undefined when it is not one. */
export function instantOf(text: string): Timestamp | undefined {
  const parsed = parseRfc3339(text);
  return parsed === null ? undefined : create(TimestampSchema, parsed);
}

/** Four finite numbers as a box in the proto's order; undefined unless there are exactly four. */
export function boxOf(numbers: readonly unknown[]): BoundingBox | undefined {
  if (numbers.length !== 4 || !numbers.every((n) => typeof n === "number" && Number.isFinite(n))) return undefined;
  const [minLon, minLat, maxLon, maxLat] = numbers as number[];
  return create(BoundingBoxSchema, { minLon, minLat, maxLon, maxLat });
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Strict reading of a REST query string: unknown names, repeats of single-valued names and
 * malformed values are violations pointing at `/query/<name>` (docs/api.md §4: → 422).
 */
export class QueryReader implements ListFieldReader {
  readonly violations: Violation[] = [];

  constructor(
    private readonly query: RawQuery,
    private readonly allowed: readonly string[],
  ) {
    for (const name of (query as ParsedQuery)[MALFORMED_QUERY] ?? []) {
      this.fail(name, `${name} has a malformed percent-encoding`);
    }
    for (const name of Object.keys(query)) {
      if (!allowed.includes(name)) {
        this.fail(
          name,
          `unknown query parameter ${preview(name)}; allowed here: ${allowed.length ? allowed.join(", ") : "none"}`,
        );
      }
    }
  }

  private fail(name: string, detail: string): void {
    this.violations.push({ field: name, pointer: queryPointer(name), detail });
  }

  /** A value the caller found wrong by a rule of its own: a violation at `/query/<name>`. */
  reject(name: string, detail: string): void {
    this.fail(name, detail);
  }

  /** A parameter's values; none for one this reader does not take (already reported as unknown). */
  private all(name: string): string[] {
    if (!this.allowed.includes(name)) return [];
    const value = this.query[name];
    return value === undefined ? [] : Array.isArray(value) ? value : [value];
  }

  text(name: string): string | undefined {
    const values = this.all(name);
    if (values.length > 1) this.fail(name, `${name} must be given at most once`);
    return values[0];
  }

  integer(name: string): number | undefined {
    const text = this.text(name);
    if (text === undefined) return undefined;
    if (!/^-?\d{1,10}$/.test(text) || Math.abs(Number(text)) > 2 ** 31 - 1) {
      this.fail(name, `${name} must be an integer, got ${preview(text)}`);
      return undefined;
    }
    return Number(text);
  }

  enumValue(name: string, vocabulary: Vocabulary): number {
    const text = this.text(name);
    if (text === undefined) return 0;
    const value = vocabulary.valueOf(text);
    if (value === undefined) this.fail(name, vocabulary.unknownName(name, preview(text)));
    return value ?? 0;
  }

  enumValues(name: string, vocabulary: Vocabulary): number[] {
    const values: number[] = [];
    for (const text of this.all(name)) {
      const value = vocabulary.valueOf(text);
      if (value === undefined) this.fail(name, vocabulary.unknownName(name, preview(text)));
      else values.push(value);
    }
    return values;
  }

  bool(name: string): boolean | undefined {
    const text = this.text(name);
    if (text === undefined || text === "true" || text === "false")
      return text === undefined ? undefined : text === "true";
    this.fail(name, `${name} must be true or false, got ${preview(text)}`);
    return undefined;
  }

  instant(name: string): Timestamp | undefined {
    const text = this.text(name);
    if (text === undefined) return undefined;
    const instant = instantOf(text);
    if (instant === undefined) this.fail(name, `${name} must be ${INSTANT_FORMAT}, got ${preview(text)}`);
    return instant;
  }

  range(name: string): TimeRange | undefined {
    const text = this.text(name);
    if (text === undefined) return undefined;
    const range = rangeOf(text);
    if (range === undefined) this.fail(name, `${name} must be ${RANGE_FORMAT}, got ${preview(text)}`);
    return range;
  }

  box(name: string): BoundingBox | undefined {
    const text = this.text(name);
    if (text === undefined) return undefined;
    const parts = text.split(",");
    const box = parts.every((part) => DECIMAL.test(part.trim())) ? boxOf(parts.map(Number)) : undefined;
    if (box === undefined) this.fail(name, `${name} must be ${BOX_FORMAT}, got ${preview(text)}`);
    return box;
  }
}

const FILTER_BY_NAME = new Map(LIST_FILTERS.map((filter) => [filter.name, filter]));

/** The ListSourcesRequest fields an environment's list takes, in proto order: worked out once. */
const LIST_FIELDS: Readonly<Record<Environment, readonly DescField[]>> = {
  production: listFieldsOf("production"),
  sandbox: listFieldsOf("sandbox"),
};

function listFieldsOf(environment: Environment): DescField[] {
  return ListSourcesRequestSchema.fields.filter(
    (field) => FILTER_BY_NAME.get(field.name)?.environments.includes(environment) ?? true,
  );
}

/**
 * The query parameters of `GET /sources` in one environment: every ListSourcesRequest field the
 * environment offers, in proto order (docs/api.md §4).
 */
export function listParametersOf(environment: Environment): readonly string[] {
  return LIST_FIELDS[environment].map((field) => field.name);
}

/** A listing's fields (a list query string, a search body) → the ListSourcesRequest they name, each read by its kind. */
export function readListRequest(query: ListFieldReader, environment: Environment): ListSourcesRequest {
  const message = create(ListSourcesRequestSchema);
  const fields = message as unknown as Record<string, unknown>;
  for (const field of LIST_FIELDS[environment]) {
    const { name } = field;
    const filter = FILTER_BY_NAME.get(name);
    if (filter === undefined && field.fieldKind === "message") {
      // as_of: the one Timestamp beside the filters (docs/api.md §14).
      const value = query.instant(name);
      if (value !== undefined) fields[field.localName] = value;
    } else if (filter === undefined || filter.kind === "text" || filter.kind === "year") {
      // Paging, the admin's account_id, text and year filters: strings and integers as the proto types them.
      const value =
        field.fieldKind === "scalar" && field.scalar === ScalarType.STRING ? query.text(name) : query.integer(name);
      if (value !== undefined) fields[field.localName] = value;
    } else if (filter.kind === "enum") {
      fields[field.localName] = query.enumValue(name, filter.vocabulary as Vocabulary);
    } else if (filter.kind === "anyOf") {
      fields[field.localName] = query.enumValues(name, filter.vocabulary as Vocabulary);
    } else {
      const value =
        filter.kind === "bool"
          ? query.bool(name)
          : filter.kind === "instant"
            ? query.instant(name)
            : filter.kind === "range"
              ? query.range(name)
              : query.box(name);
      if (value !== undefined) fields[field.localName] = value;
    }
  }
  return message;
}
