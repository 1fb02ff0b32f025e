/**
 * One TCP port for HTTP/1.1 and cleartext HTTP/2 with prior knowledge (h2c).
 *
 * Node cannot do this on its own: `http2.createServer({ allowHTTP1: true })`
 * only falls back to HTTP/1.1 after TLS ALPN, and on cleartext sockets there is
 * no ALPN. So every accepted connection is sniffed: a connection that opens
 * with the 24-byte HTTP/2 client preface goes to an internal `http2` server,
 * anything else to the HTTP/1.1 server.
 *
 * The server handed to Fastify IS the HTTP/1.1 `http.Server` (only its
 * 'connection' handling is intercepted), so everything Fastify and plugins
 * expect from a Node HTTP server keeps working natively: `keepAliveTimeout`,
 * `requestTimeout`, `setTimeout`, `closeIdleConnections`, 'clientError',
 * 'upgrade', `address()`, `listening`.
 *
 * Usage:
 * ```ts
 * const onePort = createOnePortServerFactory({ graceMs: 10_000 });
 * const app = Fastify({ serverFactory: onePort.serverFactory, logger });
 * await app.listen({ host, port });
 * // SIGTERM: stops accepting, GOAWAY to h2 sessions, closes idle keep-alive
 * // connections, lets in-flight requests finish for up to graceMs, then
 * // destroys the rest; resolves once every socket is gone.
 * await app.close();
 * ```
 * Do NOT pass `http2: true` to Fastify: with a `serverFactory` Fastify ignores
 * it at runtime (Fastify and connect-node detect HTTP/2 per request, from
 * `httpVersionMajor` and `stream`), and it would only make the TypeScript types
 * claim `app.server` is an `Http2Server`, which it is not.
 * `request.raw` may be an `Http2ServerRequest` at runtime; check
 * `request.raw.httpVersionMajor === 2` where it matters.
 */
import http from "node:http";
import http2 from "node:http2";
import type net from "node:net";
import type { FastifyServerFactory, FastifyServerFactoryHandler } from "fastify";

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export interface OnePortOptions {
  /**
   * How long in-flight requests may run once the server is closed (by
   * `app.close()` or `shutdown()` without an argument) before their
   * connections are destroyed. Default 10 000 ms.
   */
  graceMs?: number;
  /**
   * How long a new connection may take to send enough bytes to tell HTTP/1.1
   * from HTTP/2 (at most 24) before it is destroyed. Default 10 000 ms.
   */
  sniffTimeoutMs?: number;
  /** Options for the HTTP/1.1 side (`http.createServer`). */
  http1?: http.ServerOptions;
  /** Options for the h2c side (`http2.createServer`). */
  http2?: http2.ServerOptions;
}

export interface OnePort {
  /** Pass as Fastify's `serverFactory` option (and do not set `http2`). */
  readonly serverFactory: FastifyServerFactory<http.Server>;
  /**
   * Starts a graceful close of every server this factory created: stop
   * accepting, GOAWAY to HTTP/2 sessions, close idle HTTP/1.1 connections and
   * make busy ones close after their response, destroy whatever is still
   * open after `graceMs` (default: the factory's `graceMs`). Resolves when all
   * connections are closed. Safe to call more than once and together with
   * `app.close()`: the earliest deadline wins.
   */
  shutdown(graceMs?: number): Promise<void>;
}

/** Creates the Fastify `serverFactory` and a handle to shut its servers down. */
export function createOnePortServerFactory(options: OnePortOptions = {}): OnePort {
  const servers = new Set<OnePortServer>();
  const graceMs = options.graceMs ?? 10_000;

  const serverFactory: FastifyServerFactory<http.Server> = (handler, fastifyOptions) => {
    const server = new OnePortServer(handler, fastifyOptions, options, graceMs);
    servers.add(server);
    return server;
  };

  return {
    serverFactory,
    async shutdown(ms = graceMs): Promise<void> {
      await Promise.all([...servers].map((server) => server.shutdown(ms)));
    },
  };
}

/**
 * Offers `settings` to every new HTTP/2 session of a one-port server and closes sessions idle for
 * `idleTimeoutMs`; false for any other server (Fastify's own, which serves no h2c).
 */
export function configureHttp2(server: unknown, settings: http2.Settings, idleTimeoutMs?: number): boolean {
  if (!(server instanceof OnePortServer)) return false;
  server.configureHttp2(settings, idleTimeoutMs);
  return true;
}

/**
 * Takes an HTTP/2 stream before Node's compatibility layer (and so Fastify) sees it: true when it
 * answers the stream itself, false to leave it to the compatibility layer.
 */
export type Http2StreamTaker = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/**
 * Offers every new HTTP/2 stream of a one-port server to `take` first (the lean gRPC path,
 * rpc/grpc-unary.ts); false for any other server, whose streams all go to Fastify.
 */
export function takeHttp2Streams(server: unknown, take: Http2StreamTaker): boolean {
  if (!(server instanceof OnePortServer)) return false;
  server.takeStreams(take);
  return true;
}

type ConnectionListener = (socket: net.Socket) => void;

class OnePortServer extends http.Server {
  readonly #h2: http2.Http2Server;
  readonly #h1ConnectionListeners: ConnectionListener[];
  readonly #defaultGraceMs: number;
  readonly #sniffTimeoutMs: number;
  /** Every accepted socket, whatever its protocol, until it closes. */
  readonly #sockets = new Set<net.Socket>();
  readonly #sniffing = new Set<net.Socket>();
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  readonly #h1InFlight = new Set<http.ServerResponse>();
  #draining = false;
  /** Idle time after which an HTTP/2 session is closed; none when undefined. */
  #sessionTimeout: number | undefined;
  #deadline: number = Number.POSITIVE_INFINITY;
  #deadlineTimer: NodeJS.Timeout | undefined;

  constructor(
    handler: FastifyServerFactoryHandler<http.Server>,
    fastifyOptions: Record<string, unknown>,
    options: OnePortOptions,
    defaultGraceMs: number,
  ) {
    // Node enforces headersTimeout and requestTimeout at this interval (30 s by default, too coarse
    // to bound a slow client near the configured deadline).
    super({ connectionsCheckingInterval: 1_000, ...options.http1 }, handler);
    this.#defaultGraceMs = defaultGraceMs;
    this.#sniffTimeoutMs = options.sniffTimeoutMs ?? 10_000;

    // Node's HTTP/1.1 connection handler is taken off the 'connection' event
    // so that it only ever sees sockets the sniffer has classified as HTTP/1.
    this.#h1ConnectionListeners = this.listeners("connection").map(
      (listener) => (socket: net.Socket) => void Reflect.apply(listener, this, [socket]),
    );
    if (this.#h1ConnectionListeners.length === 0) {
      throw new Error("node:http no longer registers a 'connection' listener; one-port sniffing cannot attach");
    }
    this.removeAllListeners("connection");
    this.on("connection", (socket: net.Socket) => this.#accept(socket));

    // Fastify's handler only touches the request/response API the HTTP/2
    // compatibility layer also implements; Fastify's types just cannot say
    // "either", so the HTTP/2 side gets the same function under its own type.
    this.#h2 = http2.createServer(
      options.http2 ?? {},
      handler as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
    );
    this.#sessionTimeout = positiveNumber(fastifyOptions.http2SessionTimeout);
    this.#h2.on("session", (session) => this.#trackSession(session, this.#sessionTimeout));

    this.on("request", (_req: http.IncomingMessage, res: http.ServerResponse) => this.#trackResponse(res));
    // Node answers `Expect: 100-continue` itself, before any check, and any other expectation with a
    // bare 417. Both go to the app as requests instead: it sends 100 Continue only once the request
    // has passed its checks (expect-continue.ts), so a refused client never sends its body (docs/api.md
    // §2.4); an expectation it does not know it ignores (RFC 9110 §10.1.1 allows a 417, not requires it).
    this.on("checkContinue", (req: http.IncomingMessage, res: http.ServerResponse) => this.emit("request", req, res));
    this.on("checkExpectation", (req: http.IncomingMessage, res: http.ServerResponse) =>
      this.emit("request", req, res),
    );
    this.on("close", () => clearTimeout(this.#deadlineTimer));

    // Fastify applies its timeout options only to servers it builds itself.
    const keepAliveTimeout = positiveNumber(fastifyOptions.keepAliveTimeout);
    if (keepAliveTimeout !== undefined) this.keepAliveTimeout = keepAliveTimeout;
    const requestTimeout = nonNegativeNumber(fastifyOptions.requestTimeout);
    if (requestTimeout !== undefined) this.requestTimeout = requestTimeout;
    const maxRequestsPerSocket = positiveNumber(fastifyOptions.maxRequestsPerSocket);
    if (maxRequestsPerSocket !== undefined) this.maxRequestsPerSocket = maxRequestsPerSocket;
    const connectionTimeout = positiveNumber(fastifyOptions.connectionTimeout);
    if (connectionTimeout !== undefined) {
      this.setTimeout(connectionTimeout);
      this.#h2.setTimeout(connectionTimeout);
    }
  }

  /** Settings every new HTTP/2 session is offered, and its idle timeout. */
  configureHttp2(settings: http2.Settings, idleTimeoutMs: number | undefined): void {
    this.#h2.updateSettings(settings);
    if (idleTimeoutMs !== undefined) this.#sessionTimeout = idleTimeoutMs;
  }

  /**
   * Node's compatibility layer turns each stream into a request/response pair through its own
   * 'stream' listener; `take` runs before it and keeps the streams it answers.
   */
  takeStreams(take: Http2StreamTaker): void {
    const compat = this.#h2.listeners("stream") as ((...args: unknown[]) => void)[];
    this.#h2.removeAllListeners("stream");
    this.#h2.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => {
      if (take(stream, headers)) return;
      for (const listener of compat) Reflect.apply(listener, this.#h2, [stream, headers, ...rest]);
    });
  }

  /** Node's close() only reaps idle HTTP/1.1 sockets; h2 sessions and in-flight responses would hold it open. */
  override close(callback?: (err?: Error) => void): this {
    this.#beginDrain(this.#defaultGraceMs);
    return super.close(callback);
  }

  /** Also covers the sockets Node's HTTP/1.1 bookkeeping never sees (h2, still sniffing). */
  override closeAllConnections(): void {
    super.closeAllConnections();
    for (const session of this.#sessions) session.destroy();
    for (const socket of this.#sockets) socket.destroy();
  }

  shutdown(graceMs: number): Promise<void> {
    this.#beginDrain(graceMs);
    return new Promise((resolve) => {
      // ERR_SERVER_NOT_RUNNING just means an earlier close() got there first;
      // the callback still only runs once every connection is gone.
      this.close(() => resolve());
    });
  }

  #accept(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.once("close", () => this.#sockets.delete(socket));
    if (this.#draining) {
      socket.destroy();
      return;
    }
    this.#sniffing.add(socket);

    const chunks: Buffer[] = [];
    let matched = 0;

    const finish = (): void => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("error", abandon);
      socket.off("end", abandon);
      socket.off("close", finish);
      this.#sniffing.delete(socket);
    };
    // Errors (typically ECONNRESET) and EOF before the protocol is known
    // leave nothing to answer; a listener must exist or 'error' would throw.
    const abandon = (): void => {
      finish();
      socket.destroy();
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      let i = 0;
      while (i < chunk.length && matched < H2_PREFACE.length) {
        if (chunk[i] !== H2_PREFACE[matched]) {
          this.#handOver(socket, chunks, "http/1.1", finish);
          return;
        }
        i++;
        matched++;
      }
      if (matched === H2_PREFACE.length) this.#handOver(socket, chunks, "h2c", finish);
    };
    // An absolute deadline, not an idle timer, so a byte-per-interval client
    // cannot hold the socket in the sniffer indefinitely.
    const timer = setTimeout(abandon, this.#sniffTimeoutMs);
    timer.unref();

    socket.on("data", onData);
    socket.on("error", abandon);
    socket.on("end", abandon);
    socket.once("close", finish);
  }

  #handOver(socket: net.Socket, chunks: Buffer[], protocol: "http/1.1" | "h2c", finish: () => void): void {
    finish();
    // Paused before unshift: a flowing socket with no 'data' listener would
    // drop the sniffed bytes instead of keeping them for the new owner.
    socket.pause();
    socket.unshift(Buffer.concat(chunks));
    if (protocol === "h2c") {
      // The h2 session reads natively from the handle and drains the
      // unshifted bytes itself on its next tick; it must not be resumed.
      this.#h2.emit("connection", socket);
      return;
    }
    for (const listener of this.#h1ConnectionListeners) listener(socket);
    // Node's HTTP/1.1 parser consumes the handle natively from now on; the
    // buffered bytes reach it through 'data' once the socket flows again,
    // which (nextTick) is before any new network read can be delivered.
    socket.resume();
  }

  #trackSession(session: http2.ServerHttp2Session, sessionTimeout: number | undefined): void {
    this.#sessions.add(session);
    session.once("close", () => this.#sessions.delete(session));
    if (sessionTimeout !== undefined) session.setTimeout(sessionTimeout, () => session.close());
    if (this.#draining) session.close();
  }

  #trackResponse(res: http.ServerResponse): void {
    if (this.#draining && !res.headersSent) res.setHeader("connection", "close");
    this.#h1InFlight.add(res);
    res.once("close", () => {
      this.#h1InFlight.delete(res);
      // Node leaves a keep-alive socket open after its last response even
      // while the server is closing; it would hold close() for keepAliveTimeout.
      if (this.#draining) this.closeIdleConnections();
    });
  }

  #beginDrain(graceMs: number): void {
    const deadline = Date.now() + graceMs;
    if (deadline < this.#deadline) {
      this.#deadline = deadline;
      clearTimeout(this.#deadlineTimer);
      this.#deadlineTimer = setTimeout(() => this.closeAllConnections(), Math.max(0, graceMs));
      this.#deadlineTimer.unref();
    }
    if (this.#draining) return;
    this.#draining = true;

    // Sniffing sockets have not sent a request yet: as idle as it gets.
    for (const socket of this.#sniffing) socket.destroy();
    // GOAWAY: clients stop opening streams, open ones finish, then Node
    // destroys the session.
    for (const session of this.#sessions) session.close();
    // Lets the client know not to reuse the connection, and makes Node close
    // it right after the response.
    for (const res of this.#h1InFlight) {
      if (!res.headersSent) res.setHeader("connection", "close");
    }
    this.closeIdleConnections();
  }
}

function positiveNumber(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined;
}

function nonNegativeNumber(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}
