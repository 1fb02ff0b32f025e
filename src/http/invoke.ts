import type { DescMessage, DescMethodUnary, DescService, MessageShape } from "@bufbuild/protobuf";
import {
  createContextValues,
  createHandlerContext,
  createServiceImplSpec,
  type ContextValues,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";

export interface InProcessCall {
  headers: Headers;
  url: string;
  requestMethod: string;
  signal?: AbortSignal;
  values?: ContextValues;
}

export type InProcessCaller = <I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  input: MessageShape<I>,
  call: InProcessCall,
) => Promise<MessageShape<O>>;

/**
 * Calls a service implementation in-process through the same interceptor chain that guards the
 * Connect, gRPC and gRPC-Web routes, using Connect's own invoker, so that a REST call is
 * authenticated and authorised exactly like the others without a serialise-parse round trip.
 */
export function createInProcessCaller<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
  interceptors: Interceptor[],
): InProcessCaller {
  const spec = createServiceImplSpec(service, impl);
  return async <I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    input: MessageShape<I>,
    call: InProcessCall,
  ): Promise<MessageShape<O>> => {
    const methodSpec = spec.methods[method.localName];
    if (!methodSpec || methodSpec.kind !== "unary") throw new Error(`no unary method ${method.name} on ${service.typeName}`);
    const context = createHandlerContext({
      service,
      method,
      protocolName: "rest",
      requestMethod: call.requestMethod,
      url: call.url,
      requestHeader: call.headers,
      requestSignal: call.signal,
      contextValues: call.values ?? createContextValues(),
    });
    // The spec is typed for the service's union of methods; `method` is one of them.
    const output = await invokeUnaryImplementation(
      methodSpec as unknown as Parameters<typeof invokeUnaryImplementation<I, O>>[0],
      context,
      input,
      interceptors,
    );
    return output as MessageShape<O>;
  };
}
