import { createContextKey } from "@connectrpc/connect";
import type { Violation } from "../ledger/violation.js";
import type { VisibleConflict, VisibleEvent } from "../ledger/visibility.js";
import type { SourceRecord } from "../model/records.js";

/**
 * What an in-process caller (the REST adapter) hands the one implementation besides the request
 * message. Connect, gRPC and gRPC-Web callers never set these: they read their defaults.
 */

/**
 * Violations the caller found while decoding its own wire form (REST JSON) into the request
 * message. The ledger reports them together with its own, after authentication, so that a client
 * sees every problem at once and never a 422 before a 401 or 403.
 */
export const decodeViolationsKey = createContextKey<readonly Violation[]>([], {
  description: "in-process caller's decode violations",
});

/**
 * When set, the implementation hands the caller the records it answers with instead of building
 * Source messages: the REST adapter renders its JSON straight from them. Everything else
 * (authentication, the ledger, the store) is the same call.
 */
export const recordSinkKey = createContextKey<SourceRecord[] | null>(null, { description: "record sink" });

/** Like recordSinkKey, for a source's history: the events as the ledger answers them. */
export const eventSinkKey = createContextKey<VisibleEvent[] | null>(null, { description: "event sink" });

/** Like recordSinkKey, for a source's conflicts. */
export const conflictSinkKey = createContextKey<VisibleConflict[] | null>(null, { description: "conflict sink" });
