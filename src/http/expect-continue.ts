import type { FastifyInstance } from "fastify";

/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1), answered once the request's headers have passed every
 * check that needs no body (authentication, scope, account, routing: the onRequest hooks), just
 * before the body is read. A request refused before that gets its final answer with no 100, and
 * its client never sends the body. The server hands such requests over unanswered (listen.ts).
 */
export function installExpectContinue(app: FastifyInstance): void {
  app.addHook("preParsing", (request, reply, payload, done) => {
    const expect = request.headers.expect;
    if (typeof expect === "string" && expect.trim().toLowerCase() === "100-continue" && !reply.raw.headersSent) {
      reply.raw.writeContinue();
    }
    done(null, payload);
  });
}
