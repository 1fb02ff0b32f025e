import { type DescField, ScalarType } from "@bufbuild/protobuf";
import { ListSourcesRequestSchema } from "../../../gen/sourceledger/v2/source_ledger_pb.js";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, MAX_TEXT, MAX_YEAR, MIN_YEAR } from "../../ledger/rules.js";
import { type Environment, LIST_FILTERS, type ListFilter } from "../../model/list-query.js";
import type { Vocabulary } from "../../model/vocabulary.js";
import { DATETIME, ogcItemsListParameters, PERIOD_FILTER } from "../ogc/items.js";
import { BOX_FORMAT, INSTANT_FORMAT, listParametersOf, RANGE_FORMAT } from "../rest-query.js";
import { OGC_ITEMS_FORMAT_PARAMETER } from "./formats.js";
import { schemaRef } from "./refs.js";
import { vocabularySchema } from "./source-schemas.js";
import type { Parameter, Schema } from "./types.js";

/**
 * The fields of a listing (docs/api.md §4.5, §13), described from what the adapters read: the
 * names from listParametersOf, each filter's kind and vocabulary from LIST_FILTERS, the limits from
 * the ledger's rules. A filter added to the proto appears here, in the query of GET /sources, the
 * body of a search and the OGC items, without a word written for it (a new kind needs one below).
 */

/** How one field is written in a query string and in a search body (its JSON type). */
interface Shape {
  query: Schema;
  body: Schema;
  description: string;
  /** `form` without explode: comma-separated values in one parameter (`bbox=1,2,3,4`). */
  commaSeparated?: boolean;
}

const INSTANT: Schema = { type: "string", format: "date-time", example: "2024-01-01T00:00:00Z" };
const TEXT: Schema = { type: "string", minLength: 1, maxLength: MAX_TEXT };
const BOX: Schema = {
  type: "array",
  items: { type: "number" },
  minItems: 4,
  maxItems: 4,
  example: [-93.61, 41.59, -93.55, 41.62],
};
const PERIOD: Schema = { type: "string", example: "2024-01-01T00:00:00Z/2024-07-01T00:00:00Z" };
const same = (schema: Schema) => ({ query: schema, body: schema });

/** Each kind of filter (ListFilterKind), written once: a new kind fails start-up until described. */
const KIND_SHAPES: Readonly<Record<string, (filter: ListFilter) => Shape>> = {
  text: ({ name }) => ({ ...same(TEXT), description: `Exact match on the record's \`${name}\`.` }),
  year: ({ name }) => ({
    ...same({ type: "integer", minimum: MIN_YEAR, maximum: MAX_YEAR }),
    description: `Records whose \`${name}\` is this year.`,
  }),
  bool: ({ name }) => ({
    ...same({ type: "boolean" }),
    description: `Records whose \`${name}\` is this value (\`true\` or \`false\`).`,
  }),
  enum: ({ name, vocabulary }) => ({
    ...same(vocabularySchema(vocabulary as Vocabulary)),
    description: `Records whose \`${name}\` is this name.`,
  }),
  anyOf: ({ name, vocabulary }) => {
    const one = vocabularySchema(vocabulary as Vocabulary);
    const many: Schema = { type: "array", items: one, minItems: 1 };
    return {
      query: many,
      body: { oneOf: [one, many] },
      description: `Repeatable: records having ANY of these \`${name}\` names, each listed once.`,
    };
  },
  instant: () => ({
    ...same(INSTANT),
    description: `Records whose [start_at, end_at) period contains this instant, ${INSTANT_FORMAT}.`,
  }),
  range: () => ({
    ...same(PERIOD),
    description: `Records whose [start_at, end_at) period meets this: ${RANGE_FORMAT}.`,
  }),
  box: () => ({
    query: BOX,
    body: BOX,
    commaSeparated: true,
    description: `Records whose exact geometry intersects the box (edges included): ${BOX_FORMAT}, min ≤ max (no box across the antimeridian).`,
  }),
};

/** The fields of a listing that are not filters: paging, the admin's account, the instant of the past. */
const FIELD_SHAPES: Readonly<Record<string, Shape>> = {
  limit: {
    ...same({ type: "integer", minimum: 1, maximum: MAX_LIST_LIMIT, default: DEFAULT_LIST_LIMIT }),
    description: "Records per page.",
  },
  offset: {
    ...same({ type: "integer", minimum: 0, maximum: 2 ** 31 - 1, default: 0 }),
    description: "Records to skip (kept for seed clients: prefer page_token). Not with page_token.",
  },
  account_id: { ...same(TEXT), description: "Admins only: the account to list (all accounts when absent)." },
  page_token: {
    ...same({ type: "string" }),
    description: "The next page, from the previous answer's `Link` header; bound to the filters and the caller.",
  },
  as_of: {
    ...same(INSTANT),
    description: "Production only (a 422 in the sandbox): the ledger as it stood at this instant (docs/api.md §14).",
  },
};

const FILTER_BY_NAME = new Map(LIST_FILTERS.map((filter) => [filter.name, filter]));
const FIELD_BY_NAME = new Map<string, DescField>(ListSourcesRequestSchema.fields.map((field) => [field.name, field]));

/** The shape of one listing field: by its filter's kind, else the field's own (and its proto type). */
function shapeOf(name: string): Shape {
  const filter = FILTER_BY_NAME.get(name);
  if (filter !== undefined) {
    const shape = KIND_SHAPES[filter.kind];
    if (shape === undefined) throw new Error(`OpenAPI: list filter ${name} has kind ${filter.kind}, not described`);
    return shape(filter);
  }
  const shape = FIELD_SHAPES[name];
  if (shape !== undefined) return shape;
  // A field nobody described yet: at least its type, read from the proto as readListRequest does.
  const field = FIELD_BY_NAME.get(name);
  const type: Schema =
    field?.fieldKind === "message"
      ? INSTANT
      : field?.fieldKind === "scalar" && field.scalar === ScalarType.STRING
        ? { type: "string" }
        : { type: "integer" };
  return { ...same(type), description: "" };
}

function parameterOf(name: string, shape: Shape): Parameter {
  return {
    name,
    in: "query",
    ...(shape.description ? { description: shape.description } : {}),
    schema: shape.query,
    ...(shape.query.type === "array" ? { style: "form", explode: !shape.commaSeparated } : {}),
  };
}

/** One listing field as a query parameter of another operation (a history's `limit`, a delete's `account_id`). */
export function listFieldParameter(name: string, description?: string): Parameter {
  const parameter = parameterOf(name, shapeOf(name));
  return description === undefined ? parameter : { ...parameter, description };
}

/** The query parameters of GET /sources in `environment` (the `f` parameter aside), in proto order. */
export function listQueryParameters(environment: Environment): Parameter[] {
  return listParametersOf(environment).map((name) => parameterOf(name, shapeOf(name)));
}

/** The body of POST /sources/search in `environment`: the area, and every listing field as a member. */
export function searchBodySchema(environment: Environment): Schema {
  const members: Record<string, Schema> = {};
  for (const name of listParametersOf(environment)) {
    const shape = shapeOf(name);
    members[name] = shape.description ? { ...shape.body, description: shape.description } : shape.body;
  }
  return {
    type: "object",
    description:
      "The area and any list filter as a member, in its JSON type; `null` counts as absent; an unknown member is a 422.",
    required: ["intersects"],
    properties: { intersects: schemaRef("SearchArea"), ...members },
    additionalProperties: false,
  };
}

/**
 * The query parameters of an OGC collection's items: the list's but `offset`, with OGC's `limit`
 * (a larger one is served at the largest, Part 1 §7.15.3), `datetime` and `f`.
 */
export function ogcItemsParameters(environment: Environment): Parameter[] {
  const parameters = ogcItemsListParameters(environment).map((name) => {
    if (name !== "limit") return parameterOf(name, shapeOf(name));
    return parameterOf(name, {
      ...same({ type: "integer", minimum: 1, maximum: 2 ** 31 - 1, default: DEFAULT_LIST_LIMIT }),
      description: `Items per page; a limit above ${MAX_LIST_LIMIT} is served at ${MAX_LIST_LIMIT}.`,
    });
  });
  const datetime = parameterOf(DATETIME, {
    ...same(PERIOD),
    description: `Items whose [start_at, end_at) period meets this (the \`${PERIOD_FILTER}\` filter): ${RANGE_FORMAT}.`,
  });
  return [...parameters, datetime, OGC_ITEMS_FORMAT_PARAMETER];
}
