import type { FastifyInstance } from "fastify";
import { problem, sendProblem } from "./problem.js";

/**
 * A Host (HTTP/2: :authority) that is a host and an optional port: a name of letters, digits and
 * `-._~%`, or a bracketed IP literal. RFC 9112 §3.2 has a server answer 400 to an invalid one;
 * OGC API links are built from it (docs/api.md §16.2), so `evil"><script>` would be echoed into
 * the Link header and the documents. Empty is valid (a target without an authority).
 */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%]+)(?::\d{1,5})?$/;

/** Refuses, before anything else, a request whose Host is not a host[:port] (400, problem details). */
export function refuseMalformedHost(app: FastifyInstance): void {
  app.addHook("onRequest", (request, reply, done) => {
    const host = request.host as string | undefined;
    if (host === undefined || host === "" || HOST.test(host)) return done();
    sendProblem(reply, problem(400, "invalid_argument", "the Host header is not a valid host[:port]"));
  });
}
