import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { LedgerError, type LedgerErrorKind } from "../ledger/errors.js";
import type { Violation } from "../ledger/violation.js";
import { retryHint } from "../model/retry-hint.js";

/**
 * The most violations one error detail carries: a gRPC error travels in HTTP/2 trailers, and a
 * detail listing every position of a 100,000-vertex geometry would overflow the frame.
 */
export const MAX_DETAIL_VIOLATIONS = 100;

const CODE: Readonly<Record<LedgerErrorKind, Code>> = {
  invalid: Code.InvalidArgument,
  already_exists: Code.AlreadyExists,
  not_found: Code.NotFound,
  exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
};

/** `sources[3].geometry.polygon.rings[0].coordinates[8]`: where a violation is, in the request message. */
export function fieldPath(v: Violation): string {
  let path = v.source === undefined ? v.field : `sources[${v.source}].${v.field}`;
  if (v.index !== undefined) path += `[${v.index}]`;
  if (v.coordinates && v.geometryKind) path += geometrySuffix(v.geometryKind, v.coordinates);
  return path;
}

function geometrySuffix(kind: "polygon" | "multi_polygon", coordinates: number[]): string {
  const [polygon, ring, position] = kind === "polygon" ? [undefined, ...coordinates] : coordinates;
  let path = kind === "polygon" ? ".polygon" : ".multi_polygon";
  if (kind === "multi_polygon" && polygon !== undefined) path += `.polygons[${polygon}]`;
  if (ring !== undefined) path += `.rings[${ring}]`;
  if (position !== undefined) path += `.coordinates[${position * 2}]`;
  return path;
}

function summarise(violations: readonly Violation[]): string {
  const first = violations[0];
  if (!first) return "request is invalid";
  const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : "";
  return `${fieldPath(first)}: ${first.detail}${more}`;
}

/**
 * A google.rpc.BadRequest detail (docs/api.md §9.5) listing at most MAX_DETAIL_VIOLATIONS, then
 * how many more there are. `field` is the proto field path, `description` the REST detail's text.
 * No JSON pointer: `field` carries the same path (the pointer is `field` with `.` and `[i]`
 * written as `/`), google's field 3 is `reason`, an UPPER_SNAKE_CASE code that a path would
 * break, and REST answers keep their own pointers into the JSON body.
 */
function badRequest(violations: readonly Violation[]) {
  const shown = violations.slice(0, MAX_DETAIL_VIOLATIONS).map((v) => ({ field: fieldPath(v), description: v.detail }));
  if (violations.length > MAX_DETAIL_VIOLATIONS) {
    const more = `and ${violations.length - MAX_DETAIL_VIOLATIONS} more violations`;
    shown.push({ field: "", description: more });
  }
  return { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: shown }) };
}

/**
 * A refusal of the ledger as the ConnectError every protocol carries: the kind's code, violations
 * as a google.rpc.BadRequest detail with proto field paths, a retry hint as `retry-after` metadata and a
 * RetryInfo detail. The
 * LedgerError stays the cause, so an in-process adapter (REST) renders the violations in its own
 * terms; an `unavailable` keeps the store's error as the cause instead, for the log.
 */
export function connectErrorOf(error: LedgerError): ConnectError {
  const { kind, violations } = error;
  // A passing refusal says when to retry: retry-after metadata and a google.rpc.RetryInfo detail.
  const retry = error.retryAfterS === undefined ? undefined : retryHint(error.retryAfterS);
  if (violations.length > 0) {
    return new ConnectError(summarise(violations), CODE[kind], retry?.metadata, [badRequest(violations)], error);
  }
  return new ConnectError(error.message, CODE[kind], retry?.metadata, retry?.details, error.cause ?? error);
}

/** Runs a ledger call, turning its refusals into ConnectErrors; anything else passes on to the error shield. */
export async function asConnect<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof LedgerError) throw connectErrorOf(error);
    throw error;
  }
}

/** The ledger's refusal behind a ConnectError, when there is one (what REST renders from). */
export function ledgerErrorOf(error: ConnectError): LedgerError | null {
  return error.cause instanceof LedgerError ? error.cause : null;
}
