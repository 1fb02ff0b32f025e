import { Code, ConnectError } from "@connectrpc/connect";
import { ENVELOPE_PREFIX_BYTES } from "./answer-envelope.js";

/**
 * A unary request body split into enveloped messages the way Connect's gRPC handler splits it, so
 * that the lean path (grpc-unary.ts) refuses a malformed body with the same status and text as
 * Connect's adapter, whatever is wrong with it.
 *
 * Connect splits each chunk the stream delivers as a whole (`EnvelopeDecoderImpl.decode`): every
 * envelope complete in it, and the header of the next, whose announced size is checked as soon
 * as it is read; a header over the limit throws before any envelope of that chunk reaches the
 * rest of the pipeline. Envelopes of earlier chunks have been decompressed and parsed by then (the
 * pipeline is pulled one envelope at a time), and a unary method reads two envelopes at most
 * (`ensureSingle`): the first, and then whether there is a second. At the end of the body, bytes
 * left over are an incomplete envelope. The lean path feeds the chunks in, stops reading once the
 * outcome is known, and then replays that order (`UnaryBody`).
 */

export interface Envelope {
  flags: number;
  data: Uint8Array;
}

/** What the body held when reading stopped, in the order Connect's pipeline meets it. */
export interface UnaryBody {
  /** The first one or two envelopes, each to be decompressed and parsed in turn. */
  envelopes: Envelope[];
  /** Met after those envelopes: a header over the limit, or bytes left over at the end. */
  failure: ConnectError | null;
}

function tooLarge(size: number, readMaxBytes: number): ConnectError {
  return new ConnectError(
    `message size ${size} is larger than configured readMaxBytes ${readMaxBytes}`,
    Code.ResourceExhausted,
  );
}

export const missingMessage = () =>
  new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
export const extraMessage = () =>
  new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented);
const incompleteEnvelope = () => new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);

export class UnaryEnvelopeReader {
  readonly #readMaxBytes: number;
  /** Bytes not yet part of an envelope. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** The envelope whose header was read and whose data is still arriving. */
  #current: { flags: number; size: number } | null = null;
  readonly #envelopes: Envelope[] = [];
  #failure: ConnectError | null = null;

  constructor(readMaxBytes: number) {
    this.#readMaxBytes = readMaxBytes;
  }

  /** Whether the outcome is known: two envelopes, or a failure. Read no further then. */
  get settled(): boolean {
    return this.#failure !== null || this.#envelopes.length >= 2;
  }

  /** One chunk as the stream delivered it. */
  push(chunk: Buffer): void {
    if (this.settled) return;
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    const found: Envelope[] = [];
    for (;;) {
      if (this.#current === null) {
        if (this.#pendingBytes < ENVELOPE_PREFIX_BYTES) break;
        const header = this.#take(ENVELOPE_PREFIX_BYTES);
        const size = header.readUInt32BE(1);
        if (size > this.#readMaxBytes) {
          // Connect throws from the chunk's split: none of its envelopes goes further.
          this.#failure = tooLarge(size, this.#readMaxBytes);
          return;
        }
        this.#current = { flags: header[0], size };
      }
      if (this.#pendingBytes < this.#current.size) break;
      found.push({ flags: this.#current.flags, data: this.#take(this.#current.size) });
      this.#current = null;
    }
    this.#envelopes.push(...found.slice(0, 2 - this.#envelopes.length));
  }

  /** The body ended (or reading stopped once settled): what it held. */
  end(): UnaryBody {
    // As Connect: bytes left over are an incomplete envelope; a header whose data never began is
    // not (its envelope simply never arrives).
    if (!this.settled && this.#pendingBytes > 0) this.#failure = incompleteEnvelope();
    if (this.#envelopes.length === 0 && this.#failure === null) this.#failure = missingMessage();
    return { envelopes: this.#envelopes, failure: this.#failure };
  }

  /** The first `bytes` pending bytes, as one Buffer. */
  #take(bytes: number): Buffer {
    const joined = this.#pending.length === 1 ? this.#pending[0] : Buffer.concat(this.#pending, this.#pendingBytes);
    const taken = joined.subarray(0, bytes);
    const rest = joined.subarray(bytes);
    this.#pending = rest.length > 0 ? [rest] : [];
    this.#pendingBytes = rest.length;
    return taken;
  }
}
