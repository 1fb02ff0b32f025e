import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { type Violation, violationFieldPath } from "./violation.js";

/**
 * The most violations one error detail carries: a gRPC error travels in HTTP/2 trailers, and a
 * detail listing every position of a 100,000-vertex geometry would overflow the frame.
 */
export const MAX_DETAIL_VIOLATIONS = 100;

/**
 * A request rejected for reasons tied to its fields. Over Connect and gRPC the violations travel
 * as a BadRequest detail; the in-process REST adapter reads `violations` to point into its body.
 */
export class FieldViolationsError extends ConnectError {
  // ConnectError recognises its instances by shape and by the name "ConnectError" (kept as is);
  // this class is recognised by its own prototype chain only.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(FieldViolationsError, value);
  }

  constructor(
    readonly violations: Violation[],
    code: Code = Code.InvalidArgument,
    message = summarise(violations),
  ) {
    const shown = violations.slice(0, MAX_DETAIL_VIOLATIONS).map((v) => {
      const field = violationFieldPath(v);
      return { field, description: v.detail, pointer: fieldPathToPointer(field) };
    });
    if (violations.length > MAX_DETAIL_VIOLATIONS) {
      shown.push({
        field: "",
        description: `and ${violations.length - MAX_DETAIL_VIOLATIONS} more violations`,
        pointer: "",
      });
    }
    super(message, code, undefined, [
      { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: shown }) },
    ]);
  }
}

function summarise(violations: Violation[]): string {
  const first = violations[0];
  if (!first) return "request is invalid";
  const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : "";
  return `${violationFieldPath(first)}: ${first.detail}${more}`;
}

/** `sources[3].geometry.polygon.rings[0]` → `/sources/3/geometry/polygon/rings/0`. */
function fieldPathToPointer(field: string): string {
  return `/${field
    .replace(/\[(\d+)\]/g, ".$1")
    .split(".")
    .join("/")}`;
}

export function notFound(what: string): ConnectError {
  return new ConnectError(`${what} not found`, Code.NotFound);
}
