/**
 * How RPC answers are compressed, read by Connect's adapter and the lean gRPC path alike (so both
 * answer byte for byte the same): gzip and br, accepted on requests with connect-node's
 * decompression and limits, and on answers only from `COMPRESS_MIN_BYTES`, at
 * the fast end of each encoder. A gRPC answer is compressed only when its request names an
 * encoding (`answerEncodingsListed`).
 *
 * connect-node compresses with zlib's defaults: gzip level 6 and brotli quality 11. Quality 11 is
 * made for static files: it took 0.2–0.8 s of CPU for one 170–340 KB list page (2.6 s for a
 * 1,000-record Connect answer, measured in docs/benchmarks.md, issue 13), so any caller sending
 * `accept-encoding: br` could keep the server's cores and libuv's thread pool busy with a few
 * calls. Brotli quality 4 and gzip level 1 compress such a page in 1–6 ms, within a few per cent
 * of the default ratios for gzip.
 *
 * A request that does not decompress (truncated, corrupt) is the caller's error: connect-node
 * answers `internal` for most such data (zlib's Z_BUF_ERROR), which the Connect protocol sends as
 * HTTP 500; here all of it is `invalid_argument`, naming the encoding.
 */
import { promisify } from "node:util";
import { brotliCompress, constants, gzip } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression, UniversalHandler } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { rpcProtocolOf } from "./answer-status.js";
import { withSameRoute } from "./handler-route.js";

/**
 * Answers smaller than this are never compressed: gzip of a one-record answer cost more CPU than
 * it saved on the wire (docs/benchmarks.md).
 */
export const COMPRESS_MIN_BYTES = 64 * 1024;

const GZIP_LEVEL = 1;
const BROTLI_QUALITY = 4;
/**
 * zlib's output chunk: an answer worth compressing is 64 KiB or more, and each 16 KiB chunk of
 * zlib's default is a round trip between the thread pool and the event loop (zlib's processChunk
 * was ~7% of the event loop's time under ListSources loads).
 */
const CHUNK_BYTES = 64 * 1024;

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

/** Connect's type wants bytes over an ArrayBuffer (not a SharedArrayBuffer), as connect-node checks. */
function ownBuffer(bytes: Buffer): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes);
}

/**
 * zlib's codes for data that is not valid gzip or brotli (truncated streams are Z_BUF_ERROR):
 * the caller's error. Anything else (memory, a limit out of range) stays the server's.
 */
function isBadData(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return (
    code === "Z_BUF_ERROR" ||
    code === "Z_DATA_ERROR" ||
    code.startsWith("ERR_PADDING_") ||
    code.startsWith("ERR__ERROR_FORMAT_")
  );
}

/** connect-node's decompression and size limit; data it cannot decompress is the caller's error, one text for all. */
function decompressingAsClientError(compression: Compression): Compression["decompress"] {
  return async (bytes, readMaxBytes) => {
    try {
      return await compression.decompress(bytes, readMaxBytes);
    } catch (error) {
      if (error instanceof ConnectError && error.code !== Code.ResourceExhausted && isBadData(error.cause)) {
        throw new ConnectError(
          `the request message is not valid ${compression.name} data`,
          Code.InvalidArgument,
          undefined,
          undefined,
          error.cause,
        );
      }
      throw error;
    }
  };
}

/** gzip then br, connect-node's order of preference for what a client lists. */
export const RPC_COMPRESSIONS: Compression[] = [
  {
    ...compressionGzip,
    decompress: decompressingAsClientError(compressionGzip),
    compress: async (bytes) => ownBuffer(await gzipAsync(bytes, { level: GZIP_LEVEL, chunkSize: CHUNK_BYTES })),
  },
  {
    ...compressionBrotli,
    decompress: decompressingAsClientError(compressionBrotli),
    compress: async (bytes) =>
      ownBuffer(
        await brotliAsync(bytes, {
          chunkSize: CHUNK_BYTES,
          params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY },
        }),
      ),
  },
];

/** Where a gRPC client lists the encodings it reads. */
export const GRPC_ACCEPT_ENCODING = "grpc-accept-encoding";

/**
 * The client's list of encodings, as it counts when an answer's encoding is chosen. Over gRPC an
 * answer is compressed only when its request names an encoding in `grpc-encoding` (whether or
 * not its message was itself compressed), in that encoding, and only when the client's list, if
 * it sends one, includes it (gRPC's compression guide: never an encoding the client did not list):
 * grpc-go's server default. Every gRPC client lists gzip whether or not compression pays on its
 * link, and gRPC's callers are internal services: on a data-centre network a 178 KB page is on the
 * wire in a fraction of a millisecond, and gzip at level 1 costs the server ~1.3 ms of CPU for it
 * (docs/benchmarks.md, issue 13). A client on a slow link turns compression on for its calls
 * (grpc-js `grpc.default_compression_algorithm`, grpc-go `grpc.UseCompressor`) and gets answers
 * in kind. Connect and gRPC-Web, the protocols of browsers and callers outside, keep their lists.
 * Returns what Connect's negotiation is to read as the list: null for none (the answer then
 * follows the request), or one name.
 */
export function answerEncodingsListed(
  contentType: string | null | undefined,
  listed: string | null,
  requested: string | null,
): string | null {
  if (rpcProtocolOf(contentType) !== "grpc") return listed;
  if (requested === null || requested === "identity") return null;
  const names = listed?.split(",").map((name) => name.trim());
  return names === undefined || names.includes(requested) ? requested : "identity";
}

/** Connect's handler, choosing gRPC answers' encoding by `answerEncodingsListed`, as the lean path does. */
export function grpcAnswersAsRequested(handler: UniversalHandler): UniversalHandler {
  return withSameRoute(handler, (req) => {
    const listed = req.header.get(GRPC_ACCEPT_ENCODING);
    const counted = answerEncodingsListed(req.header.get("content-type"), listed, req.header.get("grpc-encoding"));
    if (counted === null) req.header.delete(GRPC_ACCEPT_ENCODING);
    else if (counted !== listed) req.header.set(GRPC_ACCEPT_ENCODING, counted);
    return handler(req);
  });
}
