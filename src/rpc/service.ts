import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type ListSourcesRequest,
  ListSourcesRequestSchema,
  type SearchSourcesRequest,
  type Source,
  type SourceLedgerService,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { principalKey } from "../auth/principal.js";
import type { ListCommand } from "../ledger/commands.js";
import { LedgerError } from "../ledger/errors.js";
import type { Ledger, ListPage } from "../ledger/ledger.js";
import type { Violation } from "../ledger/violation.js";
import type { Principal } from "../model/principal.js";
import type { SourceRecord } from "../model/records.js";
import { answersInProtobufBinary } from "./binary-answers.js";
import { asOfOf, deleteKeyOf, draftOf, listFiltersOf, searchAreaOf } from "./decode.js";
import { asConnect } from "./errors.js";
import { toProtoConflict, toProtoEvent } from "./history-messages.js";
import { conflictSinkKey, decodeViolationsKey, eventSinkKey, recordSinkKey } from "./in-process.js";
import { toProtoSource } from "./messages.js";
import { type AnswerCodec, cappedPage, MAX_PAGE_BYTES } from "./page-size.js";

function principalOf(context: HandlerContext): Principal {
  const principal = context.values.get(principalKey);
  // The authentication interceptor runs before every method; reaching here without it is a wiring bug.
  if (!principal) throw new ConnectError("no principal on an authenticated route", Code.Internal);
  return principal;
}

/** The in-process caller's decode violations first, then what reading the message found. */
function readViolations(context: HandlerContext, found: Violation[]): readonly Violation[] {
  const decoded = context.values.get(decodeViolationsKey);
  return found.length === 0 ? decoded : [...decoded, ...found];
}

/** Records as Source messages, or into the in-process caller's sink (then the message stays empty). */
function present(context: HandlerContext, records: SourceRecord[]): Source[] {
  const sink = context.values.get(recordSinkKey);
  if (sink === null) return records.map(toProtoSource);
  sink.push(...records);
  return [];
}

/** Connect JSON, gRPC and gRPC-Web with the JSON codec (`…json`) answer in JSON; the rest in binary. */
function codecOf(context: HandlerContext): AnswerCodec {
  return /json/i.test(context.requestHeader.get("content-type") ?? "") ? "json" : "binary";
}

/**
 * A page as the answer's sources and next_page_token. An in-process caller's sink takes every
 * record (REST streams its JSON, with no message size limit); a message answer stops early to stay
 * under 4 MiB encoded (page-size.ts).
 */
function presentPage(context: HandlerContext, page: ListPage): { sources: Source[]; nextPageToken: string } {
  const sink = context.values.get(recordSinkKey);
  if (sink === null) return cappedPage(page, toProtoSource, codecOf(context));
  sink.push(...page.records);
  return { sources: [], nextPageToken: page.nextPageToken ?? "" };
}

/**
 * Whether the answer's sources go out in protobuf binary, written by preEncodedSourceAnswers: the
 * store may then attach each geometry's stored wire bytes (RecordRead.geometryWire).
 */
function writesGeometryWire(context: HandlerContext): boolean {
  return context.values.get(recordSinkKey) === null && answersInProtobufBinary(context.requestHeader);
}

/** A ListSourcesRequest's command: filters, paging and the admin's account scope. */
function listCommandOf(req: ListSourcesRequest, context: HandlerContext, found: Violation[]): ListCommand {
  const filters = listFiltersOf(req, found);
  return {
    accountId: req.accountId,
    filters,
    limit: req.limit,
    offset: req.offset,
    pageToken: req.pageToken,
    asOf: asOfOf(req.asOf, found),
    // A message answer carries at most MAX_PAGE_BYTES of sources; REST streams every record.
    answerBytes: context.values.get(recordSinkKey) === null ? MAX_PAGE_BYTES : undefined,
    geometryWire: writesGeometryWire(context),
    readViolations: readViolations(context, found),
    signal: context.signal,
  };
}

/**
 * A page whose caller is gone stopped reading early (ListCommand.signal) and is not answered as if
 * whole: its signal's reason when Connect gave one (`deadline_exceeded` once the call's timeout
 * passed, `canceled` for a reset stream), else `canceled`. Nobody reads it but the call's log.
 */
function whileAwaited(context: HandlerContext, page: ListPage): ListPage {
  const { signal } = context;
  if (!signal.aborted) return page;
  throw signal.reason instanceof ConnectError
    ? signal.reason
    : new ConnectError("the caller went away before the page was answered", Code.Canceled);
}

/**
 * Where a search's violations are in SearchSourcesRequest: the area's under the oneof case the
 * request set, the listing's under `query`. An in-process caller (REST) names its own pointers.
 */
function inSearchRequest(req: SearchSourcesRequest, error: unknown): unknown {
  if (!(error instanceof LedgerError) || error.violations.length === 0) return error;
  // The oneof's cases (point, box, geometry) are one word: the field name as it is.
  const area = req.intersects.case ?? "intersects";
  const violations = error.violations.map((v) =>
    v.pointer !== undefined ? v : { ...v, field: v.field === "intersects" ? area : `query.${v.field}` },
  );
  return new LedgerError(error.kind, error.message, violations, { cause: error.cause, retryAfterS: error.retryAfterS });
}

/**
 * SourceLedgerService, implemented once for every protocol (docs/api.md §9): messages → the
 * ledger's commands, records → messages, the ledger's refusals → ConnectErrors. Production and
 * sandbox are this adapter over a different ledger.
 */
export function createServiceImpl(ledger: Ledger): ServiceImpl<typeof SourceLedgerService> {
  return {
    async createSources(req, context) {
      const principal = principalOf(context);
      const found: Violation[] = [];
      const sources = req.sources.map((input, i) => draftOf(input, i, found));
      const command = { accountId: req.accountId, sources, readViolations: readViolations(context, found) };
      const records = await asConnect(() => ledger.create(principal, command));
      return { sources: present(context, records) };
    },

    async listSources(req, context) {
      const principal = principalOf(context);
      const command = listCommandOf(req, context, []);
      return presentPage(context, whileAwaited(context, await asConnect(() => ledger.list(principal, command))));
    },

    async searchSources(req, context) {
      const principal = principalOf(context);
      const found: Violation[] = [];
      const area = searchAreaOf(req, found);
      const query = req.query ?? create(ListSourcesRequestSchema);
      const command = { ...listCommandOf(query, context, found), area };
      const page = await asConnect(async () => {
        try {
          return await ledger.search(principal, command);
        } catch (error) {
          throw context.values.get(recordSinkKey) === null ? inSearchRequest(req, error) : error;
        }
      });
      return presentPage(context, whileAwaited(context, page));
    },

    async listSourceEvents(req, context) {
      const principal = principalOf(context);
      const command = {
        id: req.id,
        limit: req.limit,
        pageToken: req.pageToken,
        readViolations: readViolations(context, []),
      };
      const page = await asConnect(() => ledger.history(principal, command));
      const nextPageToken = page.nextPageToken ?? "";
      const sink = context.values.get(eventSinkKey);
      if (sink === null) return { events: page.items.map(toProtoEvent), nextPageToken };
      sink.push(...page.items);
      return { events: [], nextPageToken };
    },

    async listConflicts(req, context) {
      const principal = principalOf(context);
      const command = {
        id: req.id,
        limit: req.limit,
        pageToken: req.pageToken,
        readViolations: readViolations(context, []),
      };
      const page = await asConnect(() => ledger.conflicts(principal, command));
      const nextPageToken = page.nextPageToken ?? "";
      const sink = context.values.get(conflictSinkKey);
      if (sink === null) return { conflicts: page.items.map(toProtoConflict), nextPageToken };
      sink.push(...page.items);
      return { conflicts: [], nextPageToken };
    },

    async getSource(req, context) {
      const principal = principalOf(context);
      const found: Violation[] = [];
      const asOf = asOfOf(req.asOf, found);
      const record = await asConnect(() =>
        ledger.get(principal, {
          id: req.id,
          asOf,
          geometryWire: writesGeometryWire(context),
          readViolations: readViolations(context, found),
        }),
      );
      return { source: present(context, [record])[0] };
    },

    async deleteSource(req, context) {
      const principal = principalOf(context);
      const command = { key: deleteKeyOf(req), accountId: req.accountId, readViolations: readViolations(context, []) };
      await asConnect(() => ledger.delete(principal, command));
      return {};
    },
  };
}
