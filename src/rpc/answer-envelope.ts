import { type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { varintSize, WireWriter } from "../geo/geometry-wire.js";
import type { AnswerBuffers } from "./answer-buffers.js";

/** gRPC's Length-Prefixed-Message prefix: the flags byte, then the message's length, big-endian. */
export const ENVELOPE_PREFIX_BYTES = 5;

/** Writes an envelope's prefix at the start of `bytes`. */
function writePrefix(bytes: Uint8Array, flags: number, length: number): void {
  bytes[0] = flags;
  new DataView(bytes.buffer, bytes.byteOffset, ENVELOPE_PREFIX_BYTES).setUint32(1, length);
}

/** An envelope's prefix on its own, for a message written apart from it (a compressed one). */
export function envelopePrefix(flags: number, length: number): Uint8Array {
  const prefix = new Uint8Array(ENVELOPE_PREFIX_BYTES);
  writePrefix(prefix, flags, length);
  return prefix;
}

/**
 * An answer as one uncompressed envelope in ONE buffer from `buffers`: the prefix, then the message
 * as `toBinary` writes it, its known fields and then its unknown ones (the sources that
 * preEncodedSourceAnswers wrote). `toBinary` alone would copy those unknown fields, a page's worth,
 * into a new array of the message's size on every call, page-faulting fresh memory and leaving
 * it to a full collection (answer-buffers.ts).
 */
export function envelopedAnswer<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
  buffers: AnswerBuffers,
): Buffer {
  const known = toBinary(schema, message, { writeUnknownFields: false });
  const unknown = message.$unknown ?? [];
  let size = known.byteLength;
  for (const field of unknown) size += varintSize((field.no << 3) | field.wireType) + field.data.byteLength;
  const envelope = buffers.acquire(ENVELOPE_PREFIX_BYTES + size);
  writePrefix(envelope, 0, size);
  envelope.set(known, ENVELOPE_PREFIX_BYTES);
  const out = new WireWriter(0, envelope, ENVELOPE_PREFIX_BYTES + known.byteLength);
  for (const field of unknown) {
    out.varint((field.no << 3) | field.wireType);
    envelope.set(field.data, out.offset);
    out.offset += field.data.byteLength;
  }
  // A pooled buffer holds an earlier answer's bytes: every byte of this one must be written.
  if (out.offset !== envelope.byteLength) {
    throw new Error(`answer envelope written to ${out.offset} of ${envelope.byteLength} bytes`);
  }
  return envelope;
}

/** The message inside an envelope made by envelopedAnswer. */
export function envelopeMessage(envelope: Buffer): Buffer {
  return envelope.subarray(ENVELOPE_PREFIX_BYTES);
}
