import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";

/**
 * What a caller is told when its request message is not valid protobuf: its fault, so
 * `invalid_argument`, in a fixed text. Connect reports it as `internal` with the parser's own words
 * ("parse binary: illegal tag: field no 0 wire type 7"), which blames the server and shows its
 * internals (docs/api.md §6).
 */
export const NOT_PROTOBUF = "the request message is not valid protobuf";

/** What a caller is told when its JSON request message does not parse, instead of V8's parser message. */
export const NOT_JSON = "the request message is not valid JSON";

const PARSE_FAILURE = "parse binary:";
// protobuf-es prefixes JSON.parse's own message; V8's messages for malformed JSON start like these.
const JSON_SYNTAX =
  /^cannot decode message [\w.]+ from JSON: (?:Unexpected|Expected|Bad (?:control|escaped)|Unterminated|No number|Exponent part|.* is not valid JSON)/;
const GRPC_INVALID_ARGUMENT = "3";
const GRPC_INTERNAL = "13";
const GRPC_WEB = /^application\/grpc-web/i;
const GRPC = /^application\/grpc/i;
const TRAILER_FLAG = 0b1000_0000;

/** The fixed text for a decode failure (gRPC status and message), or null for any other refusal. */
function fixedText(status: string | null, message: string | null): string | null {
  if (message === null) return null;
  const text = decodeURIComponent(message);
  if (status === GRPC_INTERNAL && text.startsWith(PARSE_FAILURE)) return NOT_PROTOBUF;
  if (status === GRPC_INVALID_ARGUMENT && JSON_SYNTAX.test(text)) return NOT_JSON;
  return null;
}

/** gRPC: the status travels in the trailer, which is complete once the body has been written. */
function rewriteGrpc(res: UniversalServerResponse): UniversalServerResponse {
  const { body, trailer } = res;
  if (trailer === undefined) return res;
  const fix = () => {
    const text = fixedText(trailer.get("grpc-status"), trailer.get("grpc-message"));
    if (text === null) return;
    trailer.set("grpc-status", GRPC_INVALID_ARGUMENT);
    trailer.set("grpc-message", encodeURIComponent(text));
    trailer.delete("grpc-status-details-bin");
  };
  if (body === undefined) {
    fix();
    return res;
  }
  async function* fixedAfter(chunks: AsyncIterable<Uint8Array>) {
    yield* chunks;
    fix();
  }
  return { ...res, body: fixedAfter(body) };
}

/** gRPC-Web: the status travels in a trailer frame (flag 0x80) of the body. */
function rewriteGrpcWeb(res: UniversalServerResponse): UniversalServerResponse {
  const { body } = res;
  if (body === undefined) return res;
  async function* fixed(chunks: AsyncIterable<Uint8Array>) {
    for await (const chunk of chunks) {
      if (chunk[0] !== TRAILER_FLAG) {
        yield chunk;
        continue;
      }
      const text = Buffer.from(chunk.subarray(5)).toString("latin1");
      const fields = new Map(
        text
          .split("\r\n")
          .filter((line) => line !== "")
          .map((line) => {
            const colon = line.indexOf(":");
            return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()] as const;
          }),
      );
      const fixed = fixedText(fields.get("grpc-status") ?? null, fields.get("grpc-message") ?? null);
      if (fixed === null) {
        yield chunk;
        continue;
      }
      fields.set("grpc-status", GRPC_INVALID_ARGUMENT);
      fields.set("grpc-message", encodeURIComponent(fixed));
      fields.delete("grpc-status-details-bin");
      const data = Buffer.from([...fields].map(([name, value]) => `${name}: ${value}\r\n`).join(""), "latin1");
      const frame = Buffer.alloc(5 + data.length);
      frame[0] = TRAILER_FLAG;
      frame.writeUInt32BE(data.length, 1);
      data.copy(frame, 5);
      yield frame;
    }
  }
  return { ...res, body: fixed(body) };
}

/** Connect unary: an error answer (400, 500) that is a decode failure becomes 400 with the fixed text. */
async function rewriteConnect(res: UniversalServerResponse): Promise<UniversalServerResponse> {
  if ((res.status !== 500 && res.status !== 400) || res.body === undefined) return res;
  const chunks: Uint8Array[] = [];
  for await (const chunk of res.body) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  let error: { code?: unknown; message?: unknown } | null = null;
  try {
    error = JSON.parse(bytes.toString("utf8")) as { code?: unknown; message?: unknown };
  } catch {
    // Not Connect's error JSON: passed on as it was.
  }
  const replay = async function* () {
    yield bytes;
  };
  const status =
    error?.code === "internal" ? GRPC_INTERNAL : error?.code === "invalid_argument" ? GRPC_INVALID_ARGUMENT : null;
  const fixed = typeof error?.message === "string" ? fixedText(status, encodeURIComponent(error.message)) : null;
  if (fixed === null) return { ...res, body: replay() };
  const body = Buffer.from(JSON.stringify({ code: "invalid_argument", message: fixed }));
  const header = new Headers(res.header);
  header.set("content-length", String(body.length));
  return {
    status: 400,
    header,
    body: (async function* () {
      yield body;
    })(),
  };
}

/**
 * Wraps a Connect handler so that a request message that is not valid protobuf, or not valid JSON,
 * is refused as `invalid_argument` with a fixed text, in each protocol's own error form. Everything else passes
 * through untouched.
 */
export function refuseBadProtobufAsInvalid(handler: UniversalHandler): UniversalHandler {
  const wrapped = async (req: Parameters<UniversalHandler>[0]) => {
    const res = await handler(req);
    const contentType = req.header.get("content-type") ?? "";
    if (GRPC_WEB.test(contentType)) return rewriteGrpcWeb(res);
    if (GRPC.test(contentType)) return rewriteGrpc(res);
    return rewriteConnect(res);
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
