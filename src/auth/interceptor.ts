import type { Interceptor } from "@connectrpc/connect";
import { type Authenticator, type AuthenticatorOptions, createAuthenticator } from "./authenticate.js";
import { principalKey } from "./principal.js";
import { isPublicService } from "./scopes.js";

export { isPublicService, scopeForMethod } from "./scopes.js";

/**
 * Authenticates, then checks scope, then the account claim, before anything else runs; on
 * success the principal travels in the context values. When the transport already authenticated
 * the request from its headers (the early check, before the body is read), the principal is in
 * the context values already: it is reused and only authorized for this method, so a token is
 * verified once per request and by one function. A public service (scopes.ts: health, reflection)
 * is let through without a token.
 */
export function createAuthInterceptor(options: AuthenticatorOptions | Authenticator): Interceptor {
  const authenticator = "authorize" in options ? options : createAuthenticator(options);
  return (next) => async (req) => {
    if (isPublicService(req.service.typeName)) return next(req);
    const known = req.contextValues.get(principalKey);
    if (known === undefined) {
      const principal = await authenticator.authenticate(req.header.get("authorization"), req.method.name);
      req.contextValues.set(principalKey, principal);
    } else {
      authenticator.authorize(known, req.method.name);
    }
    return next(req);
  };
}
