import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";

/** `serve` as a handler of `handler`'s route: the same method, path, protocols and content types. */
export function withSameRoute(
  handler: UniversalHandler,
  serve: (req: UniversalServerRequest) => Promise<UniversalServerResponse>,
): UniversalHandler {
  return Object.assign(serve, {
    protocolNames: handler.protocolNames,
    service: handler.service,
    method: handler.method,
    requestPath: handler.requestPath,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
  });
}
