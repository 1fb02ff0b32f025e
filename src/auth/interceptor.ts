import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Principal } from "../model/principal.js";
import { insufficientScopeChallenge, invalidTokenChallenge } from "./challenge.js";
import { AuthenticationError, type AuthenticationFailure, SigningKeysUnavailableError } from "./errors.js";
import { principalKey } from "./principal.js";
import type { Scope } from "./scopes.js";

export { scopeForMethod } from "./scopes.js";

export interface AuthInterceptorOptions {
  verify: (token: string) => Promise<Principal>;
  /** undefined means nobody decided what the method needs: the call is refused, never let through. */
  requiredScope: (methodName: string) => Scope | undefined;
}

// RFC 6750 §2.1 b64token; the scheme name is case-insensitive (RFC 9110 §11.1).
const BEARER = /^bearer(?: +(.*))?$/i;
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * Authenticates, then checks scope, then the account claim, before anything else runs; on
 * success the principal travels in the context values. Neither the token nor the principal is
 * logged or put into an error.
 */
export function createAuthInterceptor(options: AuthInterceptorOptions): Interceptor {
  return (next) => async (req) => {
    const principal = await authenticate(req.header.get("authorization"), options.verify);
    const scope = options.requiredScope(req.method.name);
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
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}

async function authenticate(
  authorization: string | null,
  verify: (token: string) => Promise<Principal>,
): Promise<Principal> {
  const token = bearerToken(authorization);
  try {
    return await verify(token);
  } catch (error) {
    if (error instanceof AuthenticationError) throw unauthenticated(error.reason);
    if (error instanceof SigningKeysUnavailableError) {
      throw new ConnectError(error.message, Code.Unavailable, undefined, undefined, error);
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
