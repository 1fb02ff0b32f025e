import type { ALL_SCOPES } from "../../auth/scopes.js";
import { GEOJSON_SCHEMAS } from "./geojson.js";
import { searchBodySchema } from "./list-parameters.js";
import { OGC_TAG, ogcPaths } from "./ogc-paths.js";
import { BEARER_SCHEME, OAUTH2_SCHEME } from "./operations.js";
import { PROBLEM_RESPONSES } from "./responses.js";
import { REST_TAGS, restPaths } from "./rest-paths.js";
import { DEV_IDENTITY_TAG, type DocsAssetName, devIdentityPaths, SERVICE_TAG, servicePaths } from "./service-paths.js";
import { SERVICE_SCHEMAS } from "./service-schemas.js";
import { SOURCE_SCHEMAS } from "./source-schemas.js";
import type { Paths, Response, Schema, SecurityRequirement } from "./types.js";

export const API_TITLE = "Source Ledger";

/** The version of the API this describes: contract v2.1 (paging, search, GeoJSON, OGC, history). */
export const API_VERSION = "2.1.0";

export interface OpenApiDocument {
  openapi: "3.0.3";
  info: { title: string; version: string; description: string };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  security: SecurityRequirement[];
  paths: Paths;
  components: {
    schemas: Record<string, Schema>;
    responses: Record<string, Response>;
    securitySchemes: Record<string, object>;
  };
}

export interface OpenApiOptions {
  /** Whether this server runs the development identity provider (AUTH_ISSUER unset). */
  developmentIdentity: boolean;
  /** The files of the /docs page, described as its assets path's values. */
  docsAssets: readonly DocsAssetName[];
}

const DESCRIPTION = `A ledger of geographic sources (Polygon and MultiPolygon areas) for environmental-attribute markets.

- **REST** under \`/sources\`, and the same under \`/sandbox/sources\` for a per-account in-memory sandbox.
- **OGC API – Features** under \`/ogc\` (Part 1 Core, GeoJSON, OpenAPI 3.0; Part 4 create and delete).
- Connect, gRPC and gRPC-Web (\`/sourceledger.v2.*\`) share the port; the proto describes them, not this document.

Every call on sources needs a bearer JWT with the operation's scope. Errors are RFC 9457 problem details
(\`application/problem+json\`) with the Connect \`code\` and a JSON pointer for every violation; any path also
answers 400 for a malformed URL, 404 problem details for an unknown route, 408 for a body too slow to arrive,
and 503 while the service shuts down. Every answer carries \`X-Request-Id\`. The reference is docs/api.md.`;

const SECURITY_SCHEMES = {
  [BEARER_SCHEME]: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "A JWT of the configured issuer (AUTH_ISSUER), RS256 or ES256, whose audience is AUTH_AUDIENCE; the scope the operation names.",
  },
  [OAUTH2_SCHEME]: {
    type: "oauth2",
    description:
      "The client-credentials grant. The token URL is the development identity provider's, served only while AUTH_ISSUER is unset; a deployment with AUTH_ISSUER takes tokens from that issuer's own token endpoint.",
    flows: {
      clientCredentials: {
        tokenUrl: "/oauth/token",
        scopes: {
          "read:sources": "List, get and search sources; read their history and conflicts.",
          "write:sources": "Create sources.",
          "delete:sources": "Delete sources.",
        } satisfies Record<(typeof ALL_SCOPES)[number], string>,
      },
    },
  },
};

/** The OpenAPI 3.0.3 description of every REST and OGC path this server serves; built once per server. */
export function buildOpenApiDocument(options: OpenApiOptions): OpenApiDocument {
  const tags = [
    { name: REST_TAGS.production, description: "The ledger's sources (docs/api.md §4, §12–§14, §16)." },
    { name: REST_TAGS.sandbox, description: "The same API over the caller's in-memory sandbox session (§7)." },
    { name: OGC_TAG, description: "The sources as OGC API – Features collections (docs/api.md §16)." },
    { name: SERVICE_TAG, description: "Health, metrics and this description." },
  ];
  if (options.developmentIdentity) {
    tags.push({
      name: DEV_IDENTITY_TAG,
      description: "Local development only: tokens for the clients of DEV_CLIENTS_FILE.",
    });
  }
  return {
    openapi: "3.0.3",
    info: { title: API_TITLE, version: API_VERSION, description: DESCRIPTION },
    servers: [{ url: "/", description: "This server" }],
    tags,
    security: [{ [BEARER_SCHEME]: [] }],
    paths: {
      ...restPaths("production"),
      ...restPaths("sandbox"),
      ...ogcPaths(),
      ...servicePaths(options.docsAssets),
      ...(options.developmentIdentity ? devIdentityPaths() : {}),
    },
    components: {
      schemas: {
        ...GEOJSON_SCHEMAS,
        ...SOURCE_SCHEMAS,
        SearchBody: searchBodySchema("production"),
        SandboxSearchBody: searchBodySchema("sandbox"),
        ...SERVICE_SCHEMAS,
      },
      responses: { ...PROBLEM_RESPONSES },
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}
