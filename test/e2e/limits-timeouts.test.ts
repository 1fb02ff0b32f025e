/**
 * Issue 14 points 3 and 6 through the public API: the request-body deadline (HTTP/1.1 and HTTP/2),
 * the header deadline, the connection cap, the HTTP/2 stream cap and per-account rate limits, all
 * configured by environment variables (docs/api.md §1.2), each answered as problem details.
 */
import http2 from "node:http2";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { trickleUntilClosed } from "../support/one-port-clients.js";
import { startTestServer, type TestServer } from "../support/server.js";

/** Writes `head`, then the body one byte every `everyMs`, and collects what comes back until close. */
function slowRequest(port: number, head: string, body: string, everyMs: number): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    let timer: NodeJS.Timeout | undefined;
    socket.on("connect", () => {
      socket.write(head);
      let i = 0;
      timer = setInterval(() => {
        if (i < body.length && !socket.destroyed) socket.write(body[i++]);
      }, everyMs);
    });
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearInterval(timer);
      resolve({ text, ms: performance.now() - started });
    });
    setTimeout(() => reject(new Error(`no close after 10 s; got ${JSON.stringify(text)}`)), 10_000).unref();
  });
}

describe("the request-body deadline (REQUEST_TIMEOUT_MS=400)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ REQUEST_TIMEOUT_MS: "400" });
  });
  afterAll(async () => {
    await server.close();
  });

  it("HTTP/1.1: a body at a byte every 100 ms → 408 problem details, then the connection is closed", async () => {
    const token = await server.token();
    const body = JSON.stringify({ alt_id: "slow" }).padEnd(200, " ");
    const head =
      `POST /sources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { text, ms } = await slowRequest(server.port, head, body, 100);
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(text).toMatch(/content-type: application\/problem\+json/i);
    expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toMatchObject({
      status: 408,
      code: "deadline_exceeded",
      detail: "the request body was not received within 400 ms",
    });
    expect(ms).toBeLessThan(3_000);
  });

  it("HTTP/2: a slow body → 408 on that stream; the session still serves another request", async () => {
    const token = await server.token();
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/sources",
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
        });
        stream.write("{");
        stream.on("response", (h) => resolve(Number(h[":status"])));
        stream.on("error", reject);
        stream.on("data", () => {});
      });
      expect(status).toBe(408);
      const second = await new Promise<number>((resolve, reject) => {
        const stream = session.request({ ":path": "/sources?limit=1", authorization: `Bearer ${token}` });
        stream.on("response", (h) => resolve(Number(h[":status"])));
        stream.on("error", reject);
        stream.on("data", () => {});
        stream.end();
      });
      expect(second).toBe(200);
    } finally {
      session.close();
    }
  });

  it.each([
    ["REST", "/sources"],
    ["Connect (JSON)", "/sourceledger.v2.SourceLedgerService/ListSources"],
  ])(
    "HTTP/2, %s: a body still trickling after the 408 → the stream is closed (NO_ERROR), nothing printed",
    async (_, path) => {
      const token = await server.token();
      const printed = vi.spyOn(console, "error");
      try {
        // A byte every 100 ms, past the answer: only closing the stream stops it.
        const events = await trickleUntilClosed(
          server.port,
          { ":path": path, authorization: `Bearer ${token}`, "content-type": "application/json" },
          "{",
        );
        expect(events).toEqual(["status 408", `closed, code ${http2.constants.NGHTTP2_NO_ERROR}`]);
        // Connect's late answer to the cut-off request is dropped, not printed with a stack.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(printed).not.toHaveBeenCalled();
      } finally {
        printed.mockRestore();
      }
    },
  );

  it("a body that arrives in time is served as before", async () => {
    const res = await server.request("GET", "/sources?limit=1", { token: await server.token() });
    expect(res.status).toBe(200);
  });
});

describe("the header deadline, the connection cap and the HTTP/2 stream cap", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ HEADERS_TIMEOUT_MS: "500", MAX_CONNECTIONS: "3", H2_MAX_STREAMS: "7" });
  });
  afterAll(async () => {
    await server.close();
  });

  it("headers sent a byte every 200 ms → 408 problem details and a closed connection within ~2 s", async () => {
    const { text, ms } = await slowRequest(
      server.port,
      "",
      "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: yes\r\n\r\n",
      200,
    );
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(text).toMatch(/application\/problem\+json/);
    expect(ms).toBeLessThan(3_000);
  });

  it("headers over Node's size limit → 431 problem details and a closed connection", async () => {
    const head = `GET /sources HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`;
    const { text } = await slowRequest(server.port, head, "", 1_000);
    expect(text).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toMatchObject({
      status: 431,
      code: "invalid_argument",
      detail: "the request's headers exceed the size limit",
    });
  });

  it("past MAX_CONNECTIONS open connections, a new one is closed at once", async () => {
    const open: net.Socket[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const socket = net.connect(server.port, "127.0.0.1");
        await new Promise((resolve) => socket.once("connect", resolve));
        open.push(socket);
      }
      await sleep(50);
      const extra = net.connect(server.port, "127.0.0.1");
      const closed = await new Promise<boolean>((resolve) => {
        extra.on("close", () => resolve(true));
        extra.on("error", () => {});
        setTimeout(() => resolve(false), 1_000).unref();
      });
      expect(closed).toBe(true);
    } finally {
      for (const socket of open) socket.destroy();
    }
    await sleep(50);
    // Once the others are gone, connections are accepted again.
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
  });

  it("an HTTP/2 session is told its concurrent stream cap (H2_MAX_STREAMS)", async () => {
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      await new Promise((resolve) => session.once("remoteSettings", resolve));
      expect(session.remoteSettings.maxConcurrentStreams).toBe(7);
    } finally {
      session.close();
    }
  });
});

describe("per-account rate limits (RATE_LIMIT_READS_PER_S=1, RATE_LIMIT_WRITES_PER_S=1)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_READS_PER_S: "1", RATE_LIMIT_WRITES_PER_S: "1" });
  });
  afterAll(async () => {
    await server.close();
  });

  it("one account is throttled with 429 and Retry-After while another is unaffected", async () => {
    const a = await server.userToken("acct-throttled");
    const b = await server.userToken("acct-other");
    // The burst is twice the rate: two reads pass, the third is refused.
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await server.request("GET", "/sources", { token: a }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 429]);
    const refused = answers[2];
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await refused.json()).toMatchObject({ status: 429, code: "resource_exhausted" });
    expect((await server.request("GET", "/sources", { token: b })).status).toBe(200);
    // Writes spend from their own bucket.
    expect((await server.request("DELETE", "/sources/src_nothing", { token: a })).status).toBe(404);
  });

  it("over gRPC: RESOURCE_EXHAUSTED with retry-after and a google.rpc.RetryInfo detail", async () => {
    const token = await server.userToken("acct-grpc");
    const client = createClient(SourceLedgerService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const call = () => client.listSources({}, { headers: { authorization: `Bearer ${token}` } });
    await call();
    await call();
    const error = await call().then(
      () => null,
      (reason: unknown) => ConnectError.from(reason),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.metadata.get("retry-after")).toBe("1");
    const [info] = error?.findDetails(RetryInfoSchema) ?? [];
    expect(info?.retryDelay?.seconds).toBe(1n);
  });

  it("the same limit over Connect: resource_exhausted (HTTP 429) before the message is read", async () => {
    const token = await server.userToken("acct-rpc");
    const call = () =>
      fetch(`${server.baseUrl}/sourceledger.v2.SourceLedgerService/ListSources`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: "{}",
      });
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    const refused = await call();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await refused.json()).toMatchObject({ code: "resource_exhausted" });
  });

  it("a percent-encoded RPC path (List%53ources) is limited and authenticated like the plain one, before its body", async () => {
    const token = await server.userToken("acct-rpc-encoded");
    const encoded = `${server.baseUrl}/sourceledger.v2.SourceLedgerService/List%53ources`;
    const call = (headers: Record<string, string>, body = "{}") =>
      fetch(encoded, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call({ authorization: `Bearer ${token}` })).status);
    expect(statuses).toEqual([200, 200, 429]);
    // No token: refused from the headers, its body (not JSON at all) never read.
    const anonymous = await call({}, "x".repeat(1024 * 1024));
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: "unauthenticated" });
  });
});
