/**
 * The lean unary gRPC path (docs/api.md §9.10): `application/grpc` and `application/grpc+proto`
 * unary calls to the ledger's methods are answered on `node:http2`'s stream API, through the SAME
 * in-process invoker REST uses (same interceptors, same service, same errors), without Connect's
 * per-call machinery (async iterables, linked abort controllers, a handler context per call).
 * Everything else (Connect protocol, gRPC-Web, JSON codecs, streaming, public services, unknown
 * methods) is left to Connect's adapter behind Fastify.
 *
 * It answers exactly as Connect's gRPC handler does (test/e2e/grpc-lean-matrix.test.ts compares
 * both): the same headers, the same trailers, the same texts for protocol errors, the same
 * compression negotiation (gzip and br accepted on requests, answers in the request's encoding as
 * `answerEncodingsListed` says, messages compressed only from `compressMinBytes`).
 */
import { constants, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import { performance } from "node:perf_hooks";
import {
  type DescMessage,
  type DescMethodUnary,
  type DescService,
  fromBinary,
  type MessageShape,
} from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { type Compression, compressedFlag, compressionNegotiate } from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { principalKey } from "../auth/principal.js";
import { type EarlyChecks, runEarlyChecks } from "../http/early-auth.js";
import { malformedHostError, servableAuthorities } from "../http/host-check.js";
import type { RequestObserver } from "../http/metrics.js";
import { PROBLEM_CONTENT_TYPE } from "../http/problem.js";
import { bodyDeadlineProblem } from "../http/request-deadline.js";
import { problemInstanceOf, REQUEST_ID_HEADER, requestIdOf } from "../http/request-id.js";
import { AnswerBuffers, writeReleasing } from "./answer-buffers.js";
import { ENVELOPE_PREFIX_BYTES, envelopedAnswer, envelopeMessage, envelopePrefix } from "./answer-envelope.js";
import { codeName } from "./answer-status.js";
import { answerEncodingsListed, GRPC_ACCEPT_ENCODING, RPC_COMPRESSIONS } from "./compression.js";
import { NOT_PROTOBUF } from "./decode-errors.js";
import { type ErrorLogger, internalError } from "./error-shield.js";
import { type InProcessCaller, type ResponseMetadata, readsOverSeveralTurns, responseMetadataKey } from "./invoke.js";
import { boundedError } from "./status-bound.js";
import { grpcTimeoutOf } from "./timer-safe-deadline.js";
import { TurnGate } from "./turn-gate.js";
import { type Envelope, extraMessage, type UnaryBody, UnaryEnvelopeReader } from "./unary-envelopes.js";

const PROTO_CONTENT_TYPE = "application/grpc+proto";
/** What the free answer buffers may hold together (answer-buffers.ts): 64 pages of 300 KB in 512 KiB buffers. */
const MAX_FREE_ANSWER_BYTES = 32 * 1024 * 1024;
/** The gRPC content types the lean path takes: protobuf binary only (`+json` stays on Connect). */
const LEAN_CONTENT_TYPE = /^application\/grpc(?:\+proto)?$/i;

export interface LeanGrpcService {
  service: DescService;
  call: InProcessCaller;
}

export interface LeanGrpcOptions {
  /** The ledger's services; their unary methods are served here. */
  services: readonly LeanGrpcService[];
  early: EarlyChecks;
  /** Largest request message, before and after decompression (Connect's `readMaxBytes`). */
  readMaxBytes: number;
  /** Answers smaller than this are never compressed (Connect's `compressMinBytes`). */
  compressMinBytes: number;
  /** The request-body deadline of docs/api.md §1.2 (0: none), counted like Fastify's. */
  bodyDeadlineMs: number;
  onBodyTimeout(): void;
  observe: RequestObserver;
  /** While true, streams are left to Fastify, which refuses them as shutting down. */
  closing(): boolean;
  /** Calls handed to the service per event-loop turn, the rest in later turns (turn-gate.ts). */
  callsPerTurn: number;
  /**
   * Where a failure outside the service's interceptors goes (the answer's encoding or
   * compression): logged, and answered as a bare `internal`, as the error shield does inside.
   */
  logger: ErrorLogger;
}

interface LeanMethod {
  method: DescMethodUnary;
  call: InProcessCaller;
  /** `package.Service/Method`, the metrics label Connect's routes get. */
  label: string;
}

/** The stream taker for listen.ts: answers the ledger's unary protobuf gRPC calls, leaves the rest. */
export function createLeanGrpc(
  options: LeanGrpcOptions,
): (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean {
  const methods = new Map<string, LeanMethod>();
  const gate = new TurnGate(options.callsPerTurn);
  const buffers = new AnswerBuffers(MAX_FREE_ANSWER_BYTES);
  for (const { service, call } of options.services) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      const label = `${service.typeName}/${method.name}`;
      methods.set(`/${label}`, { method: method as DescMethodUnary, call, label });
    }
  }
  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    const contentType = headers["content-type"];
    if (contentType === undefined || !LEAN_CONTENT_TYPE.test(contentType)) return false;
    const path = headers[":path"];
    const target = path === undefined ? undefined : methods.get(path);
    if (target === undefined || options.closing()) return false;
    void new LeanCall(stream, headers, contentType, target, options, gate, buffers).run();
    return true;
  };
}

class LeanCall {
  readonly #started = performance.now();
  readonly #requestId: string;
  /** The stream is gone (answered, reset by the client, or its connection lost). */
  #done = false;
  /** The answer's last frame is queued. */
  #answerSent = false;
  /** The request's body is left unread: close the stream once the answer is out. */
  #closeAfterAnswer = false;
  #timer: NodeJS.Timeout | undefined;
  /** When `grpc-timeout` runs out (performance.now() time), if the call has one. */
  #deadlineAt: number | undefined;
  /** Aborted once nobody waits for the answer: the stream gone or the deadline passed. */
  readonly #unwaited = new AbortController();

  constructor(
    readonly stream: ServerHttp2Stream,
    readonly headers: IncomingHttpHeaders,
    readonly contentType: string,
    readonly target: LeanMethod,
    readonly options: LeanGrpcOptions,
    readonly gate: TurnGate,
    readonly buffers: AnswerBuffers,
  ) {
    this.#requestId = requestIdOf({ headers });
    // A reset or a lost connection: nothing more is written, and work not begun is not begun.
    stream.on("error", () => {});
    stream.once("close", () => {
      // Closed before its answer: nobody waits for it. (After it, an abort would cost ~9 µs a
      // call, its DOMException and event, for nothing.)
      if (!this.#done) this.#unwaited.abort();
      this.#done = true;
      clearTimeout(this.#timer);
    });
  }

  async run(): Promise<void> {
    const { headers, target, options } = this;
    // The Host check of every request (http/host-check.ts), in this path's error form.
    if (!servableAuthorities(headers)) {
      this.#refuse(malformedHostError());
      return;
    }
    const authorization = headers.authorization ?? null;
    const early = await runEarlyChecks(options.early, authorization, target.method.name);
    if (early.refusal !== null) {
      this.#refuse(early.refusal);
      return;
    }
    const timeout = grpcTimeoutOf(single(headers["grpc-timeout"]));
    const requested = single(headers["grpc-encoding"]);
    const compression = compressionNegotiate(
      RPC_COMPRESSIONS,
      requested,
      answerEncodingsListed(single(headers["content-type"]), single(headers[GRPC_ACCEPT_ENCODING]), requested),
      GRPC_ACCEPT_ENCODING,
    );
    const answerHeaders: OutgoingHttpHeaders = {
      [REQUEST_ID_HEADER]: this.#requestId,
      "content-type": PROTO_CONTENT_TYPE,
    };
    if (compression.response !== null) answerHeaders["grpc-encoding"] = compression.response.name;
    // What the service and the interceptors set, sent as Connect's handler sends it: headers over
    // ours, trailers under the status.
    const metadata: ResponseMetadata = {};
    try {
      if (compression.error !== undefined) throw compression.error;
      if (timeout.error !== undefined) throw timeout.error;
      if (timeout.timeoutMs !== undefined) this.#armDeadline(timeout.timeoutMs, answerHeaders);
      const body = await this.#readBody();
      if (body === undefined || this.#done) return;
      // In Connect's order: the first message decoded, then what follows it.
      const [first, second] = body.envelopes;
      // No message: the reader has named why (a missing or incomplete one).
      if (first === undefined) throw body.failure;
      const input = await this.#decode(first, compression.request);
      if (this.#done) return;
      if (second !== undefined) {
        await this.#decode(second, compression.request);
        throw extraMessage();
      }
      if (body.failure !== null) throw body.failure;
      const turn = this.gate.pass();
      if (turn !== undefined) await turn;
      if (this.#done) return;
      if (this.#pastDeadline()) throw timedOut();
      const values = createContextValues();
      if (early.principal !== undefined) values.set(principalKey, early.principal);
      values.set(responseMetadataKey, metadata);
      const output = await target.call(target.method, input as MessageShape<DescMessage>, {
        headers: toHeaders(headers),
        url: `http://${headers[":authority"] ?? "localhost"}${headers[":path"]}`,
        requestMethod: "POST",
        values,
        // Its own signal only for a page that may read on over several turns (readsOverSeveralTurns).
        signal: readsOverSeveralTurns(target.method) ? this.#unwaited.signal : undefined,
      });
      if (this.#done) return;
      // The service's work runs on this thread: a deadline passing meanwhile fires only now.
      if (this.#pastDeadline()) throw timedOut();
      const envelope = await this.#envelope(
        envelopedAnswer(target.method.output, output, this.buffers),
        compression.response,
      );
      this.#answer(withMetadata(answerHeaders, metadata.header), envelope, okTrailers(metadata.trailer), 0);
    } catch (error) {
      if (this.#done) return;
      this.#fail(withMetadata(answerHeaders, metadata.header), this.#shielded(error), metadata.trailer);
    }
  }

  /**
   * A deliberate ConnectError as it is; anything else (a bug, a zlib failure: nothing the service's
   * error shield saw) logged and answered as a bare `internal`, never with its own text.
   */
  #shielded(error: unknown): ConnectError {
    if (error instanceof ConnectError) return error;
    this.options.logger.error({ err: error, procedure: this.target.label }, "unexpected error in the lean gRPC path");
    return internalError();
  }

  /**
   * An error answer: the headers given, no message, and as trailers those the call set (if any)
   * under the error's status and metadata, as Connect's handler writes them.
   */
  #fail(headers: OutgoingHttpHeaders, failure: ConnectError, trailer?: Headers): void {
    const error = boundedError(failure);
    const trailers = setTrailerStatus(trailer === undefined ? new Headers() : new Headers(trailer), error);
    this.#answer(headers, undefined, Object.fromEntries(trailers), error.code);
  }

  /** Whether `grpc-timeout` has run out (checked after work the timer could not interrupt). */
  #pastDeadline(): boolean {
    return this.#deadlineAt !== undefined && performance.now() >= this.#deadlineAt;
  }

  /** An early refusal, as sendRpcError (http/early-auth.ts) writes it: the request's content type echoed. */
  #refuse(error: ConnectError): void {
    this.#fail({ [REQUEST_ID_HEADER]: this.#requestId, "content-type": this.contentType }, error);
    this.#closeWhenAnswered();
  }

  /**
   * The deadline of `grpc-timeout`: when it passes first, the call is answered DEADLINE_EXCEEDED
   * with Connect's text and whatever the service still produces is dropped.
   */
  #armDeadline(timeoutMs: number, answerHeaders: OutgoingHttpHeaders): void {
    this.#deadlineAt = this.#started + timeoutMs;
    this.#timer = setTimeout(() => {
      if (this.#done) return;
      this.#unwaited.abort();
      this.#fail(answerHeaders, timedOut());
      this.#closeWhenAnswered();
    }, timeoutMs);
    this.#timer.unref();
  }

  /**
   * The request's body, split as Connect's handler splits it (unary-envelopes.ts): read until the
   * outcome is known (one envelope and the end, a second envelope, or a failure), so a body with
   * more in it is not read further. Undefined when the stream was answered meanwhile (the body
   * deadline) or closed.
   */
  #readBody(): Promise<UnaryBody | undefined> {
    const { stream, options } = this;
    return new Promise((resolve) => {
      const reader = new UnaryEnvelopeReader(options.readMaxBytes);
      let bodyTimer: NodeJS.Timeout | undefined;
      const finish = () => {
        clearTimeout(bodyTimer);
        stream.off("data", onData);
        stream.off("end", onEnd);
        stream.off("close", onClose);
      };
      const onData = (chunk: Buffer) => {
        reader.push(chunk);
        if (!reader.settled) return;
        finish();
        this.#closeWhenAnswered();
        resolve(reader.end());
      };
      const onEnd = () => {
        finish();
        resolve(reader.end());
      };
      const onClose = () => {
        finish();
        resolve(undefined);
      };
      // A request whose headers ended the stream may have had its (empty) end consumed already.
      if (stream.readableEnded) {
        onEnd();
        return;
      }
      stream.on("data", onData);
      stream.once("end", onEnd);
      stream.once("close", onClose);
      if (options.bodyDeadlineMs > 0 && !stream.readableEnded) {
        bodyTimer = setTimeout(() => {
          finish();
          this.#bodyDeadlinePassed();
          resolve(undefined);
        }, options.bodyDeadlineMs);
        bodyTimer.unref();
      }
    });
  }

  /** As request-deadline.ts answers over HTTP/2: 408 problem details, then the stream is closed. */
  #bodyDeadlinePassed(): void {
    this.options.onBodyTimeout();
    const ms = this.options.bodyDeadlineMs;
    const body = Buffer.from(
      JSON.stringify({
        ...bodyDeadlineProblem(ms),
        instance: problemInstanceOf(this.#requestId),
      }),
    );
    this.#write(
      {
        ":status": 408,
        [REQUEST_ID_HEADER]: this.#requestId,
        "content-type": `${PROBLEM_CONTENT_TYPE}; charset=utf-8`,
        "content-length": body.length,
      },
      [body],
      undefined,
    );
    this.#finish("unknown");
    this.#closeWhenAnswered();
  }

  async #decode(body: Envelope, compression: Compression | null): Promise<unknown> {
    let data = body.data;
    if ((body.flags & compressedFlag) === compressedFlag) {
      if (compression === null) {
        throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
      }
      data = await compression.decompress(data, this.options.readMaxBytes);
    }
    try {
      return fromBinary(this.target.method.input, data);
    } catch {
      throw new ConnectError(NOT_PROTOBUF, Code.InvalidArgument);
    }
  }

  /**
   * The answer's envelope as it goes out: as made, or, compressed, its prefix and the compressed
   * message written one after the other (not copied into one buffer, which for a page of sources
   * meant allocating and copying another few hundred kilobytes per call).
   */
  async #envelope(envelope: Buffer, compression: Compression | null): Promise<Uint8Array[]> {
    if (compression === null || envelope.byteLength - ENVELOPE_PREFIX_BYTES < this.options.compressMinBytes) {
      return [envelope];
    }
    const compressed = await compression.compress(envelopeMessage(envelope));
    this.buffers.release(envelope);
    return [envelopePrefix(compressedFlag, compressed.byteLength), compressed];
  }

  /** Headers, the message if any, then the trailers: the shape Connect's handler writes, errors included. */
  #answer(
    headers: OutgoingHttpHeaders,
    body: readonly Uint8Array[] | undefined,
    trailers: Record<string, string>,
    code: Code | 0,
  ): void {
    if (this.#done) return;
    this.#write({ ":status": 200, ...headers }, body, trailers);
    this.#finish(codeName(code));
  }

  #write(
    headers: OutgoingHttpHeaders,
    body: readonly Uint8Array[] | undefined,
    trailers: Record<string, string> | undefined,
  ): void {
    const { stream } = this;
    this.#done = true;
    clearTimeout(this.#timer);
    if (stream.destroyed || stream.closed) return;
    try {
      // The stream may only be closed once the answer's last frame is queued (its trailers, or
      // its data when it has none): nghttp2 then sends them before the RST_STREAM.
      const sent = () => {
        this.#answerSent = true;
        if (this.#closeAfterAnswer) this.#closeNow();
      };
      stream.respond(headers, { waitForTrailers: trailers !== undefined });
      // A pooled buffer goes back only once HTTP/2 is done with it (writeReleasing).
      for (const chunk of body ?? []) writeReleasing(stream, chunk, this.buffers);
      if (trailers !== undefined) {
        stream.once("wantTrailers", () => {
          stream.sendTrailers(trailers);
          sent();
        });
        stream.end();
      } else {
        stream.end(sent);
      }
    } catch {
      // The client reset the stream between the check and the write: nobody is left to answer.
    }
  }

  #finish(code: string): void {
    this.options.observe("grpc", this.target.label, code, (performance.now() - this.#started) / 1000);
  }

  /**
   * After an answer that leaves the request unread, the stream is closed with NO_ERROR once the
   * answer is out (RFC 9113 §8.1): the client stops sending, and the session's buffer is not
   * filled by a body nobody reads (as http/answered-streams.ts does for Fastify's routes).
   */
  #closeWhenAnswered(): void {
    this.stream.resume();
    this.#closeAfterAnswer = true;
    if (this.#answerSent) this.#closeNow();
  }

  /**
   * Only a client still sending needs stopping; a reset submitted in the same turn as the trailers
   * would have nghttp2 drop them, so it waits for the next turn of the event loop.
   */
  #closeNow(): void {
    const { stream } = this;
    if (stream.closed || stream.readableEnded) return;
    setImmediate(() => {
      if (!stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
    });
  }
}

/** Connect's text for a deadline that passed (its createDeadlineSignal). */
function timedOut(): ConnectError {
  return new ConnectError("the operation timed out", Code.DeadlineExceeded);
}

function single(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The request's headers as a Headers object, for the interceptors (pseudo-headers left out). */
function toHeaders(headers: IncomingHttpHeaders): Headers {
  const result = new Headers();
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 /* ":" */) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const one of value) result.append(name, one);
    else result.append(name, value);
  }
  return result;
}

/** The answer's headers with those the call set over them (Connect's handler sends one Headers). */
function withMetadata(headers: OutgoingHttpHeaders, set: Headers | undefined): OutgoingHttpHeaders {
  if (set === undefined) return headers;
  const merged = { ...headers };
  for (const [name, value] of set) merged[name] = value;
  return merged;
}

/** A success's trailers: `grpc-status: 0` with those the call set (which may override it, as in Connect). */
function okTrailers(set: Headers | undefined): Record<string, string> {
  return set === undefined ? { "grpc-status": "0" } : { "grpc-status": "0", ...Object.fromEntries(set) };
}
