import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { PROBLEM_CONTENT_TYPE, problem } from "./problem.js";

/** What the HTTP/1.1 parser refused before any route ran, counted by kind. */
export interface ClientErrorCounts {
  timeout: number;
  headerOverflow: number;
  malformed: number;
}

interface Logger {
  debug(details: object, message: string): void;
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP/1.1 parser refuses before any route runs (a
 * request whose headers or body outlasted the request deadline, headers over the size limit,
 * bytes that are not HTTP) answered as problem details like every other error (docs/api.md §6),
 * then the connection closed. Node would write a bare status line; Fastify its own JSON shape.
 */
export function createClientErrorHandler(logger: Logger, counts: ClientErrorCounts) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    // A reset connection has nobody left to answer.
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    let status: number;
    let detail: string;
    if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
      counts.timeout++;
      status = 408;
      detail = "the request (headers and body) was not received within the request deadline";
    } else if (error.code === "HPE_HEADER_OVERFLOW") {
      counts.headerOverflow++;
      status = 431;
      detail = "the request's headers exceed the size limit";
    } else {
      counts.malformed++;
      status = 400;
      detail = "the request is not well-formed HTTP";
    }
    logger.debug({ code: error.code, status }, "client error");
    if (socket.writable) {
      const body = JSON.stringify(problem(status, status === 408 ? "deadline_exceeded" : "invalid_argument", detail));
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
