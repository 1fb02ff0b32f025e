import { Code, ConnectError, createContextKey } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { FastifyRequest } from "fastify";
import { type AnswerStatus, codeName } from "../rpc/answer-status.js";
import { withSameRoute } from "../rpc/handler-route.js";

/**
 * The Connect/gRPC code an RPC was answered with, for /metrics (docs/api.md §1.3): `ok`, or the
 * code in snake case. An early refusal (sendRpcError) records it itself; every answer Connect's
 * handlers write is seen on its way out by `recordOutcome` (a status visitor, answer-status.ts),
 * whatever produced it (an interceptor, the decoder, Connect itself).
 */
export interface RpcOutcome {
  code: string | undefined;
  /**
   * Answered before Connect's handler was done (the body deadline's 408): the handler's own
   * answer, when it comes, has nowhere to go and is dropped (withoutLateAnswer).
   */
  answered?: boolean;
}

const outcomes = new WeakMap<FastifyRequest, RpcOutcome>();

/** The request's outcome slot, created on first use. */
export function rpcOutcomeOf(request: FastifyRequest): RpcOutcome {
  let outcome = outcomes.get(request);
  if (outcome === undefined) {
    outcome = { code: undefined };
    outcomes.set(request, outcome);
  }
  return outcome;
}

/** The code recorded for `request`, if any. */
export function recordedRpcCode(request: FastifyRequest): string | undefined {
  return outcomes.get(request)?.code;
}

/** Carries the request's outcome slot from the Fastify request into Connect's handler. */
export const rpcOutcomeKey = createContextKey<RpcOutcome | undefined>(undefined, { description: "rpc outcome" });

/** Records an answer's final status in the request's outcome slot. */
export function recordOutcome(status: AnswerStatus, req: UniversalServerRequest): void {
  const outcome = req.contextValues?.get(rpcOutcomeKey);
  // An answer dropped (withoutLateAnswer) is not the one the call was answered with.
  if (outcome !== undefined && outcome.answered !== true) outcome.code = codeName(status.code);
}

/**
 * A Connect handler whose answer is dropped when the request was answered meanwhile: Connect's
 * Fastify adapter would fail writing it ("Response has already been initiated") and print that
 * with a stack to stderr, past the logger, once per request cut off. An `aborted` error it ends
 * quietly.
 */
export function withoutLateAnswer(handler: UniversalHandler): UniversalHandler {
  return withSameRoute(handler, async (req) => {
    const answer = await handler(req);
    if (req.contextValues?.get(rpcOutcomeKey)?.answered) {
      throw new ConnectError("the request was answered before its handler was done", Code.Aborted);
    }
    return answer;
  });
}
