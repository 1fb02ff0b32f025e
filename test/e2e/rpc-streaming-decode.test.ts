/**
 * docs/api.md §6: a request message that does not decode is the caller's fault on a streaming
 * method too (gRPC's Health/Watch, no token needed): invalid_argument with the fixed text, as on a
 * unary one, and no error in the log (anyone could fill it).
 */
import { Writable } from "node:stream";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOT_JSON, NOT_PROTOBUF } from "../../src/rpc/decode-errors.js";
import { grpcStatusFields } from "../support/one-port-clients.js";
import { startTestServer, type TestServer } from "../support/server.js";

const WATCH = "/grpc.health.v1.Health/Watch";
/** Field 0 with wire type 7: no protobuf parser accepts it. */
const GARBAGE = Buffer.from([0x07, 0xff, 0xff, 0xff]);

let server: TestServer;
const lines: { level: number; msg: string }[] = [];

beforeAll(async () => {
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      callback();
    },
  });
  server = await startTestServer({}, { logger: { level: "info", stream } });
});
afterAll(async () => {
  await server.close();
});

describe("Health/Watch with a request that does not decode", () => {
  it("gRPC → INVALID_ARGUMENT with the fixed text, nothing logged as an error", async () => {
    const status = await grpcStatusFields(
      server.port,
      WATCH,
      { "content-type": "application/grpc" },
      encodeEnvelope(0, GARBAGE),
    );
    expect(status["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(status["grpc-message"]))).toBe(NOT_PROTOBUF);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  it("Connect streaming, JSON that does not parse → invalid_argument with the fixed text in the end of stream", async () => {
    const res = await fetch(`http://127.0.0.1:${server.port}${WATCH}`, {
      method: "POST",
      headers: { "content-type": "application/connect+json" },
      body: encodeEnvelope(0, Buffer.from("{")),
    });
    const body = Buffer.from(await res.arrayBuffer());
    // The last envelope (flag 0x02) is the end of the stream, holding the error.
    expect(body[0] & 0x02).toBe(0x02);
    expect(JSON.parse(body.subarray(5).toString("utf8"))).toEqual({
      error: { code: "invalid_argument", message: NOT_JSON },
    });
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    // Counted with its code, not as the HTTP 200 that carries the stream.
    const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    const counted = (code: string) =>
      Number(
        new RegExp(
          `^source_ledger_requests_total\\{[^}]*protocol="connect"[^}]*method="grpc.health.v1.Health/Watch"[^}]*code="${code}"[^}]*\\} (\\d+)`,
          "m",
        ).exec(metrics)?.[1] ?? 0,
      );
    expect(counted("invalid_argument")).toBe(1);
    expect(counted("ok")).toBe(0);
  });
});
