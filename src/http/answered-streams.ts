import { constants, type Http2Stream } from "node:http2";
import type { FastifyInstance, FastifyRequest } from "fastify";

/**
 * Over HTTP/2, a request still arriving when its answer is out (a refusal before the body was
 * read, a 408, Connect's size limit) has its stream closed with NO_ERROR (RFC 9113 §8.1: the
 * client stops sending the rest). Without that, a client that keeps sending into a stream nobody
 * reads fills the session's memory until nghttp2 resets the stream with ENHANCE_YOUR_CALM, the
 * answer with it, or tears the whole session down, other calls on it included. Node's compat layer
 * does not do it itself: the response's `finish` comes only once the stream has closed.
 */
export function installAnsweredStreamClosing(app: FastifyInstance): void {
  app.addHook("onRequest", (request, _reply, done) => {
    closeStreamWhenAnswered(request);
    done();
  });
}

/**
 * Waits for the stream's own writable end (the answer written); what still arrives is dropped
 * from then on, and the reset goes a turn later, as one submitted with the last frames would have
 * nghttp2 drop them. A request the client finished sending needs no reset.
 */
function closeStreamWhenAnswered(request: FastifyRequest): void {
  const stream = (request.raw as FastifyRequest["raw"] & { stream?: Http2Stream }).stream;
  if (stream === undefined) return;
  stream.once("finish", () => {
    if (stream.readableEnded) return;
    request.raw.resume();
    setImmediate(() => {
      if (!stream.closed && !stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
    });
  });
}
