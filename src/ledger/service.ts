import { Code, ConnectError, createContextKey, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type {
  CreateSourcesRequest,
  DeleteSourceRequest,
  ListSourcesRequest,
  Source,
  SourceLedgerService,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { type Principal, principalKey } from "../auth/principal.js";
import { geodesicAreaM2 } from "../geo/area.js";
import { boundingBox } from "../geo/bbox.js";
import {
  AltIdTakenError,
  CapacityExceededError,
  type ListQuery,
  type NewSourceRecord,
  type SourceRecord,
  type SourceStore,
  StoreUnavailableError,
} from "../store/port.js";
import { FieldViolationsError, notFound } from "./errors.js";
import type { IdScheme } from "./ids.js";
import { toProtoSource } from "./records.js";
import { checkIdentifierText, validateSourceInputs } from "./validate.js";
import { type Violation, violationKey, WHOLE_SOURCE } from "./violation.js";
import { attributeTypes, geometrySources, sourceTypes } from "./vocabulary.js";
import { answersInProtobufBinary } from "./wire-format.js";

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;

/**
 * Violations a transport found while decoding its own wire form (REST JSON) into the request
 * message. The service reports them together with its own, after authentication, so that a
 * client sees every problem at once and never a 422 before a 401 or 403.
 */
export const decodeViolationsKey = createContextKey<Violation[]>([], { description: "transport decode violations" });

/**
 * When a caller sets this, the service hands it the records it answers with instead of building
 * Source messages: the in-process REST adapter renders its JSON straight from them. Everything
 * else (authentication, validation, the store) is the same call.
 */
export const recordSinkKey = createContextKey<SourceRecord[] | null>(null, { description: "record sink" });

function present(context: HandlerContext, records: SourceRecord[]): Source[] {
  const sink = context.values.get(recordSinkKey);
  if (sink === null) {
    const options = { geometryAsWireBytes: answersInProtobufBinary(context.requestHeader) };
    return records.map((record) => toProtoSource(record, options));
  }
  sink.push(...records);
  return [];
}

export interface LedgerServiceOptions {
  environment: "production" | "sandbox";
  store: SourceStore;
  newId: IdScheme;
  now?: () => number;
}

function principalOf(context: HandlerContext): Principal {
  const principal = context.values.get(principalKey);
  // The authentication interceptor runs before every method; reaching here without it is a wiring bug.
  if (!principal) throw new ConnectError("no principal on an authenticated route", Code.Internal);
  return principal;
}

/** Throws the transport's decode violations merged with `found`, if there are any. */
function rejectIfInvalid(context: HandlerContext, found: Violation[], code: Code = Code.InvalidArgument): void {
  const decoded = context.values.get(decodeViolationsKey);
  const seen = new Set(decoded.map(violationKey));
  // A source the transport could not read at all has nothing more worth reporting.
  const unreadable = new Set(decoded.filter((v) => v.field === WHOLE_SOURCE).map((v) => v.source));
  const all = [
    ...decoded,
    ...found.filter((v) => !seen.has(violationKey(v)) && !(v.source !== undefined && unreadable.has(v.source))),
  ];
  if (all.length > 0) throw new FieldViolationsError(all, code);
}

function storeFailure(error: unknown): never {
  if (error instanceof StoreUnavailableError) {
    throw new ConnectError("the store is unavailable; retry later", Code.Unavailable, undefined, undefined, error);
  }
  throw error;
}

/** The account an admin-only `account_id` request field names, or a violation for everyone else. */
function requestedAccount(
  principal: Principal,
  accountId: string | undefined,
  violations: Violation[],
): string | undefined {
  if (accountId === undefined) return undefined;
  if (!principal.isAdmin) {
    violations.push({ field: "account_id", detail: "account_id is accepted only from admin tokens" });
    return undefined;
  }
  const problem = checkIdentifierText(accountId, "account_id");
  if (problem) violations.push({ field: "account_id", detail: problem });
  return accountId;
}

function listQueryOf(
  req: ListSourcesRequest,
  principal: Principal,
  environment: "production" | "sandbox",
  violations: Violation[],
): ListQuery {
  const account = requestedAccount(principal, req.accountId, violations);
  for (const [field, value] of [
    ["methodology", req.methodology],
    ["steward_id", req.stewardId],
    ["project_id", req.projectId],
  ] as const) {
    const problem = value === undefined ? null : checkIdentifierText(value, field);
    if (problem) violations.push({ field, detail: problem });
  }
  if (environment === "production") {
    if (req.id !== undefined) violations.push({ field: "id", detail: "the id filter exists only in the sandbox" });
    if (req.altId !== undefined)
      violations.push({ field: "alt_id", detail: "the alt_id filter exists only in the sandbox" });
  } else {
    for (const [field, value] of [
      ["id", req.id],
      ["alt_id", req.altId],
    ] as const) {
      const problem = value === undefined ? null : checkIdentifierText(value, field);
      if (problem) violations.push({ field, detail: problem });
    }
  }
  const limit = req.limit ?? DEFAULT_LIST_LIMIT;
  if (limit < 1 || limit > MAX_LIST_LIMIT) {
    violations.push({ field: "limit", detail: `limit must be from 1 to ${MAX_LIST_LIMIT}, got ${limit}` });
  }
  const offset = req.offset ?? 0;
  if (offset < 0) violations.push({ field: "offset", detail: `offset must be 0 or more, got ${offset}` });
  const year = req.outcomeReportingYear;
  if (year !== undefined && (year < 1000 || year > 9999)) {
    violations.push({
      field: "outcome_reporting_year",
      detail: `outcome_reporting_year must be a year from 1000 to 9999, got ${year}`,
    });
  }
  const sourceType = req.sourceType === 0 ? undefined : sourceTypes.nameOf(req.sourceType);
  if (req.sourceType !== 0 && sourceType === undefined) {
    violations.push({
      field: "source_type",
      detail: `source_type ${req.sourceType} is not one of ${sourceTypes.names.join(", ")}`,
    });
  }
  const geometrySource = req.geometrySource === 0 ? undefined : geometrySources.nameOf(req.geometrySource);
  if (req.geometrySource !== 0 && geometrySource === undefined) {
    violations.push({
      field: "geometry_source",
      detail: `geometry_source ${req.geometrySource} is not one of ${geometrySources.names.join(", ")}`,
    });
  }
  const attributeNames: string[] = [];
  req.attributeType.forEach((value, index) => {
    const name = attributeTypes.nameOf(value);
    if (name === undefined) {
      violations.push({
        field: "attribute_type",
        index,
        detail: `attribute_type ${value} is not one of ${attributeTypes.names.join(", ")}`,
      });
    } else if (!attributeNames.includes(name)) {
      attributeNames.push(name);
    }
  });
  return {
    accountId: principal.isAdmin ? (account ?? null) : principal.accountId,
    methodology: req.methodology,
    stewardId: req.stewardId,
    projectId: req.projectId,
    outcomeReportingYear: year,
    sourceType,
    attributeTypes: attributeNames,
    geometrySource,
    id: req.id,
    altId: req.altId,
    limit,
    offset,
  };
}

/**
 * SourceLedgerService, implemented once. Production and sandbox are this implementation given a
 * different store and id scheme (contract §9).
 */
export function createLedgerService(options: LedgerServiceOptions): ServiceImpl<typeof SourceLedgerService> {
  const { store, newId, environment } = options;
  const now = options.now ?? Date.now;

  function ownerForCreate(req: CreateSourcesRequest, principal: Principal, violations: Violation[]): string | null {
    const named = requestedAccount(principal, req.accountId, violations);
    const owner = named ?? principal.accountId;
    if (owner === null) {
      violations.push({
        field: "account_id",
        detail: "an admin token without an account claim must name the target account with account_id",
      });
    }
    return owner;
  }

  return {
    async createSources(req, context) {
      const principal = principalOf(context);
      const violations: Violation[] = [];
      const owner = ownerForCreate(req, principal, violations);
      const { valid, violations: sourceViolations } = validateSourceInputs(req.sources);
      rejectIfInvalid(context, [...violations, ...sourceViolations]);
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
        const stored = await store.insertMany(records);
        return { sources: present(context, stored) };
      } catch (error) {
        if (error instanceof AltIdTakenError) {
          const taken = new Set(error.altIds);
          throw new FieldViolationsError(
            records.flatMap((r, source) =>
              taken.has(r.altId)
                ? [
                    {
                      source,
                      field: "alt_id",
                      detail: `alt_id "${r.altId}" is already used by a source of this account`,
                    },
                  ]
                : [],
            ),
            Code.AlreadyExists,
          );
        }
        if (error instanceof CapacityExceededError) {
          throw new ConnectError(
            `a sandbox session holds at most ${error.limit} ${error.unit}; delete some sources or wait for the session to expire`,
            Code.ResourceExhausted,
          );
        }
        return storeFailure(error);
      }
    },

    async listSources(req, context) {
      const principal = principalOf(context);
      const violations: Violation[] = [];
      const query = listQueryOf(req, principal, environment, violations);
      rejectIfInvalid(context, violations);
      try {
        const records = await store.list(query);
        return { sources: present(context, records) };
      } catch (error) {
        return storeFailure(error);
      }
    },

    async getSource(req, context) {
      const principal = principalOf(context);
      rejectIfInvalid(context, req.id === "" ? [{ field: "id", detail: "id is required" }] : []);
      try {
        const record = await store.get(req.id, principal.isAdmin ? null : principal.accountId);
        if (!record) throw notFound(`source "${req.id}"`);
        return { source: present(context, [record])[0] };
      } catch (error) {
        if (error instanceof ConnectError) throw error;
        return storeFailure(error);
      }
    },

    async deleteSource(req: DeleteSourceRequest, context) {
      const principal = principalOf(context);
      const violations: Violation[] = [];
      const named = requestedAccount(principal, req.accountId, violations);
      const key = req.key;
      if (key.case === undefined) {
        violations.push({ field: "id", detail: "id or alt_id is required" });
      } else if (key.value === "") {
        const field = key.case === "altId" ? "alt_id" : "id";
        violations.push({ field, detail: `${field} must not be empty` });
      }
      if (key.case === "altId" && principal.isAdmin && named === undefined) {
        violations.push({
          field: "account_id",
          detail: "admin tokens must name the account with account_id to delete by alt_id",
        });
      }
      rejectIfInvalid(context, violations);
      const scope = principal.isAdmin ? (named ?? null) : principal.accountId;
      try {
        const deleted =
          key.case === "altId"
            ? await store.deleteByAltId(key.value, scope as string)
            : await store.deleteById(key.value as string, scope);
        if (!deleted) {
          throw notFound(key.case === "altId" ? `source with alt_id "${key.value}"` : `source "${key.value}"`);
        }
        return {};
      } catch (error) {
        if (error instanceof ConnectError) throw error;
        return storeFailure(error);
      }
    },
  };
}
