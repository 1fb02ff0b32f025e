import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { Source, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { principalKey } from "../auth/principal.js";
import type { Ledger } from "../ledger/ledger.js";
import type { Violation } from "../ledger/violation.js";
import type { Principal } from "../model/principal.js";
import type { SourceRecord } from "../model/records.js";
import { deleteKeyOf, draftOf, listFiltersOf } from "./decode.js";
import { asConnect } from "./errors.js";
import { decodeViolationsKey, recordSinkKey } from "./in-process.js";
import { toProtoSource } from "./messages.js";

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
      const found: Violation[] = [];
      const filters = listFiltersOf(req, found);
      const command = {
        accountId: req.accountId,
        filters,
        limit: req.limit,
        offset: req.offset,
        readViolations: readViolations(context, found),
      };
      const records = await asConnect(() => ledger.list(principal, command));
      return { sources: present(context, records) };
    },

    async getSource(req, context) {
      const principal = principalOf(context);
      const record = await asConnect(() =>
        ledger.get(principal, { id: req.id, readViolations: readViolations(context, []) }),
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
