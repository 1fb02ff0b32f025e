import { create } from "@bufbuild/protobuf";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  DeleteSourceRequestSchema,
  GetSourceRequestSchema,
  ListConflictsRequestSchema,
  ListSourceEventsRequestSchema,
  SourceLedgerService,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { Violation } from "../ledger/violation.js";
import type { VisibleConflict, VisibleEvent } from "../ledger/visibility.js";
import type { Environment } from "../model/list-query.js";
import type { SourceRecord } from "../model/records.js";
import { conflictSinkKey, eventSinkKey } from "../rpc/in-process.js";
import type { InProcessCaller } from "../rpc/invoke.js";
import {
  type AnswerFormat,
  answerFormatOf,
  FORMAT_PARAMETER,
  GEOJSON_CONTENT_TYPE,
  JSON_CONTENT_TYPE,
  notAcceptableFormat,
} from "./answer-format.js";
import { type EarlyChecks, earlyChecksHook } from "./early-auth.js";
import { queryPointer } from "./json-pointer.js";
import { ogcCollectionOf } from "./ogc/documents.js";
import { registerOgcItems } from "./ogc/items.js";
import { sendProblem } from "./problem.js";
import {
  answerCreate,
  callFromRoute,
  installJsonHandling,
  nextLinkHeader,
  nextPageHref,
  nextPageLink,
  type RequestFieldPointer,
  refuseOtherMethods,
  sendError,
  UnparseableBody,
  unsupportedMediaType,
} from "./rest-common.js";
import { renderConflictsJson, renderEventsJson } from "./rest-history.js";
import { listParametersOf, QueryReader, readListRequest } from "./rest-query.js";
import {
  type Link,
  renderFeatureBytes,
  renderFeatureCollection,
  renderRecordJson,
  renderRecordsJson,
} from "./rest-render.js";
import { decodeSearchBody } from "./rest-search.js";

export interface RestRoutesOptions {
  /** "" for production, "/sandbox" for the sandbox. (Not `prefix`: Fastify would apply that itself.) */
  pathPrefix: string;
  environment: Environment;
  /** Calls the environment's service through the shared interceptor chain. */
  call: InProcessCaller;
  /** The one authentication (and the rate limit), run on each route's headers before its body is read. */
  early: EarlyChecks;
}

/**
 * The REST routes of one environment and its OGC API – Features items (docs/api.md §12), which
 * share this plugin's body parsing, early authentication and error answers.
 */
export const httpRoutes: FastifyPluginAsync<RestRoutesOptions> = async (app, options) => {
  await restRoutes(app, options);
  registerOgcItems(app, { collection: ogcCollectionOf(options.environment), call: options.call });
};

// Both services share their methods' shapes; the production descriptors serve the sandbox caller too.
const methods = SourceLedgerService.method;

/**
 * A page of a list or a search: the JSON array of §4 or a FeatureCollection (§12), and the next
 * page's address, when there is one, as an RFC 8288 `Link` header (both) and a `next` link (GeoJSON).
 */
function sendPage(reply: FastifyReply, format: AnswerFormat, records: SourceRecord[], next: string | null) {
  if (next !== null) reply.header("link", nextLinkHeader(next));
  if (format === "json") return reply.code(200).type(JSON_CONTENT_TYPE).send(renderRecordsJson(records));
  const links: Link[] = next === null ? [] : [{ href: next, rel: "next", type: GEOJSON_CONTENT_TYPE }];
  return reply.code(200).type(GEOJSON_CONTENT_TYPE).send(renderFeatureCollection(records, links));
}

/**
 * The REST adapter (docs/api.md §4): JSON in and out, translated to the same request messages the
 * Connect routes take, and run through the same interceptors in-process.
 */
const restRoutes: FastifyPluginAsync<RestRoutesOptions> = async (app, options) => {
  const { pathPrefix, call, environment, early } = options;
  const base = `${pathPrefix}/sources`;
  // A non-empty id: `/sources/` and `/sources//history` name no source (404 like any unknown
  // path), not a missing field.
  const byId = `${base}/:id(^.+$)`;

  // Authentication first, from the headers: a request without a valid token is refused before its
  // body is read or parsed (and a 413 or 415 comes only after 401 and 403).
  app.addHook(
    "onRequest",
    earlyChecksHook(
      early,
      (request) => request.routeOptions.config.rpcMethod,
      (_request, reply, refusal) => sendError(reply, refusal, null),
    ),
  );

  installJsonHandling(app);

  const listParameters = listParametersOf(environment);

  app.post(base, { config: { rpcMethod: methods.createSources.name } }, (request, reply) =>
    answerCreate(call, request, reply, (records) =>
      reply.code(201).type(JSON_CONTENT_TYPE).send(renderRecordsJson(records)),
    ),
  );

  // A list or a get answers JSON or GeoJSON (docs/api.md §12): which depends on f and Accept.
  const formatOf = (request: FastifyRequest, reply: FastifyReply, query: QueryReader): AnswerFormat | null => {
    reply.header("vary", "Accept");
    return answerFormatOf(query, request.headers.accept);
  };

  app.get(base, { config: { rpcMethod: methods.listSources.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, [...listParameters, FORMAT_PARAMETER]);
    const format = formatOf(request, reply, query);
    if (format === null) return sendProblem(reply, notAcceptableFormat());
    const message = readListRequest(query, environment);
    const records: SourceRecord[] = [];
    const answer = await callFromRoute(call, methods.listSources, message, request, reply, {
      violations: query.violations,
      records,
    });
    return sendPage(
      reply,
      format,
      records,
      answer.nextPageToken === "" ? null : nextPageHref(request.url, answer.nextPageToken),
    );
  });

  // A search's next page is the same body posted to the Link's URL, whose page_token stands for
  // the body's (docs/api.md §13).
  app.post(`${base}/search`, { config: { rpcMethod: methods.searchSources.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, ["page_token", FORMAT_PARAMETER]);
    const queryToken = query.text("page_token");
    const format = formatOf(request, reply, query);
    if (format === null) return sendProblem(reply, notAcceptableFormat());
    // The listing's problems point at body members, a page_token's at the query when it came there.
    const inBody: RequestFieldPointer = (v) =>
      v.field === "page_token" && queryToken !== undefined
        ? queryPointer("page_token")
        : v.coordinates
          ? ["/intersects/coordinates", ...v.coordinates].join("/")
          : `/${v.field}`;
    try {
      if (request.body === undefined) return sendProblem(reply, unsupportedMediaType());
      const violations: Violation[] = [...query.violations];
      const unparseable = request.body instanceof UnparseableBody;
      if (request.body instanceof UnparseableBody) {
        violations.push({ field: "intersects", pointer: "", detail: request.body.reason });
      }
      // An unparseable body is reported alone, not also as a body without `intersects`.
      const decoded = decodeSearchBody(unparseable ? {} : request.body, environment);
      if (!unparseable) violations.push(...decoded.violations);
      const listing = decoded.request.query;
      if (queryToken !== undefined && listing) {
        if (listing.pageToken !== "" && listing.pageToken !== queryToken) {
          violations.push({
            field: "page_token",
            pointer: queryPointer("page_token"),
            detail: "page_token is given in the query and in the body with different values; give it once",
          });
        }
        listing.pageToken = queryToken;
      }
      const records: SourceRecord[] = [];
      const answer = await callFromRoute(call, methods.searchSources, decoded.request, request, reply, {
        violations,
        records,
      });
      return sendPage(
        reply,
        format,
        records,
        answer.nextPageToken === "" ? null : nextPageHref(request.url, answer.nextPageToken),
      );
    } catch (error) {
      return sendError(reply, error, null, inBody);
    }
  });

  app.get<{ Params: { id: string } }>(
    byId,
    { config: { rpcMethod: methods.getSource.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["as_of", FORMAT_PARAMETER]);
      const format = formatOf(request, reply, query);
      if (format === null) return sendProblem(reply, notAcceptableFormat());
      const message = create(GetSourceRequestSchema, { id: request.params.id, asOf: query.instant("as_of") });
      const records: SourceRecord[] = [];
      await callFromRoute(call, methods.getSource, message, request, reply, { violations: query.violations, records });
      return format === "json"
        ? reply.code(200).type(JSON_CONTENT_TYPE).send(renderRecordJson(records[0]))
        : reply.code(200).type(GEOJSON_CONTENT_TYPE).send(renderFeatureBytes(records[0]));
    },
  );

  // A source's history and conflicts (docs/api.md §14), found like GET /sources/{id}.
  app.get<{ Params: { id: string } }>(
    `${byId}/history`,
    { config: { rpcMethod: methods.listSourceEvents.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["limit", "page_token"]);
      const message = create(ListSourceEventsRequestSchema, {
        id: request.params.id,
        limit: query.integer("limit"),
        pageToken: query.text("page_token") ?? "",
      });
      const events: VisibleEvent[] = [];
      const answer = await callFromRoute(call, methods.listSourceEvents, message, request, reply, {
        violations: query.violations,
        values: (values) => values.set(eventSinkKey, events),
      });
      if (answer.nextPageToken !== "") reply.header("link", nextPageLink(request.url, answer.nextPageToken));
      return reply.code(200).type(JSON_CONTENT_TYPE).send(renderEventsJson(events));
    },
  );

  app.get<{ Params: { id: string } }>(
    `${byId}/conflicts`,
    { config: { rpcMethod: methods.listConflicts.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["limit", "page_token"]);
      const message = create(ListConflictsRequestSchema, {
        id: request.params.id,
        limit: query.integer("limit"),
        pageToken: query.text("page_token") ?? "",
      });
      const conflicts: VisibleConflict[] = [];
      const answer = await callFromRoute(call, methods.listConflicts, message, request, reply, {
        violations: query.violations,
        values: (values) => values.set(conflictSinkKey, conflicts),
      });
      if (answer.nextPageToken !== "") reply.header("link", nextPageLink(request.url, answer.nextPageToken));
      return reply.code(200).type(JSON_CONTENT_TYPE).send(renderConflictsJson(conflicts));
    },
  );

  app.delete<{ Params: { id: string } }>(
    byId,
    { config: { rpcMethod: methods.deleteSource.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["account_id"]);
      const message = create(DeleteSourceRequestSchema, {
        key: { case: "id", value: request.params.id },
        accountId: query.text("account_id"),
      });
      await callFromRoute(call, methods.deleteSource, message, request, reply, { violations: query.violations });
      return reply.code(204).send();
    },
  );

  app.delete(base, { config: { rpcMethod: methods.deleteSource.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, ["alt_id", "account_id"]);
    const altId = query.text("alt_id");
    const violations = [...query.violations];
    // Given but unreadable (a malformed escape) is reported as that, not also as missing.
    if (altId === undefined && !violations.some((v) => v.field === "alt_id")) {
      violations.push({
        field: "alt_id",
        pointer: queryPointer("alt_id"),
        detail: "alt_id is required to delete without an id in the path",
      });
    }
    const message = create(DeleteSourceRequestSchema, {
      key: { case: "altId", value: altId ?? "" },
      accountId: query.text("account_id"),
    });
    await callFromRoute(call, methods.deleteSource, message, request, reply, { violations });
    return reply.code(204).send();
  });

  refuseOtherMethods(app, base, ["GET", "POST", "DELETE"]);
  refuseOtherMethods(app, byId, ["GET", "DELETE"]);
  refuseOtherMethods(app, `${base}/search`, ["POST"]);
  for (const view of ["history", "conflicts"]) refuseOtherMethods(app, `${byId}/${view}`, ["GET"]);
};
