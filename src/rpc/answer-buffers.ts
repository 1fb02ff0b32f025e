/**
 * Buffers for the lean gRPC path's answers, written again once HTTP/2 has sent them.
 *
 * A page of sources is a few hundred kilobytes. Allocated afresh for every call, its buffer lived
 * as long as its write, which waits its turn behind the connection's other streams: it outlived
 * the scavenges meanwhile and was promoted, and its memory outside the heap came back only with a
 * full collection. A ListSources load ran a mark-compact every ~0.6 s for that alone
 * (docs/benchmarks.md, "A gRPC page's buffer"). A buffer here goes back to its free list once the
 * write that carried it completed on a stream still alive (writeReleasing), and a later answer is
 * written into it.
 */

import type { Http2Stream } from "node:http2";

/** Buffers come in powers of two from here… */
const SMALLEST_CLASS = 1 << 10;
/** …to here: room for the largest page (page-size.ts' MAX_PAGE_BYTES) and its envelope. Larger answers are not kept. */
const LARGEST_CLASS = 1 << 23;

/** The size class that holds `size` bytes, or undefined when none does. */
function classOf(size: number): number | undefined {
  if (size > LARGEST_CLASS) return undefined;
  let capacity = SMALLEST_CLASS;
  while (capacity < size) capacity *= 2;
  return capacity;
}

export class AnswerBuffers {
  /** Free buffers by size class. */
  readonly #free = new Map<number, ArrayBuffer[]>();
  #freeBytes = 0;
  /** Buffers handed out and not yet back: only these are taken back, each once. */
  readonly #lent = new WeakSet<ArrayBuffer>();

  /** @param maxFreeBytes what the free lists may hold together; a buffer coming back past it is dropped. */
  constructor(readonly maxFreeBytes: number) {}

  /** The bytes free buffers hold now. */
  get freeBytes(): number {
    return this.#freeBytes;
  }

  /**
   * A buffer of exactly `size` bytes, holding whatever an earlier answer left in it: the caller
   * writes every byte before anything reads it.
   */
  acquire(size: number): Buffer {
    const capacity = classOf(size);
    if (capacity === undefined) return Buffer.allocUnsafeSlow(size);
    let whole = this.#free.get(capacity)?.pop();
    if (whole === undefined) whole = new ArrayBuffer(capacity);
    else this.#freeBytes -= capacity;
    this.#lent.add(whole);
    return Buffer.from(whole, 0, size);
  }

  /**
   * `buffer` is no longer read by anyone (its write completed): a later acquire may hand it out.
   * A buffer not lent by this pool, or already given back, is ignored.
   */
  release(buffer: Uint8Array): void {
    const whole = buffer.buffer;
    if (!(whole instanceof ArrayBuffer) || !this.#lent.delete(whole)) return;
    const capacity = whole.byteLength;
    if (this.#freeBytes + capacity > this.maxFreeBytes) return;
    const list = this.#free.get(capacity);
    if (list === undefined) this.#free.set(capacity, [whole]);
    else list.push(whole);
    this.#freeBytes += capacity;
  }
}

/**
 * Writes `chunk` on `stream`; a chunk lent by `buffers` goes back once HTTP/2 is done with it: its
 * write completed without error on a stream still alive. Node 20 also calls a write back without an
 * error when the stream was destroyed meanwhile (a session closed on its timeout, say), while the
 * socket may still be sending frames sliced from the chunk; such a chunk, like one whose write
 * failed, is left to the garbage collector. Reused before the socket had sent it, it would carry
 * the next answer's bytes to this stream's client.
 */
export function writeReleasing(stream: Http2Stream, chunk: Uint8Array, buffers: AnswerBuffers): void {
  stream.write(chunk, (error?: Error | null) => {
    if (error == null && !stream.destroyed) buffers.release(chunk);
  });
}
