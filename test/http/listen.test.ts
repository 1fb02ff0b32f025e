import http from "node:http";
import type http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { SourceLedgerService, SourceSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { createOnePortServerFactory, type OnePort, type OnePortOptions } from "../../src/http/listen.js";
import {
  h1Request,
  h2Connect,
  h2Request,
  rawConnect,
  readUntilClose,
  slowStartConnection,
} from "../support/one-port-clients.js";

interface Started {
  app: FastifyInstance;
  onePort: OnePort;
  port: number;
  /** Resolves when the n-th /slow request (1-based) has reached its handler. */
  slowStarted(n: number): Promise<void>;
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(
  options: {
    onePort?: OnePortOptions;
    fastify?: Pick<FastifyServerOptions, "forceCloseConnections">;
    http2Flag?: boolean;
  } = {},
): Promise<Started> {
  const onePort = createOnePortServerFactory({ sniffTimeoutMs: 5_000, ...options.onePort });
  const fastifyOptions = {
    logger: false,
    serverFactory: onePort.serverFactory,
    return503OnClosing: true,
    ...options.fastify,
  };
  // With http2: true Fastify's types want a factory returning an Http2Server;
  // the runtime behaviour is what this variant checks.
  const app: FastifyInstance = options.http2Flag
    ? (Fastify({ ...fastifyOptions, http2: true } as unknown as Parameters<
        typeof Fastify
      >[0]) as unknown as FastifyInstance)
    : Fastify(fastifyOptions);

  let slowCount = 0;
  const slowWaiters = new Map<number, () => void>();
  const slowReached = new Map<number, Promise<void>>();
  const slowStarted = (n: number): Promise<void> => {
    let promise = slowReached.get(n);
    if (!promise) {
      promise = new Promise<void>((resolve) => slowWaiters.set(n, resolve));
      slowReached.set(n, promise);
    }
    return promise;
  };

  app.get("/hello", async (request) => ({ hello: "world", httpVersion: request.raw.httpVersion }));
  app.post("/echo", async (request) => ({ got: request.body }));
  const markSlowStarted = (): void => {
    slowCount++;
    void slowStarted(slowCount);
    slowWaiters.get(slowCount)?.();
  };
  app.get<{ Querystring: { ms: string } }>("/slow", async (request) => {
    markSlowStarted();
    await sleep(Number(request.query.ms), undefined, { ref: false });
    return { slow: true, httpVersion: request.raw.httpVersion };
  });
  // Headers and a first chunk go out at once, the rest after `ms`.
  app.get<{ Querystring: { ms: string } }>("/stream", (request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": "text/plain" });
    reply.raw.write("first;");
    markSlowStarted();
    setTimeout(() => reply.raw.end("last"), Number(request.query.ms)).unref();
  });
  await app.register(fastifyConnectPlugin, {
    routes: (router) =>
      router.service(SourceLedgerService, {
        getSource: async (req) => ({
          source: create(SourceSchema, {
            id: req.id,
            altId: "alt-1",
            tags: ["north", "wetland"],
            accountId: "acct-1",
            createdAt: timestampFromDate(new Date("2024-05-06T07:08:09Z")),
          }),
        }),
      }),
  });

  await app.listen({ host: "127.0.0.1", port: 0 });
  cleanups.push(() => app.close());
  const port = (app.server.address() as AddressInfo).port;
  return { app, onePort, port, slowStarted };
}

async function openH2(port: number): Promise<http2.ClientHttp2Session> {
  const session = await h2Connect(port);
  cleanups.push(() => session.destroy());
  return session;
}

describe("one port for HTTP/1.1 and h2c", () => {
  it("serves the same Fastify route over HTTP/1.1 (node:http, fetch) and h2c prior knowledge", async () => {
    const { port } = await start();

    const viaHttp = await h1Request(port, "/hello");
    expect(viaHttp.status).toBe(200);
    expect(JSON.parse(viaHttp.body)).toEqual({ hello: "world", httpVersion: "1.1" });

    const viaFetch = await fetch(`http://127.0.0.1:${port}/hello`);
    expect(viaFetch.status).toBe(200);
    expect(await viaFetch.json()).toEqual({ hello: "world", httpVersion: "1.1" });

    const session = await openH2(port);
    const viaH2 = await h2Request(session, "/hello");
    expect(viaH2.status).toBe(200);
    expect(viaH2.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(viaH2.body)).toEqual({ hello: "world", httpVersion: "2.0" });

    const post = await h2Request(session, "/echo", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ a: 1 }),
    });
    expect(post.status).toBe(200);
    expect(JSON.parse(post.body)).toEqual({ got: { a: 1 } });
  });

  it("accepts an HTTP/2 preface that arrives one byte at a time", async () => {
    const { port } = await start();
    const session = await h2Connect(port, () => slowStartConnection(port, 24, 15));
    cleanups.push(() => session.destroy());
    const res = await h2Request(session, "/hello");
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ hello: "world", httpVersion: "2.0" });
  });

  it("hands HTTP/1.1 over as soon as the bytes stop matching the preface, keeping every byte", async () => {
    const { port } = await start({ onePort: { sniffTimeoutMs: 5_000 } });

    // 23 bytes: shorter than the preface, so waiting for 24 would hang until the sniff timeout.
    const short = await rawConnect(port);
    const shortReply = readUntilClose(short);
    const t0 = Date.now();
    short.write("GET /hello HTTP/1.0\r\n\r\n");
    const shortText = await shortReply;
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(shortText).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(shortText).toContain('{"hello":"world","httpVersion":"1.0"}');

    // "P" is also the preface's first byte: the sniffer must hold it, then hand it on.
    const post = await rawConnect(port);
    const postReply = readUntilClose(post);
    const body = JSON.stringify({ b: 2 });
    post.write("P");
    await sleep(50);
    post.write("O");
    await sleep(50);
    post.write(
      `ST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    const postText = await postReply;
    expect(postText).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(postText).toContain('{"got":{"b":2}}');
  });

  it("closes connections that send nothing or only part of the preface, and survives resets", async () => {
    const { port } = await start({ onePort: { sniffTimeoutMs: 200 } });

    const silent = await rawConnect(port);
    const partial = await rawConnect(port);
    partial.write("PRI * HTTP/2.0\r\n");
    const t0 = Date.now();
    await Promise.all([readUntilClose(silent), readUntilClose(partial)]);
    expect(Date.now() - t0).toBeLessThan(1_500);

    const reset = await rawConnect(port);
    reset.write("PRI * HT");
    await sleep(20);
    reset.resetAndDestroy();
    const halfClosed = await rawConnect(port);
    halfClosed.end("PRI");
    await readUntilClose(halfClosed);
    await sleep(50);

    expect((await h1Request(port, "/hello")).status).toBe(200);
    expect((await h2Request(await openH2(port), "/hello")).status).toBe(200);
  });

  it("serves gRPC over h2c (grpc-js) and the Connect protocol over HTTP/1.1 on the same port", async () => {
    const { port } = await start();

    const definition = protoLoader.loadSync("sourceledger/v2/source_ledger.proto", {
      includeDirs: [fileURLToPath(new URL("../../proto", import.meta.url))],
      keepCase: true,
      longs: String,
      enums: String,
      defaults: false,
      oneofs: true,
    });
    const service = definition["sourceledger.v2.SourceLedgerService"] as grpc.ServiceDefinition;
    const getSource = service.GetSource as grpc.MethodDefinition<{ id: string }, { source: Record<string, unknown> }>;
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    cleanups.push(() => client.close());
    const grpcReply = await new Promise<{ source: Record<string, unknown> }>((resolve, reject) => {
      client.makeUnaryRequest(
        getSource.path,
        getSource.requestSerialize,
        getSource.responseDeserialize,
        { id: "src-42" },
        (error, value) => (error || !value ? reject(error ?? new Error("no value")) : resolve(value)),
      );
    });
    expect(grpcReply.source).toMatchObject({
      id: "src-42",
      alt_id: "alt-1",
      tags: ["north", "wetland"],
      account_id: "acct-1",
      created_at: { seconds: String(Date.parse("2024-05-06T07:08:09Z") / 1000) },
    });

    const connect = await fetch(`http://127.0.0.1:${port}/sourceledger.v2.SourceLedgerService/GetSource`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: "src-7" }),
    });
    expect(connect.status).toBe(200);
    expect(await connect.json()).toEqual({
      source: {
        id: "src-7",
        altId: "alt-1",
        tags: ["north", "wetland"],
        accountId: "acct-1",
        createdAt: "2024-05-06T07:08:09Z",
      },
    });

    const unimplemented = await h1Request(port, "/sourceledger.v2.SourceLedgerService/ListSources", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(unimplemented.status).toBe(501);
    expect(JSON.parse(unimplemented.body)).toMatchObject({ code: "unimplemented" });
  });

  it("keeps inject() working", async () => {
    const { app } = await start();
    const res = await app.inject({ method: "GET", url: "/hello" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ hello: "world", httpVersion: "1.1" });
  });

  it("behaves the same when Fastify is created with http2: true (only its types differ)", async () => {
    const { app, port } = await start({ http2Flag: true });
    expect(app.initialConfig.http2).toBe(true);
    expect(app.server).toBeInstanceOf(http.Server);
    expect(JSON.parse((await h1Request(port, "/hello")).body)).toEqual({ hello: "world", httpVersion: "1.1" });
    expect(JSON.parse((await h2Request(await openH2(port), "/hello")).body)).toEqual({
      hello: "world",
      httpVersion: "2.0",
    });
    expect((await app.inject({ method: "GET", url: "/hello" })).json()).toEqual({ hello: "world", httpVersion: "1.1" });
  });
});

describe.each([
  { name: "forceCloseConnections: false", fastify: { forceCloseConnections: false } },
  { name: "Fastify's default forceCloseConnections", fastify: {} },
])("graceful shutdown ($name)", ({ fastify }) => {
  it("app.close() is prompt with idle keep-alive and h2 clients, and in-flight requests finish", async () => {
    const { app, port, slowStarted } = await start({ fastify });

    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    cleanups.push(() => agent.destroy());
    expect((await h1Request(port, "/hello", { agent })).status).toBe(200);
    const idleH1Socket = Object.values(agent.freeSockets).flat()[0];
    expect(idleH1Socket).toBeDefined();
    const idleH1Closed = new Promise<void>((resolve) => idleH1Socket?.once("close", () => resolve()));

    const idleH2 = await openH2(port);
    expect((await h2Request(idleH2, "/hello")).status).toBe(200);
    const goaway = new Promise<void>((resolve) => idleH2.once("goaway", () => resolve()));
    const idleH2Closed = new Promise<void>((resolve) => idleH2.once("close", () => resolve()));

    const busyH2 = await openH2(port);
    const slowH1 = h1Request(port, "/slow?ms=400");
    const slowH2 = h2Request(busyH2, "/slow?ms=400");
    await Promise.all([slowStarted(1), slowStarted(2)]);

    const t0 = Date.now();
    await app.close();
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeLessThan(1_500);

    const [h1, h2] = await Promise.all([slowH1, slowH2]);
    expect(h1.status).toBe(200);
    expect(h1.headers.connection).toBe("close");
    expect(JSON.parse(h1.body)).toEqual({ slow: true, httpVersion: "1.1" });
    expect(h2.status).toBe(200);
    expect(JSON.parse(h2.body)).toEqual({ slow: true, httpVersion: "2.0" });
    await Promise.all([goaway, idleH2Closed, idleH1Closed]);
    expect(app.server.listening).toBe(false);
  });

  it("closes a keep-alive connection whose response had already started when the drain began", async () => {
    const { app, port, slowStarted } = await start({ fastify });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    cleanups.push(() => agent.destroy());

    const streamed = h1Request(port, "/stream?ms=300", { agent });
    await slowStarted(1);
    const t0 = Date.now();
    await app.close();
    expect(Date.now() - t0).toBeLessThan(1_500);
    const res = await streamed;
    expect(res.status).toBe(200);
    expect(res.body).toBe("first;last");
  });
});

describe("shutdown(graceMs)", () => {
  it("destroys connections still busy when the grace period ends", async () => {
    const { app, onePort, port, slowStarted } = await start({ onePort: { graceMs: 60_000 } });
    const busyH2 = await openH2(port);
    const slowH1 = h1Request(port, "/slow?ms=10000");
    const slowH2 = h2Request(busyH2, "/slow?ms=10000");
    const outcomes = Promise.allSettled([slowH1, slowH2]);
    await Promise.all([slowStarted(1), slowStarted(2)]);

    const t0 = Date.now();
    await onePort.shutdown(300);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(Date.now() - t0).toBeLessThan(1_500);
    const [h1, h2] = await outcomes;
    expect(h1.status).toBe("rejected");
    expect(h2.status).toBe("rejected");

    // app.close() after shutdown() has nothing left to wait for.
    const t1 = Date.now();
    await app.close();
    expect(Date.now() - t1).toBeLessThan(500);
    await expect(h1Request(port, "/hello")).rejects.toThrow(/ECONNREFUSED/);
  });

  it("resolves at once for a server that never listened", async () => {
    const onePort = createOnePortServerFactory();
    const app = Fastify({ logger: false, serverFactory: onePort.serverFactory });
    app.get("/", async () => ({ ok: true }));
    expect((await app.inject({ method: "GET", url: "/" })).json()).toEqual({ ok: true });
    const t0 = Date.now();
    await onePort.shutdown(5_000);
    await app.close();
    expect(Date.now() - t0).toBeLessThan(500);
  });
});
