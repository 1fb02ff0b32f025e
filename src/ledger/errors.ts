import { preview } from "./preview.js";
import type { Violation } from "./violation.js";

/**
 * Why the ledger refused a request, in its own terms. Each adapter maps a kind to its protocol's
 * code (rpc/errors.ts: Connect codes, which REST turns into HTTP statuses).
 */
export type LedgerErrorKind = "invalid" | "already_exists" | "not_found" | "exhausted" | "unavailable";

/** A refusal of the ledger core: the message is safe to show the caller, the cause (if any) is not. */
export class LedgerError extends Error {
  override name = "LedgerError";

  constructor(
    readonly kind: LedgerErrorKind,
    message: string,
    /** For `invalid` and `already_exists`: every field that is wrong, with where it is. */
    readonly violations: readonly Violation[] = [],
    options?: { cause?: unknown; retryAfterS?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterS = options?.retryAfterS;
  }

  /**
   * For `exhausted`: seconds after which the same request may succeed, when the refusal is
   * passing (every protocol carries it as `retry-after`); undefined when retrying cannot help.
   */
  readonly retryAfterS: number | undefined;
}

/** A request whose fields break the rules of docs/api.md §5; all of them are listed. */
export function invalid(violations: readonly Violation[]): LedgerError {
  return new LedgerError("invalid", "request is invalid", violations);
}

/** `source "<id>" not found`, the id quoted as a preview (cut after 80 characters, docs/api.md §5.10). */
export function sourceNotFound(id: string): LedgerError {
  return new LedgerError("not_found", `source ${preview(id)} not found`);
}

/** `source with alt_id "<alt_id>" not found`, quoted as sourceNotFound quotes an id. */
export function altIdNotFound(altId: string): LedgerError {
  return new LedgerError("not_found", `source with alt_id ${preview(altId)} not found`);
}
