/**
 * UnaryEnvelopeReader (src/rpc/unary-envelopes.ts): a unary body split as Connect's gRPC handler
 * splits it, chunk by chunk, including where chunk boundaries change the answer (a header over
 * the limit in the same chunk as the first envelope discards it; in a later chunk, the first
 * envelope is decoded first).
 */
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { UnaryEnvelopeReader } from "../../src/rpc/unary-envelopes.js";

const LIMIT = 64;

function envelope(data: number[], flags = 0): Buffer {
  const bytes = Buffer.alloc(5 + data.length);
  bytes[0] = flags;
  bytes.writeUInt32BE(data.length, 1);
  bytes.set(data, 5);
  return bytes;
}

function header(size: number): Buffer {
  const bytes = Buffer.alloc(5);
  bytes.writeUInt32BE(size, 1);
  return bytes;
}

function read(...chunks: Buffer[]) {
  const reader = new UnaryEnvelopeReader(LIMIT);
  for (const chunk of chunks) {
    reader.push(chunk);
    if (reader.settled) break;
  }
  const body = reader.end();
  return {
    envelopes: body.envelopes.map((e) => ({ flags: e.flags, data: [...e.data] })),
    failure: body.failure === null ? null : { code: body.failure.code, message: body.failure.rawMessage },
  };
}

describe("UnaryEnvelopeReader", () => {
  it("one envelope, whole or split at any byte (header included), then the end", () => {
    const whole = envelope([1, 2, 3], 1);
    for (let cut = 0; cut <= whole.length; cut++) {
      expect(read(whole.subarray(0, cut), whole.subarray(cut))).toEqual({
        envelopes: [{ flags: 1, data: [1, 2, 3] }],
        failure: null,
      });
    }
    expect(read(envelope([]))).toEqual({ envelopes: [{ flags: 0, data: [] }], failure: null });
  });

  it("nothing, or only a header whose data never comes: missing; bytes left over: incomplete", () => {
    const missing = { code: Code.Unimplemented, message: "protocol error: missing input message for unary method" };
    expect(read()).toEqual({ envelopes: [], failure: missing });
    expect(read(header(10))).toEqual({ envelopes: [], failure: missing });
    const incomplete = { code: Code.InvalidArgument, message: "protocol error: incomplete envelope" };
    expect(read(Buffer.from([0, 0, 0]))).toEqual({ envelopes: [], failure: incomplete });
    expect(read(envelope([1, 2, 3]).subarray(0, 7))).toEqual({ envelopes: [], failure: incomplete });
    expect(read(envelope([7]), Buffer.from([0, 0]))).toEqual({
      envelopes: [{ flags: 0, data: [7] }],
      failure: incomplete,
    });
  });

  it("a second envelope settles it: both kept (the second is decoded before it counts as extra), the rest unread", () => {
    const body = Buffer.concat([envelope([1]), envelope([2]), envelope([3]), Buffer.from([9])]);
    expect(read(body)).toEqual({
      envelopes: [
        { flags: 0, data: [1] },
        { flags: 0, data: [2] },
      ],
      failure: null,
    });
    const reader = new UnaryEnvelopeReader(LIMIT);
    reader.push(envelope([1]));
    expect(reader.settled).toBe(false);
    reader.push(envelope([2]));
    expect(reader.settled).toBe(true);
  });

  it("a header over the limit: in the first envelope's chunk it discards that envelope; in a later chunk it comes after it", () => {
    const tooLarge = {
      code: Code.ResourceExhausted,
      message: "message size 65 is larger than configured readMaxBytes 64",
    };
    expect(read(header(65))).toEqual({ envelopes: [], failure: tooLarge });
    expect(read(Buffer.concat([envelope([1]), header(65)]))).toEqual({ envelopes: [], failure: tooLarge });
    expect(read(envelope([1]), header(65))).toEqual({ envelopes: [{ flags: 0, data: [1] }], failure: tooLarge });
    // Two envelopes and a header over the limit in one chunk: Connect's split throws for the chunk.
    expect(read(Buffer.concat([envelope([1]), envelope([2]), header(65)]))).toEqual({
      envelopes: [],
      failure: tooLarge,
    });
    // The limit itself is allowed.
    expect(read(envelope(Array.from({ length: LIMIT }, () => 0))).envelopes[0].data).toHaveLength(LIMIT);
  });
});
