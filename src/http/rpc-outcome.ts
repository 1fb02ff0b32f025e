import { createContextKey } from "@connectrpc/connect";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { FastifyRequest } from "fastify";
import { type AnswerStatus, codeName } from "../rpc/answer-status.js";

/**
 * The Connect/gRPC code an RPC was answered with, for /metrics (docs/api.md §1.3): `ok`, or the
 * code in snake case. An early refusal (sendRpcError) records it itself; every answer Connect's
 * handlers write is seen on its way out by `recordOutcome` (a status visitor, answer-status.ts),
 * whatever produced it (an interceptor, the decoder, Connect itself).
 */
export interface RpcOutcome {
  code: string | undefined;
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
  if (outcome !== undefined) outcome.code = codeName(status.code);
}
