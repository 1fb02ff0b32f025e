import {
  create,
  type DescMessage,
  type DescMethodUnary,
  type DescService,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  type ContextValues,
  createContextKey,
  createContextValues,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";

/**
 * Where an in-process call leaves the response headers and trailers the service and interceptors
 * set (`context.responseHeader`, `responseTrailer`), each allocated only when written. The lean
 * gRPC path passes one (under `responseMetadataKey` in the call's context values) to send them as
 * Connect's handler does; REST has none to send.
 */
export interface ResponseMetadata {
  header?: Headers;
  trailer?: Headers;
}

/** The context value holding a call's ResponseMetadata; calls without one keep theirs to themselves. */
export const responseMetadataKey = createContextKey<ResponseMetadata | undefined>(undefined, {
  description: "the response metadata of an in-process call",
});

export interface InProcessCall {
  headers: Headers;
  url: string;
  requestMethod: string;
  values?: ContextValues;
  /** Aborted once nobody waits for the answer (the client gone, its deadline passed); never, absent. */
  signal?: AbortSignal;
}

export type InProcessCaller = <I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  input: MessageShape<I>,
  call: InProcessCall,
) => Promise<MessageShape<O>>;

type AnyFn = Parameters<Interceptor>[0];
type UnaryImpl = (input: unknown, context: HandlerContext) => Promise<unknown>;

/**
 * A REST call is answered before the client can cancel it (the service awaits nothing but the
 * store), so one signal that never aborts serves every call instead of two linked controllers per
 * request, which Connect's own handler context creates and which showed in the GET profile. The
 * exception, a list or search page that may read on over several turns (docs/api.md §13), is
 * called with its own signal (InProcessCall.signal).
 */
const NEVER_ABORTED = new AbortController().signal;

/** The methods whose answer is a page the ledger may read over several turns (docs/api.md §13). */
const PAGE_METHODS: ReadonlySet<string> = new Set(["ListSources", "SearchSources"]);

/**
 * Whether a call of `method` needs a signal of its own (InProcessCall.signal): only a page that may
 * read on over several turns can notice that its caller went away; every other call is answered
 * in the turn it starts. A signal per call costs more than its allocation: the lean gRPC path
 * passing one to every GetSource promoted ~1.5 KB a call to the old generation, ~0.45 KB without
 * (docs/benchmarks.md, "What a read keeps past a scavenge").
 */
export function readsOverSeveralTurns(method: DescMethodUnary): boolean {
  return PAGE_METHODS.has(method.name);
}

/** The handler context of an in-process call; response metadata is only allocated if written. */
class InProcessContext implements HandlerContext {
  readonly protocolName = "rest";
  readonly #metadata: ResponseMetadata;

  constructor(
    readonly service: DescService,
    readonly method: HandlerContext["method"],
    readonly requestMethod: string,
    readonly url: string,
    readonly requestHeader: Headers,
    readonly values: ContextValues,
    readonly signal: AbortSignal,
  ) {
    this.#metadata = values.get(responseMetadataKey) ?? {};
  }

  get responseHeader(): Headers {
    this.#metadata.header ??= new Headers();
    return this.#metadata.header;
  }

  get responseTrailer(): Headers {
    this.#metadata.trailer ??= new Headers();
    return this.#metadata.trailer;
  }

  timeoutMs(): undefined {
    return undefined;
  }

  abort(): void {
    // The caller's to abort (InProcessCall.signal), not the service's.
  }
}

/**
 * An in-process call's answer; its headers and trailers are the context's, created only when
 * written (ResponseMetadata). A class rather than an object literal with `get header() {…}`: such a
 * literal makes new getter functions on every call, and V8 then kept every call's objects (the
 * request, its context values, the record read) through each scavenge until the next full
 * collection, so all of them reached the old generation: ~860 B a call in a bare server, most of a
 * GET's ~4.5 KB here (docs/benchmarks.md, "What a read keeps past a scavenge").
 */
class InProcessResponse implements UnaryResponse {
  readonly stream = false;
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly #context: InProcessContext;

  constructor(
    req: UnaryRequest,
    readonly message: MessageShape<DescMessage>,
    context: InProcessContext,
  ) {
    this.service = req.service;
    this.method = req.method;
    this.#context = context;
  }

  get header(): Headers {
    return this.#context.responseHeader;
  }

  get trailer(): Headers {
    return this.#context.responseTrailer;
  }
}

/**
 * Calls a service implementation in-process through the same interceptors, in the same order, that
 * guard the Connect, gRPC and gRPC-Web routes, so that a REST call is authenticated and authorised
 * exactly like the others, without a serialise-parse round trip. Each method's interceptor chain
 * is composed once, not per call as Connect's own invoker does.
 */
export function createInProcessCaller<S extends DescService>(
  service: S,
  impl: Partial<ServiceImpl<S>>,
  interceptors: Interceptor[],
): InProcessCaller {
  const spec = createServiceImplSpec(service, impl);
  const chains = new Map<string, AnyFn>();
  for (const method of service.methods) {
    const methodSpec = spec.methods[method.localName];
    if (method.methodKind !== "unary" || methodSpec.kind !== "unary") continue;
    const unary = methodSpec.impl as unknown as UnaryImpl;
    const innermost: AnyFn = async (request) => {
      const req = request as UnaryRequest;
      const context = new InProcessContext(
        req.service,
        method,
        req.requestMethod,
        req.url,
        req.header,
        req.contextValues,
        req.signal,
      );
      const output = await unary(req.message, context);
      // Connect's invoker normalises a partial answer into a full message; so does this one.
      return new InProcessResponse(req, create(method.output, output as MessageShape<DescMessage>), context);
    };
    chains.set(
      method.localName,
      interceptors.reduceRight<AnyFn>((next, interceptor) => interceptor(next), innermost),
    );
  }

  return async <I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    input: MessageShape<I>,
    call: InProcessCall,
  ): Promise<MessageShape<O>> => {
    const chain = chains.get(method.localName);
    if (chain === undefined) throw new Error(`no unary method ${method.name} on ${service.typeName}`);
    const request: UnaryRequest<I, O> = {
      stream: false,
      service,
      method,
      message: input,
      requestMethod: call.requestMethod,
      url: call.url,
      signal: call.signal ?? NEVER_ABORTED,
      header: call.headers,
      contextValues: call.values ?? createContextValues(),
    };
    const response = await chain(request);
    return response.message as MessageShape<O>;
  };
}
