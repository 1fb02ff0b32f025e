import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { FORMAT_PARAMETER, JSON_CONTENT_TYPE, preferredMediaType } from "../answer-format.js";
import { problem, sendProblem } from "../problem.js";
import { methodNotAllowed } from "../rest-common.js";
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

/**
 * The OGC API – Features documents that describe the service (docs/api.md §16): landing page,
 * conformance and collections. They hold nothing of any account, so they need no token; the
 * items (items.ts) do. JSON only: `f=json` or an Accept header that admits application/json.
 */
export const ogcDocumentRoutes: FastifyPluginAsync = async (app) => {
  /** Answers `document` as JSON, or the problem with the request's query or Accept header. */
  function answer(request: FastifyRequest, reply: FastifyReply, document: (base: string) => object) {
    const query = new QueryReader(request.query as Record<string, string>, [FORMAT_PARAMETER]);
    const f = query.text(FORMAT_PARAMETER);
    if (f !== undefined && f !== "json") query.reject(FORMAT_PARAMETER, `${FORMAT_PARAMETER} must be json, got "${f}"`);
    reply.header("vary", "Accept");
    if (query.violations.length > 0) {
      const [first] = query.violations;
      const errors = query.violations.map((v) => ({ pointer: v.pointer ?? `/query/${v.field}`, detail: v.detail }));
      return sendProblem(reply, problem(400, "invalid_argument", `${errors[0].pointer}: ${first.detail}`, errors));
    }
    const accept = request.headers.accept;
    if (f === undefined && preferredMediaType(accept, ["application/json"]) === undefined) {
      return sendProblem(
        reply,
        problem(406, "invalid_argument", "this resource is JSON: ask with Accept: application/json, or f=json"),
      );
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
    app.route({ method: ["POST", "PUT", "PATCH", "DELETE"], url, handler: methodNotAllowed("GET") });
  }
  // Any other collection: OGC's 404, as problem details.
  app.get<{ Params: { id: string } }>(`${OGC_BASE}/collections/:id`, (request, reply) =>
    sendProblem(
      reply,
      problem(
        404,
        "not_found",
        `no collection "${request.params.id}"; the collections are ${OGC_COLLECTIONS.map((c) => c.id).join(", ")}`,
      ),
    ),
  );
};
