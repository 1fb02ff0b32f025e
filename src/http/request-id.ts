import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";

export const REQUEST_ID_HEADER = "x-request-id";

/** A client's request id is kept when it is 1–128 of these characters (docs/api.md §6.1). */
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Fastify's `genReqId`: the client's `X-Request-Id` when well-formed, else a new UUID. Fastify's
 * own `requestIdHeader` would take any value as it comes, so it is off and the header read here.
 */
export function requestIdOf(raw: Pick<IncomingMessage, "headers">): string {
  const sent = raw.headers[REQUEST_ID_HEADER];
  return typeof sent === "string" && WELL_FORMED.test(sent) ? sent : randomUUID();
}

/** The problem details `instance` of a request (docs/api.md §6.1). */
export function problemInstanceOf(requestId: string): string {
  return `urn:request:${requestId}`;
}

/**
 * Echoes the request id on every answer, whichever way it is written: on the raw response, so
 * Fastify's replies, Connect's handlers and the hijacked gRPC refusals all carry it.
 */
export function installRequestIdEcho(app: FastifyInstance): void {
  app.addHook("onRequest", (request, reply, done) => {
    reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
    done();
  });
}
