import type { JWTPayload } from "jose";
import { firstUnpairedSurrogate } from "../ledger/preview.js";
import type { Principal } from "../model/principal.js";
import { AuthenticationError, type ClaimName } from "./errors.js";

/** Custom claims are namespaced by the audience; a trailing `/` would double up in the claim name. */
export function claimNamespace(audience: string): string {
  return audience.replace(/\/+$/, "");
}

export const ADMIN_ROLE = "admin";

/**
 * Turns an already verified claims set into a Principal. Claims of the wrong type are refused
 * rather than ignored, so a misconfigured identity provider fails loudly instead of silently
 * granting less (or, for the account, more) than intended.
 */
export function principalFromClaims(payload: JWTPayload, audience: string): Principal {
  const ns = claimNamespace(audience);
  const subject = optionalString(payload.sub, "sub");
  if (subject === null) throw new AuthenticationError("missing sub claim");
  if (typeof payload.exp !== "number") throw new AuthenticationError("missing exp claim");
  const accountId = optionalString(payload[`${ns}/account_id`], "account_id");
  const role = optionalString(payload[`${ns}/role`], "role");
  const clientName = optionalString(payload[`${ns}/client_name`], "client_name");
  // Not carried on the Principal, but checked so a malformed token is refused consistently.
  optionalString(payload[`${ns}/v1_client_id`], "v1_client_id");
  return {
    subject,
    accountId,
    role,
    isAdmin: role === ADMIN_ROLE,
    scopes: scopesOf(payload),
    actor: clientName ?? subject,
    expiresAt: payload.exp,
  };
}

/**
 * A string claim: non-empty, and Unicode text. A lone UTF-16 surrogate (which JSON's \ud800
 * escapes can carry) becomes U+FFFD in the UTF-8 stores, so two accounts or actors would be
 * stored equal: the same rule as for the text fields a request sends (ledger/rules.ts).
 */
function optionalString(value: unknown, claim: ClaimName): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string" || value === "" || firstUnpairedSurrogate(value) >= 0) {
    throw new AuthenticationError(`invalid ${claim} claim`);
  }
  return value;
}

function scopesOf(payload: JWTPayload): ReadonlySet<string> {
  const scopes = new Set<string>();
  const add = (values: readonly string[]) => {
    for (const value of values) if (value !== "") scopes.add(value);
  };
  const { scope, scp, permissions } = payload;
  if (scope !== undefined) add(spaceSeparated(scope, "scope"));
  // Azure AD and Okta send `scp` as an array, some issuers as a space-separated string.
  if (scp !== undefined) add(typeof scp === "string" ? spaceSeparated(scp, "scp") : stringArray(scp, "scp"));
  if (permissions !== undefined) add(stringArray(permissions, "permissions"));
  return scopes;
}

function spaceSeparated(value: unknown, claim: ClaimName): string[] {
  if (typeof value !== "string") throw new AuthenticationError(`invalid ${claim} claim`);
  return value.split(" ");
}

function stringArray(value: unknown, claim: ClaimName): string[] {
  if (!Array.isArray(value) || !value.every((item): item is string => typeof item === "string")) {
    throw new AuthenticationError(`invalid ${claim} claim`);
  }
  return value;
}
