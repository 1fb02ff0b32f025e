/**
 * A gRPC load client that writes and reads HTTP/2 frames on a TCP socket itself (RFC 9113), for
 * the bench only. Node's own http2 client costs ~100 µs of CPU a call (a Duplex stream, header
 * objects, listeners, promises): on this machine's two cores it took 0.6–0.7 of a core to drive
 * ~6,000 calls/s, against autocannon's ~0.35 for the same REST rate, and its own pauses landed in
 * the latencies it measured. This client does for HTTP/2 what autocannon does for HTTP/1.1: one
 * constant request encoded once, answers parsed no further than the load needs.
 *
 * On the wire it behaves as grpc-js does: one connection, HTTP/2's default 65,535-byte windows
 * unless told otherwise, header fields indexed in the server's HPACK table on the first call and
 * referred to afterwards, the frames of one event-loop turn written together.
 */
import http2 from "node:http2";
import net from "node:net";
import { HpackDecoder } from "./hpack.js";

/** Exported for tests that speak raw HTTP/2 too (test/rpc/answer-buffers-http2.test.ts). */
export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
const DATA = 0x0;
export const HEADERS = 0x1;
const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
const PING = 0x6;
const GOAWAY = 0x7;
const WINDOW_UPDATE = 0x8;
const CONTINUATION = 0x9;
export const END_STREAM = 0x1;
const ACK = 0x1;
export const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;
const DEFAULT_WINDOW = http2.constants.DEFAULT_SETTINGS_INITIAL_WINDOW_SIZE;
const DEFAULT_MAX_FRAME = http2.constants.DEFAULT_SETTINGS_MAX_FRAME_SIZE;

/** One HTTP/2 frame (RFC 9113 §4.1). */
export function frame(type: number, flags: number, stream: number, payload: Buffer | null): Buffer {
  const length = payload?.length ?? 0;
  const bytes = Buffer.allocUnsafe(9 + length);
  bytes.writeUIntBE(length, 0, 3);
  bytes[3] = type;
  bytes[4] = flags;
  bytes.writeUInt32BE(stream, 5);
  payload?.copy(bytes, 9);
  return bytes;
}

export function windowUpdate(stream: number, increment: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(increment, 0);
  return frame(WINDOW_UPDATE, 0, stream, payload);
}

/** What a call ended with: its grpc-status, or how the stream or connection ended without one. */
export type CallOutcome = string;

interface Call {
  resolve: (outcome: CallOutcome) => void;
  status: string | undefined;
  /** Receive-window bytes taken since this stream's last WINDOW_UPDATE. */
  unacknowledged: number;
  keep: Buffer[] | undefined;
  headers: [string, string][] | undefined;
}

export interface FrameConnectionOptions {
  port: number;
  /** The streams' and the connection's receive window; HTTP/2's 65,535 when absent. */
  windowBytes?: number;
}

export class FrameConnection {
  private readonly decoder = new HpackDecoder();
  private readonly calls = new Map<number, Call>();
  private readonly receiveWindow: number;
  private nextStream = 1;
  private outgoing: Buffer[] = [];
  private flushScheduled = false;
  /** The frame being read across chunks (its header read), and the header's bytes so far. */
  private frame: {
    type: number;
    flags: number;
    stream: number;
    length: number;
    left: number;
    pieces: Buffer[] | null;
  } | null = null;
  private readonly header = Buffer.alloc(9);
  private headerFill = 0;
  /** A header block's fragments until END_HEADERS. */
  private headerBlock: { stream: number; endStream: boolean; fragments: Buffer[] } | null = null;
  private connectionUnacknowledged = 0;
  private sendWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = DEFAULT_MAX_FRAME;
  /** DATA frames waiting for the connection's send window. */
  private blocked: Buffer[] = [];
  private closed: string | null = null;
  /** The last kept call's headers and trailers, in order (calls with `keep`). */
  lastHeaders: [string, string][] = [];

  private constructor(
    private readonly socket: net.Socket,
    options: FrameConnectionOptions,
  ) {
    this.receiveWindow = options.windowBytes ?? DEFAULT_WINDOW;
  }

  static connect(options: FrameConnectionOptions): Promise<FrameConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: "127.0.0.1", port: options.port, noDelay: true });
      const connection = new FrameConnection(socket, options);
      let settled = false;
      socket.once("error", (error) => {
        if (!settled) reject(error);
      });
      socket.on("error", (error) => connection.end(`socket error ${error.message}`));
      socket.on("close", () => connection.end("connection closed"));
      socket.on("data", (chunk: Buffer) => {
        try {
          connection.read(chunk);
        } catch (error) {
          connection.end(`protocol error ${(error as Error).message}`);
          socket.destroy();
        }
      });
      socket.once("connect", () => {
        settled = true;
        const settings = http2.getPackedSettings({
          enablePush: false,
          ...(options.windowBytes === undefined ? {} : { initialWindowSize: options.windowBytes }),
        });
        const opening = [PREFACE, frame(SETTINGS, 0, 0, settings)];
        if (connection.receiveWindow > DEFAULT_WINDOW) {
          opening.push(windowUpdate(0, connection.receiveWindow - DEFAULT_WINDOW));
        }
        socket.write(Buffer.concat(opening));
        resolve(connection);
      });
    });
  }

  /**
   * Starts a call: `headerBlock` (HPACK, END_HEADERS) and `message` (the length-prefixed request,
   * END_STREAM). Resolves with the grpc-status the answer ended with, or "closed <code>" for a
   * stream reset and the reason for a lost connection. With `keep`, the answer's DATA payloads
   * are pushed to it and its headers and trailers kept in `lastHeaders`.
   */
  call(headerBlock: Buffer, message: Buffer, keep?: Buffer[]): Promise<CallOutcome> {
    if (this.closed !== null) return Promise.resolve(this.closed);
    if (message.length > this.peerInitialWindow) {
      return Promise.reject(new Error("request message larger than the server's stream window"));
    }
    const stream = this.nextStream;
    this.nextStream += 2;
    return new Promise((resolve) => {
      this.calls.set(stream, { resolve, status: undefined, unacknowledged: 0, keep, headers: keep ? [] : undefined });
      // Frames no larger than the server allows: the header block continued, the message split.
      const max = this.peerMaxFrame;
      for (let at = 0; at === 0 || at < headerBlock.length; at += max) {
        const end = at + max >= headerBlock.length ? END_HEADERS : 0;
        this.send(frame(at === 0 ? HEADERS : CONTINUATION, end, stream, headerBlock.subarray(at, at + max)));
      }
      for (let at = 0; at === 0 || at < message.length; at += max) {
        const data = frame(DATA, at + max >= message.length ? END_STREAM : 0, stream, message.subarray(at, at + max));
        const length = data.length - 9;
        if (this.blocked.length > 0 || length > this.sendWindow) {
          this.blocked.push(data);
        } else {
          this.sendWindow -= length;
          this.send(data);
        }
      }
    });
  }

  /** Why the connection takes no more calls (lost, closed, going away), or null while it does. */
  get lost(): string | null {
    return this.closed;
  }

  close(): void {
    this.end("connection closed by the client");
    this.socket.end();
  }

  private send(bytes: Buffer): void {
    this.outgoing.push(bytes);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // As Node's HTTP/2 session does: what one event-loop turn produced leaves in one write.
    setImmediate(() => {
      this.flushScheduled = false;
      const bytes = this.outgoing.length === 1 ? this.outgoing[0] : Buffer.concat(this.outgoing);
      this.outgoing = [];
      if (!this.socket.destroyed) this.socket.write(bytes);
    });
  }

  /**
   * Frames as the socket's chunks bring them, without copying a DATA payload the load does not
   * keep (a list page is ~175 KB a call: copying it to join chunks cost the bench more CPU than
   * reading it). A frame split across chunks is gathered only when its payload is wanted.
   */
  private read(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.frame === null) {
        if (this.headerFill === 0 && chunk.length - at >= 9) {
          const length = chunk.readUIntBE(at, 3);
          if (chunk.length - at >= 9 + length) {
            // The whole frame in this chunk: handled where it lies.
            const stream = chunk.readUInt32BE(at + 5) & 0x7fffffff;
            this.onFrame(chunk[at + 3], chunk[at + 4], stream, length, chunk.subarray(at + 9, at + 9 + length));
            at += 9 + length;
            continue;
          }
        }
        const take = Math.min(9 - this.headerFill, chunk.length - at);
        chunk.copy(this.header, this.headerFill, at, at + take);
        this.headerFill += take;
        at += take;
        if (this.headerFill < 9) return;
        this.headerFill = 0;
        const type = this.header[3];
        const stream = this.header.readUInt32BE(5) & 0x7fffffff;
        const skipped = type === DATA && this.calls.get(stream)?.keep === undefined;
        const length = this.header.readUIntBE(0, 3);
        this.frame = { type, flags: this.header[4], stream, length, left: length, pieces: skipped ? null : [] };
      }
      const frame = this.frame;
      const take = Math.min(frame.left, chunk.length - at);
      frame.pieces?.push(chunk.subarray(at, at + take));
      frame.left -= take;
      at += take;
      if (frame.left > 0) return;
      this.frame = null;
      const payload = frame.pieces === null ? null : Buffer.concat(frame.pieces);
      this.onFrame(frame.type, frame.flags, frame.stream, frame.length, payload);
    }
  }

  /** `payload` is null only for a DATA frame the load does not keep. */
  private onFrame(type: number, flags: number, stream: number, length: number, payload: Buffer | null): void {
    if (type === DATA) {
      this.onData(flags, stream, length, payload);
      return;
    }
    if (payload === null) throw new Error(`frame type ${type} without its payload`);
    switch (type) {
      case HEADERS: {
        let at = 0;
        let end = payload.length;
        if (flags & PADDED) {
          end -= payload[0];
          at = 1;
        }
        if (flags & PRIORITY) at += 5;
        this.headerBlock = { stream, endStream: (flags & END_STREAM) !== 0, fragments: [payload.subarray(at, end)] };
        if (flags & END_HEADERS) this.onHeaderBlock();
        return;
      }
      case CONTINUATION:
        if (this.headerBlock === null || this.headerBlock.stream !== stream) {
          throw new Error("CONTINUATION without HEADERS");
        }
        this.headerBlock.fragments.push(payload);
        if (flags & END_HEADERS) this.onHeaderBlock();
        return;
      case RST_STREAM:
        this.finish(stream, `closed ${payload.readUInt32BE(0)}`);
        return;
      case SETTINGS: {
        if (flags & ACK) return;
        const { initialWindowSize, maxFrameSize } = http2.getUnpackedSettings(payload);
        if (initialWindowSize !== undefined) this.peerInitialWindow = initialWindowSize;
        if (maxFrameSize !== undefined) this.peerMaxFrame = maxFrameSize;
        this.send(frame(SETTINGS, ACK, 0, null));
        return;
      }
      case PING:
        if (!(flags & ACK)) this.send(frame(PING, ACK, 0, payload));
        return;
      case GOAWAY: {
        const last = payload.readUInt32BE(0) & 0x7fffffff;
        const code = payload.readUInt32BE(4);
        if (code !== 0) {
          // A connection error: nothing more will be answered on it.
          this.end(`connection error ${code} (GOAWAY)`);
          this.socket.destroy();
          return;
        }
        for (const id of this.calls.keys()) if (id > last) this.finish(id, "refused by GOAWAY");
        this.closed = "connection going away";
        return;
      }
      case WINDOW_UPDATE:
        if (stream === 0) {
          this.sendWindow += payload.readUInt32BE(0) & 0x7fffffff;
          while (this.blocked.length > 0) {
            const data = this.blocked[0];
            const length = data.length - 9;
            if (length > this.sendWindow) break;
            this.sendWindow -= length;
            this.send(data);
            this.blocked.shift();
          }
        }
        return;
      default:
        return;
    }
  }

  private onData(flags: number, stream: number, length: number, payload: Buffer | null): void {
    // Flow control counts the whole payload, padding included.
    this.connectionUnacknowledged += length;
    if (this.connectionUnacknowledged >= this.receiveWindow / 2) {
      this.send(windowUpdate(0, this.connectionUnacknowledged));
      this.connectionUnacknowledged = 0;
    }
    const call = this.calls.get(stream);
    if (call === undefined) return;
    if (call.keep !== undefined && payload !== null) {
      const padding = flags & PADDED ? payload[0] : 0;
      call.keep.push(Buffer.from(payload.subarray(flags & PADDED ? 1 : 0, payload.length - padding)));
    }
    if (flags & END_STREAM) {
      this.finish(stream, call.status ?? "no grpc-status");
      return;
    }
    call.unacknowledged += length;
    if (call.unacknowledged >= this.receiveWindow / 2) {
      this.send(windowUpdate(stream, call.unacknowledged));
      call.unacknowledged = 0;
    }
  }

  private onHeaderBlock(): void {
    const block = this.headerBlock as { stream: number; endStream: boolean; fragments: Buffer[] };
    this.headerBlock = null;
    // Every block is decoded, whoever it is for: the decoder's table follows the server's.
    const fields = this.decoder.decode(
      block.fragments.length === 1 ? block.fragments[0] : Buffer.concat(block.fragments),
    );
    const call = this.calls.get(block.stream);
    if (call === undefined) return;
    call.headers?.push(...fields);
    for (const [name, value] of fields) if (name === "grpc-status") call.status = value;
    if (block.endStream) this.finish(block.stream, call.status ?? "no grpc-status");
  }

  private finish(stream: number, outcome: CallOutcome): void {
    const call = this.calls.get(stream);
    if (call === undefined) return;
    this.calls.delete(stream);
    if (call.headers !== undefined) this.lastHeaders = call.headers;
    call.resolve(outcome);
  }

  private end(reason: string): void {
    if (this.closed === null) this.closed = reason;
    for (const stream of this.calls.keys()) this.finish(stream, reason);
  }
}
