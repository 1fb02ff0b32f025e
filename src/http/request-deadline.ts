import { Code } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { codeName } from "../rpc/answer-status.js";
import { type ProblemDetails, problem, sendProblem } from "./problem.js";
import { rpcOutcomeOf } from "./rpc-outcome.js";

/** How many requests the deadline cut off, for the operator (and /metrics once it exists). */
export interface DeadlineCounts {
  bodyTimeouts: number;
}

/**
 * A deadline for receiving a request's body, from its first byte of headers, over HTTP/1.1 and
 * HTTP/2 alike (Node's own `requestTimeout` covers HTTP/1.1 only, checked at a coarse interval): a
 * client sending a body at a byte a second cannot hold a connection or a stream for longer. When it
 * passes before the body has arrived, the answer is 408 problem details and the connection (HTTP/1.1)
 * or the stream (HTTP/2) is closed. The handler's own work is not limited: the deadline stops when
 * the body is complete.
 */
export function installRequestDeadline(app: FastifyInstance, deadlineMs: number, counts: DeadlineCounts): void {
  if (deadlineMs <= 0) return;
  app.addHook("onRequest", (request, reply, done) => {
    const raw = request.raw;
    if (raw.complete || raw.readableEnded || !carriesBody(request)) {
      done();
      return;
    }
    const timer = setTimeout(() => cutOff(request, reply, deadlineMs, counts), deadlineMs);
    timer.unref();
    const clear = () => clearTimeout(timer);
    raw.once("end", clear);
    raw.once("close", clear);
    reply.raw.once("finish", clear);
    done();
  });
}

/**
 * Whether a body is on its way: announced by Content-Length (above 0) or Transfer-Encoding over
 * HTTP/1.1; over HTTP/2 any request but GET and HEAD may stream one without announcing it. Reads
 * (most requests) then arm no timer at all.
 */
function carriesBody(request: FastifyRequest): boolean {
  const { headers } = request;
  if (request.raw.httpVersionMajor >= 2) return request.method !== "GET" && request.method !== "HEAD";
  const length = headers["content-length"];
  return headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/** The answer when a body did not arrive within `deadlineMs` (here and on the lean gRPC path). */
export function bodyDeadlineProblem(deadlineMs: number): ProblemDetails {
  return problem(408, "deadline_exceeded", `the request body was not received within ${deadlineMs} ms`);
}

function cutOff(request: FastifyRequest, reply: FastifyReply, deadlineMs: number, counts: DeadlineCounts): void {
  counts.bodyTimeouts++;
  // An RPC's handler may still answer once the body ends or breaks off: that answer is dropped.
  const outcome = rpcOutcomeOf(request);
  outcome.code ??= codeName(Code.DeadlineExceeded);
  outcome.answered = true;
  const http1 = request.raw.httpVersionMajor < 2;
  if (!reply.sent && !reply.raw.headersSent) {
    // HTTP/2 has no Connection header (Node refuses it): there the stream alone is closed.
    if (http1) reply.header("connection", "close");
    sendProblem(reply, bodyDeadlineProblem(deadlineMs));
  }
  // HTTP/1.1: the connection goes, with whatever is still arriving; HTTP/2: only this stream
  // (answered-streams.ts closes it once the answer is out).
  if (http1) reply.raw.once("finish", () => request.raw.socket?.destroy());
}
