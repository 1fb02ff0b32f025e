import { ConnectError } from "@connectrpc/connect";
import type { AnswerStatus } from "./answer-status.js";

/**
 * The longest status message an RPC answer carries (docs/api.md §6.4). The service's own messages
 * quote client values as previews; Connect's protocol errors (an unknown grpc-encoding, a
 * malformed grpc-timeout, protobuf-es' JSON decoding) quote them whole, and a 10,000-character
 * header came back as a 10,000-character grpc-message.
 */
export const MAX_STATUS_MESSAGE = 1_000;

function cut(message: string): string {
  return `${message.slice(0, MAX_STATUS_MESSAGE)}…`;
}

/** A status visitor (answer-status.ts): a longer message cut, with `…` (a replacement carries no details). */
export function boundedStatus(status: AnswerStatus): AnswerStatus | undefined {
  return status.message.length > MAX_STATUS_MESSAGE ? { code: status.code, message: cut(status.message) } : undefined;
}

/** The lean gRPC path's twin of boundedStatus: the same message, and as there no details. */
export function boundedError(error: ConnectError): ConnectError {
  if (error.rawMessage.length <= MAX_STATUS_MESSAGE) return error;
  return new ConnectError(cut(error.rawMessage), error.code, error.metadata);
}
