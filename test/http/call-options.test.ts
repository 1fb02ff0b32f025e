/**
 * callFromRoute (src/http/rest-common.ts): the options it calls with. A list or search call's
 * signal aborts once its
 * response closes, and is aborted from the start when the client was gone before the handler ran
 * (its 'close' came before anyone listened). Over HTTP/1.1 and HTTP/2, with Fastify as the service
 * runs it; the handler waits as an early check awaiting a key server would. Every other method's
 * call gets no signal of its own (the invoker's shared never-aborted one).
 */
import http2 from "node:http2";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { type ContextKey, type ContextValues, createContextKey } from "@connectrpc/connect";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { callFromRoute } from "../../src/http/rest-common.js";
import type { SourceRecord } from "../../src/model/records.js";
import { decodeViolationsKey, recordSinkKey } from "../../src/rpc/in-process.js";
import type { InProcessCall, InProcessCaller } from "../../src/rpc/invoke.js";

const { method } = SourceLedgerService;

/** Calls made for one method with another's options (asserted empty after each test, outside the routes). */
const mismatches: string[] = [];

/** The sentinel violations and records every route call here hands callFromRoute. */
const VIOLATIONS = [{ field: "sentinel", detail: "a violation the adapter found" }];
const RECORDS: SourceRecord[] = [];

/**
 * The options `one`'s route call is made with, as callFromRoute builds them, with `key`'s value as
 * the call saw it (read when called, not after); the caller only keeps them.
 */
async function optionsOfRouteCall(
  one: DescMethodUnary,
  request: FastifyRequest,
  reply: FastifyReply,
  values?: (values: ContextValues) => void,
  key?: ContextKey<unknown>,
): Promise<InProcessCall & { keyAtCall?: unknown }> {
  let seen: (InProcessCall & { keyAtCall?: unknown }) | undefined;
  const keep: InProcessCaller = async (called, _message, options) => {
    if (called !== one) mismatches.push(`${one.name} called as ${called.name}`);
    seen = { ...options, keyAtCall: key === undefined ? undefined : options.values?.get(key) };
    return {} as never;
  };
  await callFromRoute(keep, one, {} as never, request, reply, { violations: VIOLATIONS, records: RECORDS, values });
  if (seen === undefined) throw new Error("callFromRoute made no call");
  return seen;
}

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
  expect(mismatches.splice(0)).toEqual([]);
});

/** A server whose one route waits `waitMs`, takes the options, and reports whether its signal aborted then and later. */
async function serve(http2Server: boolean, waitMs: number) {
  const seen: { atStart: boolean; later: boolean }[] = [];
  const instance = (http2Server ? Fastify({ http2: true }) : Fastify()) as unknown as FastifyInstance;
  instance.get("/", async (request, reply) => {
    await sleep(waitMs);
    const { signal } = await optionsOfRouteCall(method.listSources as DescMethodUnary, request, reply);
    if (signal === undefined) throw new Error("a list call without a signal of its own");
    const atStart = signal.aborted;
    await sleep(150);
    seen.push({ atStart, later: signal.aborted });
    return [];
  });
  await instance.listen({ port: 0, host: "127.0.0.1" });
  app = instance;
  const address = instance.server.address() as net.AddressInfo;
  return { port: address.port, seen };
}

/** Sends a GET on a connection of its own and closes the connection `afterMs` later. */
async function abandonGet(port: number, afterMs: number): Promise<void> {
  const socket = net.connect(port, "127.0.0.1", () => socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  socket.on("error", () => {});
  await sleep(afterMs);
  socket.destroy();
}

/** Sends a GET on a stream of `session` of its own and resets the stream `afterMs` later. */
async function abandonStream(session: http2.ClientHttp2Session, afterMs: number): Promise<void> {
  const stream = session.request({ ":path": "/" });
  stream.on("error", () => {});
  stream.end();
  await sleep(afterMs);
  stream.close(http2.constants.NGHTTP2_CANCEL);
}

/** Until the route has reported `count` calls. */
const reported = (seen: unknown[], count: number) =>
  vi.waitFor(() => expect(seen).toHaveLength(count), { timeout: 5_000, interval: 10 });

describe("HTTP/1.1", () => {
  it("a client gone before the handler: aborted from the start", async () => {
    const { port, seen } = await serve(false, 200);
    await abandonGet(port, 50);
    await reported(seen, 1);
    expect(seen).toEqual([{ atStart: true, later: true }]);
  });

  it("a client gone while the page is read: aborted then; one still waiting: not aborted", async () => {
    const { port, seen } = await serve(false, 0);
    await abandonGet(port, 60);
    await reported(seen, 1);
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(await res.json()).toEqual([]);
    expect(seen).toEqual([
      { atStart: false, later: true },
      { atStart: false, later: false },
    ]);
  });
});

describe("HTTP/2", () => {
  it("a stream reset before the handler: aborted from the start; one reset while the page is read: aborted then", async () => {
    const { port, seen } = await serve(true, 200);
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", () => {});
    await abandonStream(session, 50);
    await reported(seen, 1);
    expect(seen[0]).toEqual({ atStart: true, later: true });
    await abandonStream(session, 250);
    await reported(seen, 2);
    expect(seen[1]).toEqual({ atStart: false, later: true });
    session.close();
  });
});

describe("which calls get a signal of their own", () => {
  it("list and search pages do; a get, history, conflicts, create and delete do not", async () => {
    const signals: Record<string, boolean> = {};
    const instance = Fastify() as unknown as FastifyInstance;
    instance.get("/", async (request, reply) => {
      for (const one of SourceLedgerService.methods) {
        signals[one.name] = (await optionsOfRouteCall(one as DescMethodUnary, request, reply)).signal !== undefined;
      }
      return [];
    });
    app = instance;
    expect((await instance.inject({ method: "GET", url: "/" })).statusCode).toBe(200);
    expect(signals).toEqual({
      CreateSources: false,
      ListSources: true,
      SearchSources: true,
      GetSource: false,
      DeleteSource: false,
      ListSourceEvents: false,
      ListConflicts: false,
    });
  });
});

describe("what the call's context holds", () => {
  it("the adapter's violations and records sink, and what else the route sets, as the call sees it", async () => {
    const key = createContextKey<string[] | null>(null, { description: "a test sink" });
    const sink: string[] = [];
    const instance = Fastify() as unknown as FastifyInstance;
    let options: (InProcessCall & { keyAtCall?: unknown }) | undefined;
    instance.get("/", async (request, reply) => {
      options = await optionsOfRouteCall(
        method.listSourceEvents as DescMethodUnary,
        request,
        reply,
        (values) => values.set(key, sink),
        key as ContextKey<unknown>,
      );
      return [];
    });
    app = instance;
    expect((await instance.inject({ method: "GET", url: "/" })).statusCode).toBe(200);
    expect(options?.keyAtCall).toBe(sink);
    expect(options?.values?.get(decodeViolationsKey)).toBe(VIOLATIONS);
    expect(options?.values?.get(recordSinkKey)).toBe(RECORDS);
  });
});
