/**
 * The lean gRPC path's turn gate (src/rpc/turn-gate.ts, docs/api.md §9.10) on a real HTTP/2
 * connection, with a stand-in for the service: calls wait for their turn in arrival order, and a
 * call whose deadline passes while it waits is answered deadline_exceeded without reaching the
 * service, as is a call the client cancels while it waits.
 */
import http2 from "node:http2";
import { create } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { GetSourceResponseSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { InProcessCaller } from "../../src/rpc/invoke.js";
import { getSourceEnvelope, leanGrpcFor, serveLean, standInCaller } from "../support/lean-grpc.js";

let server: http2.Http2Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/**
 * A server whose GetSource records each id it is asked for (and tells `onServe`); id "slow" keeps
 * the thread busy 80 ms.
 */
async function serve(
  callsPerTurn: number,
  served: string[],
  onServe: (id: string) => void = () => {},
  logged: unknown[] = [],
): Promise<number> {
  const call = (async (_method, input) => {
    const { id } = input as unknown as { id: string };
    served.push(id);
    onServe(id);
    if (id === "slow") {
      const until = performance.now() + 80;
      while (performance.now() < until);
    }
    if (id === "unencodable") {
      // An answer protobuf cannot write (an int64 that is no integer): fails after the service.
      return create(GetSourceResponseSchema, { source: { id, startAt: { seconds: "soon" as unknown as bigint } } });
    }
    return create(GetSourceResponseSchema, { source: { id } });
  }) as InProcessCaller;
  const lean = await serveLean(
    leanGrpcFor(call, standInCaller("gate-test"), {
      callsPerTurn,
      logger: { error: (details) => logged.push(details) },
    }),
  );
  server = lean.server;
  return lean.port;
}

/** A GetSource call's stream on `session`, its body still to be sent. */
function getSource(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders = {},
): http2.ClientHttp2Stream {
  return session.request({
    ":method": "POST",
    ":path": "/sourceledger.v2.SourceLedgerService/GetSource",
    "content-type": "application/grpc",
    te: "trailers",
    authorization: "Bearer stand-in",
    ...headers,
  });
}

/**
 * Sends every call in one turn of this side's loop; each call's grpc-status ("none" for a stream
 * closed without trailers). `opened` sees each call's stream.
 */
async function callAll(
  port: number,
  calls: { id: string; timeout?: string }[],
  opened: (id: string, stream: http2.ClientHttp2Stream) => void = () => {},
): Promise<string[]> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await Promise.all(
      calls.map(
        ({ id, timeout }) =>
          new Promise<string>((resolve, reject) => {
            const stream = getSource(session, timeout === undefined ? {} : { "grpc-timeout": timeout });
            opened(id, stream);
            let status = "none";
            stream.on("trailers", (t) => {
              status = String(t["grpc-status"]);
            });
            stream.on("error", reject);
            stream.resume();
            stream.on("close", () => resolve(status));
            stream.end(getSourceEnvelope(id));
          }),
      ),
    );
  } finally {
    session.close();
  }
}

describe("the lean path's turn gate", () => {
  it("hands calls to the service in arrival order, one turn's worth at a time", async () => {
    const served: string[] = [];
    const port = await serve(2, served);
    const ids = ["a", "b", "c", "d", "e"];
    expect(
      await callAll(
        port,
        ids.map((id) => ({ id })),
      ),
    ).toEqual(["0", "0", "0", "0", "0"]);
    expect(served).toEqual(ids);
  });

  it("a call whose deadline passes while it waits for its turn never reaches the service", async () => {
    const served: string[] = [];
    const port = await serve(1, served);
    // "fast" is admitted at once; "slow" and "late" wait; "slow"'s turn keeps the thread 80 ms,
    // past "late"'s 20 ms deadline, which therefore never runs.
    const statuses = await callAll(port, [{ id: "fast" }, { id: "slow" }, { id: "late", timeout: "20m" }]);
    expect(statuses).toEqual(["0", "0", "4"]);
    expect(served).toEqual(["fast", "slow"]);
  });

  it("a call the client cancels while it waits for its turn never reaches the service", async () => {
    const served: string[] = [];
    let cancelLate = () => {};
    // One call a turn: "fast" at once, then "slow", "w1", "w2", "w3", "late" a turn each. While
    // "slow" runs, the client resets "late"'s stream; the reset reaches the server in the next
    // socket read, three turns before "late" would be admitted.
    const port = await serve(1, served, (id) => {
      if (id === "slow") cancelLate();
    });
    const statuses = await callAll(
      port,
      ["fast", "slow", "w1", "w2", "w3", "late"].map((id) => ({ id })),
      (id, stream) => {
        if (id === "late") cancelLate = () => stream.close(http2.constants.NGHTTP2_CANCEL);
      },
    );
    expect(statuses).toEqual(["0", "0", "0", "0", "0", "none"]);
    expect(served).toEqual(["fast", "slow", "w1", "w2", "w3"]);
  });

  it("a failure after the service (its answer cannot be encoded) is a bare internal, logged, without its own text", async () => {
    const logged: unknown[] = [];
    const port = await serve(8, [], () => {}, logged);
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        const stream = getSource(session);
        stream.on("trailers", resolve);
        stream.on("error", reject);
        stream.resume();
        stream.end(getSourceEnvelope("unencodable"));
      });
      expect(trailers["grpc-status"]).toBe("13");
      expect(trailers["grpc-message"]).toBe("internal%20error");
      expect(logged).toEqual([{ err: expect.any(Error), procedure: "sourceledger.v2.SourceLedgerService/GetSource" }]);
    } finally {
      session.close();
    }
  });
});
