import { scopeForMethod } from "../../auth/scopes.js";
import type { Content, Parameter, SchemaOrRef, SecurityRequirement } from "./types.js";

/** Small builders shared by the path modules. */

/** The schemes of the document (document.ts): a bearer JWT, or one got by client credentials. */
export const BEARER_SCHEME = "bearerAuth";
export const OAUTH2_SCHEME = "oauth2";

/**
 * A protected operation's security: a bearer token carrying the scope the service method needs
 * (the scope table of src/auth/scopes.ts, by the method the route calls).
 */
export function protectedBy(rpcMethod: string): SecurityRequirement[] {
  const scope = scopeForMethod(rpcMethod);
  if (scope === undefined) throw new Error(`OpenAPI: no scope is mapped for ${rpcMethod}`);
  return [{ [BEARER_SCHEME]: [] }, { [OAUTH2_SCHEME]: [scope] }];
}

/** Public operations: no token. */
export const PUBLIC: SecurityRequirement[] = [];

export const JSON_TYPE = "application/json";

/** `schema` under each of `mediaTypes`. */
export function contentOf(schema: SchemaOrRef, ...mediaTypes: string[]): Content {
  return Object.fromEntries(mediaTypes.map((type) => [type, { schema }]));
}

export function arrayOf(items: SchemaOrRef): SchemaOrRef {
  return { type: "array", items };
}

/** A path parameter: a non-empty string. */
export function pathParameter(name: string, description: string): Parameter {
  return { name, in: "path", required: true, description, schema: { type: "string", minLength: 1 } };
}

/** The RFC 8288 `Link` header of a page that has a next one. */
export const NEXT_LINK_HEADER = {
  Link: {
    description: 'The next page, `<URL>; rel="next"`, when more follow (the last page has none).',
    schema: { type: "string" },
  },
} as const;
