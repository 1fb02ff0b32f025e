import { create } from "@bufbuild/protobuf";
import { ConnectError, createContextValues } from "@connectrpc/connect";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  DeleteSourceRequestSchema,
  GetSourceRequestSchema,
  ListConflictsRequestSchema,
  ListSourceEventsRequestSchema,
  SourceLedgerService,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { principalKey } from "../auth/principal.js";
import type { Violation } from "../ledger/violation.js";
import type { VisibleConflict, VisibleEvent } from "../ledger/visibility.js";
import type { Environment } from "../model/list-query.js";
import type { SourceRecord } from "../model/records.js";
import { ledgerErrorOf } from "../rpc/errors.js";
import { conflictSinkKey, decodeViolationsKey, eventSinkKey, recordSinkKey } from "../rpc/in-process.js";
import type { InProcessCaller } from "../rpc/invoke.js";
import { type EarlyChecks, earlyChecksHook, requestPrincipal } from "./early-auth.js";
import { INTERNAL_ERROR_DETAIL, problem, problemFromConnectError, sendProblem } from "./problem.js";
import { type CreateBodyMap, decodeCreateBody } from "./rest-decode.js";
import { renderConflictsJson, renderEventsJson } from "./rest-history.js";
import { listParametersOf, QueryReader, readListRequest } from "./rest-query.js";
import { renderRecordJson, renderRecordsJson } from "./rest-render.js";
import { decodeSearchBody } from "./rest-search.js";

export const MAX_BODY_BYTES = 10 * 1024 * 1024;
const JSON_CONTENT_TYPE = "application/json; charset=utf-8";
/** A body with a problem at every position of a huge geometry still gets a bounded answer. */
const MAX_LISTED_ERRORS = 1000;

export interface RestRoutesOptions {
  /** "" for production, "/sandbox" for the sandbox. (Not `prefix`: Fastify would apply that itself.) */
  pathPrefix: string;
  environment: Environment;
  /** Calls the environment's service through the shared interceptor chain. */
  call: InProcessCaller;
  /** The one authentication (and the rate limit), run on each route's headers before its body is read. */
  early: EarlyChecks;
}

// Both services share their methods' shapes; the production descriptors serve the sandbox caller too.
const methods = SourceLedgerService.method;

/** A JSON body that did not parse: kept so the error is reported after authentication. */
class UnparseableBody {
  constructor(readonly reason: string) {}
}

function headersOf(request: FastifyRequest): Headers {
  // The interceptors read only the credentials; copying every header per call showed in profiles.
  const headers = new Headers();
  const authorization = request.headers.authorization;
  if (authorization !== undefined) headers.set("authorization", authorization);
  return headers;
}

/** Where a request-level violation the ledger found is: a query parameter, or a search body's member. */
type RequestFieldPointer = (v: Violation) => string;

const inQuery: RequestFieldPointer = (v) => `/query/${v.field}`;

function pointerOf(v: Violation, body: CreateBodyMap | null, requestField: RequestFieldPointer = inQuery): string {
  if (v.pointer !== undefined) return v.pointer;
  if (v.source === undefined) return v.field === "sources" && body ? body.sourcesPointer : requestField(v);
  const fields = body?.fields[v.source];
  let pointer = fields?.get(v.field) ?? `${body?.sourcesPointer ?? ""}/${v.source}/${v.field}`;
  if (v.index !== undefined) pointer += `/${v.index}`;
  if (v.coordinates) pointer += ["/coordinates", ...v.coordinates].join("/");
  return pointer;
}

/**
 * The RFC 8288 `Link` to the next page (docs/api.md §12): the request's own path and query with
 * `page_token` (and no `offset`), as a reference relative to the request, so it holds behind any
 * proxy that keeps paths.
 */
export function nextPageLink(url: string, token: string): string {
  const at = url.indexOf("?");
  const path = at < 0 ? url : url.slice(0, at);
  const query = new URLSearchParams(at < 0 ? "" : url.slice(at + 1));
  query.delete("page_token");
  query.delete("offset");
  query.append("page_token", token);
  return `<${path}?${query}>; rel="next"`;
}

const unsupportedMediaType = () =>
  problem(415, "invalid_argument", "Content-Type must be application/json (or application/geo+json)");

function sendError(
  reply: FastifyReply,
  error: unknown,
  body: CreateBodyMap | null,
  requestField?: RequestFieldPointer,
): FastifyReply {
  const connectError = ConnectError.from(error);
  const violations = ledgerErrorOf(connectError)?.violations ?? [];
  const errors = violations
    .slice(0, MAX_LISTED_ERRORS)
    .map((v) => ({ pointer: pointerOf(v, body, requestField), detail: v.detail }));
  if (violations.length > MAX_LISTED_ERRORS) {
    errors.push({ pointer: "", detail: `and ${violations.length - MAX_LISTED_ERRORS} more violations` });
  }
  const details = problemFromConnectError(connectError, errors);
  if (errors.length > 0) {
    // The Connect message names proto paths; a REST client is better served by its own pointers.
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
    details.detail = `${errors[0].pointer || "/"}: ${errors[0].detail}${more}`;
  }
  // Headers the error carries for HTTP clients: the auth challenge, and when to retry a refusal.
  for (const name of ["www-authenticate", "retry-after"]) {
    const value = connectError.metadata.get(name);
    if (value) reply.header(name, value);
  }
  return sendProblem(reply, details);
}

/**
 * The REST adapter (docs/api.md §4): JSON in and out, translated to the same request messages the
 * Connect routes take, and run through the same interceptors in-process.
 */
export const restRoutes: FastifyPluginAsync<RestRoutesOptions> = async (app, options) => {
  const { pathPrefix, call, environment, early } = options;
  const base = `${pathPrefix}/sources`;
  // A non-empty id: `/sources/` names no source (404 like any unknown path), not a missing field.
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

  app.removeAllContentTypeParsers();
  // GeoJSON's own media type (RFC 7946 §12) is JSON too; create bodies are GeoJSON.
  const jsonTypes = ["application/json", "application/geo+json"];
  app.addContentTypeParser(jsonTypes, { parseAs: "string", bodyLimit: MAX_BODY_BYTES }, (_req, text, done) => {
    if (text === "") return done(null, new UnparseableBody("the body is empty; send a JSON object"));
    try {
      done(null, JSON.parse(text as string));
    } catch (error) {
      done(null, new UnparseableBody(`the body is not valid JSON: ${(error as Error).message}`));
    }
  });

  // Also the answer of every failed service call (the handlers below do not catch them): the
  // error shield lets only ConnectErrors out of the interceptor chain. Create catches its own,
  // to point violations into the body it decoded.
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (error instanceof ConnectError) return sendError(reply, error, null);
    const status = error.statusCode ?? 500;
    if (status === 413) {
      return sendProblem(
        reply,
        problem(413, "resource_exhausted", `the body exceeds ${MAX_BODY_BYTES} bytes (10 MiB)`),
      );
    }
    if (status === 415) return sendProblem(reply, unsupportedMediaType());
    if (status >= 400 && status < 500) return sendProblem(reply, problem(status, "invalid_argument", error.message));
    request.log.error({ err: error }, "request failed");
    return sendProblem(reply, problem(500, "internal", INTERNAL_ERROR_DETAIL));
  });

  const listParameters = listParametersOf(environment);

  function callOptions(request: FastifyRequest, violations: Violation[] = [], records: SourceRecord[] | null = null) {
    const values = createContextValues();
    const principal = requestPrincipal(request);
    if (principal !== undefined) values.set(principalKey, principal);
    values.set(decodeViolationsKey, violations);
    values.set(recordSinkKey, records);
    return {
      headers: headersOf(request),
      url: request.url,
      requestMethod: request.method,
      values,
    };
  }

  app.post(base, { config: { rpcMethod: methods.createSources.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, ["account_id"]);
    const accountId = query.text("account_id");
    let decoded: ReturnType<typeof decodeCreateBody> | null = null;
    try {
      if (request.body === undefined) return sendProblem(reply, unsupportedMediaType());
      const bodyViolations: Violation[] = [];
      if (request.body instanceof UnparseableBody) {
        bodyViolations.push({ field: "sources", pointer: "", detail: request.body.reason });
        decoded = decodeCreateBody({ type: "FeatureCollection", features: [] });
      } else {
        decoded = decodeCreateBody(request.body);
      }
      const message = decoded.request;
      message.accountId = accountId;
      const records: SourceRecord[] = [];
      await call(
        methods.createSources,
        message,
        callOptions(request, [...query.violations, ...bodyViolations, ...decoded.violations], records),
      );
      return reply.code(201).type(JSON_CONTENT_TYPE).send(renderRecordsJson(records));
    } catch (error) {
      return sendError(reply, error, decoded?.map ?? null);
    }
  });

  app.get(base, { config: { rpcMethod: methods.listSources.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, listParameters);
    const message = readListRequest(query, environment);
    const records: SourceRecord[] = [];
    const answer = await call(methods.listSources, message, callOptions(request, query.violations, records));
    if (answer.nextPageToken !== "") reply.header("link", nextPageLink(request.url, answer.nextPageToken));
    return reply.code(200).type(JSON_CONTENT_TYPE).send(renderRecordsJson(records));
  });

  // A search's next page is the same body posted to the Link's URL, whose page_token stands for
  // the body's (docs/api.md §13).
  app.post(`${base}/search`, { config: { rpcMethod: methods.searchSources.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, ["page_token"]);
    const queryToken = query.text("page_token");
    // The listing's problems point at body members, a page_token's at the query when it came there.
    const inBody: RequestFieldPointer = (v) =>
      v.field === "page_token" && queryToken !== undefined
        ? "/query/page_token"
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
            pointer: "/query/page_token",
            detail: "page_token is given in the query and in the body with different values; give it once",
          });
        }
        listing.pageToken = queryToken;
      }
      const records: SourceRecord[] = [];
      const answer = await call(methods.searchSources, decoded.request, callOptions(request, violations, records));
      if (answer.nextPageToken !== "") reply.header("link", nextPageLink(request.url, answer.nextPageToken));
      return reply.code(200).type(JSON_CONTENT_TYPE).send(renderRecordsJson(records));
    } catch (error) {
      return sendError(reply, error, null, inBody);
    }
  });

  app.get<{ Params: { id: string } }>(
    byId,
    { config: { rpcMethod: methods.getSource.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["as_of"]);
      const message = create(GetSourceRequestSchema, { id: request.params.id, asOf: query.instant("as_of") });
      const records: SourceRecord[] = [];
      await call(methods.getSource, message, callOptions(request, query.violations, records));
      return reply.code(200).type(JSON_CONTENT_TYPE).send(renderRecordJson(records[0]));
    },
  );

  // A source's history and conflicts (docs/api.md §14), found like GET /sources/{id}.
  app.get<{ Params: { id: string } }>(
    `${base}/:id/history`,
    { config: { rpcMethod: methods.listSourceEvents.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["limit", "page_token"]);
      const message = create(ListSourceEventsRequestSchema, {
        id: request.params.id,
        limit: query.integer("limit"),
        pageToken: query.text("page_token") ?? "",
      });
      const options = callOptions(request, query.violations);
      const events: VisibleEvent[] = [];
      options.values.set(eventSinkKey, events);
      const answer = await call(methods.listSourceEvents, message, options);
      if (answer.nextPageToken !== "") reply.header("link", nextPageLink(request.url, answer.nextPageToken));
      return reply.code(200).type(JSON_CONTENT_TYPE).send(renderEventsJson(events));
    },
  );

  app.get<{ Params: { id: string } }>(
    `${base}/:id/conflicts`,
    { config: { rpcMethod: methods.listConflicts.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["limit", "page_token"]);
      const message = create(ListConflictsRequestSchema, {
        id: request.params.id,
        limit: query.integer("limit"),
        pageToken: query.text("page_token") ?? "",
      });
      const options = callOptions(request, query.violations);
      const conflicts: VisibleConflict[] = [];
      options.values.set(conflictSinkKey, conflicts);
      const answer = await call(methods.listConflicts, message, options);
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
      await call(methods.deleteSource, message, callOptions(request, query.violations));
      return reply.code(204).send();
    },
  );

  app.delete(base, { config: { rpcMethod: methods.deleteSource.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, ["alt_id", "account_id"]);
    const altId = query.text("alt_id");
    const violations = [...query.violations];
    if (altId === undefined) {
      violations.push({
        field: "alt_id",
        pointer: "/query/alt_id",
        detail: "alt_id is required to delete without an id in the path",
      });
    }
    const message = create(DeleteSourceRequestSchema, {
      key: { case: "altId", value: altId ?? "" },
      accountId: query.text("account_id"),
    });
    await call(methods.deleteSource, message, callOptions(request, violations));
    return reply.code(204).send();
  });

  const notAllowed = (allow: string) => async (_request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(reply.header("allow", allow), problem(405, "unimplemented", `method not allowed; allowed: ${allow}`));
  app.route({ method: ["PUT", "PATCH"], url: base, handler: notAllowed("GET, POST, DELETE") });
  app.route({ method: ["PUT", "PATCH", "POST"], url: byId, handler: notAllowed("GET, DELETE") });
  app.route({ method: ["GET", "PUT", "PATCH", "DELETE"], url: `${base}/search`, handler: notAllowed("POST") });
};
