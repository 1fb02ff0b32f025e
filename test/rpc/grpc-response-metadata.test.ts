/**
 * Response headers and trailers set by the service or an interceptor (`context.responseHeader`,
 * `responseTrailer`, a response's `header` and `trailer`) reach the client on the lean gRPC path as
 * they do on Connect's gRPC handler: headers with the answer's, trailers with `grpc-status`, and on
 * an error under the error's status and metadata. One service implementation and one interceptor
 * serve both paths; each case is asserted on its own and compared across the two.
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetSourceResponseSchema, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { createInProcessCaller } from "../../src/rpc/invoke.js";
import { getSourceEnvelope, leanGrpcFor, serveLean, standInCaller } from "../support/lean-grpc.js";

/** GetSource: sets a header and a trailer; id "gone" fails after setting its own trailer. */
const impl = {
  async getSource(request: { id: string }, context: { responseHeader: Headers; responseTrailer: Headers }) {
    context.responseHeader.set("x-served-by", "impl");
    if (request.id === "gone") {
      context.responseTrailer.set("x-rows", "0");
      throw new ConnectError("source gone", Code.NotFound, { "x-reason": "deleted" });
    }
    context.responseTrailer.set("x-rows", "1");
    return create(GetSourceResponseSchema, { source: { id: request.id } });
  },
};

/** Adds a header and a trailer to every answer it sees. */
const stamping: Interceptor = (next) => async (request) => {
  const response = await next(request);
  response.header.set("x-interceptor", "seen");
  response.trailer.set("x-cost", "3");
  return response;
};

const servers: http2.Http2Server[] = [];
const ports = { lean: 0, connect: 0 };

async function listen(server: http2.Http2Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  const lean = await serveLean(
    leanGrpcFor(createInProcessCaller(SourceLedgerService, impl, [stamping]), standInCaller("metadata-test")),
  );
  servers.push(lean.server);
  ports.lean = lean.port;
  ports.connect = await listen(
    http2.createServer(
      connectNodeAdapter({
        routes: (router) => router.service(SourceLedgerService, impl),
        interceptors: [stamping],
        connect: false,
        grpcWeb: false,
      }),
    ),
  );
});

afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

interface Answer {
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
  body: string;
}

/** A raw GetSource call; what the client saw, without what differs by transport only (date, request id). */
async function getSource(port: number, id: string): Promise<Answer> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise<Answer>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/sourceledger.v2.SourceLedgerService/GetSource",
        "content-type": "application/grpc",
        te: "trailers",
      });
      const answer: Answer = { headers: {}, trailers: {}, body: "" };
      const chunks: Buffer[] = [];
      const keep = (fields: http2.IncomingHttpHeaders) =>
        Object.fromEntries(Object.entries(fields).filter(([name]) => !["date", "x-request-id"].includes(name)));
      stream.on("response", (headers) => {
        answer.headers = keep(headers);
      });
      stream.on("trailers", (trailers) => {
        answer.trailers = keep(trailers);
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", reject);
      stream.on("close", () => resolve({ ...answer, body: Buffer.concat(chunks).toString("hex") }));
      stream.end(getSourceEnvelope(id));
    });
  } finally {
    session.close();
  }
}

describe("response metadata set by the service and interceptors", () => {
  it("a success: their headers with the answer's, their trailers with grpc-status 0, on both paths alike", async () => {
    const lean = await getSource(ports.lean, "src_1");
    const connect = await getSource(ports.connect, "src_1");

    expect(lean.headers).toMatchObject({
      ":status": 200,
      "content-type": "application/grpc+proto",
      "x-served-by": "impl",
      "x-interceptor": "seen",
    });
    expect(lean.trailers).toEqual({ "grpc-status": "0", "x-rows": "1", "x-cost": "3" });
    expect(lean.body).not.toBe("");
    expect(lean).toEqual(connect);
  });

  it("an error: the headers set before it, and the trailers set under its status and metadata, on both paths alike", async () => {
    const lean = await getSource(ports.lean, "gone");
    const connect = await getSource(ports.connect, "gone");

    expect(lean.headers).toMatchObject({ ":status": 200, "x-served-by": "impl" });
    expect(lean.headers["x-interceptor"]).toBeUndefined();
    expect(lean.trailers).toMatchObject({
      "grpc-status": String(Code.NotFound),
      "grpc-message": "source%20gone",
      "x-rows": "0",
      "x-reason": "deleted",
    });
    expect(lean.body).toBe("");
    expect(lean).toEqual(connect);
  });
});
