import { ConnectError } from "@connectrpc/connect";
import { shortened } from "../ledger/preview.js";
import type { AnswerStatus } from "./answer-status.js";

/**
 * The longest status message an RPC answer carries (docs/api.md §6.4). The service's own messages
 * quote client values as previews; Connect's protocol errors (an unknown grpc-encoding, a
 * malformed grpc-timeout, protobuf-es' JSON decoding) quote them whole, and a 10,000-character
 * header came back as a 10,000-character grpc-message.
 */
export const MAX_STATUS_MESSAGE = 1_000;

/**
 * The message shortened to MAX_STATUS_MESSAGE and made Unicode (an unpaired surrogate quoted from a
 * client made encodeURIComponent throw while writing grpc-message, and the answer lost its
 * status); undefined when it is both already.
 */
function bounded(message: string): string | undefined {
  const sound = shortened(message, MAX_STATUS_MESSAGE);
  return sound === message ? undefined : sound;
}

/** A status visitor (answer-status.ts): a message bounded as `bounded` says (a replacement carries no details). */
export function boundedStatus(status: AnswerStatus): AnswerStatus | undefined {
  const message = bounded(status.message);
  return message === undefined ? undefined : { code: status.code, message };
}

/** The lean gRPC path's twin of boundedStatus: the same message, and as there no details. */
export function boundedError(error: ConnectError): ConnectError {
  const message = bounded(error.rawMessage);
  return message === undefined ? error : new ConnectError(message, error.code, error.metadata);
}
