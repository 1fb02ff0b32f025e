import type { ServerHttp2Stream } from "node:http2";
import { Code } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { shortened } from "../ledger/preview.js";
import { codeName, rpcProtocolOf } from "../rpc/answer-status.js";
import { rpcOutcomeOf } from "./rpc-outcome.js";

/**
 * A gRPC call to a method or service this server does not have. The gRPC protocol answers it as
 * status UNIMPLEMENTED in a trailers-only response (HTTP 200, `grpc-status: 12` in the headers,
 * nothing after them), as gRPC servers do, so clients and proxies report "unimplemented" with the
 * server's message rather than a bare HTTP 404 (grpc-js made the same status of that, but
 * without saying what was missing; others stop at the 404). Null for any other request, which
 * gets the REST 404 problem.
 */
export function answerUnknownGrpcMethod(request: FastifyRequest, reply: FastifyReply): FastifyReply | null {
  const contentType = String(request.headers["content-type"] ?? "")
    .split(";")[0]
    .trim();
  // gRPC and gRPC-Web with any codec, told apart from everything else as the metrics tell them.
  if (request.method !== "POST" || rpcProtocolOf(contentType) === "connect") return null;
  const path = request.url.split("?")[0];
  const headers = {
    "content-type": contentType.toLowerCase(),
    "grpc-status": String(Code.Unimplemented),
    "grpc-message": grpcPercentEncoded(`unknown method ${shortened(path)}`),
  };
  rpcOutcomeOf(request).code = codeName(Code.Unimplemented);
  // The request's message is not read: let it drain.
  request.raw.resume();
  const stream = (request.raw as FastifyRequest["raw"] & { stream?: ServerHttp2Stream }).stream;
  if (stream !== undefined) {
    // Straight on the HTTP/2 stream: the headers must carry END_STREAM to be trailers-only.
    reply.hijack();
    if (!stream.destroyed && !stream.headersSent) stream.respond({ ":status": 200, ...headers }, { endStream: true });
    return reply;
  }
  return reply.code(200).headers(headers).send();
}

/**
 * `grpc-message`'s percent-encoding (gRPC over HTTP/2): printable ASCII but `%` as it is, every
 * other UTF-8 byte as `%XX`. (encodeURIComponent would also encode `/`, which clients such as
 * grpc-js then show as `%2F`.)
 */
function grpcPercentEncoded(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
