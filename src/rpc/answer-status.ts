import { Code, ConnectError } from "@connectrpc/connect";
import {
  compressedFlag,
  encodeEnvelope,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import {
  codeFromString,
  codeToHttpStatus,
  codeToString,
  contentTypeStreamRegExp,
  type EndStreamResponse,
  endStreamFlag,
  endStreamFromJson,
  endStreamToJson,
} from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { withSameRoute } from "./handler-route.js";

/** The final status of an RPC answer: its code (`0` for success) and message. */
export interface AnswerStatus {
  code: number;
  message: string;
}

/**
 * Sees each answer's final status; returns a replacement to answer with instead (for a refusal:
 * Connect's own decoder reports some as `internal`), or nothing to leave it as it is.
 */
export type StatusVisitor = (status: AnswerStatus, req: UniversalServerRequest) => AnswerStatus | undefined;

export type RpcProtocol = "grpc-web" | "grpc" | "connect";

const GRPC_WEB = /^application\/grpc-web(?:-text)?(?:[+;]|$)/i;
const GRPC = /^application\/grpc(?:[+;]|$)/i;

/** The protocol of an RPC request, from its content type. */
export function rpcProtocolOf(contentType: string | null | undefined): RpcProtocol {
  const type = contentType ?? "";
  if (GRPC_WEB.test(type)) return "grpc-web";
  if (GRPC.test(type)) return "grpc";
  return "connect";
}

/** `ok`, or the code in snake case (as Connect names it on the wire). */
export function codeName(code: number): string {
  return code === 0 ? "ok" : codeToString(code as Code);
}

/** A status read from gRPC's `grpc-status` / `grpc-message` fields, or undefined when absent. */
function grpcStatus(status: string | null | undefined, message: string | null | undefined): AnswerStatus | undefined {
  if (status === null || status === undefined || !/^\d+$/.test(status)) return undefined;
  return { code: Number(status), message: message ? decodeURIComponent(message) : "" };
}

/** Writes `status` into gRPC status fields (a replacement never carries the old details). */
function setGrpcStatus(
  fields: { set(name: string, value: string): void; delete(name: string): void },
  s: AnswerStatus,
) {
  fields.set("grpc-status", String(s.code));
  fields.set("grpc-message", encodeURIComponent(s.message));
  fields.delete("grpc-status-details-bin");
}

/** gRPC: the status is in the trailer, complete once the body has been written (or in the headers). */
function visitGrpc(res: UniversalServerResponse, visit: (s: AnswerStatus) => AnswerStatus | undefined) {
  const header = res.header;
  const inHeader = grpcStatus(header?.get("grpc-status"), header?.get("grpc-message"));
  if (inHeader !== undefined && header !== undefined) {
    const replaced = visit(inHeader);
    if (replaced) setGrpcStatus(header, replaced);
    return res;
  }
  const { body, trailer } = res;
  const atEnd = () => {
    const status = grpcStatus(trailer?.get("grpc-status"), trailer?.get("grpc-message"));
    if (status === undefined || trailer === undefined) return;
    const replaced = visit(status);
    if (replaced) setGrpcStatus(trailer, replaced);
  };
  if (body === undefined) {
    atEnd();
    return res;
  }
  async function* thenVisit(chunks: AsyncIterable<Uint8Array>) {
    yield* chunks;
    atEnd();
  }
  return { ...res, body: thenVisit(body) };
}

/** gRPC-Web: the status is in a trailer frame (flag 0x80) at the end of the body. */
function visitGrpcWeb(res: UniversalServerResponse, visit: (s: AnswerStatus) => AnswerStatus | undefined) {
  const { body } = res;
  if (body === undefined) return res;
  async function* visited(chunks: AsyncIterable<Uint8Array>) {
    for await (const chunk of chunks) {
      if (chunk[0] !== trailerFlag) {
        yield chunk;
        continue;
      }
      const fields = trailerParse(chunk.subarray(5));
      const status = grpcStatus(fields.get("grpc-status"), fields.get("grpc-message"));
      const replaced = status && visit(status);
      if (!replaced) {
        yield chunk;
        continue;
      }
      setGrpcStatus(fields, replaced);
      yield encodeEnvelope(trailerFlag, trailerSerialize(fields));
    }
  }
  return { ...res, body: visited(body) };
}

async function* once(bytes: Uint8Array) {
  yield bytes;
}

/**
 * Connect streaming (Health/Watch): the status is in the end-of-stream message that ends the body,
 * with its error or none for success (read and written by Connect's own end-stream JSON). A
 * compressed one is passed on unread.
 */
function visitConnectStream(res: UniversalServerResponse, visit: (s: AnswerStatus) => AnswerStatus | undefined) {
  const { body } = res;
  if (body === undefined) return res;
  async function* visited(chunks: AsyncIterable<Uint8Array>) {
    for await (const chunk of chunks) {
      if ((chunk[0] & endStreamFlag) === 0 || (chunk[0] & compressedFlag) !== 0) {
        yield chunk;
        continue;
      }
      let end: EndStreamResponse;
      try {
        end = endStreamFromJson(chunk.subarray(5));
      } catch (error) {
        // Not Connect's end-of-stream JSON: seen as unknown, passed on as it was.
        end = { metadata: new Headers(), error: ConnectError.from(error) };
      }
      const replaced = visit({ code: end.error?.code ?? 0, message: end.error?.rawMessage ?? "" });
      if (!replaced) {
        yield chunk;
        continue;
      }
      const error = replaced.code === 0 ? undefined : new ConnectError(replaced.message, replaced.code);
      const json = JSON.stringify(endStreamToJson(end.metadata, error, undefined));
      yield encodeEnvelope(chunk[0], Buffer.from(json));
    }
  }
  return { ...res, body: visited(body) };
}

/** Connect unary: a 200 is success; an error's small JSON body names the code and the message. */
async function visitConnect(res: UniversalServerResponse, visit: (s: AnswerStatus) => AnswerStatus | undefined) {
  if (res.status === 200 || res.body === undefined) {
    visit({ code: res.status === 200 ? 0 : Code.Unknown, message: "" });
    return res;
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of res.body) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  let error: { code?: unknown; message?: unknown } = {};
  try {
    error = JSON.parse(bytes.toString("utf8")) as { code?: unknown; message?: unknown };
  } catch {
    // Not Connect's error JSON: seen as unknown, passed on as it was.
  }
  const code = (typeof error.code === "string" && codeFromString(error.code)) || Code.Unknown;
  const replaced = visit({ code, message: typeof error.message === "string" ? error.message : "" });
  if (!replaced) return { ...res, body: once(bytes) };
  const body = Buffer.from(JSON.stringify({ code: codeName(replaced.code), message: replaced.message }));
  const header = new Headers(res.header);
  header.set("content-length", String(body.length));
  return { status: codeToHttpStatus(replaced.code as Code), header, body: once(body) };
}

/**
 * Wraps a Connect handler so that `visit` sees the final status of every answer it writes, in
 * whichever protocol's form, and may replace it (the body passes through untouched otherwise).
 */
export function withAnswerStatus(handler: UniversalHandler, visit: StatusVisitor): UniversalHandler {
  return withSameRoute(handler, async (req: UniversalServerRequest) => {
    const res = await handler(req);
    const see = (status: AnswerStatus) => visit(status, req);
    switch (rpcProtocolOf(req.header.get("content-type"))) {
      case "grpc-web":
        return visitGrpcWeb(res, see);
      case "grpc":
        return visitGrpc(res, see);
      default:
        return contentTypeStreamRegExp.test(req.header.get("content-type") ?? "")
          ? visitConnectStream(res, see)
          : visitConnect(res, see);
    }
  });
}
