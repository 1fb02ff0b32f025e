import { Code } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { ALL_SCOPES } from "../../auth/scopes.js";
import type { OAuthError } from "../../dev-identity/oauth-error.js";
import { CONFORMANCE_CLASSES, CRS84, OGC_COLLECTIONS } from "../ogc/documents.js";
import { schemaRef } from "./refs.js";
import type { Schema, SchemaOrRef } from "./types.js";

/**
 * The documents around the sources: problem details (docs/api.md §6.1, src/http/problem.ts), the
 * OGC API – Features landing page, conformance and collections (src/http/ogc/documents.ts), the
 * development identity provider's token and keys (§3), and the health answers (§1.3).
 */

const string: Schema = { type: "string" };

/** Every Connect code in snake case: `code` is one of them (the REST mapping is problem.ts's). */
const CODES = Object.values(Code)
  .filter((value): value is Code => typeof value === "number")
  .map((code) => codeToString(code));

/** Compile-time complete: a new error of the token endpoint fails to compile until listed here. */
const OAUTH_ERRORS: Readonly<Record<OAuthError["error"] | "server_error", true>> = {
  invalid_request: true,
  invalid_client: true,
  unsupported_grant_type: true,
  invalid_scope: true,
  invalid_target: true,
  server_error: true,
};

function closed(properties: Record<string, SchemaOrRef>, required = Object.keys(properties)): Schema {
  return { type: "object", required, properties, additionalProperties: false };
}

const links: Schema = { type: "array", items: schemaRef("Link") };

export const SERVICE_SCHEMAS: Readonly<Record<string, Schema>> = {
  Problem: {
    ...closed({
      type: { ...string, description: "Always `about:blank`.", example: "about:blank" },
      title: { ...string, description: "The HTTP reason phrase of `status`.", example: "Unprocessable Entity" },
      status: { type: "integer", minimum: 400, maximum: 599 },
      detail: { ...string, description: "`<first pointer>: <its detail>` when `errors` is not empty." },
      instance: { ...string, pattern: "^urn:request:", description: "`urn:request:<the X-Request-Id>`." },
      code: { type: "string", enum: CODES, description: "The Connect error code, in snake case." },
      errors: {
        type: "array",
        description: "Field-level violations (at most 1,000, then `and N more violations`); `[]` when none.",
        items: closed({
          pointer: {
            ...string,
            description: "RFC 6901 pointer into the body, or `/query/<name>`.",
            example: "/end_at",
          },
          detail: string,
        }),
      },
    }),
    description: "RFC 9457 problem details with the Connect code and every violation (docs/api.md §6).",
  },
  LandingPage: closed({ title: string, description: string, links }),
  Conformance: closed({
    conformsTo: { type: "array", items: { type: "string", enum: [...CONFORMANCE_CLASSES] } },
  }),
  Collection: closed({
    id: { type: "string", enum: OGC_COLLECTIONS.map((collection) => collection.id) },
    title: string,
    description: string,
    itemType: { type: "string", enum: ["feature"] },
    crs: { type: "array", items: { type: "string", enum: [CRS84] } },
    storageCrs: { type: "string", enum: [CRS84] },
    links,
  }),
  Collections: closed({ links, collections: { type: "array", items: schemaRef("Collection") } }),
  TokenRequest: {
    ...closed(
      {
        grant_type: { type: "string", enum: ["client_credentials"] },
        client_id: { ...string, description: "Or in HTTP Basic." },
        client_secret: { ...string, description: "Or in HTTP Basic (never in both)." },
        audience: { ...string, description: "Must equal AUTH_AUDIENCE when given; defaults to it." },
        scope: { ...string, description: `Space-separated, a subset of the client's: ${ALL_SCOPES.join(", ")}.` },
      },
      ["grant_type"],
    ),
    description: "The client-credentials grant (RFC 6749 §4.4); at most 16 KiB.",
  },
  TokenResponse: closed({
    access_token: { ...string, description: "An ES256 JWT." },
    token_type: { type: "string", enum: ["Bearer"] },
    expires_in: { type: "integer", minimum: 1 },
    scope: string,
  }),
  OAuthError: closed({ error: { type: "string", enum: Object.keys(OAUTH_ERRORS) }, error_description: string }, [
    "error",
  ]),
  Jwks: closed({
    keys: {
      type: "array",
      items: {
        type: "object",
        required: ["kty", "kid", "alg", "use"],
        properties: { kty: string, crv: string, x: string, y: string, kid: string, alg: string, use: string },
      },
    },
  }),
  Health: closed({ status: { type: "string", enum: ["ok"] } }),
  Ready: closed({ status: { type: "string", enum: ["ready"] } }),
};
