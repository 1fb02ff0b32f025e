import { PROBLEM_CONTENT_TYPE } from "../problem.js";
import { MAX_BODY_BYTES } from "../rest-common.js";
import { responseRef, schemaRef } from "./refs.js";
import type { Header, Reference, Response } from "./types.js";

/**
 * The error answers (docs/api.md §6.2), each problem details under its status, written once and
 * referenced by every operation that can give it.
 */

const problemContent = { [PROBLEM_CONTENT_TYPE]: { schema: schemaRef("Problem") } };

const header = (description: string, required = false): Header => ({
  description,
  ...(required ? { required } : {}),
  schema: { type: "string" },
});

function problemResponse(description: string, headers?: Record<string, Header>): Response {
  return { description, ...(headers ? { headers } : {}), content: problemContent };
}

const challenge = header(
  '`Bearer error="invalid_token", error_description="<reason>"` (401) or `Bearer error="insufficient_scope", scope="<needed>"` (403).',
);

/** Status → the component's name and its response. */
const PROBLEMS = {
  400: [
    "BadRequest",
    problemResponse("A malformed URL; on OGC paths, an invalid query parameter (code `invalid_argument`)."),
  ],
  401: [
    "Unauthorized",
    problemResponse(
      "No valid bearer token: missing, malformed, expired, wrongly signed or for another issuer or audience.",
      {
        "WWW-Authenticate": challenge,
      },
    ),
  ],
  403: [
    "Forbidden",
    problemResponse("The token lacks the scope the operation needs, or has no account claim.", {
      "WWW-Authenticate": challenge,
    }),
  ],
  404: [
    "NotFound",
    problemResponse("No such source (also another account's or the other environment's), or no route."),
  ],
  405: [
    "MethodNotAllowed",
    problemResponse("The path exists, the method does not (code `unimplemented`).", {
      Allow: header("The methods the path takes, e.g. `GET, DELETE`.", true),
    }),
  ],
  406: ["NotAcceptable", problemResponse("The Accept header admits none of the answer's media types.")],
  409: ["AltIdTaken", problemResponse("An alt_id is taken by a live source of the account (code `already_exists`).")],
  413: ["PayloadTooLarge", problemResponse(`The body is over ${MAX_BODY_BYTES} bytes (10 MiB).`)],
  415: ["UnsupportedMediaType", problemResponse("The body is not application/json or application/geo+json.")],
  422: [
    "ValidationFailed",
    problemResponse("Every violation of the body or the query, each with a JSON pointer (code `invalid_argument`)."),
  ],
  429: [
    "TooManyRequests",
    problemResponse("A rate limit, or the sandbox session or budget is full (code `resource_exhausted`).", {
      "Retry-After": header("Seconds to wait, when waiting helps."),
    }),
  ],
  500: ["InternalError", problemResponse("An unexpected failure; it has been logged (code `internal`).")],
  503: [
    "Unavailable",
    problemResponse("The store is unreachable, signing keys are unavailable, or the service is shutting down."),
  ],
} as const satisfies Record<number, readonly [string, Response]>;

export type ProblemStatus = keyof typeof PROBLEMS;

/** `components.responses`: every problem answer by name. */
export const PROBLEM_RESPONSES: Readonly<Record<string, Response>> = Object.fromEntries(Object.values(PROBLEMS));

/** The operation's `responses` entries for these problem statuses. */
export function problems(...statuses: ProblemStatus[]): Record<string, Reference> {
  return Object.fromEntries(statuses.map((status) => [String(status), responseRef(PROBLEMS[status][0])]));
}
