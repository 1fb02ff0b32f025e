import type { SearchArea, SourceGeometry } from "../geo/types.js";
import type { ListFilterValues } from "../model/list-query.js";
import type { RecordRead } from "../model/records.js";
import type { Violation } from "./violation.js";

/**
 * A source as the caller wrote it, in domain form, before the rules of docs/api.md §5 are applied:
 * enum-like fields hold upper-case names, times epoch milliseconds, absent values null (and
 * `altId` "").
 */
export interface SourceDraft {
  altId: string;
  methodology: string | null;
  tags: readonly string[];
  stewardId: string | null;
  projectId: string | null;
  outcomeReportingYear: number | null;
  sourceType: string | null;
  attributeType: readonly string[];
  geometrySource: string | null;
  geometry: SourceGeometry | null;
  startAt: number | null;
  endAt: number | null;
}

/**
 * What every command carries besides its input: the violations the adapter found while reading
 * the request into domain form (a JSON value of the wrong type, an unknown enum number). The
 * ledger reports them with its own, all at once, and acts on nothing while any remain.
 */
export interface Unread {
  readViolations?: readonly Violation[];
}

export interface CreateCommand extends Unread {
  /** Admin only: the account the sources are created in. */
  accountId?: string;
  sources: readonly SourceDraft[];
}

export interface ListCommand extends Unread, RecordRead {
  /** Admin only: restrict the listing to one account. */
  accountId?: string;
  filters: ListFilterValues;
  /** 1 to 1,000; 100 when absent. */
  limit?: number;
  /** 0 or more; 0 when absent. Not with pageToken. */
  offset?: number;
  /** The nextPageToken of the previous page of the same listing; absent or "" for the first page. */
  pageToken?: string;
  /** Epoch milliseconds: the ledger as it stood then (docs/api.md §14), production only. */
  asOf?: number;
  /**
   * The bytes of sources the caller will send of this page at most (a gRPC answer's 4 MiB): the
   * store may then stop reading early, and the page ends where it stopped.
   */
  answerBytes?: number;
  /**
   * Aborted once nobody waits for the answer (the client went away, or its deadline passed): a page
   * reading on over several turns (docs/api.md §13) stops before its next read.
   */
  signal?: AbortSignal;
}

/** A list whose sources must also intersect an area (docs/api.md §13). */
export interface SearchCommand extends ListCommand {
  /** null when the request named no area (a violation of the field `intersects`). */
  area: SearchArea | null;
}

export interface GetCommand extends Unread, RecordRead {
  id: string;
  /** Epoch milliseconds: the source as it stood then (docs/api.md §14), production only. */
  asOf?: number;
}

export interface DeleteCommand extends Unread {
  /** The source to delete, by id or by alt_id; null when the request named neither. */
  key: { by: "id" | "alt_id"; value: string } | null;
  /** Admin only: the account whose alt_id is meant (required with alt_id). */
  accountId?: string;
}

/** A source's history or conflicts, a page at a time (docs/api.md §14). */
export interface SourcePageCommand extends GetCommand {
  /** 1 to 1,000; 100 when absent. */
  limit?: number;
  /** The nextPageToken of the previous page; absent or "" for the first. */
  pageToken?: string;
}
