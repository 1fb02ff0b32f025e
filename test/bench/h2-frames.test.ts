/**
 * The bench's frame-level gRPC client (bench/h2-frames.ts, bench/hpack.ts) against node:http2's
 * server: the figures of S5 are only as good as this client's reading of what the server sent.
 */
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FrameConnection } from "../../bench/h2-frames.js";
import { constantHeaderBlocks, HpackDecoder } from "../../bench/hpack.js";

let server: http2.Http2Server;
let port: number;
const seen: http2.IncomingHttpHeaders[] = [];

/**
 * Answers by path: /ok (3 KB, status 0), /big (300 KB), /fail (trailers-only 5), /reset
 * (RST_STREAM), /len (the request's length and its authorization's, trailers-only), /goaway (a
 * connection error), /never (no answer).
 */
beforeAll(async () => {
  server = http2.createServer();
  server.on("stream", (stream, headers) => {
    seen.push(headers);
    const body: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => body.push(chunk));
    stream.on("end", () => {
      const path = headers[":path"];
      if (path === "/reset") {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        return;
      }
      if (path === "/len") {
        const length = String(Buffer.concat(body).length);
        stream.respond(
          { ":status": 200, "grpc-status": "0", "x-len": length, "x-auth-len": String(headers.authorization?.length) },
          { endStream: true },
        );
        return;
      }
      if (path === "/never") return;
      if (path === "/goaway") {
        stream.session?.goaway(http2.constants.NGHTTP2_PROTOCOL_ERROR);
        return;
      }
      if (path === "/fail") {
        stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "5" }, { endStream: true });
        return;
      }
      const size = path === "/big" ? 300_000 : 3_000;
      const message = Buffer.alloc(5 + size, 7);
      message[0] = 0;
      message.writeUInt32BE(size, 1);
      // The request's own bytes back first: the client sent what it was given.
      const echo = Buffer.concat(body);
      stream.respond(
        { ":status": 200, "content-type": "application/grpc", "x-echo": echo.toString("hex") },
        {
          waitForTrailers: true,
        },
      );
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "grpc-message": "fine" }));
      stream.end(message);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const fields = (path: string) =>
  [
    [":method", "POST"],
    [":scheme", "http"],
    [":authority", `127.0.0.1:${port}`],
    [":path", path],
    ["content-type", "application/grpc+proto"],
    ["te", "trailers"],
    ["authorization", `Bearer ${"t".repeat(800)}`],
  ] as const;

describe("HPACK", () => {
  it("a constant header list: indexed by the first block, referred to by the next, both decoding to the list", () => {
    const list = fields("/ok");
    const { first, next } = constantHeaderBlocks(list);
    expect(next.length).toBe(list.length);
    const decoder = new HpackDecoder();
    expect(decoder.decode(first)).toEqual(list);
    expect(decoder.decode(next)).toEqual(list);
    expect(decoder.decode(next)).toEqual(list);
  });

  it("fields that would not fit the table are sent as literals every time", () => {
    const { first, next } = constantHeaderBlocks([
      [":method", "POST"],
      ["authorization", "x".repeat(5_000)],
    ]);
    expect(next.length).toBeGreaterThan(5_000);
    const decoder = new HpackDecoder();
    expect(decoder.decode(first)[1][1]).toHaveLength(5_000);
    expect(decoder.decode(next)[1][1]).toHaveLength(5_000);
  });

  it("refuses an index past its tables", () => {
    expect(() => new HpackDecoder().decode(Buffer.from([0xff, 0x10]))).toThrow("no header table entry");
  });
});

describe("FrameConnection against node:http2's server", () => {
  it("calls: status from the trailers, headers (Huffman-coded, indexed) decoded, the request sent as given", async () => {
    const connection = await FrameConnection.connect({ port });
    const blocks = constantHeaderBlocks(fields("/ok"));
    const message = Buffer.from([0, 0, 0, 0, 3, 10, 1, 65]);
    const kept: Buffer[] = [];
    expect(await connection.call(blocks.first, message, kept)).toBe("0");
    expect(Buffer.concat(kept).length).toBe(3_005);
    const headers = new Map(connection.lastHeaders);
    expect(headers.get(":status")).toBe("200");
    expect(headers.get("x-echo")).toBe(message.toString("hex"));
    expect(headers.get("grpc-message")).toBe("fine");
    const outcomes = await Promise.all(Array.from({ length: 200 }, () => connection.call(blocks.next, message)));
    expect(new Set(outcomes)).toEqual(new Set(["0"]));
    expect(seen.at(-1)?.authorization).toBe(`Bearer ${"t".repeat(800)}`);
    expect(seen.at(-1)?.[":path"]).toBe("/ok");
    connection.close();
  });

  it("answers larger than the windows arrive whole (WINDOW_UPDATE), at 64 KiB and at 1 MiB", async () => {
    for (const windowBytes of [undefined, 1024 * 1024]) {
      const connection = await FrameConnection.connect({ port, windowBytes });
      const blocks = constantHeaderBlocks(fields("/big"));
      const kept: Buffer[] = [];
      expect(await connection.call(blocks.first, Buffer.from([0, 0, 0, 0, 0]), kept)).toBe("0");
      expect(Buffer.concat(kept).length).toBe(300_005);
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () => connection.call(blocks.next, Buffer.from([0, 0, 0, 0, 0]))),
      );
      expect(outcomes).toEqual(Array(20).fill("0"));
      connection.close();
    }
  });

  it("a trailers-only answer gives its status; a reset stream and a closed connection say so", async () => {
    const connection = await FrameConnection.connect({ port });
    expect(await connection.call(constantHeaderBlocks(fields("/fail")).first, Buffer.alloc(5))).toBe("5");
    // Literal header blocks every time (fields not indexed by an earlier call on this connection).
    const reset = constantHeaderBlocks(fields("/reset"), 0);
    expect(await connection.call(reset.first, Buffer.alloc(5))).toBe(`closed ${http2.constants.NGHTTP2_CANCEL}`);
    connection.close();
    expect(await connection.call(reset.next, Buffer.alloc(5))).toBe("connection closed by the client");
  });

  it("a request message and a header block larger than a frame go in several (DATA, CONTINUATION)", async () => {
    const connection = await FrameConnection.connect({ port });
    const long = [...fields("/len").slice(0, 6), ["authorization", `Bearer ${"a".repeat(40_000)}`]] as const;
    const blocks = constantHeaderBlocks(long);
    const kept: Buffer[] = [];
    expect(await connection.call(blocks.first, Buffer.alloc(50_000, 1), kept)).toBe("0");
    const headers = new Map(connection.lastHeaders);
    expect([headers.get("x-len"), headers.get("x-auth-len")]).toEqual(["50000", "40007"]);
    connection.close();
  });

  it("a GOAWAY with an error code ends every call on the connection at once", async () => {
    const connection = await FrameConnection.connect({ port });
    const slow = connection.call(constantHeaderBlocks(fields("/never")).first, Buffer.alloc(5));
    const goaway = connection.call(constantHeaderBlocks(fields("/goaway"), 0).next, Buffer.alloc(5));
    expect(await goaway).toBe(`connection error ${http2.constants.NGHTTP2_PROTOCOL_ERROR} (GOAWAY)`);
    expect(await slow).toBe(`connection error ${http2.constants.NGHTTP2_PROTOCOL_ERROR} (GOAWAY)`);
    expect(await connection.call(constantHeaderBlocks(fields("/ok"), 0).next, Buffer.alloc(5))).toBe(
      `connection error ${http2.constants.NGHTTP2_PROTOCOL_ERROR} (GOAWAY)`,
    );
  });

  it("frames and headers split anywhere across the socket's chunks read the same", async () => {
    // A proxy handing the server's bytes on in pieces of 1–40 bytes, one piece per turn.
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const proxy = net.createServer((client) => {
      const upstream = net.connect({ port, host: "127.0.0.1" });
      client.pipe(upstream);
      let queue = Promise.resolve();
      upstream.on("data", (chunk: Buffer) => {
        queue = queue.then(async () => {
          for (let at = 0; at < chunk.length; ) {
            const piece = 1 + Math.floor(random() * 40);
            client.write(chunk.subarray(at, at + piece));
            at += piece;
            await new Promise((resolve) => setImmediate(resolve));
          }
        });
      });
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const connection = await FrameConnection.connect({ port: (proxy.address() as AddressInfo).port });
      const ok = constantHeaderBlocks(fields("/ok"));
      const kept: Buffer[] = [];
      expect(await connection.call(ok.first, Buffer.alloc(5), kept)).toBe("0");
      expect(Buffer.concat(kept).length).toBe(3_005);
      expect(new Map(connection.lastHeaders).get("grpc-message")).toBe("fine");
      const big = constantHeaderBlocks(fields("/big"), 0);
      const bigKept: Buffer[] = [];
      const outcomes = await Promise.all([
        connection.call(big.next, Buffer.alloc(5), bigKept),
        ...Array.from({ length: 30 }, () => connection.call(ok.next, Buffer.alloc(5))),
        connection.call(constantHeaderBlocks(fields("/fail"), 0).next, Buffer.alloc(5)),
      ]);
      expect(outcomes).toEqual(["0", ...Array(30).fill("0"), "5"]);
      expect(
        Buffer.concat(bigKept).equals(Buffer.concat([Buffer.from([0, 0, 4, 0x93, 0xe0]), Buffer.alloc(300_000, 7)])),
      ).toBe(true);
      connection.close();
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
