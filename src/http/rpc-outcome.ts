import { type Code, createContextKey } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyRequest } from "fastify";

/**
 * The Connect/gRPC code an RPC was answered with, for /metrics (docs/api.md §1.3): `ok`, or the
 * code in snake case. An early refusal (sendRpcError) records it itself; every answer Connect's
 * handlers write is read on its way out by `observeRpcOutcome`, whatever produced it (an
 * interceptor, the decoder, Connect itself).
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

export function codeName(code: Code | number): string {
  return code === 0 ? "ok" : codeToString(code as Code);
}

/** Carries the request's outcome slot from the Fastify request into Connect's handler. */
export const rpcOutcomeKey = createContextKey<RpcOutcome | undefined>(undefined, { description: "rpc outcome" });

const GRPC_WEB = /^application\/grpc-web/i;
const GRPC = /^application\/grpc/i;
const TRAILER_FLAG = 0b1000_0000;
const GRPC_STATUS = /(?:^|\r\n)grpc-status:\s*(\d+)/i;

function fromGrpcStatus(status: string | null | undefined): string | undefined {
  if (status === null || status === undefined || !/^\d+$/.test(status)) return undefined;
  return codeName(Number(status));
}

/** Passes `body` on unchanged, then runs `after` once it is done. */
async function* thenRun(body: AsyncIterable<Uint8Array>, after: () => void): AsyncIterable<Uint8Array> {
  try {
    yield* body;
  } finally {
    after();
  }
}

function observeGrpc(res: UniversalServerResponse, outcome: RpcOutcome): UniversalServerResponse {
  // Trailers-only answers carry the status in the headers; otherwise it is in the trailers, set
  // once the body has been written.
  outcome.code = fromGrpcStatus(res.header ? new Headers(res.header).get("grpc-status") : null);
  const read = () => {
    outcome.code = fromGrpcStatus(res.trailer?.get("grpc-status")) ?? outcome.code;
  };
  if (res.body === undefined) {
    read();
    return res;
  }
  return { ...res, body: thenRun(res.body, read) };
}

function observeGrpcWeb(res: UniversalServerResponse, outcome: RpcOutcome): UniversalServerResponse {
  outcome.code = fromGrpcStatus(res.header ? new Headers(res.header).get("grpc-status") : null);
  const { body } = res;
  if (body === undefined) return res;
  async function* watched() {
    for await (const chunk of body as AsyncIterable<Uint8Array>) {
      if (chunk[0] === TRAILER_FLAG) {
        const match = GRPC_STATUS.exec(Buffer.from(chunk.subarray(5)).toString("latin1"));
        outcome.code = fromGrpcStatus(match?.[1]) ?? outcome.code;
      }
      yield chunk;
    }
  }
  return { ...res, body: watched() };
}

async function observeConnect(res: UniversalServerResponse, outcome: RpcOutcome): Promise<UniversalServerResponse> {
  if (res.status === 200) {
    outcome.code = "ok";
    return res;
  }
  outcome.code = "unknown";
  if (res.body === undefined) return res;
  // An error: Connect's small JSON body names the code. Read, then replayed as it was.
  const chunks: Uint8Array[] = [];
  for await (const chunk of res.body) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  try {
    const parsed = JSON.parse(bytes.toString("utf8")) as { code?: unknown };
    if (typeof parsed.code === "string") outcome.code = parsed.code;
  } catch {
    // Not Connect's error JSON: the code stays unknown.
  }
  return {
    ...res,
    body: (async function* () {
      yield bytes;
    })(),
  };
}

/** Wraps a Connect handler so that the code of its answer is recorded in the request's slot. */
export function observeRpcOutcome(handler: UniversalHandler): UniversalHandler {
  const wrapped = async (req: Parameters<UniversalHandler>[0]) => {
    const res = await handler(req);
    const outcome = req.contextValues?.get(rpcOutcomeKey);
    if (outcome === undefined) return res;
    const contentType = req.header.get("content-type") ?? "";
    if (GRPC_WEB.test(contentType)) return observeGrpcWeb(res, outcome);
    if (GRPC.test(contentType)) return observeGrpc(res, outcome);
    return observeConnect(res, outcome);
  };
  return Object.assign(wrapped, {
    protocolNames: handler.protocolNames,
    service: handler.service,
    method: handler.method,
    requestPath: handler.requestPath,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
  });
}

/** The protocol of an RPC request, from its content type. */
export function rpcProtocolOf(contentType: string | undefined): "grpc-web" | "grpc" | "connect" {
  const type = contentType ?? "";
  if (GRPC_WEB.test(type)) return "grpc-web";
  if (GRPC.test(type)) return "grpc";
  return "connect";
}
