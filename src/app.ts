import { type Server as HttpServer, maxHeaderSize } from "node:http";
import type { Socket } from "node:net";
import type { Interceptor } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerFactory,
} from "fastify";
import { SandboxSourceLedgerService, SourceLedgerService } from "../gen/sourceledger/v2/source_ledger_pb.js";
import { createAuthenticator } from "./auth/authenticate.js";
import { createAuthInterceptor, scopeForMethod } from "./auth/interceptor.js";
import { PUBLIC_SERVICES } from "./auth/scopes.js";
import { createTokenVerifier, remoteKeys, type TokenVerifier } from "./auth/verifier.js";
import { type Config, ConfigError } from "./config.js";
import { DevClientsFileError } from "./dev-identity/dev-clients.js";
import { createDevIdentityProvider, type DevIdentityProvider } from "./dev-identity/dev-provider.js";
import { devIdentityRefusal } from "./dev-identity/guard.js";
import { DEFAULT_ENGINES, type OverlayEngine, OverlayTooIntricateError } from "./geo/overlap.js";
import { installAnsweredStreamClosing } from "./http/answered-streams.js";
import { type ClientErrorCounts, createClientErrorHandler } from "./http/client-errors.js";
import {
  contextValuesOf,
  discardBody,
  type EarlyChecks,
  earlyChecksHook,
  rpcMethodsByPath,
  sendRpcError,
} from "./http/early-auth.js";
import { installExpectContinue } from "./http/expect-continue.js";
import { answerUnknownGrpcMethod } from "./http/grpc-not-found.js";
import { refuseMalformedHost } from "./http/host-check.js";
import { configureHttp2, takeHttp2Streams } from "./http/listen.js";
import { installRequestMetrics, metricsRoute, requestObserver, ServiceMetrics } from "./http/metrics.js";
import { ogcDocumentRoutes } from "./http/ogc/routes.js";
import { openApiRoutes } from "./http/openapi/routes.js";
import { problem, sendProblem } from "./http/problem.js";
import { parseQueryString } from "./http/querystring.js";
import { createRateLimiter, type RateLimiter, rateKindOf } from "./http/rate-limit.js";
import { type DeadlineCounts, installRequestDeadline } from "./http/request-deadline.js";
import { installRequestIdEcho, REQUEST_ID_HEADER, requestIdOf } from "./http/request-id.js";
import { loggedRequest } from "./http/request-log.js";
import { httpRoutes } from "./http/rest.js";
import { MAX_BODY_BYTES, methodsServing, sendMethodNotAllowed } from "./http/rest-common.js";
import { recordOutcome, rpcOutcomeKey, rpcOutcomeOf, withoutLateAnswer } from "./http/rpc-outcome.js";
import { strictUtf8Decoder } from "./http/utf8.js";
import { conflictMeasure, type OverlapArea, overlapAreaOf } from "./ledger/conflict.js";
import { productionIds, sandboxIds } from "./ledger/ids.js";
import { createLedger } from "./ledger/ledger.js";
import { shortened } from "./ledger/preview.js";
import type { ConflictPolicy } from "./model/spatial.js";
import { countedUnepOverlapPolicy } from "./protected-areas/overlap.js";
import { rpcProtocolOf, withAnswerStatus } from "./rpc/answer-status.js";
import { preEncodedSourceAnswers } from "./rpc/binary-answers.js";
import { COMPRESS_MIN_BYTES, grpcAnswersAsRequested, RPC_COMPRESSIONS } from "./rpc/compression.js";
import { decodeFailureAsInvalid } from "./rpc/decode-errors.js";
import { createErrorShield } from "./rpc/error-shield.js";
import { createLeanGrpc } from "./rpc/grpc-unary.js";
import { createInProcessCaller } from "./rpc/invoke.js";
import { registerPublicServices } from "./rpc/public-services.js";
import { createServiceImpl } from "./rpc/service.js";
import { boundedStatus } from "./rpc/status-bound.js";
import { withTimerSafeDeadline } from "./rpc/timer-safe-deadline.js";
import { GRPC_CALLS_PER_TURN } from "./rpc/turn-gate.js";
import { openProductionStore } from "./store/open.js";
import type { SourceStore } from "./store/port.js";
import { createSandboxStore } from "./store/sandbox/index.js";
import { timedStore } from "./store/timed.js";

/**
 * The RPC path a request was routed to: the route's own path, not the URL as sent. The router
 * decodes percent-escapes (`/…/List%53ources` reaches ListSources), so a lookup by the URL would
 * miss, and with it the token and rate-limit checks made before the body is read.
 */
function rpcRouteOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? request.url.split("?")[0];
}

/** A logger's options with the request written as loggedRequest writes it (a credential in the URL redacted). */
function withRequestSerializer(logger: boolean | object): boolean | object {
  if (logger === false) return false;
  const options = logger === true ? {} : logger;
  const serializers = (options as { serializers?: object }).serializers ?? {};
  return { ...options, serializers: { ...serializers, req: loggedRequest } };
}

/** Connect's JSON options as its JSON serialization reads them: with the text decoder it uses. */
type ConnectJsonOptions = NonNullable<Parameters<typeof fastifyConnectPlugin>[1]["jsonOptions"]> & {
  textDecoder: { decode(input?: Uint8Array): string };
};

export interface AppOverrides {
  /** A ready production store (tests); otherwise opened from the configuration. */
  store?: SourceStore;
  /** Pino options or false; defaults to the configured level. */
  logger?: boolean | object;
  /** The one-port HTTP/1.1 + h2c server (src/http/listen.ts); Fastify's own server otherwise. */
  serverFactory?: FastifyServerFactory;
  /** How often a gRPC health `Watch` asks the store again (ms); 5 s by default. */
  healthWatchPollMs?: number;
}

export interface BuiltApp {
  app: FastifyInstance;
  /** Present when the development identity provider runs (AUTH_ISSUER unset). */
  devIdentity: DevIdentityProvider | null;
  /** Call after listen: the development issuer is `http://<host>:<port>/`. */
  setListeningAddress(host: string, port: number): void;
}

/** The per-account rate limits of the configuration (docs/api.md §2.9); null when both are off. */
function rateLimiterOf(config: Config, metrics: ServiceMetrics): RateLimiter | null {
  const limit = (perSecond: number | null) => (perSecond === null ? null : { perSecond, burst: 2 * perSecond });
  const read = limit(config.rateLimitReadsPerS);
  const write = limit(config.rateLimitWritesPerS);
  if (read === null && write === null) return null;
  const limiter = createRateLimiter({ read, write });
  return (principal, methodName) => {
    const refusal = limiter(principal, methodName);
    if (refusal !== null) metrics.rateLimitRefused(rateKindOf(methodName));
    return refusal;
  };
}

/**
 * The conflict policy of docs/api.md §8, counted: each pair checked by result, each overlay engine
 * failure by engine (the next engine is then tried), and each overlay past the limits, not tried.
 */
function countedConflictPolicy(metrics: ServiceMetrics): ConflictPolicy {
  const engines: OverlayEngine[] = DEFAULT_ENGINES.map((engine) => {
    const failed = metrics.overlayFailures.labels({ engine: engine.name });
    return {
      ...engine,
      intersection: (a, b) => {
        try {
          return engine.intersection(a, b);
        } catch (error) {
          failed.inc();
          throw error;
        }
      },
    };
  });
  const tooIntricate = metrics.overlaysTooIntricate;
  const overlapArea: OverlapArea = (a, b, allowance) => {
    try {
      return overlapAreaOf(a, b, allowance, engines);
    } catch (error) {
      if (error instanceof OverlayTooIntricateError) tooIntricate.inc();
      throw error;
    }
  };
  const conflict = metrics.conflictChecks.labels({ result: "conflict" });
  const clear = metrics.conflictChecks.labels({ result: "clear" });
  const measure: ConflictPolicy["measure"] = (a, b) => {
    const found = conflictMeasure(a, b, overlapArea);
    (found ? conflict : clear).inc();
    return found;
  };
  return { conflicts: (a, b) => measure(a, b) !== null, measure };
}

/** Composes stores, the one service implementation, interceptors and the Fastify plugins. */
export async function buildApp(config: Config, overrides: AppOverrides = {}): Promise<BuiltApp> {
  const clientErrorCounts: ClientErrorCounts = { timeout: 0, headerOverflow: 0, malformed: 0 };
  // Bound before the app exists: the handler logs through the app's logger once there is one.
  let clientErrors: (error: Error, socket: Socket) => void = () => {};
  const app = Fastify({
    logger: withRequestSerializer(overrides.logger ?? { level: config.logLevel }),
    // Request ids (docs/api.md §6.1): the client's X-Request-Id when well-formed, else a new one;
    // every log line of the request carries it as `reqId`.
    requestIdHeader: false,
    genReqId: requestIdOf,
    bodyLimit: MAX_BODY_BYTES,
    forceCloseConnections: false,
    // Our own onRequest hook answers 503 while closing, as problem details.
    return503OnClosing: false,
    routerOptions: {
      querystringParser: parseQueryString,
      // A path segment as long as any URL either protocol takes (HTTP/1.1: Node's 16 KiB header
      // limit; HTTP/2's header list may be longer): an id of 101 characters or more is an unknown id
      // (404), not a request Fastify refuses to route (its default is 100).
      maxParamLength: Math.max(maxHeaderSize, 1 << 20),
    },
    // Requests Fastify cannot route at all (a malformed URL) still get problem details, and the
    // request id (these answers skip the onRequest hook that echoes it).
    frameworkErrors: (error, request, reply) => {
      const detail = error.code === "FST_ERR_BAD_URL" ? "the request URL is malformed" : "the request is malformed";
      reply.header(REQUEST_ID_HEADER, request.id);
      sendProblem(reply as FastifyReply, problem(400, "invalid_argument", detail));
    },
    // What Node's HTTP/1.1 parser refuses (timeouts, oversized headers, not HTTP): problem details too.
    clientErrorHandler: (error, socket) => clientErrors(error, socket),
    keepAliveTimeout: config.keepAliveTimeoutMs,
    ...(overrides.serverFactory ? { serverFactory: overrides.serverFactory } : {}),
  });

  // Every RPC served is counted as one (/metrics); all but the public ones (auth/scopes.ts: health,
  // reflection) need a token, checked early.
  const api = [SourceLedgerService, SandboxSourceLedgerService];
  const served = [...api, ...PUBLIC_SERVICES];
  const rpcMethods = rpcMethodsByPath(served);
  const tokenRpcMethods = rpcMethodsByPath(api);
  installRequestIdEcho(app);
  // Before any hook that may answer and stop the request there (a Host refusal, an early 401, a
  // 408): every answered HTTP/2 stream still receiving is closed.
  installAnsweredStreamClosing(app);
  // An RPC (a POST or GET of a method Connect serves, or any gRPC call) is refused in its own
  // protocol's error form; anything else (an OPTIONS on an RPC path) in problem details.
  const isRpcCall = (request: FastifyRequest) =>
    ((request.method === "POST" || request.method === "GET") && rpcMethods.has(rpcRouteOf(request))) ||
    rpcProtocolOf(request.headers["content-type"]) !== "connect";
  refuseMalformedHost(app, isRpcCall, sendRpcError);
  installExpectContinue(app);
  clientErrors = createClientErrorHandler(app.log, clientErrorCounts);
  // Timeouts and caps (docs/api.md §1.2): headers and connections on the server, the body deadline
  // per request over HTTP/1.1 and HTTP/2, the stream cap on every HTTP/2 session.
  const server = app.server as unknown as HttpServer;
  server.headersTimeout = config.headersTimeoutMs;
  server.maxConnections = config.maxConnections;
  configureHttp2(server, { maxConcurrentStreams: config.h2MaxStreams }, config.h2IdleTimeoutMs);
  const deadlineCounts: DeadlineCounts = { bodyTimeouts: 0 };
  installRequestDeadline(app, config.requestTimeoutMs, deadlineCounts);
  const sandboxStore = createSandboxStore({
    ttlMs: config.sandboxTtlMs,
    maxBytes: config.sandboxMaxMb * 1024 * 1024,
    maxSessions: config.sandboxMaxSessions,
  });
  // /metrics (docs/api.md §1.3): one registry per app; every answer counted and timed.
  const metrics = new ServiceMetrics({
    deadline: deadlineCounts,
    clientErrors: clientErrorCounts,
    sandbox: sandboxStore,
  });
  const observeRequest = requestObserver(metrics);
  installRequestMetrics(app, observeRequest, rpcMethods);
  // Bodies are parsed only by the routes that take one (REST, Connect): elsewhere (an unknown
  // route, OPTIONS) a body is left unread rather than parsed into a framework error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, _payload, done) => done(null, undefined));
  const refusal = devIdentityRefusal(config);
  if (refusal !== null) throw new ConfigError(refusal);
  const devIdentity =
    config.authIssuer === null
      ? await createDevIdentityProvider({
          audience: config.authAudience,
          clientsFile: config.devClientsFile ?? undefined,
          logger: app.log,
        }).catch((error: unknown) => {
          // An unusable DEV_CLIENTS_FILE is the configuration's fault: start-up says so in one line.
          throw error instanceof DevClientsFileError ? new ConfigError(error.message) : error;
        })
      : null;
  const verify: TokenVerifier = createTokenVerifier({
    issuer: devIdentity ? () => devIdentity.issuer() : (config.authIssuer as string),
    audience: config.authAudience,
    keys: devIdentity
      ? devIdentity.keys
      : remoteKeys(config.authJwksUrl as string, { onFetch: (outcome) => metrics.jwksFetches.inc({ outcome }) }),
  });
  // One authentication for every protocol: run on the headers before any body is read (REST
  // routes and the Connect routes below), and by these interceptors, which run in this order for
  // Connect, gRPC, gRPC-Web and the in-process REST calls alike and reuse the early principal.
  const authenticator = createAuthenticator({ verify, requiredScope: scopeForMethod });
  const early: EarlyChecks = { authenticator, rateLimiter: rateLimiterOf(config, metrics) };
  const errorShield = createErrorShield(app.log);
  const authenticate = createAuthInterceptor(authenticator);
  const interceptors: Interceptor[] = [errorShield, authenticate];
  // Every gRPC, gRPC-Web and Connect call, on Connect's routes or the lean path: binary answers get
  // their sources pre-encoded right before serialisation (rpc/binary-answers.ts).
  const rpcInterceptors: Interceptor[] = [errorShield, preEncodedSourceAnswers, authenticate];

  const store =
    overrides.store ??
    (await openProductionStore(
      config,
      {
        conflictPolicy: countedConflictPolicy(metrics),
        protectedAreaPolicy: countedUnepOverlapPolicy(() => metrics.protectedAreaOverlapsSampled.inc()),
      },
      {
        groupCommit: {
          onCommit: (requests, sources) => {
            metrics.groupCommitRequests.observe(requests);
            metrics.groupCommitSources.observe(sources);
          },
          onRunAgain: () => metrics.groupsRunAgain.inc(),
        },
      },
    ));
  // Both ledgers key their page tokens by one secret, asked of the store when first needed (a store
  // down at start must not stop the service); the environment is part of every token's binding,
  // so a token of one is never valid in the other.
  const secret = config.ledgerSecret ?? (() => store.ledgerSecret());
  // The one implementation of the API, over the two ledgers, their store calls timed.
  const production = createServiceImpl(
    createLedger({
      environment: "production",
      store: timedStore(store, metrics.storeObserver("production")),
      newId: productionIds(),
      secret,
    }),
  );
  const sandbox = createServiceImpl(
    createLedger({
      environment: "sandbox",
      store: timedStore(sandboxStore, metrics.storeObserver("sandbox")),
      newId: sandboxIds(),
      secret,
    }),
  );

  // Readiness (/readyz, gRPC health): the production store answers its ping.
  const storeReady = () => store.ping();
  const shutdown = new AbortController();

  // Connect's default ignores unknown JSON fields, and with them unknown enum names: a client
  // sending "FIELD" instead of "SOURCE_TYPE_FIELD" would have it silently dropped. Its default
  // TextDecoder turns bytes that are not UTF-8 into U+FFFD; JSON messages are read strictly, as
  // REST bodies are (utf8.ts). Connect passes these options to its JSON serialization, which takes
  // a textDecoder; the handler options' type names only the JSON read and write options.
  const connectJsonOptions: ConnectJsonOptions = {
    ignoreUnknownFields: false,
    textDecoder: strictUtf8Decoder,
  };
  // Each RPC path's methods (POST; GET too for a method Connect may serve by GET), as Connect's handlers take them.
  const rpcAllowedMethods = new Map<string, { methods: ReadonlySet<string>; allow: string }>();
  const connectOptions: Parameters<typeof fastifyConnectPlugin>[1] = {
    routes: (router) => {
      router.service(SourceLedgerService, production);
      router.service(SandboxSourceLedgerService, sandbox);
      registerPublicServices(router, {
        api,
        ready: storeReady,
        pollMs: overrides.healthWatchPollMs,
        closed: shutdown.signal,
      });
      // A deadline longer than a timer holds is none (Connect would set it and see it fire at once).
      // Every answer's final status is seen once: a message that is not protobuf (or JSON) is the
      // caller's fault, invalid_argument rather than Connect's internal; the code goes to /metrics.
      for (const { requestPath, allowedMethods } of router.handlers) {
        rpcAllowedMethods.set(requestPath, { methods: new Set(allowedMethods), allow: allowedMethods.join(", ") });
      }
      router.handlers.splice(
        0,
        router.handlers.length,
        ...router.handlers.map((handler) =>
          withoutLateAnswer(
            withAnswerStatus(withTimerSafeDeadline(grpcAnswersAsRequested(handler)), (status, req) => {
              const decoded = decodeFailureAsInvalid(status);
              const fixed = boundedStatus(decoded ?? status) ?? decoded;
              recordOutcome(fixed ?? status, req);
              return fixed;
            }),
          ),
        ),
      );
    },
    // The early check's principal, for the interceptors to reuse, and the slot of the answer's code.
    contextValues: (request) => contextValuesOf(request).set(rpcOutcomeKey, rpcOutcomeOf(request)),
    interceptors: rpcInterceptors,
    readMaxBytes: MAX_BODY_BYTES,
    jsonOptions: connectJsonOptions,
    acceptCompression: RPC_COMPRESSIONS,
    compressMinBytes: COMPRESS_MIN_BYTES,
  };
  await app.register(async (rpc) => {
    // Connect routes every method to its handlers; one they do not take is a routing answer, given
    // before the token like every other (docs/api.md §2.4): 405 with Allow, not 401, nor Connect's
    // bare 405.
    rpc.addHook("onRequest", (request, reply, done) => {
      const route = rpcAllowedMethods.get(rpcRouteOf(request));
      if (route === undefined || route.methods.has(request.method)) return done();
      discardBody(request);
      sendMethodNotAllowed(reply, route.allow);
    });
    rpc.addHook(
      "onRequest",
      earlyChecksHook(early, (request) => tokenRpcMethods.get(rpcRouteOf(request)), sendRpcError),
    );
    await rpc.register(fastifyConnectPlugin, connectOptions);
  });
  await app.register(httpRoutes, {
    pathPrefix: "",
    environment: "production",
    call: createInProcessCaller(SourceLedgerService, production, interceptors),
    early,
  });
  await app.register(httpRoutes, {
    pathPrefix: "/sandbox",
    environment: "sandbox",
    call: createInProcessCaller(SandboxSourceLedgerService, sandbox, interceptors),
    early,
  });
  await app.register(ogcDocumentRoutes);
  await app.register(openApiRoutes, { developmentIdentity: devIdentity !== null });
  if (devIdentity) await app.register(devIdentity.plugin);

  let closing = false;
  // Unary protobuf gRPC calls to the ledger take the lean path (docs/api.md §9.10): the same
  // early checks and interceptors as Connect's routes, called in-process like REST.
  if (config.grpcLeanPath) {
    takeHttp2Streams(
      server,
      createLeanGrpc({
        services: [
          {
            service: SourceLedgerService,
            call: createInProcessCaller(SourceLedgerService, production, rpcInterceptors),
          },
          {
            service: SandboxSourceLedgerService,
            call: createInProcessCaller(SandboxSourceLedgerService, sandbox, rpcInterceptors),
          },
        ],
        early,
        readMaxBytes: MAX_BODY_BYTES,
        compressMinBytes: COMPRESS_MIN_BYTES,
        bodyDeadlineMs: config.requestTimeoutMs,
        onBodyTimeout: () => deadlineCounts.bodyTimeouts++,
        observe: observeRequest,
        closing: () => closing,
        callsPerTurn: GRPC_CALLS_PER_TURN,
        logger: app.log,
      }),
    );
  }
  app.addHook("preClose", async () => {
    closing = true;
    shutdown.abort();
  });
  // A callback hook, not an async one: it runs on every request, and an async hook costs a
  // promise and a microtask turn each time.
  app.addHook("onRequest", (_request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    sendProblem(
      reply.header("connection", "close"),
      problem(503, "unavailable", "the service is shutting down; retry on another instance"),
    );
  });

  app.get("/healthz", async () => ({ status: "ok" }));
  metricsRoute(app, metrics);
  app.get("/readyz", async (request, reply) => {
    try {
      await storeReady();
      return { status: "ready" };
    } catch (error) {
      request.log.warn({ err: error }, "store not ready");
      return sendProblem(reply, problem(503, "unavailable", "the store is unreachable"));
    }
  });
  app.setNotFoundHandler((request, reply) => {
    const answered = answerUnknownGrpcMethod(request, reply);
    if (answered !== null) return answered;
    const path = request.url.split("?")[0];
    // A path served by other methods (/healthz, /openapi.json, the token endpoint…) is 405, not 404.
    const allow = methodsServing(app, path);
    if (allow.length > 0) return sendMethodNotAllowed(reply, allow.join(", "));
    return sendProblem(reply, problem(404, "not_found", `no route for ${request.method} ${shortened(path)}`));
  });
  app.addHook("onClose", async () => {
    await sandboxStore.close();
    await store.close();
  });

  return {
    app,
    devIdentity,
    setListeningAddress(host, port) {
      devIdentity?.setIssuer(`http://${host.includes(":") ? `[${host}]` : host}:${port}/`);
    },
  };
}
