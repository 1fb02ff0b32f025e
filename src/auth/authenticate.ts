import { Code, ConnectError } from "@connectrpc/connect";
import type { Principal } from "../model/principal.js";
import { retryHint } from "../model/retry-hint.js";
import { insufficientScopeChallenge, invalidTokenChallenge } from "./challenge.js";
import { AuthenticationError, type AuthenticationFailure, SigningKeysUnavailableError } from "./errors.js";
import type { Scope } from "./scopes.js";

export interface AuthenticatorOptions {
  verify: (token: string) => Promise<Principal>;
  /** undefined means nobody decided what the method needs: the call is refused, never let through. */
  requiredScope: (methodName: string) => Scope | undefined;
}

/**
 * The one authentication of the service (docs/api.md §2.4): the bearer token, then the method's
 * scope, then the account claim. Both the early check on the request's headers (before any body is
 * read) and the interceptors run this; failures are ConnectErrors every adapter can render.
 * Neither the token nor the principal is logged or put into an error.
 */
export interface Authenticator {
  /** Verifies the `Authorization` header and authorizes `methodName`. */
  authenticate(authorization: string | null, methodName: string): Promise<Principal>;
  /** Authorizes `methodName` for a principal already authenticated (scope, account claim). */
  authorize(principal: Principal, methodName: string): void;
}

// RFC 6750 §2.1 b64token; the scheme name is case-insensitive (RFC 9110 §11.1).
const BEARER = /^bearer(?: +(.*))?$/i;
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  function authorize(principal: Principal, methodName: string): void {
    const scope = options.requiredScope(methodName);
    if (scope === undefined) {
      throw new ConnectError("no scope is defined for this method", Code.Internal);
    }
    if (!principal.scopes.has(scope)) {
      throw new ConnectError(`token lacks scope ${scope}`, Code.PermissionDenied, {
        "www-authenticate": insufficientScopeChallenge(scope),
      });
    }
    if (!principal.isAdmin && principal.accountId === null) {
      throw new ConnectError("token has no account claim", Code.PermissionDenied);
    }
  }

  return {
    async authenticate(authorization, methodName) {
      const principal = await verified(authorization, options.verify);
      authorize(principal, methodName);
      return principal;
    },
    authorize,
  };
}

async function verified(authorization: string | null, verify: (token: string) => Promise<Principal>) {
  const token = bearerToken(authorization);
  try {
    return await verify(token);
  } catch (error) {
    if (error instanceof AuthenticationError) throw unauthenticated(error.reason);
    if (error instanceof SigningKeysUnavailableError) {
      // While the key server is in backoff, say when a retry can succeed.
      const retry = error.retryAfterSeconds === undefined ? undefined : retryHint(error.retryAfterSeconds);
      throw new ConnectError(error.message, Code.Unavailable, retry?.metadata, retry?.details, error);
    }
    throw new ConnectError("authentication failed", Code.Internal, undefined, undefined, error);
  }
}

function bearerToken(authorization: string | null): string {
  if (authorization === null || authorization.trim() === "") throw unauthenticated("missing bearer token");
  const match = BEARER.exec(authorization.trim());
  if (match === null) throw unauthenticated("authorization scheme must be Bearer");
  const token = match[1] ?? "";
  if (token === "") throw unauthenticated("missing bearer token");
  if (!B64TOKEN.test(token)) throw unauthenticated("malformed token");
  return token;
}

function unauthenticated(reason: AuthenticationFailure): ConnectError {
  return new ConnectError(reason, Code.Unauthenticated, { "www-authenticate": invalidTokenChallenge(reason) });
}
