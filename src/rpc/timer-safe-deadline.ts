/**
 * Deadlines past what a timer can hold are read as none (docs/api.md §9.10). Node's setTimeout
 * holds at most 2^31 − 1 ms (~24.8 days) and fires a longer delay after 1 ms, while `grpc-timeout`
 * allows 99,999,999 hours and `connect-timeout-ms` ten digits; Connect's handler passes the deadline
 * to setTimeout as it is, so a Health.Watch sent with a 30-day deadline would end at once with
 * deadline_exceeded. Both ways in read the deadline through here: Connect's handlers wrapped by
 * `withTimerSafeDeadline`, the lean gRPC path through `grpcTimeoutOf`.
 */
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";
import { withSameRoute } from "./handler-route.js";

/** The longest delay setTimeout holds. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

type TimeoutParse = typeof parseGrpcTimeout;

/** The deadline headers of the protocols Connect serves (gRPC-Web uses gRPC's), with their parsers. */
const DEADLINE_HEADERS: readonly (readonly [string, TimeoutParse])[] = [
  ["grpc-timeout", parseGrpcTimeout],
  ["connect-timeout-ms", parseConnectTimeout],
];

/** A valid deadline longer than a timer holds (a malformed one keeps its error, for Connect to answer). */
function pastAnyTimer(parsed: ReturnType<TimeoutParse>): boolean {
  return parsed.error === undefined && parsed.timeoutMs !== undefined && parsed.timeoutMs > MAX_TIMER_MS;
}

/** `grpc-timeout` as Connect's gRPC handler parses it (no upper bound), a deadline past any timer read as none. */
export function grpcTimeoutOf(value: string | null): ReturnType<TimeoutParse> {
  const parsed = parseGrpcTimeout(value, Number.MAX_SAFE_INTEGER);
  return pastAnyTimer(parsed) ? {} : parsed;
}

/** A Connect handler that does not see a deadline header whose deadline is longer than a timer holds. */
export function withTimerSafeDeadline(handler: UniversalHandler): UniversalHandler {
  return withSameRoute(handler, (req: UniversalServerRequest) => {
    for (const [name, parse] of DEADLINE_HEADERS) {
      const value = req.header.get(name);
      if (value !== null && pastAnyTimer(parse(value, Number.MAX_SAFE_INTEGER))) req.header.delete(name);
    }
    return handler(req);
  });
}
