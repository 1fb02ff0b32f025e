import { Code } from "@connectrpc/connect";
import type { AnswerStatus } from "./answer-status.js";

/**
 * What a caller is told when its request message is not valid protobuf: its fault, so
 * `invalid_argument`, in a fixed text. Connect reports it as `internal` with the parser's own words
 * ("parse binary: illegal tag: field no 0 wire type 7"), which blames the server and shows its
 * internals (docs/api.md §6).
 */
export const NOT_PROTOBUF = "the request message is not valid protobuf";

/** What a caller is told when its JSON request message does not parse, instead of V8's parser message. */
export const NOT_JSON = "the request message is not valid JSON";

const PARSE_FAILURE = "parse binary:";
// protobuf-es prefixes JSON.parse's own message; V8's messages for malformed JSON start like these.
const JSON_SYNTAX =
  /^cannot decode message [\w.]+ from JSON: (?:Unexpected|Expected|Bad (?:control|escaped)|Unterminated|No number|Exponent part|.* is not valid JSON)/;

/**
 * A status visitor (answer-status.ts): a request message that is not valid protobuf, or not valid
 * JSON, is answered `invalid_argument` with a fixed text, in each protocol's own error form; any
 * other status is left alone.
 */
export function decodeFailureAsInvalid(status: AnswerStatus): AnswerStatus | undefined {
  if (status.code === Code.Internal && status.message.startsWith(PARSE_FAILURE)) {
    return { code: Code.InvalidArgument, message: NOT_PROTOBUF };
  }
  if (status.code === Code.InvalidArgument && JSON_SYNTAX.test(status.message)) {
    return { code: Code.InvalidArgument, message: NOT_JSON };
  }
  return undefined;
}
