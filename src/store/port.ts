import type { Change, SourceConflict, SourceEvent } from "../model/history.js";
import type { ListQuery } from "../model/list-query.js";
import type { NewSourceRecord, RecordRead, SourceRecord } from "../model/records.js";

/** Thrown by `insertMany` when alt_ids are already taken in their account; nothing was stored. */
export class AltIdTakenError extends Error {
  constructor(
    readonly accountId: string,
    readonly altIds: string[],
  ) {
    super(`alt_id already in use: ${altIds.join(", ")}`);
    this.name = "AltIdTakenError";
  }
}

/** One account's part of a batch: its alt_ids each once in request order, and those given twice. */
export interface AccountAltIds {
  altIds: string[];
  repeated: Set<string>;
}

/** A batch's alt_ids per account, in request order (every store checks them the same way). */
export function altIdsByAccount(records: readonly NewSourceRecord[]): Map<string, AccountAltIds> {
  const byAccount = new Map<string, { seen: Set<string>; repeated: Set<string> }>();
  for (const { accountId, altId } of records) {
    let account = byAccount.get(accountId);
    if (account === undefined) {
      account = { seen: new Set(), repeated: new Set() };
      byAccount.set(accountId, account);
    }
    if (account.seen.has(altId)) account.repeated.add(altId);
    account.seen.add(altId);
  }
  return new Map([...byAccount].map(([accountId, { seen, repeated }]) => [accountId, { altIds: [...seen], repeated }]));
}

/**
 * The AltIdTakenError for one account's part of a batch, or null: the alt_ids already `stored` or
 * given twice, named in request order, so the caller can point at the offending features.
 */
export function altIdClash(
  accountId: string,
  { altIds, repeated }: AccountAltIds,
  stored: Iterable<string>,
): AltIdTakenError | null {
  const taken = new Set([...stored, ...repeated]);
  return taken.size === 0
    ? null
    : new AltIdTakenError(
        accountId,
        altIds.filter((altId) => taken.has(altId)),
      );
}

/**
 * A create's records as a store records them after the last change it committed at `lastChangeAt`
 * (docs/api.md §14): each at the instant its request came in, or at `lastChangeAt` when that is
 * later (a create queued behind a change that came in after it), so the events' times follow the
 * order of the commits and an as_of instant never shows a state that never was.
 */
export function recordedAfter(records: readonly NewSourceRecord[], lastChangeAt: number): NewSourceRecord[] {
  return records.map((record) =>
    record.createdAt >= lastChangeAt
      ? record
      : { ...record, createdAt: lastChangeAt, updatedAt: Math.max(record.updatedAt, lastChangeAt) },
  );
}

/** A delete's change as a store records it after the last change at `lastChangeAt` (recordedAfter). */
export function changeAfter(change: Change, lastChangeAt: number): Change {
  return change.at >= lastChangeAt ? change : { by: change.by, at: lastChangeAt };
}

/** The latest of `since` and the instants of `items` (`instantOf` each). */
export function latestOf<T>(
  items: Iterable<T>,
  instantOf: (item: T) => number,
  since = Number.NEGATIVE_INFINITY,
): number {
  let last = since;
  for (const item of items) last = Math.max(last, instantOf(item));
  return last;
}

/** The latest instant among `records` and `since`: what a store's last change is after recording them. */
export function lastCreatedAt(records: readonly NewSourceRecord[], since: number): number {
  return latestOf(records, (record) => record.createdAt, since);
}

/**
 * A page along a source's own event seqs: its events (SourceStore.history) or its conflicts
 * (SourceStore.conflictsOf, by the seq of each one's conflict_set event), those after `afterSeq`,
 * at most `limit`.
 */
export interface EventPage {
  /** 0 for the first page: seqs start at 1. */
  afterSeq: number;
  limit: number;
}

/** What a capacity bound counts. */
export type CapacityUnit = "sources" | "positions" | "bytes" | "sessions";

/**
 * Thrown when a store would exceed a capacity bound (the sandbox's); nothing was stored.
 *
 * Without `retryAfterS` the bound is the caller's own session's ("sources", "positions", or
 * "bytes" when the session alone would outgrow the sandbox's memory budget): retrying cannot help
 * until the session shrinks or expires. With it, the bound is shared by every session (the memory
 * budget in "bytes", or the number of "sessions") and is held by sessions busy with requests: the
 * same create may succeed after that many seconds.
 */
export class CapacityExceededError extends Error {
  constructor(
    readonly limit: number,
    /** What is counted: "sources", or "positions" for the sandbox's per-session memory bound. */
    readonly unit: CapacityUnit = "sources",
    /** Seconds after which to retry, when the bound is shared and only busy sessions hold it. */
    readonly retryAfterS?: number,
  ) {
    super(
      retryAfterS === undefined
        ? `capacity of ${limit} ${unit} exceeded`
        : `capacity of ${limit} ${unit} in use; retry after ${retryAfterS} s`,
    );
    this.name = "CapacityExceededError";
  }
}

/** Thrown when the store cannot be reached; the message is safe to log, never sent to clients. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}

/**
 * What a store found at setup needs an operator before anything can be served (its message says
 * what and where): calls stay unavailable, and trying again cannot help, so setup is not retried
 * and the service does not start on it.
 */
export class StoreNeedsRepairError extends StoreUnavailableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreNeedsRepairError";
  }
}

/**
 * The storage port. Every store (embedded SQLite, MongoDB, the sandbox's memory) implements it
 * and passes the same contract suite (test/contract/).
 *
 * Account scoping: `accountId: string` restricts to that account; `null` means any account.
 */
export interface SourceStore {
  /**
   * Inserts all records in one transaction, or none (AltIdTakenError, CapacityExceededError):
   * with each record's `created` event, and in production every conflict pair it makes, stored
   * with its measures, and the `conflict_set` events of both sides (docs/api.md §14).
   */
  insertMany(records: NewSourceRecord[]): Promise<SourceRecord[]>;
  /**
   * At most `query.limit` records matching every filter of the query, ordered by createdAt then
   * id, starting after `query.after` (keyset) or skipping `query.offset`. `bbox` and `intersects`
   * are exact: an index narrows the candidates, then `prepareSearchArea` (geo/intersects.ts)
   * decides on the stored geometry; a page's cost grows with the matches read, not its depth.
   * With `exactTests`, the tests stop once they have spent it and another candidate follows,
   * recording where to go on (ListQuery.exactTests); in a live list, a candidate whose box lies
   * within every area matches untested.
   */
  list(query: ListQuery): Promise<SourceRecord[]>;
  get(id: string, accountId: string | null, read?: RecordRead): Promise<SourceRecord | null>;
  /** The source as it stood at `asOf` (live then, its flag as it was), from its events; null when it was not. */
  getAsOf(id: string, accountId: string | null, asOf: number): Promise<SourceRecord | null>;
  /**
   * True when a record was deleted. With its `deleted` event, and in production a
   * `conflict_cleared` event on the surviving side of every pair it was in (whose flag clears with
   * its last pair) (docs/api.md §14), all in the delete's transaction.
   */
  deleteById(id: string, accountId: string | null, change: Change): Promise<boolean>;
  deleteByAltId(altId: string, accountId: string, change: Change): Promise<boolean>;
  /**
   * The events of a source in `seq` order, also after it was deleted; null when no source of that
   * id was ever in scope (docs/api.md §14), whatever the page. With `page`, only those after
   * `page.afterSeq`, at most `page.limit`: read from the store's (source, seq) index, so a page
   * costs its own events, not the source's whole history.
   */
  history(id: string, accountId: string | null, page?: EventPage): Promise<SourceEvent[] | null>;
  /**
   * The live conflicts of a live source in the order its history recorded them (the seq of each
   * one's `conflict_set` event on its side: oldest pair first); null when no such live source is in
   * scope. With `page`, only those recorded after event `page.afterSeq`, at most `page.limit`: read
   * from the store's (source, event) indexes, so a page costs its own pairs, not all of them.
   */
  conflictsOf(id: string, accountId: string | null, page?: EventPage): Promise<SourceConflict[] | null>;
  /**
   * The ledger's secret: 32 random bytes made when first asked for and kept in the store, so every
   * process serving the same store derives the same keys (page tokens, docs/api.md §12) and they
   * survive a restart. The sandbox's lives as long as the process, like its data.
   */
  ledgerSecret(): Promise<Uint8Array>;
  /** Resolves when the store can serve requests; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
