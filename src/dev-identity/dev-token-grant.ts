import { createHash, timingSafeEqual } from "node:crypto";
import type { Scope } from "../auth/scopes.js";
import type { DevClient } from "./dev-clients.js";
import type { TokenRequestParams } from "./dev-token-request.js";
import { invalidRequest, type Outcome } from "./oauth-error.js";

export interface Grant {
  client: DevClient;
  scopes: readonly Scope[];
}

export interface GrantPolicy {
  clients: ReadonlyMap<string, DevClient>;
  audience: string;
}

/**
 * Decides a client-credentials request: required parameters, grant type, client
 * authentication, audience, then scope. A wrong audience is `invalid_target`, the RFC 8707
 * error for a token requested for a resource this server does not issue tokens for; the
 * `audience` parameter plays the role of RFC 8707's `resource`.
 */
export function decideGrant(params: TokenRequestParams, policy: GrantPolicy): Outcome<Grant> {
  const missing = [
    ["grant_type", params.grantType],
    ["client_id", params.clientId],
    ["client_secret", params.clientSecret],
  ].filter(([, value]) => value === null);
  if (missing.length > 0) {
    return invalidRequest(`missing required parameter(s): ${missing.map(([name]) => name).join(", ")}`);
  }
  if (params.grantType !== "client_credentials") {
    return {
      ok: false,
      error: { status: 400, error: "unsupported_grant_type", description: "only client_credentials is supported" },
    };
  }
  const client = authenticate(policy.clients, params.clientId ?? "", params.clientSecret ?? "");
  if (client === undefined) {
    return {
      ok: false,
      error: {
        status: 401,
        error: "invalid_client",
        description: "unknown client or wrong secret",
        basicChallenge: params.usedBasic,
      },
    };
  }
  // Optional (docs/api.md §3.2): a client that names no audience gets the service's own.
  if (params.audience !== null && params.audience !== policy.audience) {
    return {
      ok: false,
      error: { status: 400, error: "invalid_target", description: `audience must be ${policy.audience}` },
    };
  }
  const scopes = narrowScopes(client, params.scope);
  if (scopes === undefined) {
    return {
      ok: false,
      error: {
        status: 400,
        error: "invalid_scope",
        description: `requested scope exceeds the client's scopes (${client.scopes.join(" ") || "none"})`,
      },
    };
  }
  return { ok: true, value: { client, scopes } };
}

// A stand-in for unknown clients, so a lookup miss costs the same comparison as a wrong secret.
const UNKNOWN_CLIENT_SECRET = digest("unknown client");

function authenticate(
  clients: ReadonlyMap<string, DevClient>,
  clientId: string,
  secret: string,
): DevClient | undefined {
  const client = clients.get(clientId);
  const expected = client === undefined ? UNKNOWN_CLIENT_SECRET : digest(client.clientSecret);
  // Digests have equal length, which timingSafeEqual needs, and hide the secret's length.
  const matches = timingSafeEqual(expected, digest(secret));
  return client !== undefined && matches ? client : undefined;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** No scope requested → everything the client may have; anything beyond that → undefined. */
function narrowScopes(client: DevClient, requested: string | null): readonly Scope[] | undefined {
  if (requested === null) return client.scopes;
  const wanted = new Set(requested.split(" ").filter((scope) => scope !== ""));
  if (wanted.size === 0) return client.scopes;
  const allowed: readonly string[] = client.scopes;
  if ([...wanted].some((scope) => !allowed.includes(scope))) return undefined;
  return client.scopes.filter((scope) => wanted.has(scope));
}
