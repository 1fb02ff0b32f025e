import { STATUS_CODES } from "node:http";
import { Code, type ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { problemInstanceOf } from "./request-id.js";

/** RFC 9457 problem details, with the Connect code and field-level errors (docs/api.md §6). */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** `urn:request:<request id>`, added by sendProblem for every answer to a request. */
  instance?: string;
  code: string;
  errors: { pointer: string; detail: string }[];
}

/** Connect code → HTTP status; validation failures are 422 (docs/api.md §4–§6). */
const STATUS: Record<Code, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 422,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 412,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

function httpStatusOf(code: Code): number {
  return STATUS[code];
}

export function problem(
  status: number,
  code: string,
  detail: string,
  errors: { pointer: string; detail: string }[] = [],
): ProblemDetails {
  return { type: "about:blank", title: STATUS_CODES[status] ?? "Error", status, detail, code, errors };
}

/**
 * A ConnectError as problem details. 5xx details are fixed texts: whatever caused them (a stack,
 * a driver message) stays in the server log.
 */
export function problemFromConnectError(
  error: ConnectError,
  errors: { pointer: string; detail: string }[] = [],
): ProblemDetails {
  const status = httpStatusOf(error.code);
  const detail = status >= 500 && error.code !== Code.Unavailable ? INTERNAL_ERROR_DETAIL : error.rawMessage;
  return problem(status, codeToString(error.code), detail, errors);
}

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** The fixed detail of every 500: the cause stays in the server log. */
export const INTERNAL_ERROR_DETAIL = "an internal error occurred; it has been logged";

/** Any reply that can carry a status, a content type and a body (Fastify's, whatever its generics). */
interface ProblemReply {
  code(status: number): ProblemReply;
  type(contentType: string): ProblemReply;
  send(payload: unknown): unknown;
  /** The request answered (Fastify's reply has it): its id becomes the problem's `instance`. */
  readonly request?: { readonly id: string };
}

/**
 * Answers with `details` as application/problem+json, under its own status, with the request's
 * id as `instance` (docs/api.md §6.1).
 */
export function sendProblem<R extends ProblemReply>(reply: R, details: ProblemDetails): R {
  const id = reply.request?.id;
  const { type, title, status, detail, code, errors } = details;
  const body =
    id === undefined ? details : { type, title, status, detail, instance: problemInstanceOf(id), code, errors };
  reply.code(details.status).type(PROBLEM_CONTENT_TYPE).send(body);
  return reply;
}
