import type { AuthenticationFailure } from "./errors.js";
import type { Scope } from "./scopes.js";

/*
 * WWW-Authenticate values (RFC 6750 §3). RFC 6750 suggests omitting the error code when the
 * request carried no credentials at all; the API (docs/api.md §2) instead asks for
 * `error="invalid_token"` on every 401, so a missing header gets it too, with a description
 * saying what was missing.
 */

export function invalidTokenChallenge(reason: AuthenticationFailure): string {
  return `Bearer error="invalid_token", error_description="${quotable(reason)}"`;
}

export function insufficientScopeChallenge(scope: Scope): string {
  return `Bearer error="insufficient_scope", scope="${quotable(scope)}"`;
}

/** RFC 6750 allows only %x20-21 / %x23-5B / %x5D-7E inside these quoted strings. */
function quotable(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, "");
}
