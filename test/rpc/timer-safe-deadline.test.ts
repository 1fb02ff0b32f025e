import { ConnectError } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { describe, expect, it } from "vitest";
import { grpcTimeoutOf, MAX_TIMER_MS, withTimerSafeDeadline } from "../../src/rpc/timer-safe-deadline.js";

/** The deadline headers a wrapped handler sees for a request sent with `header`. */
async function seen(header: Record<string, string>): Promise<Record<string, string | null>> {
  let got: Record<string, string | null> = {};
  const inner = Object.assign(
    async (req: UniversalServerRequest) => {
      got = {
        "grpc-timeout": req.header.get("grpc-timeout"),
        "connect-timeout-ms": req.header.get("connect-timeout-ms"),
      };
      return { status: 200 };
    },
    {
      protocolNames: ["grpc"],
      service: undefined,
      method: undefined,
      requestPath: "/a.B/C",
      allowedMethods: ["POST"],
      supportedContentType: { test: () => true },
    },
  ) as unknown as UniversalHandler;
  const wrapped = withTimerSafeDeadline(inner);
  expect(wrapped.requestPath).toBe("/a.B/C");
  expect(wrapped.allowedMethods).toEqual(["POST"]);
  await wrapped({
    httpVersion: "2",
    method: "POST",
    url: "http://localhost/a.B/C",
    header: new Headers(header),
    body: undefined,
    signal: new AbortController().signal,
  } as unknown as UniversalServerRequest);
  return got;
}

describe("deadlines longer than a timer holds", () => {
  it("grpcTimeoutOf: none past 2^31 − 1 ms, as parsed up to it, a malformed value's error kept", () => {
    expect(grpcTimeoutOf(null)).toEqual({});
    expect(grpcTimeoutOf("5m")).toEqual({ timeoutMs: 5 });
    expect(grpcTimeoutOf("2147483S")).toEqual({ timeoutMs: 2_147_483_000 });
    expect(grpcTimeoutOf("2147484S")).toEqual({});
    expect(grpcTimeoutOf("99999999H")).toEqual({});
    const bad = grpcTimeoutOf("soon");
    expect(bad.error).toBeInstanceOf(ConnectError);
    expect(bad.error?.message).toBe("[invalid_argument] protocol error: invalid grpc timeout value: soon");
  });

  it("Connect's handlers: an overlong grpc-timeout or connect-timeout-ms is removed, others reach Connect as sent", async () => {
    expect(await seen({ "grpc-timeout": "99999999H" })).toEqual({ "grpc-timeout": null, "connect-timeout-ms": null });
    expect(await seen({ "grpc-timeout": "2592000S" })).toEqual({ "grpc-timeout": null, "connect-timeout-ms": null });
    expect(await seen({ "connect-timeout-ms": "9999999999" })).toEqual({
      "grpc-timeout": null,
      "connect-timeout-ms": null,
    });
    expect(await seen({ "connect-timeout-ms": String(MAX_TIMER_MS + 1) })).toEqual({
      "grpc-timeout": null,
      "connect-timeout-ms": null,
    });
    expect(await seen({ "grpc-timeout": "2147483S", "connect-timeout-ms": String(MAX_TIMER_MS) })).toEqual({
      "grpc-timeout": "2147483S",
      "connect-timeout-ms": String(MAX_TIMER_MS),
    });
    // Malformed: left for Connect to answer invalid_argument.
    expect(await seen({ "grpc-timeout": "soon", "connect-timeout-ms": "12345678901" })).toEqual({
      "grpc-timeout": "soon",
      "connect-timeout-ms": "12345678901",
    });
  });
});
