import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { invalid } from "../../ledger/errors.js";
import { preview } from "../../ledger/preview.js";
import { connectErrorOf } from "../../rpc/errors.js";
import {
  FORMAT_PARAMETER,
  formatParameter,
  JSON_CONTENT_TYPE,
  notAcceptable,
  preferredMediaType,
} from "../answer-format.js";
import { problem, sendProblem } from "../problem.js";
import { refuseOtherMethods, sendError } from "../rest-common.js";
import { QueryReader } from "../rest-query.js";
import {
  collectionDocument,
  collectionsDocument,
  conformance,
  landingPage,
  OGC_BASE,
  OGC_COLLECTIONS,
} from "./documents.js";
import { baseUrlOf } from "./items.js";
import { OGC_DOCUMENT_FORMATS } from "./negotiate.js";

/** The documents' one media type, asked for by an Accept header or `f=json`. */
const DOCUMENT_MEDIA_TYPES = ["application/json"];

/**
 * The OGC API – Features documents that describe the service (docs/api.md §16): landing page,
 * conformance and collections. They hold nothing of any account, so they need no token; the
 * items (items.ts) do. JSON only: `f=json` or an Accept header that admits application/json.
 */
export const ogcDocumentRoutes: FastifyPluginAsync = async (app) => {
  /** Answers `document` as JSON, or the problem with the request's query or Accept header. */
  function answer(request: FastifyRequest, reply: FastifyReply, document: (base: string) => object) {
    const query = new QueryReader(request.query as Record<string, string>, [FORMAT_PARAMETER]);
    const f = formatParameter(query, OGC_DOCUMENT_FORMATS);
    reply.header("vary", "Accept");
    if (query.violations.length > 0) {
      return sendError(reply, connectErrorOf(invalid(query.violations)), null, undefined, {
        invalidArgumentStatus: 400,
      });
    }
    if (f === undefined && preferredMediaType(request.headers.accept, DOCUMENT_MEDIA_TYPES) === undefined) {
      return sendProblem(reply, notAcceptable(DOCUMENT_MEDIA_TYPES, OGC_DOCUMENT_FORMATS));
    }
    return reply
      .code(200)
      .type(JSON_CONTENT_TYPE)
      .send(JSON.stringify(document(baseUrlOf(request))));
  }

  app.get(OGC_BASE, (request, reply) => answer(request, reply, landingPage));
  app.get(`${OGC_BASE}/conformance`, (request, reply) => answer(request, reply, () => conformance()));
  app.get(`${OGC_BASE}/collections`, (request, reply) => answer(request, reply, collectionsDocument));
  for (const collection of OGC_COLLECTIONS) {
    app.get(`${OGC_BASE}/collections/${collection.id}`, (request, reply) =>
      answer(request, reply, (base) => collectionDocument(base, collection)),
    );
  }
  // The documents are read-only.
  for (const url of [OGC_BASE, `${OGC_BASE}/conformance`, `${OGC_BASE}/collections`, `${OGC_BASE}/collections/:id`]) {
    refuseOtherMethods(app, url, ["GET"]);
  }
  // Any other collection: OGC's 404, as problem details.
  app.get<{ Params: { id: string } }>(`${OGC_BASE}/collections/:id`, (request, reply) =>
    sendProblem(
      reply,
      problem(
        404,
        "not_found",
        `no collection ${preview(request.params.id)}; the collections are ${OGC_COLLECTIONS.map((c) => c.id).join(", ")}`,
      ),
    ),
  );
};
