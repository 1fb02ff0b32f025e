import { OPENAPI_MEDIA_TYPE } from "../ogc/documents.js";
import { contentOf, JSON_TYPE, PUBLIC } from "./operations.js";
import { schemaRef } from "./refs.js";
import { problems } from "./responses.js";
import type { Operation, Paths, Response } from "./types.js";

/**
 * The paths around the API: health (docs/api.md §1.3), this description and its page, and the
 * development identity provider (§3), which exists only while AUTH_ISSUER is unset.
 */

export const SERVICE_TAG = "Service";
export const DEV_IDENTITY_TAG = "Development identity provider";

/** Where the description and its page are served. */
export const OPENAPI_PATH = "/openapi.json";
export const DOCS_PATH = "/docs";
export const DOCS_ASSETS_PATH = `${DOCS_PATH}/assets`;

/** A file of the page: its name (content-addressed) and media type. */
export interface DocsAssetName {
  name: string;
  contentType: string;
}

const text: Response["content"] = { "text/plain": { schema: { type: "string" } } };

const notModified: Response = { description: "Not modified: the ETag sent in If-None-Match is still current." };

const etag: Response["headers"] = {
  ETag: { description: "The content's tag, for If-None-Match.", schema: { type: "string" } },
};

function publicGet(
  operationId: string,
  summary: string,
  responses: Operation["responses"],
  extra: Partial<Operation> = {},
): Operation {
  return { operationId, summary, tags: [SERVICE_TAG], ...extra, responses, security: PUBLIC };
}

export function servicePaths(assets: readonly DocsAssetName[]): Paths {
  const mediaTypes = [...new Set(assets.map((asset) => asset.contentType))];
  return {
    "/healthz": {
      get: publicGet("getHealth", "The process is up", {
        200: { description: "Serving.", content: contentOf(schemaRef("Health"), JSON_TYPE) },
        ...problems(503),
      }),
    },
    "/readyz": {
      get: publicGet("getReadiness", "The production store is reachable", {
        200: { description: "Ready.", content: contentOf(schemaRef("Ready"), JSON_TYPE) },
        ...problems(503),
      }),
    },
    "/metrics": {
      get: publicGet(
        "getMetrics",
        "Prometheus metrics",
        { 200: { description: "The Prometheus text exposition format, version 0.0.4.", content: text } },
        { description: "No token: restrict it at the network edge if process figures should not be public." },
      ),
    },
    [OPENAPI_PATH]: {
      get: publicGet(
        "getOpenApiDocument",
        "This OpenAPI 3.0 description",
        {
          200: {
            description: "The description; application/json when the Accept header admits only that.",
            headers: etag,
            content: contentOf({ type: "object" }, OPENAPI_MEDIA_TYPE, JSON_TYPE),
          },
          304: notModified,
          ...problems(406),
        },
        { description: "The OGC landing page's `service-desc`." },
      ),
    },
    [DOCS_PATH]: {
      get: publicGet(
        "getDocsPage",
        "This description, rendered for a person (Swagger UI)",
        {
          200: {
            description: "An HTML page; its scripts and styles are served below /docs/assets.",
            headers: etag,
            content: { "text/html": { schema: { type: "string" } } },
          },
          304: notModified,
        },
        { description: "The OGC landing page's `service-doc`." },
      ),
    },
    [`${DOCS_ASSETS_PATH}/{file}`]: {
      get: publicGet(
        "getDocsAsset",
        "A file of the documentation page",
        {
          200: {
            description: "The file; its name changes with its content, so it may be cached for good.",
            headers: etag,
            content: Object.fromEntries(
              mediaTypes.map((type) => [type, { schema: { type: "string", format: "binary" } }]),
            ),
          },
          304: notModified,
          ...problems(404),
        },
        {
          parameters: [
            {
              name: "file",
              in: "path",
              required: true,
              description: "One of the page's files, as the page names it.",
              schema: { type: "string", enum: assets.map((asset) => asset.name) },
            },
          ],
        },
      ),
    },
  };
}

const DEV_ONLY =
  "Served only while the development identity provider runs: AUTH_ISSUER unset (and, with NODE_ENV=production or beyond loopback, DEV_AUTH=allow). For local development only.";

/** The development identity provider's paths (src/dev-identity/dev-provider.ts). */
export function devIdentityPaths(): Paths {
  const oauthError = (description: string): Response => ({
    description,
    content: contentOf(schemaRef("OAuthError"), JSON_TYPE),
  });
  const form = "application/x-www-form-urlencoded";
  return {
    "/oauth/token": {
      post: {
        operationId: "issueDevelopmentToken",
        summary: "A token by the client-credentials grant",
        description: `${DEV_ONLY} The client may authenticate with HTTP Basic instead of the body's client_id and client_secret. Answers carry Cache-Control: no-store.`,
        tags: [DEV_IDENTITY_TAG],
        requestBody: { required: true, content: contentOf(schemaRef("TokenRequest"), JSON_TYPE, form) },
        responses: {
          200: { description: "The token.", content: contentOf(schemaRef("TokenResponse"), JSON_TYPE) },
          400: oauthError("invalid_request, unsupported_grant_type, invalid_target or invalid_scope."),
          401: {
            ...oauthError("invalid_client: unknown client or wrong secret."),
            headers: {
              "WWW-Authenticate": { description: "When HTTP Basic was used.", schema: { type: "string" } },
            },
          },
          500: oauthError("server_error: signing failed."),
        },
        security: PUBLIC,
      },
    },
    "/.well-known/jwks.json": {
      get: {
        operationId: "getDevelopmentSigningKeys",
        summary: "The provider's public signing keys (JWKS)",
        description: `${DEV_ONLY} A new ES256 key at every start.`,
        tags: [DEV_IDENTITY_TAG],
        responses: { 200: { description: "The keys.", content: contentOf(schemaRef("Jwks"), JSON_TYPE) } },
        security: PUBLIC,
      },
    },
  };
}
