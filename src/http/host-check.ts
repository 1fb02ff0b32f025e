import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { discardBody } from "./early-auth.js";
import { problem, sendProblem } from "./problem.js";

/**
 * A Host (HTTP/2: :authority) that is a host and an optional port: a name of letters, digits and
 * `-._~%`, or a bracketed IP literal. RFC 9112 §3.2 has a server answer 400 to an invalid one; OGC
 * API links are built from it (docs/api.md §16.2), so `evil"><script>` would be echoed into the
 * Link header and the documents. An IPv6 zone id (RFC 6874, `[fe80::1%25eth0]`) is refused: WHATWG
 * URLs, which Connect's handler builds from it, do not take one. Empty is valid (a target
 * without an authority).
 */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%]+)(?::\d{1,5})?$/;

/** The refusal's text, in problem details and in an RPC's status alike. */
export const MALFORMED_HOST = "the Host header is not a valid host[:port]";

/** Whether a Host (or `:authority`) may be served: absent, empty, or a host[:port]. */
export function isServableHost(host: string | undefined): boolean {
  return host === undefined || host === "" || HOST.test(host);
}

/**
 * Whether every authority a request names may be served: over HTTP/2 both `:authority` and a
 * `host` header may come, and readers differ on which wins (Fastify's `request.host` takes `host`,
 * Node's and Connect's `:authority`), so both are checked.
 */
export function servableAuthorities(headers: { host?: string; ":authority"?: string | string[] }): boolean {
  const authority = headers[":authority"];
  return isServableHost(headers.host) && isServableHost(Array.isArray(authority) ? authority.join(",") : authority);
}

/** The refusal of an RPC whose Host is not a host[:port], in the caller's protocol. */
export function malformedHostError(): ConnectError {
  return new ConnectError(MALFORMED_HOST, Code.InvalidArgument);
}

/**
 * Refuses, before anything else, a request whose Host is not a host[:port]: problem details
 * (400), or for an RPC (`isRpc`: a path Connect serves, or a gRPC content type) the RPC error
 * `invalid_argument` in the caller's protocol (`sendRpc`), as its clients read errors.
 */
export function refuseMalformedHost(
  app: FastifyInstance,
  isRpc: (request: FastifyRequest) => boolean,
  sendRpc: (request: FastifyRequest, reply: FastifyReply, error: ConnectError) => FastifyReply,
): void {
  app.addHook("onRequest", (request, reply, done) => {
    if (servableAuthorities(request.headers as Parameters<typeof servableAuthorities>[0])) return done();
    discardBody(request);
    if (isRpc(request)) {
      sendRpc(request, reply, malformedHostError());
      return;
    }
    sendProblem(reply, problem(400, "invalid_argument", MALFORMED_HOST));
  });
}
