import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { type ListSourcesRequest, ListSourcesRequestSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { Violation } from "../ledger/violation.js";
import { type Environment, LIST_FILTERS } from "../model/list-query.js";
import type { Vocabulary } from "../model/vocabulary.js";
import { MALFORMED_QUERY, type ParsedQuery } from "./querystring.js";

type RawQuery = Record<string, string | string[] | undefined>;

/**
 * Strict reading of a REST query string: unknown names, repeats of single-valued names and
 * malformed values are violations pointing at `/query/<name>` (docs/api.md §4: → 422).
 */
export class QueryReader {
  readonly violations: Violation[] = [];

  constructor(
    private readonly query: RawQuery,
    allowed: readonly string[],
  ) {
    for (const name of (query as ParsedQuery)[MALFORMED_QUERY] ?? []) {
      this.fail(name, `${name} has a malformed percent-encoding`);
    }
    for (const name of Object.keys(query)) {
      if (!allowed.includes(name)) {
        this.fail(
          name,
          `unknown query parameter "${name}"; allowed here: ${allowed.length ? allowed.join(", ") : "none"}`,
        );
      }
    }
  }

  private fail(name: string, detail: string): void {
    this.violations.push({ field: name, pointer: `/query/${name}`, detail });
  }

  private all(name: string): string[] {
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
      this.fail(name, `${name} must be an integer, got "${text}"`);
      return undefined;
    }
    return Number(text);
  }

  enumValue(name: string, vocabulary: Vocabulary): number {
    const text = this.text(name);
    if (text === undefined) return 0;
    const value = vocabulary.valueOf(text);
    if (value === undefined) this.fail(name, vocabulary.unknownName(name, `"${text}"`));
    return value ?? 0;
  }

  enumValues(name: string, vocabulary: Vocabulary): number[] {
    const values: number[] = [];
    for (const text of this.all(name)) {
      const value = vocabulary.valueOf(text);
      if (value === undefined) this.fail(name, vocabulary.unknownName(name, `"${text}"`));
      else values.push(value);
    }
    return values;
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

/** A list query string → the ListSourcesRequest it names, each field read by its kind. */
export function readListRequest(query: QueryReader, environment: Environment): ListSourcesRequest {
  const message = create(ListSourcesRequestSchema);
  const fields = message as unknown as Record<string, unknown>;
  for (const field of LIST_FIELDS[environment]) {
    const { name } = field;
    const filter = FILTER_BY_NAME.get(name);
    if (filter === undefined || filter.kind === "text" || filter.kind === "year") {
      // Paging, the admin's account_id, text and year filters: strings and integers as the proto types them.
      const value =
        field.fieldKind === "scalar" && field.scalar === ScalarType.STRING ? query.text(name) : query.integer(name);
      if (value !== undefined) fields[field.localName] = value;
    } else if (filter.kind === "enum") {
      fields[field.localName] = query.enumValue(name, filter.vocabulary as Vocabulary);
    } else {
      fields[field.localName] = query.enumValues(name, filter.vocabulary as Vocabulary);
    }
  }
  return message;
}
