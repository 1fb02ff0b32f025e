import type { DescField } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";
import { ListSourcesRequestSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { BoundingBox, SearchArea } from "../geo/types.js";
import type { ExactTestAllowance } from "./exact-tests.js";
import type { RecordRead } from "./records.js";
import { type Vocabulary, vocabularyOfEnum } from "./vocabulary.js";

/** The two ledgers a caller can address: the same API over different stores (docs/api.md §7). */
export type Environment = "production" | "sandbox";

/**
 * The values of the list filters (docs/api.md §4), in domain form: enum-like filters hold the
 * upper-case names. The keys are the `query` keys of LIST_FILTERS (a unit test checks they agree).
 */
export interface ListFilterValues {
  methodology?: string;
  stewardId?: string;
  projectId?: string;
  outcomeReportingYear?: number;
  sourceType?: string;
  /** Matches a source having ANY of these; absent or empty means no filter. */
  attributeTypes?: readonly string[];
  geometrySource?: string;
  id?: string;
  altId?: string;
  conflict?: boolean;
  /** Epoch milliseconds: sources whose [startAt, endAt) contains it. */
  activeAt?: number;
  /** Epoch milliseconds: sources whose [startAt, endAt) meets the closed range; an end absent is open. */
  activeDuring?: TimeRange;
  /** Sources whose exact geometry intersects the box (edges included). */
  bbox?: BoundingBox;
}

/** A closed interval of epoch milliseconds [start, end]; an end left out is open. */
export interface TimeRange {
  start?: number;
  end?: number;
}

/** Where a page starts: after the record with this (createdAt, id), in list order (docs/api.md §12). */
export interface ListCursor {
  createdAt: number;
  id: string;
}

/** A list query as a store runs it. `accountId: null` spans every account (admins only; the ledger decides). */
/**
 * Why the sandbox answers no `as_of` read (docs/api.md §14): it lets go of a deleted source's
 * record (its memory is its budget), so it could not show one as it stood.
 */
export const AS_OF_PRODUCTION_ONLY = "as_of exists only in production: the sandbox lets go of deleted sources' records";

export interface ListQuery extends ListFilterValues, RecordRead {
  accountId: string | null;
  limit: number;
  offset: number;
  /** Keyset paging: only records after this one in list order. */
  after?: ListCursor;
  /**
   * Epoch milliseconds: the ledger as it stood then (docs/api.md §14), the sources live at that
   * instant (since-deleted ones included) with their flags as they were, from the events.
   * Production only (AS_OF_PRODUCTION_ONLY).
   */
  asOf?: number;
  /** A search's area (docs/api.md §13): the exact geometry must intersect it, and the bbox if any. */
  intersects?: SearchArea;
  /**
   * Reading may stop early: once the geometry text read (geometryCharsOf) has reached this many
   * characters, one more record is read (so the caller knows more follow) and the list ends. A
   * caller that sends only so many bytes of a page need not read a thousand large sources for it.
   * A store that keeps geometry otherwise may ignore it.
   */
  maxGeometryChars?: number;
  /**
   * The page's exact tests (`bbox`, `intersects`) spend it; once it is spent and another candidate
   * follows, reading stops after the candidate that spent it and its `stoppedAt` says where to go
   * on, though the page holds fewer than `limit` records, or none (docs/api.md §13). Without it,
   * reading goes on until the page is full.
   */
  exactTests?: ExactTestAllowance;
}

/** The characters of stored geometry text a record carries (0 when its store keeps none). */
export function geometryCharsOf(record: { geometryJson?: string }): number {
  return record.geometryJson?.length ?? 0;
}

/**
 * How a filter's value is read and matched: `text`, `year` and `bool` by equality, `enum` by
 * equality of the name, `anyOf` (a repeated enum) when the source has ANY of the names, `instant`
 * when the source's period contains it, `range` when the source's period meets it, `box` when the
 * source's exact geometry intersects it.
 */
export type ListFilterKind = "text" | "year" | "bool" | "enum" | "anyOf" | "instant" | "range" | "box";

/** One list filter: everything every reader of it (REST, the rpc adapter, the ledger, each store) needs. */
export interface ListFilter {
  /** snake_case: the REST query parameter and the ListSourcesRequest field. */
  readonly name: string;
  /** The field's property on the generated ListSourcesRequest message. */
  readonly messageKey: string;
  /** The property of ListQuery (and ListFilterValues) that holds the value. */
  readonly queryKey: keyof ListFilterValues;
  readonly kind: ListFilterKind;
  /** For `enum` and `anyOf`: the names allowed. */
  readonly vocabulary: Vocabulary | null;
  /** Where the filter exists; elsewhere it is refused with a violation. */
  readonly environments: readonly Environment[];
  /** The column of the embedded store's `sources` table. */
  readonly column: string;
  /** The field of a MongoDB source document. */
  readonly documentPath: string;
}

/** Fields of ListSourcesRequest that are not filters: paging and the admin's account scope. */
const NOT_FILTERS = new Set(["limit", "offset", "account_id", "page_token", "as_of"]);

/** What the proto cannot say about a filter. Everything else is read from its descriptor. */
const OVERRIDES: Readonly<Record<string, Partial<Pick<ListFilter, "queryKey" | "environments" | "documentPath">>>> = {
  attribute_type: { queryKey: "attributeTypes" },
  id: { environments: ["sandbox"], documentPath: "_id" },
};

/** The message types a filter may take, by kind. */
const MESSAGE_KINDS: Readonly<Record<string, ListFilterKind>> = {
  "google.protobuf.Timestamp": "instant",
  "sourceledger.v2.TimeRange": "range",
  "sourceledger.v2.BoundingBox": "box",
};

function kindOf(field: DescField): { kind: ListFilterKind; vocabulary: Vocabulary | null } {
  const enumVocabulary = (typeName: string) => {
    const vocabulary = vocabularyOfEnum.get(typeName);
    if (vocabulary === undefined) throw new Error(`list filter ${field.name}: no vocabulary for ${typeName}`);
    return vocabulary;
  };
  if (field.fieldKind === "list" && field.listKind === "enum") {
    return { kind: "anyOf", vocabulary: enumVocabulary(field.enum.typeName) };
  }
  if (field.fieldKind === "enum") return { kind: "enum", vocabulary: enumVocabulary(field.enum.typeName) };
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) return { kind: "text", vocabulary: null };
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.INT32) return { kind: "year", vocabulary: null };
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.BOOL) return { kind: "bool", vocabulary: null };
  const messageKind = field.fieldKind === "message" ? MESSAGE_KINDS[field.message.typeName] : undefined;
  if (messageKind !== undefined) return { kind: messageKind, vocabulary: null };
  throw new Error(`list filter ${field.name}: a ${field.fieldKind} field is not a kind of filter the ledger knows`);
}

/**
 * The list filters, in proto order, derived from ListSourcesRequest's descriptor: adding a filter
 * to the proto adds it to REST, the rpc adapter, the ledger and the three stores at once (or fails
 * here at start, when its kind is new).
 */
export const LIST_FILTERS: readonly ListFilter[] = ListSourcesRequestSchema.fields
  .filter((field) => !NOT_FILTERS.has(field.name))
  .map((field) => {
    const override = OVERRIDES[field.name] ?? {};
    return {
      name: field.name,
      messageKey: field.localName,
      queryKey: override.queryKey ?? (field.localName as keyof ListFilterValues),
      ...kindOf(field),
      environments: override.environments ?? ["production", "sandbox"],
      column: field.name,
      documentPath: override.documentPath ?? field.name,
    };
  });

/**
 * The filters a store matches by equality of one value on the source's own field (`conflict` as a
 * boolean): every store reads this list; `anyOf`, `instant`, `range` and `box` each need their own test.
 */
export const EQUALITY_FILTERS: readonly ListFilter[] = LIST_FILTERS.filter((filter) =>
  ["text", "year", "enum", "bool"].includes(filter.kind),
);

/** The filters one environment offers. */
export function listFiltersOf(environment: Environment): readonly ListFilter[] {
  return LIST_FILTERS.filter((filter) => filter.environments.includes(environment));
}

/**
 * The areas a query's sources must intersect, every one of them: the `bbox` filter as a box, then
 * a search's area. Empty for a plain list.
 */
export function spatialAreasOf(query: ListQuery): SearchArea[] {
  const areas: SearchArea[] = [];
  if (query.bbox !== undefined) areas.push({ type: "Box", box: query.bbox });
  if (query.intersects !== undefined) areas.push(query.intersects);
  return areas;
}
