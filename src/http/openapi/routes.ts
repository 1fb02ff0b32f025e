import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { preview } from "../../ledger/preview.js";
import { notAcceptable, preferredMediaType } from "../answer-format.js";
import { OPENAPI_MEDIA_TYPE } from "../ogc/documents.js";
import { problem, sendProblem } from "../problem.js";
import { contentHash } from "./docs-assets.js";
import { buildDocsPage, DOCS_CONTENT_SECURITY_POLICY } from "./docs-page.js";
import { API_TITLE, buildOpenApiDocument } from "./document.js";
import { JSON_TYPE } from "./operations.js";
import { DOCS_ASSETS_PATH, DOCS_PATH, OPENAPI_PATH } from "./service-paths.js";

export interface OpenApiRoutesOptions {
  /** Whether the development identity provider runs: its paths are described only then. */
  developmentIdentity: boolean;
}

/** What a cacheable answer carries. */
interface Cacheable {
  body: string | Buffer;
  contentType: string;
  etag: string;
  cacheControl: string;
}

/** Answers `answer`, or 304 when the client's If-None-Match names its ETag. */
function sendCacheable(request: FastifyRequest, reply: FastifyReply, answer: Cacheable) {
  reply.header("etag", answer.etag).header("cache-control", answer.cacheControl);
  const known = request.headers["if-none-match"];
  if (known !== undefined && (known.trim() === "*" || known.split(",").some((tag) => tag.trim() === answer.etag))) {
    return reply.code(304).send();
  }
  return reply.code(200).type(answer.contentType).send(answer.body);
}

/**
 * `GET /openapi.json` (the OpenAPI 3.0 description, the OGC landing page's service-desc) and
 * `GET /docs` (Swagger UI over it, the service-doc), with the page's files; no token. The
 * description and the page are built once, when the server starts.
 */
export const openApiRoutes: FastifyPluginAsync<OpenApiRoutesOptions> = async (app, options) => {
  const page = buildDocsPage(`${API_TITLE} API`);
  const document = buildOpenApiDocument({
    developmentIdentity: options.developmentIdentity,
    docsAssets: [...page.assets.values()].map(({ name, contentType }) => ({ name, contentType })),
  });
  // Bytes, not a string: Fastify would rewrite a JSON media type's parameters (quoting the version).
  const json = Buffer.from(JSON.stringify(document));
  const documentTag = `"${contentHash(json)}"`;
  const offered = [OPENAPI_MEDIA_TYPE, JSON_TYPE];

  app.get(OPENAPI_PATH, (request, reply) => {
    reply.header("vary", "Accept");
    const type = preferredMediaType(request.headers.accept, offered);
    if (type === undefined) return sendProblem(reply, notAcceptable(offered));
    // Revalidated on every use: a new deployment may describe new paths.
    return sendCacheable(request, reply, {
      body: json,
      contentType: type,
      etag: documentTag,
      cacheControl: "no-cache",
    });
  });

  app.get(DOCS_PATH, (request, reply) => {
    reply
      .header("content-security-policy", DOCS_CONTENT_SECURITY_POLICY)
      .header("x-content-type-options", "nosniff")
      .header("referrer-policy", "no-referrer");
    return sendCacheable(request, reply, {
      body: page.html,
      contentType: "text/html; charset=utf-8",
      etag: page.etag,
      cacheControl: "no-cache",
    });
  });

  app.get<{ Params: { file: string } }>(`${DOCS_ASSETS_PATH}/:file`, (request, reply) => {
    const asset = page.assets.get(request.params.file);
    if (asset === undefined) {
      return sendProblem(reply, problem(404, "not_found", `no file ${preview(request.params.file)} of the docs page`));
    }
    reply.header("x-content-type-options", "nosniff");
    // Named by their content: a new version is a new name, so these may be kept for good.
    return sendCacheable(request, reply, { ...asset, cacheControl: "public, max-age=31536000, immutable" });
  });
};
