/**
 * The lean gRPC path's answer envelope (rpc/answer-envelope.ts): the prefix and exactly the bytes
 * `toBinary` writes, known fields then the pre-encoded sources, also in a pooled buffer that still
 * holds a larger answer's bytes; and the written length checked.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GetSourceResponseSchema, ListSourcesResponseSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { AnswerBuffers } from "../../src/rpc/answer-buffers.js";
import { ENVELOPE_PREFIX_BYTES, envelopedAnswer, envelopeMessage } from "../../src/rpc/answer-envelope.js";
import { toProtoSource } from "../../src/rpc/messages.js";
import { encodeSourcesFieldData } from "../../src/rpc/source-wire.js";
import { FULL_SOURCE_RECORD } from "../support/source-records.js";

function source(id: string, corners: number) {
  const ring: [number, number][] = [];
  for (let i = 0; i < corners; i++) {
    const angle = (2 * Math.PI * i) / corners;
    ring.push([Math.cos(angle), Math.sin(angle)]);
  }
  ring.push(ring[0]);
  return toProtoSource({ ...FULL_SOURCE_RECORD, id, geometry: { type: "Polygon", coordinates: [ring] } });
}

/** A page as preEncodedSourceAnswers leaves it: the sources as unknown fields, the token known. */
function preEncodedPage(sources: ReturnType<typeof source>[], nextPageToken: string) {
  const page = create(ListSourcesResponseSchema, { nextPageToken });
  page.$unknown = encodeSourcesFieldData(sources).map((data) => ({ no: 1, wireType: 2, data }));
  return page;
}

function prefixOf(envelope: Buffer): { flags: number; length: number } {
  return { flags: envelope[0], length: envelope.readUInt32BE(1) };
}

describe("envelopedAnswer", () => {
  it("writes the prefix and toBinary's bytes for a page whose sources were pre-encoded", () => {
    const buffers = new AnswerBuffers(1 << 24);
    const page = preEncodedPage([source("a", 40), source("b", 7), source("c", 400)], "next-token");
    const expected = Buffer.from(toBinary(ListSourcesResponseSchema, page));
    const envelope = envelopedAnswer(ListSourcesResponseSchema, page, buffers);
    expect(prefixOf(envelope)).toEqual({ flags: 0, length: expected.byteLength });
    expect(envelope.byteLength).toBe(ENVELOPE_PREFIX_BYTES + expected.byteLength);
    expect(envelopeMessage(envelope).equals(expected)).toBe(true);
  });

  it("writes a message without unknown fields as toBinary does, and an empty one as a bare prefix", () => {
    const buffers = new AnswerBuffers(1 << 24);
    const answer = create(GetSourceResponseSchema, { source: source("only", 12) });
    const envelope = envelopedAnswer(GetSourceResponseSchema, answer, buffers);
    expect(envelopeMessage(envelope).equals(Buffer.from(toBinary(GetSourceResponseSchema, answer)))).toBe(true);
    const empty = envelopedAnswer(ListSourcesResponseSchema, create(ListSourcesResponseSchema), buffers);
    expect([...empty]).toEqual([0, 0, 0, 0, 0]);
  });

  it("leaves nothing of an earlier, larger answer in a reused buffer", () => {
    const buffers = new AnswerBuffers(1 << 24);
    const large = envelopedAnswer(
      ListSourcesResponseSchema,
      preEncodedPage([source("x", 300), source("y", 300)], "t".repeat(40)),
      buffers,
    );
    large.fill(0xee);
    buffers.release(large);
    const small = preEncodedPage([source("z", 520)], "");
    const envelope = envelopedAnswer(ListSourcesResponseSchema, small, buffers);
    expect(envelope.byteLength).toBeLessThan(large.byteLength);
    expect(envelope.buffer).toBe(large.buffer);
    expect(envelopeMessage(envelope).equals(Buffer.from(toBinary(ListSourcesResponseSchema, small)))).toBe(true);
    expect(prefixOf(envelope).length).toBe(envelope.byteLength - ENVELOPE_PREFIX_BYTES);
  });
});
