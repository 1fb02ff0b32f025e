import type { DescService } from "@bufbuild/protobuf";
import { ConnectError, type ContextValues, createContextValues } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Authenticator } from "../auth/authenticate.js";
import { principalKey } from "../auth/principal.js";
import type { Principal } from "../model/principal.js";
import { codeName, rpcProtocolOf } from "../rpc/answer-status.js";
import type { RateLimiter } from "./rate-limit.js";
import { rpcOutcomeOf } from "./rpc-outcome.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The service method a REST route calls: its scope is checked before the body is read. */
    rpcMethod?: string;
  }
}

/**
 * Authentication from the request's headers, before Fastify or Connect reads the body: a client
 * without a valid token cannot make the server read, buffer or parse megabytes (docs/api.md §2.4).
 * The principal found here travels on to the interceptors (they only authorize the method then),
 * so each token is verified once, by the one Authenticator.
 */
const principals = new WeakMap<FastifyRequest, Principal>();

/** The principal the early check established for `request`, if it ran. */
export function requestPrincipal(request: FastifyRequest): Principal | undefined {
  return principals.get(request);
}

/** What the early check runs: the one authentication, then the account's rate limit (when on). */
export interface EarlyChecks {
  authenticator: Authenticator;
  rateLimiter: RateLimiter | null;
}

/** What the early checks found: the caller's principal when authenticated, and the refusal if any. */
export interface EarlyOutcome {
  principal: Principal | undefined;
  refusal: ConnectError | null;
}

/**
 * Runs the early checks for `methodName` on a request's Authorization header, for any transport
 * (Fastify's routes here, the lean gRPC path in rpc/grpc-unary.ts).
 */
export async function runEarlyChecks(
  checks: EarlyChecks,
  authorization: string | null,
  methodName: string,
): Promise<EarlyOutcome> {
  let principal: Principal;
  try {
    principal = await checks.authenticator.authenticate(authorization, methodName);
  } catch (error) {
    return { principal: undefined, refusal: ConnectError.from(error) };
  }
  return { principal, refusal: checks.rateLimiter?.(principal, methodName) ?? null };
}

/** Runs the early checks for `methodName`: null when they passed, else the refusal to answer with. */
async function authenticateEarly(
  checks: EarlyChecks,
  request: FastifyRequest,
  methodName: string,
): Promise<ConnectError | null> {
  const { principal, refusal } = await runEarlyChecks(checks, request.headers.authorization ?? null, methodName);
  if (principal !== undefined) principals.set(request, principal);
  return refusal;
}

/**
 * After a refusal the body is never read: it is let flow past unparsed (over HTTP/2 the stream is
 * then closed once the answer is out: answered-streams.ts). Over HTTP/1.1 Node discards the rest.
 */
export function discardBody(request: FastifyRequest): void {
  request.raw.resume();
}

/**
 * The `onRequest` hook of a family of routes: `methodOf` names the service method a request calls
 * (undefined: not an API call, nothing to check), `refuse` answers a refusal in the routes' own
 * error form. The body of a refused request is discarded unread.
 */
export function earlyChecksHook(
  checks: EarlyChecks,
  methodOf: (request: FastifyRequest) => string | undefined,
  refuse: (request: FastifyRequest, reply: FastifyReply, error: ConnectError) => FastifyReply,
) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const method = methodOf(request);
    if (method === undefined) return undefined;
    const refusal = await authenticateEarly(checks, request, method);
    if (refusal === null) return undefined;
    discardBody(request);
    return refuse(request, reply, refusal);
  };
}

/** Context values carrying the early check's principal, for Connect's handler context. */
export function contextValuesOf(request: FastifyRequest): ContextValues {
  const values = createContextValues();
  const principal = principals.get(request);
  if (principal !== undefined) values.set(principalKey, principal);
  return values;
}

/** `/<package.Service>/<Method>` → the method's name, for the services Connect serves. */
export function rpcMethodsByPath(services: readonly DescService[]): ReadonlyMap<string, string> {
  return new Map(services.flatMap((service) => service.methods.map((m) => [`/${service.typeName}/${m.name}`, m.name])));
}

/**
 * A refusal of an RPC in the error form of the caller's protocol, as Connect's own handlers write
 * it: gRPC as HTTP 200 with `grpc-status` and `grpc-message` in the trailers; gRPC-Web as HTTP 200
 * with them in the headers (trailers-only, which gRPC-Web clients read); the Connect protocol as
 * its JSON error under the code's HTTP status. The error's metadata (a `WWW-Authenticate`
 * challenge) goes out as headers.
 */
export function sendRpcError(request: FastifyRequest, reply: FastifyReply, error: ConnectError): FastifyReply {
  rpcOutcomeOf(request).code = codeName(error.code);
  const contentType = request.headers["content-type"] ?? "";
  const protocol = rpcProtocolOf(contentType);
  // The status and the error's metadata, as gRPC carries them (setTrailerStatus copies the metadata).
  const status = new Headers();
  setTrailerStatus(status, error);
  if (protocol === "grpc-web") {
    reply.header("content-type", contentType);
    for (const [name, value] of status) reply.header(name, value);
    return reply.code(200).send();
  }
  if (protocol === "grpc") {
    // Fastify cannot send trailers on its own: the answer is written as Connect's gRPC handler does.
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": contentType });
    reply.raw.addTrailers(Object.fromEntries(status));
    reply.raw.end();
    return reply;
  }
  for (const [name, value] of error.metadata) reply.header(name, value);
  const body = Buffer.from(errorToJsonBytes(error, {}));
  return reply.code(codeToHttpStatus(error.code)).type("application/json").send(body);
}
