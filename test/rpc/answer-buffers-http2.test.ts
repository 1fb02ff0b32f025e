/**
 * writeReleasing (rpc/answer-buffers.ts) over a real node:http2 server: a pooled answer goes back
 * to the pool once its write completed on a live stream, and NOT when the session was destroyed
 * while the socket was still sending it. Node 20 calls that write back without an error; given
 * back then, the next answer written into the buffer reached the stalled client (seen: the client,
 * reading again, received the other answer's bytes).
 *
 * The client is raw frames on a socket, so that it can stop reading: HTTP/2's preface, SETTINGS
 * with a 128 MiB stream window, a connection WINDOW_UPDATE to match, one GET.
 */
import http2 from "node:http2";
import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { END_HEADERS, END_STREAM, frame, HEADERS, PREFACE, SETTINGS, windowUpdate } from "../../bench/h2-frames.js";
import { AnswerBuffers, writeReleasing } from "../../src/rpc/answer-buffers.js";

const ANSWER_BYTES = 8 * 1024 * 1024;

let server: http2.Http2Server | undefined;
let socket: net.Socket | undefined;
afterEach(async () => {
  socket?.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  socket = undefined;
});

/** A server answering every stream with one pooled buffer of ANSWER_BYTES; `closed` counts its streams closed. */
async function serve(buffers: AnswerBuffers, sessionTimeoutMs: number) {
  const closed: { aborted: boolean }[] = [];
  server = http2.createServer();
  // No 'timeout' listener: Node destroys the session, as listen.ts' server does.
  if (sessionTimeoutMs > 0) server.setTimeout(sessionTimeoutMs);
  server.on("stream", (stream) => {
    stream.on("error", () => {});
    stream.respond({ ":status": 200 }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    const answer = buffers.acquire(ANSWER_BYTES);
    answer.fill(0x41);
    writeReleasing(stream, answer, buffers);
    stream.end();
    stream.once("close", () => closed.push({ aborted: stream.aborted }));
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as net.AddressInfo).port, closed };
}

/** Opens a connection and asks for one stream; reads its answer only when `reading`. */
function request(port: number, reading: boolean): Promise<net.Socket> {
  return new Promise((resolve) => {
    const client = net.connect(port, "127.0.0.1", () => {
      const settings = Buffer.alloc(6);
      settings.writeUInt16BE(0x4, 0); // SETTINGS_INITIAL_WINDOW_SIZE
      settings.writeUInt32BE(128 << 20, 2);
      const authority = Buffer.from("localhost");
      // HPACK: :method GET, :scheme http, :path /, :authority (literal, indexed name 1).
      const headers = Buffer.concat([Buffer.from([0x82, 0x86, 0x84, 0x01, authority.length]), authority]);
      client.write(PREFACE);
      client.write(frame(SETTINGS, 0, 0, settings));
      client.write(windowUpdate(0, 128 << 20));
      client.write(frame(HEADERS, END_STREAM | END_HEADERS, 1, headers));
      // A socket reads once something asks it to.
      if (reading) client.resume();
      resolve(client);
    });
    client.on("error", () => {});
    socket = client;
  });
}

describe("writeReleasing", () => {
  it("gives the buffer back once its write completed on a live stream", async () => {
    const buffers = new AnswerBuffers(64 * 1024 * 1024);
    const { port, closed } = await serve(buffers, 0);
    await request(port, true);
    await vi.waitFor(() => expect(closed).toHaveLength(1), { timeout: 10_000, interval: 20 });
    await vi.waitFor(() => expect(buffers.freeBytes).toBe(ANSWER_BYTES), { timeout: 10_000, interval: 20 });
  });

  it("keeps it out of the pool when the session was destroyed while the socket still sent it", async () => {
    const buffers = new AnswerBuffers(64 * 1024 * 1024);
    const { port, closed } = await serve(buffers, 300);
    const stalled = await request(port, false);
    // The session's timeout destroys it; Node calls the pending write back, without an error.
    await vi.waitFor(() => expect(closed).toHaveLength(1), { timeout: 10_000, interval: 20 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    stalled.resume();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(buffers.freeBytes).toBe(0);
  });
});
