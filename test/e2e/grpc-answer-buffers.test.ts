/**
 * The lean gRPC path writes answers into buffers it uses again once HTTP/2 has sent them
 * (rpc/answer-buffers.ts). Many answers of different sizes for two accounts, in flight at once on
 * one grpc-js channel, so buffers go back and out again while other answers are still being
 * written: every answer equals the same call's answer made alone, and none holds the other
 * account's sources. A gzip client's large answers are compressed from such a buffer, which goes
 * back once compressed: they too are checked among the others.
 */
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { ListSourcesRequestSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { RPC_COMPRESSIONS } from "../../src/rpc/compression.js";
import { requestEnvelope } from "../support/lean-grpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc, ts, uniqueAlt } from "./grpc-support.js";

let server: TestServer;
let client: LedgerGrpc;

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

type Source = Record<string, any>;

/** A call of the tests below: whose, what, and on which client (the plain one unless given). */
interface BufferCall {
  who: number;
  method: "ListSources" | "GetSource";
  request: object;
  on?: LedgerGrpc;
}

/**
 * A gzip-encoded ListSources call, sent raw (grpc-js keeps its answers' encoding to itself): the
 * answer's grpc-encoding and its envelope's flag (1: compressed).
 */
async function answerFlag(request: { limit: number }, token: string): Promise<{ encoding: unknown; flag: number }> {
  const envelope = requestEnvelope(ListSourcesRequestSchema, request);
  const session = http2.connect(`http://127.0.0.1:${server.port}`);
  try {
    return await new Promise((resolve, reject) => {
      session.once("error", reject);
      const stream = session.request({
        ":method": "POST",
        ":path": "/sourceledger.v2.SourceLedgerService/ListSources",
        "content-type": "application/grpc",
        te: "trailers",
        "grpc-encoding": "gzip",
        "grpc-accept-encoding": "gzip",
        authorization: `Bearer ${token}`,
      });
      let encoding: unknown;
      const chunks: Buffer[] = [];
      stream.once("response", (headers) => {
        encoding = headers["grpc-encoding"];
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.once("error", reject);
      stream.once("close", () => resolve({ encoding, flag: Buffer.concat(chunks)[0] }));
      stream.end(envelope);
    });
  } finally {
    session.close();
  }
}

/** A ring of `positions` positions around (lon, lat): sources of very different sizes on the wire. */
function circle(lon: number, lat: number, positions: number): object {
  const coordinates: number[] = [];
  for (let i = 0; i < positions - 1; i++) {
    const angle = (2 * Math.PI * i) / (positions - 1);
    coordinates.push(lon + 0.004 * Math.cos(angle), lat + 0.004 * Math.sin(angle));
  }
  coordinates.push(coordinates[0], coordinates[1]);
  return { polygon: { rings: [{ coordinates }] } };
}

async function createMany(token: string, count: number, lat: number): Promise<Source[]> {
  const sources = Array.from({ length: count }, (_, i) => ({
    alt_id: uniqueAlt("buf"),
    geometry: circle(10 + i * 0.01, lat, 5 + ((i * 397) % 3000)),
    start_at: ts("2024-01-01T00:00:00Z"),
    end_at: ts("2025-01-01T00:00:00Z"),
  }));
  return (await client.ok("SourceLedgerService", "CreateSources", { sources }, token)).sources;
}

describe("answers written into reused buffers", () => {
  const accounts = ["acct-buffers-alice", "acct-buffers-bob"];
  const tokens: string[] = [];
  const owned: Set<string>[] = [];

  beforeAll(async () => {
    for (const [i, account] of accounts.entries()) {
      tokens[i] = await server.userToken(account);
      owned[i] = new Set((await createMany(tokens[i], i === 0 ? 40 : 25, 40 + i)).map((s) => s.id));
    }
  });

  /**
   * Each call made alone, then all of them in flight together, three rounds (`round` hooks around
   * each): every answer equals the same call's alone, and holds only its caller's sources.
   */
  async function expectTogetherAsAlone(
    calls: BufferCall[],
    round: { before?: () => void; after?: () => void } = {},
  ): Promise<void> {
    const made = (call: BufferCall) =>
      (call.on ?? client).ok("SourceLedgerService", call.method, call.request, tokens[call.who]);
    const alone: unknown[] = [];
    for (const call of calls) alone.push(await made(call));
    for (let n = 0; n < 3; n++) {
      round.before?.();
      const together = await Promise.all(calls.map(made));
      round.after?.();
      together.forEach((answer, i) => {
        expect(answer).toEqual(alone[i]);
        const sources: Source[] = answer.sources ?? [answer.source];
        expect(sources.length).toBeGreaterThan(0);
        for (const source of sources) {
          expect(owned[calls[i].who].has(source.id)).toBe(true);
          expect(source.account_id).toBe(accounts[calls[i].who]);
        }
      });
    }
  }

  it("equal the same calls made one at a time, and each holds only its caller's sources", async () => {
    const calls: BufferCall[] = [];
    for (const who of [0, 1]) {
      for (const limit of [1, 3, 10, 25, 40]) calls.push({ who, method: "ListSources", request: { limit } });
      for (const id of owned[who]) calls.push({ who, method: "GetSource", request: { id } });
    }
    await expectTogetherAsAlone(calls);
  });

  it("compressed answers too: a gzip client's pages, among another client's plain calls, equal the same calls made alone", async () => {
    // The gzip client's pages are past the threshold: the service answers them compressed.
    for (const limit of [10, 25, 40])
      expect(await answerFlag({ limit }, tokens[0])).toEqual({ encoding: "gzip", flag: 1 });
    const gzip = new LedgerGrpc(server.port, { "grpc.default_compression_algorithm": 2 });
    onTestFinished(() => gzip.close());
    const calls: BufferCall[] = [];
    for (const limit of [10, 25, 40]) calls.push({ who: 0, method: "ListSources", request: { limit }, on: gzip });
    for (const limit of [3, 25]) calls.push({ who: 1, method: "ListSources", request: { limit } });
    for (const id of owned[1]) calls.push({ who: 1, method: "GetSource", request: { id } });
    expect(RPC_COMPRESSIONS[0].name).toBe("gzip");
    const gzipped = vi.spyOn(RPC_COMPRESSIONS[0], "compress");
    onTestFinished(() => gzipped.mockRestore());
    await expectTogetherAsAlone(calls, {
      before: () => gzipped.mockClear(),
      // The round's gzip pages were compressed (grpc-js asked for gzip), the others not.
      after: () => expect(gzipped).toHaveBeenCalledTimes(calls.filter((call) => call.on === gzip).length),
    });
  });
});
