import { type IncomingHttpHeaders, type ServerResponse, STATUS_CODES } from "node:http";
import { Http2ServerResponse } from "node:http2";
import type { DescMessage, DescMethodUnary, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, createContextValues } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { principalKey } from "../auth/principal.js";
import { preview } from "../ledger/preview.js";
import type { Violation } from "../ledger/violation.js";
import type { SourceRecord } from "../model/records.js";
import { ledgerErrorOf } from "../rpc/errors.js";
import { decodeViolationsKey, recordSinkKey } from "../rpc/in-process.js";
import { type InProcessCall, type InProcessCaller, readsOverSeveralTurns } from "../rpc/invoke.js";
import { requestPrincipal } from "./early-auth.js";
import { QUERY_POINTER_PREFIX, queryPointer } from "./json-pointer.js";
import { INTERNAL_ERROR_DETAIL, problem, problemFromConnectError, sendProblem } from "./problem.js";
import { type CreateBodyMap, type CreateBodyShape, type CreateShapes, decodeCreateBody } from "./rest-decode.js";
import { QueryReader } from "./rest-query.js";
import { decodeUtf8Strictly } from "./utf8.js";

/**
 * What the HTTP adapters over the service (REST, docs/api.md §4, and OGC API – Features, §12)
 * share: reading JSON bodies, the call's context, and answering a failed call as problem details.
 */

export const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** A body with a problem at every position of a huge geometry still gets a bounded answer. */
const MAX_LISTED_ERRORS = 1000;

/** A JSON body that did not parse: kept so the error is reported after authentication. */
export class UnparseableBody {
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
export type RequestFieldPointer = (v: Violation) => string;

const inQuery: RequestFieldPointer = (v) => queryPointer(v.field);

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
 * The next page's address (docs/api.md §12): the request's own path and query with `page_token`
 * (and no `offset`), path-absolute, so it holds behind any proxy that keeps paths.
 */
export function nextPageHref(url: string, token: string): string {
  const at = url.indexOf("?");
  const path = at < 0 ? url : url.slice(0, at);
  const query = new URLSearchParams(at < 0 ? "" : url.slice(at + 1));
  query.delete("page_token");
  query.delete("offset");
  query.append("page_token", token);
  return `${path}?${query}`;
}

/** The RFC 8288 `Link` header to the next page at `href`. */
export function nextLinkHeader(href: string): string {
  return `<${href}>; rel="next"`;
}

/** The RFC 8288 `Link` header to the next page of the request at `url`. */
export function nextPageLink(url: string, token: string): string {
  return nextLinkHeader(nextPageHref(url, token));
}

/** The methods a route may be registered for (HEAD is GET's: Fastify adds it to every GET route). */
const ROUTE_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;
type RouteMethod = (typeof ROUTE_METHODS)[number];

/**
 * Answers every method but `served` on `url` with 405 and `Allow` (OPTIONS too), so no other route
 * takes them: `GET /sources/search` is not a get by id, `POST /sources/{id}` not a create.
 */
export function refuseOtherMethods(app: FastifyInstance, url: string, served: readonly RouteMethod[]): void {
  const allow = served.join(", ");
  app.route({
    method: ROUTE_METHODS.filter((method) => !served.includes(method)),
    url,
    handler: async (_request, reply) => sendMethodNotAllowed(reply, allow),
  });
}

/** 405 with `Allow` (RFC 9110 §15.5.6): the path is served, by other methods. */
export function sendMethodNotAllowed(reply: FastifyReply, allow: string): FastifyReply {
  return sendProblem(
    reply.header("allow", allow),
    problem(405, "unimplemented", `method not allowed; allowed: ${allow}`),
  );
}

/**
 * The methods a path with no refuseOtherMethods route is served by (HEAD left out, as GET implies
 * it), in the order `Allow` lists them: every route found there serves.
 */
export function methodsServing(app: FastifyInstance, path: string): string[] {
  return ROUTE_METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
}

export const unsupportedMediaType = () =>
  problem(415, "invalid_argument", "Content-Type must be application/json (or application/geo+json)");

/** How an adapter answers a failed call unlike REST: OGC answers an invalid query with 400. */
export interface ErrorAnswerOptions {
  /** The status of any invalid_argument (a call that reads no body: all its problems are the query's). */
  invalidArgumentStatus?: number;
  /** The status of an invalid_argument whose problems all point into the query (a create's). */
  invalidQueryStatus?: number;
}

export function sendError(
  reply: FastifyReply,
  error: unknown,
  body: CreateBodyMap | null,
  requestField?: RequestFieldPointer,
  options: ErrorAnswerOptions = {},
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
  const queryOnly = errors.length > 0 && errors.every((e) => e.pointer.startsWith(QUERY_POINTER_PREFIX));
  const status = queryOnly
    ? (options.invalidQueryStatus ?? options.invalidArgumentStatus)
    : options.invalidArgumentStatus;
  if (connectError.code === Code.InvalidArgument && status !== undefined) {
    details.status = status;
    details.title = STATUS_CODES[details.status] ?? details.title;
  }
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

/** A create body decoded (docs/api.md §4.3's shapes), with what was wrong with its JSON. */
interface CreateBody {
  decoded: ReturnType<typeof decodeCreateBody>;
  violations: Violation[];
}

/**
 * Reads a create body for REST and OGC alike: null when there is none (the request's type is not
 * JSON: 415); a body that did not parse becomes a violation at its root, reported with the rest.
 */
function readCreateBody(body: unknown, shapes: CreateShapes): CreateBody | null {
  if (body === undefined) return null;
  if (body instanceof UnparseableBody) {
    return {
      decoded: decodeCreateBody({ type: "FeatureCollection", features: [] }),
      violations: [{ field: "sources", pointer: "", detail: body.reason }],
    };
  }
  const decoded = decodeCreateBody(body, shapes);
  return { decoded, violations: decoded.violations };
}

/** What a route hands its in-process call besides the request: all optional. */
export interface RouteCallContext {
  /** The adapter's own violations (its query's, its body's), answered with the call's. */
  violations?: Violation[];
  /** Filled with the answer's records, as the ledger has them (recordSinkKey). */
  records?: SourceRecord[] | null;
  /** Sets whatever else the route reads back from the call's context (its answer's items). */
  values?: (values: ContextValues) => void;
}

/**
 * Calls `method` in process for a route, with the options callOptionsFor builds for that same
 * method: a route names its method once.
 */
export function callFromRoute<I extends DescMessage, O extends DescMessage>(
  call: InProcessCaller,
  method: DescMethodUnary<I, O>,
  message: MessageShape<I>,
  request: FastifyRequest,
  reply: FastifyReply,
  context: RouteCallContext = {},
): Promise<MessageShape<O>> {
  const options = callOptionsFor(method, request, reply, context.violations, context.records);
  context.values?.(options.values);
  return call(method, message, options);
}

/**
 * The in-process call's options for `method`: the early principal, the adapter's own violations,
 * the records' sink. A call whose page may read on over several turns (readsOverSeveralTurns,
 * docs/api.md §13) gets a signal that aborts once the response closes before the page is sent (the
 * client went away), so the ledger stops before its next read; every other call is answered in the
 * turn it starts and gets the invoker's shared never-aborted signal.
 */
function callOptionsFor(
  method: DescMethodUnary,
  request: FastifyRequest,
  reply: FastifyReply,
  violations: Violation[] = [],
  records: SourceRecord[] | null = null,
): InProcessCall & { values: ContextValues } {
  const values = createContextValues();
  const principal = requestPrincipal(request);
  if (principal !== undefined) values.set(principalKey, principal);
  values.set(decodeViolationsKey, violations);
  values.set(recordSinkKey, records);
  const options = { headers: headersOf(request), url: request.url, requestMethod: request.method, values };
  if (!readsOverSeveralTurns(method)) return options;
  const closed = new AbortController();
  const response: ServerResponse | Http2ServerResponse = reply.raw;
  // Gone already (while an early check awaited, say): its 'close' will not come again.
  if (response instanceof Http2ServerResponse ? response.stream.destroyed : response.destroyed) closed.abort();
  // Closed before the page was sent: nobody waits for it. (After it, an abort would only cost.)
  else response.once("close", () => reply.sent || closed.abort());
  return { ...options, signal: closed.signal };
}

/**
 * A create, for REST and OGC alike: the body read (415 without a JSON one), an admin's
 * `account_id` from the query, CreateSources called in-process; `answer` sends the created
 * records in the adapter's own form, knowing the body's shape. A failed call answers as problems
 * pointing into the body.
 */
export async function answerCreate(
  call: InProcessCaller,
  request: FastifyRequest,
  reply: FastifyReply,
  answer: (records: SourceRecord[], shape: CreateBodyShape) => FastifyReply,
  { shapes = "all", ...errorOptions }: ErrorAnswerOptions & { shapes?: CreateShapes } = {},
): Promise<FastifyReply> {
  const query = new QueryReader(request.query as Record<string, string>, ["account_id"]);
  let body: CreateBody | null = null;
  try {
    body = readCreateBody(request.body, shapes);
    if (body === null) return sendProblem(reply, unsupportedMediaType());
    // Let go of the parsed JSON once decoded: left on the request, a batch's (~12 KiB a source)
    // lived through the group commit, was promoted and collected as old (docs/benchmarks.md).
    request.body = undefined;
    const message = body.decoded.request;
    message.accountId = query.text("account_id");
    const records: SourceRecord[] = [];
    await callFromRoute(call, SourceLedgerService.method.createSources, message, request, reply, {
      violations: [...query.violations, ...body.violations],
      records,
    });
    return answer(records, body.decoded.shape);
  } catch (error) {
    return sendError(reply, error, body?.decoded.map ?? null, undefined, errorOptions);
  }
}

/**
 * A body in a content coding (RFC 9110 §8.4) or a transfer coding other than chunked (RFC 9112
 * §6.1, which Node's parser lets through undecoded): the service reads bodies as sent, so a
 * compressed one would be parsed as garbage, and a plain one labelled compressed taken as plain.
 * 415 (RFC 9110 §15.5.16); RFC 9112 suggests 501 for an unknown transfer coding, but the fault is
 * the request's, and a 5xx would read as the service's own.
 */
class UnsupportedCoding extends Error {
  readonly statusCode = 415;

  constructor(header: "Content-Encoding" | "Transfer-Encoding", value: string) {
    const only = header === "Transfer-Encoding" ? " (only chunked is)" : "";
    super(`${header} ${preview(value)} is not supported${only}; send the body uncompressed`);
  }
}

/** The refusal of a body's coding, if it has one the service does not read. */
function unsupportedCoding(headers: IncomingHttpHeaders): UnsupportedCoding | undefined {
  const coding = headers["content-encoding"]?.trim();
  if (coding !== undefined && coding !== "" && coding.toLowerCase() !== "identity") {
    return new UnsupportedCoding("Content-Encoding", coding);
  }
  const transfer = headers["transfer-encoding"];
  if (transfer?.split(",").some((part) => part.trim().toLowerCase() !== "chunked")) {
    return new UnsupportedCoding("Transfer-Encoding", transfer.trim());
  }
  return undefined;
}

/**
 * JSON (and GeoJSON) bodies, parsed for the routes that take one; a body that does not parse is
 * kept as UnparseableBody, to be reported after authentication. Failed calls answer as problems.
 */
export function installJsonHandling(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  // GeoJSON's own media type (RFC 7946 §12) is JSON too; create bodies are GeoJSON.
  const jsonTypes = ["application/json", "application/geo+json"];
  app.addContentTypeParser(jsonTypes, { parseAs: "buffer", bodyLimit: MAX_BODY_BYTES }, (req, bytes, done) => {
    // Only POST routes read a body: one sent with DELETE (no defined meaning, RFC 9110 §9.3.5)
    // or GET is let past unread, whatever its coding.
    if (req.method !== "POST") return done(null, undefined);
    const refusal = unsupportedCoding(req.headers);
    if (refusal !== undefined) return done(refusal, undefined);
    if (bytes.length === 0) return done(null, new UnparseableBody("the body is empty; send a JSON object"));
    let text: string;
    try {
      text = decodeUtf8Strictly(bytes as Buffer, "the body");
    } catch (error) {
      return done(null, new UnparseableBody((error as Error).message));
    }
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      done(null, new UnparseableBody(`the body is not valid JSON: ${(error as Error).message}`));
    }
  });

  // Also the answer of every failed service call (the handlers below do not catch them): the
  // error shield lets only ConnectErrors out of the interceptor chain. Create catches its own,
  // to point violations into the body it decoded.
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (error instanceof ConnectError) return sendError(reply, error, null);
    if (error instanceof UnsupportedCoding) {
      return sendProblem(reply, problem(415, "invalid_argument", error.message));
    }
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
}
