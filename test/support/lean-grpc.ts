/**
 * The lean gRPC path (src/rpc/grpc-unary.ts) on its own: over a stand-in service call, behind early
 * checks that admit one stand-in caller, on a fresh HTTP/2 server that answers 404 to what the
 * lean path does not take. For tests of the path itself, without the app around it.
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { GetSourceRequestSchema, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { Principal } from "../../src/model/principal.js";
import { createLeanGrpc, type LeanGrpcOptions } from "../../src/rpc/grpc-unary.js";
import type { InProcessCaller } from "../../src/rpc/invoke.js";

/** A caller of one account who may read, for an hour. */
export function standInCaller(name: string): Principal {
  return {
    subject: name,
    accountId: `acct-${name}`,
    role: null,
    isAdmin: false,
    scopes: new Set(["read:sources"]),
    actor: name,
    expiresAt: Math.floor(Date.now() / 1000) + 3600,
  };
}

/** The lean path for SourceLedgerService over `call`, every option at a test's default unless given. */
export function leanGrpcFor(
  call: InProcessCaller,
  caller: Principal,
  options: Partial<LeanGrpcOptions> = {},
): ReturnType<typeof createLeanGrpc> {
  return createLeanGrpc({
    services: [{ service: SourceLedgerService, call }],
    early: { authenticator: { authenticate: async () => caller, authorize: () => {} }, rateLimiter: null },
    readMaxBytes: 1 << 20,
    compressMinBytes: 64 * 1024,
    bodyDeadlineMs: 0,
    onBodyTimeout: () => {},
    observe: () => {},
    closing: () => false,
    callsPerTurn: 8,
    logger: { error: () => {} },
    ...options,
  });
}

/** An HTTP/2 server on a free port where `take` answers what it takes, and anything else is 404. */
export async function serveLean(
  take: ReturnType<typeof createLeanGrpc>,
): Promise<{ server: http2.Http2Server; port: number }> {
  const server = http2.createServer();
  server.on("stream", (stream, headers) => {
    if (!take(stream, headers)) stream.respond({ ":status": 404 }, { endStream: true });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A request as one uncompressed gRPC message (length-prefixed). */
export function requestEnvelope<Desc extends DescMessage>(schema: Desc, init: MessageInitShape<Desc>): Buffer {
  const message = toBinary(schema, create(schema, init));
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** A GetSource request for `id` as one uncompressed gRPC message (length-prefixed). */
export function getSourceEnvelope(id: string): Buffer {
  return requestEnvelope(GetSourceRequestSchema, { id });
}
