import { setImmediate as nextTurn } from "node:timers/promises";
import { geodesicAreaM2 } from "../geo/area.js";
import { boundingBox } from "../geo/bbox.js";
import { shareOverlayAllowances } from "../geo/overlay-allowances.js";
import type { SearchArea } from "../geo/types.js";
import { checkGeometry } from "../geo/validity.js";
import { ExactTestAllowance, READ_ON_TURNS, type ResumePoint, resumingAt } from "../model/exact-tests.js";
import {
  AS_OF_PRODUCTION_ONLY,
  type Environment,
  geometryCharsOf,
  LIST_FILTERS,
  type ListFilter,
  type ListFilterValues,
  type ListQuery,
  type TimeRange,
} from "../model/list-query.js";
import type { Principal } from "../model/principal.js";
import type { NewSourceRecord, SourceRecord } from "../model/records.js";
import {
  AltIdTakenError,
  CapacityExceededError,
  type EventPage,
  type SourceStore,
  StoreUnavailableError,
} from "../store/port.js";
import type {
  CreateCommand,
  DeleteCommand,
  GetCommand,
  ListCommand,
  SearchCommand,
  SourcePageCommand,
} from "./commands.js";
import { altIdNotFound, invalid, LedgerError, sourceNotFound } from "./errors.js";
import type { IdScheme } from "./ids.js";
import { PageTokens, pageTokenKey } from "./page-token.js";
import { preview } from "./preview.js";
import {
  boxProblem,
  DEFAULT_LIST_LIMIT,
  limitProblem,
  offsetProblem,
  positionProblem,
  textProblem,
  yearProblem,
} from "./rules.js";
import { validateSourceDrafts } from "./validate.js";
import { mergeViolations, type Violation } from "./violation.js";
import { CounterpartView, type VisibleConflict, type VisibleEvent } from "./visibility.js";

export interface LedgerOptions {
  environment: Environment;
  store: SourceStore;
  newId: IdScheme;
  /**
   * The ledger's secret (configuration, or SourceStore.ledgerSecret, asked for when first needed so
   * that a store down at start does not stop the service): page tokens are keyed by it.
   */
  secret: Uint8Array | (() => Promise<Uint8Array>);
  now?: () => number;
}

/** A page of a source's history or conflicts. */
export interface Page<T> {
  items: T[];
  /** The token of the next page, or null on the last. */
  nextPageToken: string | null;
}

/** One page of a listing (docs/api.md §12). */
export interface ListPage {
  records: SourceRecord[];
  /** The token of the page after `records`, or null when no record follows them. */
  nextPageToken: string | null;
  /**
   * The token of the page starting after `record`, one of `records`: an adapter that sends fewer
   * records than it was given (a gRPC answer kept under 4 MiB) resumes the listing with it.
   */
  tokenAfter(record: SourceRecord): string;
}

/**
 * The ledger's four operations (docs/api.md §4–§8), for every protocol alike: each takes who is
 * calling and a command in domain form, and answers records or throws a LedgerError. Production
 * and sandbox are this core given a different store and id scheme.
 */
export interface Ledger {
  readonly environment: Environment;
  create(principal: Principal, command: CreateCommand): Promise<SourceRecord[]>;
  list(principal: Principal, command: ListCommand): Promise<ListPage>;
  /** A list of the sources whose exact geometry intersects an area (docs/api.md §13). */
  search(principal: Principal, command: SearchCommand): Promise<ListPage>;
  get(principal: Principal, command: GetCommand): Promise<SourceRecord>;
  /** A source's events, oldest first, also after it was deleted (docs/api.md §14). */
  history(principal: Principal, command: SourcePageCommand): Promise<Page<VisibleEvent>>;
  /** A live source's current conflicts, each explained, counterparts as the caller may see them. */
  conflicts(principal: Principal, command: SourcePageCommand): Promise<Page<VisibleConflict>>;
  delete(principal: Principal, command: DeleteCommand): Promise<void>;
}

/** Throws every violation, the adapter's and `found`, if there is any. */
function rejectIfInvalid(read: readonly Violation[] | undefined, found: readonly Violation[]): void {
  const all = mergeViolations(read ?? [], found);
  if (all.length > 0) throw invalid(all);
}

const MIB = 1024 * 1024;

/** Store failures as the ledger's refusals; anything else is a bug and passes on. */
function storeFailure(error: unknown): never {
  if (error instanceof StoreUnavailableError) {
    throw new LedgerError("unavailable", "the store is unavailable; retry later", [], { cause: error });
  }
  if (error instanceof CapacityExceededError) {
    const { limit, unit, retryAfterS } = error;
    const bound =
      unit !== "bytes"
        ? `${limit} ${unit}`
        : Number.isInteger(limit / MIB)
          ? `${limit / MIB} MB of memory`
          : `${limit} bytes of memory`;
    if (retryAfterS !== undefined) {
      throw new LedgerError(
        "exhausted",
        `the sandbox holds at most ${bound} across all accounts, and no idle session can be dropped ` +
          `to make room; retry in ${retryAfterS} s`,
        [],
        { retryAfterS },
      );
    }
    throw new LedgerError(
      "exhausted",
      `a sandbox session holds at most ${bound}; delete some sources or wait for the session to expire`,
    );
  }
  throw error;
}

/**
 * The account a caller's reads and deletes are confined to: null (every account) for admins only.
 * The authentication interceptor refuses a non-admin token without an account claim; reaching
 * here with one is a wiring bug, and must not widen the scope to every account.
 */
function accountScope(principal: Principal): string | null {
  if (principal.isAdmin) return null;
  if (principal.accountId === null) throw new Error("a non-admin principal without an account reached the ledger");
  return principal.accountId;
}

/** The account an admin-only `account_id` names, or a violation for everyone else. */
function requestedAccount(principal: Principal, accountId: string | undefined, violations: Violation[]) {
  if (accountId === undefined) return undefined;
  if (!principal.isAdmin) {
    violations.push({ field: "account_id", detail: "account_id is accepted only from admin tokens" });
    return undefined;
  }
  const problem = textProblem(accountId, "account_id");
  if (problem) violations.push({ field: "account_id", detail: problem });
  return accountId;
}

/** Why `value` does not fit `filter`, or null. */
function filterProblem(filter: ListFilter, value: NonNullable<ListFilterValues[keyof ListFilterValues]>) {
  switch (filter.kind) {
    case "text":
      return textProblem(value as string, filter.name);
    case "year":
      return yearProblem(value as number, filter.name);
    case "enum": {
      const name = value as string;
      return filter.vocabulary?.valueOf(name) === undefined
        ? (filter.vocabulary?.unknownName(filter.name, preview(name), true) ?? null)
        : null;
    }
    case "box":
      return boxProblem(value as NonNullable<ListFilterValues["bbox"]>, filter.name);
    case "range": {
      const { start, end } = value as TimeRange;
      return start !== undefined && end !== undefined && start > end
        ? `the range starts (${new Date(start).toISOString()}) after it ends (${new Date(end).toISOString()})`
        : null;
    }
    case "anyOf":
    case "bool":
    case "instant":
      return null;
  }
}

/** Why a search area is not one the ledger can search with; violations name the field `intersects`. */
function areaViolations(area: SearchArea | null): Violation[] {
  const field = "intersects";
  if (area === null) {
    return [{ field, detail: "intersects is required: a Point, a Polygon or a MultiPolygon (or a box over gRPC)" }];
  }
  if (area.type === "Point") {
    const problem = positionProblem(area.coordinates[0], area.coordinates[1], "the point");
    // At the point's coordinates (REST: /intersects/coordinates); over RPC the field is `point`.
    return problem ? [{ field, coordinates: [], detail: problem }] : [];
  }
  if (area.type === "Box") {
    const problem = boxProblem(area.box, "the box");
    return problem ? [{ field, detail: problem }] : [];
  }
  const geometryKind = area.type === "Polygon" ? "polygon" : "multi_polygon";
  return checkGeometry(area).map((issue) => ({ field, geometryKind, coordinates: issue.path, detail: issue.detail }));
}

/**
 * How many of the records read make the page: `limit`, or fewer where the geometry text reached
 * the budget (the store read one record past it, ListQuery.maxGeometryChars).
 */
function pageLength(found: readonly SourceRecord[], limit: number, maxGeometryChars: number | undefined): number {
  if (maxGeometryChars === undefined) return Math.min(found.length, limit);
  let chars = 0;
  for (let i = 0; i < found.length && i < limit; i++) {
    chars += geometryCharsOf(found[i]);
    if (chars >= maxGeometryChars) return i + 1;
  }
  return Math.min(found.length, limit);
}

/**
 * What a page token is bound to (docs/api.md §12), as one canonical text: the environment, who
 * asks, the account scope, every filter and the search area. Sets are sorted, so equal listings
 * bind equally however their filters were spelled.
 */
function bindingOf(
  environment: Environment,
  principal: Principal,
  query: Omit<ListQuery, "limit" | "offset" | "after">,
  /** The as_of instant as the caller gave it, past or not: a listing's tokens are bound to it. */
  asOf: number | undefined,
): string {
  const filters = LIST_FILTERS.map((filter) => {
    const value = query[filter.queryKey];
    if (value === undefined) return null;
    if (filter.kind === "anyOf") return [...(value as readonly string[])].sort();
    if (filter.kind === "box") {
      const { minX, minY, maxX, maxY } = value as NonNullable<ListFilterValues["bbox"]>;
      return [minX, minY, maxX, maxY];
    }
    if (filter.kind === "range") {
      const { start, end } = value as TimeRange;
      return [start ?? null, end ?? null];
    }
    return value;
  });
  const area = query.intersects;
  const where =
    area === undefined
      ? null
      : area.type === "Box"
        ? [area.type, area.box.minX, area.box.minY, area.box.maxX, area.box.maxY]
        : [area.type, area.coordinates];
  return JSON.stringify([
    environment,
    principal.isAdmin,
    principal.accountId,
    query.accountId,
    filters,
    where,
    asOf ?? null,
  ]);
}

/** The filters of `values` that `environment` offers, checked; the others are violations. */
function checkedFilters(environment: Environment, values: ListFilterValues, violations: Violation[]) {
  const filters: Record<string, unknown> = {};
  for (const filter of LIST_FILTERS) {
    const value = values[filter.queryKey];
    if (value === undefined) continue;
    if (!filter.environments.includes(environment)) {
      const where = filter.environments.join(" and the ");
      violations.push({ field: filter.name, detail: `the ${filter.name} filter exists only in the ${where}` });
      continue;
    }
    if (filter.kind === "anyOf") {
      const names = value as readonly string[];
      names.forEach((name, index) => {
        if (filter.vocabulary?.valueOf(name) === undefined) {
          const detail = filter.vocabulary?.unknownName(filter.name, preview(name), true) ?? "";
          violations.push({ field: filter.name, index, detail });
        }
      });
      // A value asked for twice matches the same sources as once.
      filters[filter.queryKey] = [...new Set(names)];
      continue;
    }
    const problem = filterProblem(filter, value);
    if (problem) violations.push({ field: filter.name, detail: problem });
    filters[filter.queryKey] = value;
  }
  return filters as ListFilterValues;
}

/** A history or conflicts command's id and limit checked; the limit to use. */
function pagedSourceCommand(command: SourcePageCommand): number {
  const violations: Violation[] = command.id === "" ? [{ field: "id", detail: "id is required" }] : [];
  const limit = command.limit ?? DEFAULT_LIST_LIMIT;
  const limitIssue = limitProblem(limit);
  if (limitIssue) violations.push({ field: "limit", detail: limitIssue });
  rejectIfInvalid(command.readViolations, violations);
  return limit;
}

/**
 * The event seq a history or conflicts page starts after (0: the first page). A token made for
 * another page of anything is refused, as is one of this listing that does not resume at one of
 * the source's events (a conflicts token of an earlier version, keyed on times and refs).
 */
function readSourcePageToken(keys: PageTokens, token: string | undefined, binding: string, id: string): number {
  if (token === undefined || token === "") return 0;
  const after = keys.read(token, binding);
  if (after === null || after.id !== id || !Number.isSafeInteger(after.createdAt) || after.createdAt < 1) {
    throw invalid([
      {
        field: "page_token",
        detail:
          "page_token does not belong to this listing: it was made for another source, caller or environment, by an earlier version, or was altered; start again without page_token",
      },
    ]);
  }
  return after.createdAt;
}

export function createLedger(options: LedgerOptions): Ledger {
  const { store, newId, environment } = options;
  const now = options.now ?? Date.now;

  function ownerForCreate(principal: Principal, accountId: string | undefined, violations: Violation[]) {
    const owner = requestedAccount(principal, accountId, violations) ?? principal.accountId;
    if (owner === null) {
      violations.push({
        field: "account_id",
        detail: "an admin token without an account claim must name the target account with account_id",
      });
    }
    return owner;
  }

  const { secret } = options;

  /**
   * An `as_of` instant the store must look back to: production only; one not in the past (now or
   * later) is the current ledger, read as such (docs/api.md §14).
   */
  function pastInstant(asOf: number | undefined, violations: Violation[]): number | undefined {
    if (asOf === undefined) return undefined;
    if (environment !== "production") {
      violations.push({ field: "as_of", detail: AS_OF_PRODUCTION_ONLY });
      return undefined;
    }
    return asOf < now() ? asOf : undefined;
  }
  let pageTokens: Promise<PageTokens> | null = null;
  let counterparts: Promise<CounterpartView> | null = null;
  /** The counterpart rule's keys, like the page tokens'. */
  function counterpartView(): Promise<CounterpartView> {
    if (counterparts === null) {
      const key = secret instanceof Uint8Array ? Promise.resolve(secret) : secret();
      counterparts = key.then((bytes) => new CounterpartView(bytes));
      counterparts.catch(() => {
        counterparts = null;
      });
    }
    return counterparts;
  }
  /** The page tokens' keys, derived once the secret is known; a failure to get it is retried next time. */
  function tokens(): Promise<PageTokens> {
    if (pageTokens === null) {
      const key = secret instanceof Uint8Array ? Promise.resolve(secret) : secret();
      pageTokens = key.then((bytes) => new PageTokens(pageTokenKey(bytes)));
      pageTokens.catch(() => {
        pageTokens = null;
      });
    }
    return pageTokens;
  }

  /** A page of the listing `command` names, within `area` when it is a search. */
  async function listPage(
    principal: Principal,
    command: ListCommand,
    area: SearchArea | undefined,
    areaIssues: Violation[],
  ): Promise<ListPage> {
    const violations: Violation[] = [...areaIssues];
    const account = requestedAccount(principal, command.accountId, violations);
    const filters = checkedFilters(environment, command.filters, violations);
    const limit = command.limit ?? DEFAULT_LIST_LIMIT;
    const limitIssue = limitProblem(limit);
    if (limitIssue) violations.push({ field: "limit", detail: limitIssue });
    const offset = command.offset ?? 0;
    const offsetIssue = offsetProblem(offset);
    if (offsetIssue) violations.push({ field: "offset", detail: offsetIssue });
    const asOf = pastInstant(command.asOf, violations);
    const scope = {
      ...filters,
      accountId: principal.isAdmin ? (account ?? null) : accountScope(principal),
      ...(asOf === undefined ? {} : { asOf }),
    };
    const listing: Omit<ListQuery, "limit" | "offset" | "after"> =
      area === undefined ? scope : { ...scope, intersects: area };
    // Only when a token is read or made: it spells out a search's whole area (up to 100,000 positions).
    let bindingText: string | undefined;
    const binding = () => {
      bindingText ??= bindingOf(environment, principal, listing, command.asOf);
      return bindingText;
    };
    const token = command.pageToken ?? "";
    if (token !== "" && command.offset !== undefined) {
      violations.push({
        field: "page_token",
        detail: "page_token cannot be combined with offset: the token already says where the page starts",
      });
    }
    rejectIfInvalid(command.readViolations, violations);
    let keys: PageTokens;
    try {
      keys = await tokens();
    } catch (error) {
      return storeFailure(error);
    }
    // Read once the listing is otherwise valid: a token cannot belong to filters that are wrong.
    const after = token === "" ? undefined : (keys.read(token, binding()) ?? undefined);
    if (token !== "" && after === undefined) {
      throw invalid([
        {
          field: "page_token",
          detail:
            "page_token does not belong to this listing: it was made for other filters, another account or " +
            "environment, or was altered; list again without page_token",
        },
      ]);
    }
    // A geometry's text takes at most 25 characters a coordinate, its encoding 8 bytes: four
    // times the answer's bytes in text always holds more than the answer can carry.
    const maxGeometryChars = command.answerBytes === undefined ? undefined : 4 * command.answerBytes;
    // One more than asked for: whether another page follows, without a count. geometryWire is how
    // the records are used, not what is listed: outside the token's binding.
    const page = { ...listing, limit: limit + 1, maxGeometryChars, geometryWire: command.geometryWire === true };
    let found: SourceRecord[];
    let stoppedAt: ResumePoint | undefined;
    try {
      // Reading stops where the page's exact tests spend their allowance (docs/api.md §13). A page
      // that holds no record by then reads on from there, in a later turn of the event loop: each
      // turn is bounded, and a page is empty only at the end, after READ_ON_TURNS turns (clients
      // such as GDAL stop at an empty page; one request must not read an account whole) or once
      // its caller is gone.
      // A token's skip (the offset's matches still to skip) is where its page starts, not a filter.
      let start: Pick<ListQuery, "after" | "offset"> = after === undefined ? { offset } : resumingAt(after);
      for (let turn = 1; ; turn++) {
        const exactTests = new ExactTestAllowance();
        found = await store.list({ ...page, ...start, exactTests });
        stoppedAt = exactTests.stoppedAt;
        if (found.length > 0 || stoppedAt === undefined || turn === READ_ON_TURNS) break;
        start = resumingAt(stoppedAt);
        await nextTurn();
        // Nobody waits for this page any more: what it found so far (nothing) is its answer.
        if (command.signal?.aborted === true) break;
      }
    } catch (error) {
      return storeFailure(error);
    }
    const records = found.slice(0, pageLength(found, limit, maxGeometryChars));
    const tokenAfter = (record: SourceRecord) => keys.mint({ createdAt: record.createdAt, id: record.id }, binding());
    const last = records.at(-1);
    // Records read past the page's end, or reading stopped past its last record: the next page
    // starts after that record, or where reading stopped, with the offset's matches still to skip
    // (none once the page holds a record).
    let nextPageToken: string | null = null;
    if (last !== undefined && found.length > records.length) nextPageToken = tokenAfter(last);
    else if (stoppedAt !== undefined) nextPageToken = keys.mint(stoppedAt, binding(), stoppedAt.skip);
    return { records, nextPageToken, tokenAfter };
  }

  /**
   * A page of a source's history or conflicts, both in the order of the source's own event seqs:
   * the id and limit checked, the page token read (before the source is looked up, so a bad token
   * is 422 for any id), then `read` from the store (one more than the limit, to tell whether another
   * page follows) beside the counterpart view; nothing in scope is 404.
   */
  async function sourcePage<T extends { seq: number }>(
    principal: Principal,
    command: SourcePageCommand,
    listing: "history" | "conflicts",
    read: (scope: string | null, page: EventPage) => Promise<T[] | null>,
  ): Promise<{ items: T[]; view: CounterpartView; nextPageToken: string | null }> {
    const limit = pagedSourceCommand(command);
    const scope = accountScope(principal);
    const binding = JSON.stringify([environment, listing, principal.isAdmin, principal.accountId, command.id]);
    let found: T[] | null;
    let view: CounterpartView;
    let keys: PageTokens;
    try {
      keys = await tokens();
      const afterSeq = readSourcePageToken(keys, command.pageToken, binding, command.id);
      [found, view] = await Promise.all([read(scope, { afterSeq, limit: limit + 1 }), counterpartView()]);
    } catch (error) {
      if (error instanceof LedgerError) throw error;
      return storeFailure(error);
    }
    if (found === null) throw sourceNotFound(command.id);
    const items = found.slice(0, limit);
    const last = items.at(-1);
    const more = found.length > limit && last !== undefined;
    return { items, view, nextPageToken: more ? keys.mint({ createdAt: last.seq, id: command.id }, binding) : null };
  }

  return {
    environment,

    async create(principal, command) {
      accountScope(principal);
      const violations: Violation[] = [];
      const owner = ownerForCreate(principal, command.accountId, violations);
      const { valid, violations: sourceViolations } = validateSourceDrafts(command.sources);
      rejectIfInvalid(command.readViolations, [...violations, ...sourceViolations]);
      const createdAt = now();
      // Each member named rather than `...source`: the spread then ten more members grew the
      // new object's property store step by step (~6 KB allocated a source, ~650 B more of it kept
      // through the commit; docs/benchmarks.md). `satisfies` asks for every member, optional ones too.
      const records: NewSourceRecord[] = valid.map(
        (source) =>
          ({
            altId: source.altId,
            methodology: source.methodology,
            tags: source.tags,
            stewardId: source.stewardId,
            projectId: source.projectId,
            outcomeReportingYear: source.outcomeReportingYear,
            sourceType: source.sourceType,
            attributeType: source.attributeType,
            geometrySource: source.geometrySource,
            geometry: source.geometry,
            startAt: source.startAt,
            endAt: source.endAt,
            id: newId(),
            accountId: owner as string,
            bbox: boundingBox(source.geometry),
            areaM2: geodesicAreaM2(source.geometry),
            createdBy: principal.actor,
            updatedBy: principal.actor,
            createdAt,
            updatedAt: createdAt,
            conflict: false,
            unepOverlap: null,
          }) satisfies Required<NewSourceRecord>,
      );
      shareOverlayAllowances(records.map((record) => record.geometry));
      try {
        return await store.insertMany(records);
      } catch (error) {
        if (error instanceof AltIdTakenError) {
          const taken = new Set(error.altIds);
          const clashes = records.flatMap((r, source) =>
            taken.has(r.altId)
              ? [
                  {
                    source,
                    field: "alt_id",
                    detail: `alt_id ${preview(r.altId)} is already used by a source of this account`,
                  },
                ]
              : [],
          );
          throw new LedgerError("already_exists", "alt_id already used", clashes);
        }
        return storeFailure(error);
      }
    },

    list(principal, command) {
      return listPage(principal, command, undefined, []);
    },

    search(principal, command) {
      return listPage(principal, command, command.area ?? undefined, areaViolations(command.area));
    },

    async history(principal, command) {
      // Events are only ever appended: a page starts after the last seq it was given.
      const { items, view, nextPageToken } = await sourcePage(principal, command, "history", (scope, page) =>
        store.history(command.id, scope, page),
      );
      return { items: items.map((event) => view.event(principal, event)), nextPageToken };
    },

    async conflicts(principal, command) {
      // In the order the source's history recorded its pairs (the seq of each one's conflict_set
      // event): the token names only the source's own history, never a counterpart (docs/api.md
      // §14), and refs are derived for the page's conflicts only.
      const { items, view, nextPageToken } = await sourcePage(principal, command, "conflicts", (scope, page) =>
        store.conflictsOf(command.id, scope, page),
      );
      return {
        items: items.map((conflict) => ({
          counterpart: view.counterpart(principal, command.id, conflict.counterpart),
          measure: conflict.measure,
          detectedAt: conflict.detectedAt,
        })),
        nextPageToken,
      };
    },

    async get(principal, command) {
      const violations: Violation[] = command.id === "" ? [{ field: "id", detail: "id is required" }] : [];
      const asOf = pastInstant(command.asOf, violations);
      rejectIfInvalid(command.readViolations, violations);
      let record: SourceRecord | null;
      try {
        const scope = accountScope(principal);
        record =
          asOf === undefined
            ? await store.get(command.id, scope, { geometryWire: command.geometryWire === true })
            : await store.getAsOf(command.id, scope, asOf);
      } catch (error) {
        return storeFailure(error);
      }
      if (!record) throw sourceNotFound(command.id);
      return record;
    },

    async delete(principal, command) {
      const violations: Violation[] = [];
      const named = requestedAccount(principal, command.accountId, violations);
      const { key } = command;
      if (key === null) {
        violations.push({ field: "id", detail: "id or alt_id is required" });
      } else if (key.value === "") {
        violations.push({ field: key.by, detail: `${key.by} must not be empty` });
      } else if (key.by === "alt_id") {
        // As the alt_id list filter: no stored alt_id is longer, yet the caller learns why.
        const tooLong = textProblem(key.value, "alt_id");
        if (tooLong) violations.push({ field: "alt_id", detail: tooLong });
      }
      if (key?.by === "alt_id" && principal.isAdmin && named === undefined) {
        violations.push({
          field: "account_id",
          detail: "admin tokens must name the account with account_id to delete by alt_id",
        });
      }
      rejectIfInvalid(command.readViolations, violations);
      const scope = principal.isAdmin ? (named ?? null) : accountScope(principal);
      const { by, value } = key as NonNullable<DeleteCommand["key"]>;
      const change = { by: principal.actor, at: now() };
      let deleted: boolean;
      try {
        deleted =
          by === "alt_id"
            ? await store.deleteByAltId(value, scope as string, change)
            : await store.deleteById(value, scope, change);
      } catch (error) {
        return storeFailure(error);
      }
      if (!deleted) throw by === "alt_id" ? altIdNotFound(value) : sourceNotFound(value);
    },
  };
}
