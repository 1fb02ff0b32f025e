import { geodesicAreaM2 } from "../geo/area.js";
import { boundingBox } from "../geo/bbox.js";
import {
  type Environment,
  LIST_FILTERS,
  type ListFilter,
  type ListFilterValues,
  type ListQuery,
} from "../model/list-query.js";
import type { Principal } from "../model/principal.js";
import type { NewSourceRecord, SourceRecord } from "../model/records.js";
import { AltIdTakenError, CapacityExceededError, type SourceStore, StoreUnavailableError } from "../store/port.js";
import type { CreateCommand, DeleteCommand, GetCommand, ListCommand } from "./commands.js";
import { invalid, LedgerError, notFound } from "./errors.js";
import type { IdScheme } from "./ids.js";
import { DEFAULT_LIST_LIMIT, limitProblem, offsetProblem, textProblem, yearProblem } from "./rules.js";
import { validateSourceDrafts } from "./validate.js";
import { mergeViolations, type Violation } from "./violation.js";

export interface LedgerOptions {
  environment: Environment;
  store: SourceStore;
  newId: IdScheme;
  now?: () => number;
}

/**
 * The ledger's four operations (docs/api.md §4–§8), for every protocol alike: each takes who is
 * calling and a command in domain form, and answers records or throws a LedgerError. Production
 * and sandbox are this core given a different store and id scheme.
 */
export interface Ledger {
  readonly environment: Environment;
  create(principal: Principal, command: CreateCommand): Promise<SourceRecord[]>;
  list(principal: Principal, command: ListCommand): Promise<SourceRecord[]>;
  get(principal: Principal, command: GetCommand): Promise<SourceRecord>;
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
        ? (filter.vocabulary?.unknownName(filter.name, JSON.stringify(name), true) ?? null)
        : null;
    }
    case "anyOf":
      return null;
  }
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
          const detail = filter.vocabulary?.unknownName(filter.name, JSON.stringify(name), true) ?? "";
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

  return {
    environment,

    async create(principal, command) {
      accountScope(principal);
      const violations: Violation[] = [];
      const owner = ownerForCreate(principal, command.accountId, violations);
      const { valid, violations: sourceViolations } = validateSourceDrafts(command.sources);
      rejectIfInvalid(command.readViolations, [...violations, ...sourceViolations]);
      const createdAt = now();
      const records: NewSourceRecord[] = valid.map((source) => ({
        ...source,
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
      }));
      try {
        return await store.insertMany(records);
      } catch (error) {
        if (error instanceof AltIdTakenError) {
          const taken = new Set(error.altIds);
          const clashes = records.flatMap((r, source) =>
            taken.has(r.altId)
              ? [{ source, field: "alt_id", detail: `alt_id "${r.altId}" is already used by a source of this account` }]
              : [],
          );
          throw new LedgerError("already_exists", "alt_id already used", clashes);
        }
        return storeFailure(error);
      }
    },

    async list(principal, command) {
      const violations: Violation[] = [];
      const account = requestedAccount(principal, command.accountId, violations);
      const filters = checkedFilters(environment, command.filters, violations);
      const limit = command.limit ?? DEFAULT_LIST_LIMIT;
      const limitIssue = limitProblem(limit);
      if (limitIssue) violations.push({ field: "limit", detail: limitIssue });
      const offset = command.offset ?? 0;
      const offsetIssue = offsetProblem(offset);
      if (offsetIssue) violations.push({ field: "offset", detail: offsetIssue });
      rejectIfInvalid(command.readViolations, violations);
      const query: ListQuery = {
        ...filters,
        accountId: principal.isAdmin ? (account ?? null) : accountScope(principal),
        limit,
        offset,
      };
      try {
        return await store.list(query);
      } catch (error) {
        return storeFailure(error);
      }
    },

    async get(principal, command) {
      rejectIfInvalid(command.readViolations, command.id === "" ? [{ field: "id", detail: "id is required" }] : []);
      let record: SourceRecord | null;
      try {
        record = await store.get(command.id, accountScope(principal));
      } catch (error) {
        return storeFailure(error);
      }
      if (!record) throw notFound(`source "${command.id}"`);
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
      let deleted: boolean;
      try {
        deleted =
          by === "alt_id" ? await store.deleteByAltId(value, scope as string) : await store.deleteById(value, scope);
      } catch (error) {
        return storeFailure(error);
      }
      if (!deleted) throw notFound(by === "alt_id" ? `source with alt_id "${value}"` : `source "${value}"`);
    },
  };
}
