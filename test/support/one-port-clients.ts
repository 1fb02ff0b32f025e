/** Small HTTP/1.1 and HTTP/2 clients for the one-port listener tests. */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { Duplex } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";

export interface SimpleResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP/1.1 request with node:http (pass a keep-alive agent to keep the socket afterwards). */
export function h1Request(
  port: number,
  path: string,
  options: { method?: string; headers?: http.OutgoingHttpHeaders; body?: string; agent?: http.Agent } = {},
): Promise<SimpleResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        headers: options.headers,
        agent: options.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** One request on an HTTP/2 session. */
export function h2Request(
  session: http2.ClientHttp2Session,
  path: string,
  options: { method?: string; headers?: http2.OutgoingHttpHeaders; body?: string } = {},
): Promise<SimpleResponse> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": options.method ?? "GET", ":path": path, ...options.headers });
    let status = 0;
    let headers: Record<string, string | string[] | undefined> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = h;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    let ended = false;
    stream.on("end", () => {
      ended = true;
      // A stream cut off by a destroyed session can end without any response.
      if (status === 0) reject(new Error(`stream ended without a response (rstCode ${stream.rstCode})`));
      else resolve({ status, headers, body: Buffer.concat(chunks).toString("utf8") });
    });
    stream.on("error", reject);
    stream.on("close", () => {
      if (!ended) reject(new Error(`stream closed before its end (rstCode ${stream.rstCode})`));
    });
    stream.end(options.body);
  });
}

/**
 * One gRPC call over h2c on a session of its own: the fields its status came in, the trailers, or
 * the headers of a trailers-only answer (`grpc-status`, `grpc-message` as sent, percent-encoded).
 */
export async function grpcStatusFields(
  port: number,
  path: string,
  headers: http2.OutgoingHttpHeaders,
  body: Uint8Array,
): Promise<http2.IncomingHttpHeaders> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": path, te: "trailers", ...headers });
      stream.on("response", (answered) => {
        if (answered["grpc-status"] !== undefined) resolve(answered);
      });
      stream.on("trailers", resolve);
      stream.on("error", reject);
      stream.on("data", () => {});
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

/** Prior-knowledge h2c session; resolves once the server's SETTINGS arrived. */
export async function h2Connect(port: number, createConnection?: () => Duplex): Promise<http2.ClientHttp2Session> {
  const session = createConnection
    ? http2.connect(`http://127.0.0.1:${port}`, { createConnection })
    : http2.connect(`http://127.0.0.1:${port}`);
  await new Promise<void>((resolve, reject) => {
    session.once("remoteSettings", () => resolve());
    session.once("error", reject);
  });
  return session;
}

/**
 * A TCP connection whose first `slowBytes` bytes are written one per segment,
 * `delayMs` apart, so the server sees the HTTP/2 preface arrive in pieces.
 */
export function slowStartConnection(port: number, slowBytes: number, delayMs: number): Duplex {
  const socket = net.connect({ host: "127.0.0.1", port, noDelay: true });
  const connected = new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  let written = 0;
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      (async () => {
        await connected;
        let offset = 0;
        while (written < slowBytes && offset < chunk.length) {
          socket.write(chunk.subarray(offset, offset + 1));
          offset++;
          written++;
          await sleep(delayMs);
        }
        if (offset < chunk.length) socket.write(chunk.subarray(offset));
      })().then(() => callback(), callback);
    },
    final(callback) {
      socket.end(callback);
    },
    destroy(error, callback) {
      socket.destroy();
      callback(error);
    },
  });
  socket.on("data", (data: Buffer) => {
    if (!duplex.push(data)) socket.pause();
  });
  socket.on("end", () => duplex.push(null));
  socket.on("error", (error) => duplex.destroy(error));
  return duplex;
}

/** Raw TCP connection to the server. */
export async function rawConnect(port: number): Promise<net.Socket> {
  const socket = net.connect({ host: "127.0.0.1", port, noDelay: true });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  return socket;
}

/** Resolves with everything the peer sent once the socket closes. */
export function readUntilClose(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => undefined);
    socket.once("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
  });
}

/**
 * An HTTP/2 request whose body never ends: `first` at once, then a byte every 100 ms, past any
 * answer (only the server closing the stream stops it). Resolves with what was seen, in order:
 * `status N`, then `closed, code C`, or `still open 2 s after the answer` when the stream stayed
 * open 2.4 s.
 */
export async function trickleUntilClosed(
  port: number,
  headers: http2.OutgoingHttpHeaders,
  first: string | Uint8Array,
): Promise<string[]> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => undefined);
  try {
    return await new Promise<string[]>((resolve) => {
      const seen: string[] = [];
      const stream = session.request({ ":method": "POST", ...headers });
      stream.write(first);
      const trickle = setInterval(() => {
        if (!stream.closed && !stream.destroyed) stream.write(" ");
      }, 100);
      const giveUp = setTimeout(() => {
        seen.push("still open 2 s after the answer");
        stream.close();
      }, 2_400);
      stream.on("response", (h) => seen.push(`status ${h[":status"]}`));
      stream.on("data", () => undefined);
      stream.on("error", () => undefined);
      stream.on("close", () => {
        clearInterval(trickle);
        clearTimeout(giveUp);
        seen.push(`closed, code ${stream.rstCode}`);
        resolve(seen);
      });
    });
  } finally {
    session.close();
  }
}
