/**
 * docs/api.md §1 health endpoints and §6 server-side failures over REST: /healthz and /readyz need no
 * token; a store that cannot be reached gives 503 unavailable (and /readyz 503); any other store
 * failure a 500 that leaks nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BuiltApp, buildApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createOnePortServerFactory } from "../../src/http/listen.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { openProductionStore } from "../../src/store/open.js";
import { type SourceStore, StoreUnavailableError } from "../../src/store/port.js";
import { type JwksServer, startJwksServer, TestIssuer } from "../support/jwt.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { grpc, LedgerGrpc, type MethodName, sourceInput } from "./grpc-support.js";
import { expectJson, expectProblem, flat, type SourceRecord, unique } from "./rest-support.js";

describe("health", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });

  afterAll(async () => {
    await server?.close();
  });

  it("GET /healthz → 200 without a token", async () => {
    expect(await expectJson(await server.request("GET", "/healthz"), 200)).toEqual({ status: "ok" });
  });

  it("GET /readyz → 200 without a token while the store is reachable", async () => {
    expect(await expectJson(await server.request("GET", "/readyz"), 200)).toEqual({ status: "ready" });
  });

  it("REST, health and the Connect protocol share one port", async () => {
    const token = await server.userToken(unique("acct-port"));
    const [record] = await expectJson<SourceRecord[]>(
      await server.request("POST", "/sources", { token, json: flat(unique("one-port")) }),
      201,
    );
    const res = await server.request("POST", "/sourceledger.v2.SourceLedgerService/GetSource", {
      token,
      json: { id: record.id },
    });
    const body = await expectJson<{ source: { id: string } }>(res, 200);
    expect(body.source.id).toBe(record.id);
  });

  it("a bad or expired token does not matter to the health endpoints", async () => {
    for (const path of ["/healthz", "/readyz"]) {
      await expectJson(await server.request("GET", path, { headers: { authorization: "Basic Zm9vOmJhcg==" } }), 200);
      await expectJson(await server.request("GET", path, { token: await server.issuer.expired() }), 200);
    }
  });
});

type Mode = "ok" | "unavailable" | "broken";

/** A SourceStore that forwards to a real one, or fails the way `mode` says. */
function switchableStore(inner: SourceStore): { store: SourceStore; setMode(mode: Mode): void } {
  let mode: Mode = "ok";
  const gate = <T>(call: () => Promise<T>): Promise<T> => {
    if (mode === "unavailable") {
      return Promise.reject(
        new StoreUnavailableError("connect ECONNREFUSED 10.9.8.7:27017 user=ledger password=hunter2"),
      );
    }
    if (mode === "broken") {
      return Promise.reject(new Error("SQLITE_CORRUPT: database disk image is malformed (/srv/secret/ledger.sqlite)"));
    }
    return call();
  };
  const store: SourceStore = {
    insertMany: (records) => gate(() => inner.insertMany(records)),
    list: (query) => gate(() => inner.list(query)),
    get: (id, accountId) => gate(() => inner.get(id, accountId)),
    getAsOf: (id, accountId, asOf) => gate(() => inner.getAsOf(id, accountId, asOf)),
    deleteById: (id, accountId, change) => gate(() => inner.deleteById(id, accountId, change)),
    deleteByAltId: (altId, accountId, change) => gate(() => inner.deleteByAltId(altId, accountId, change)),
    history: (id, accountId, page) => gate(() => inner.history(id, accountId, page)),
    conflictsOf: (id, accountId, page) => gate(() => inner.conflictsOf(id, accountId, page)),
    ledgerSecret: () => inner.ledgerSecret(),
    ping: () => gate(() => inner.ping()),
    close: () => inner.close(),
  };
  return { store, setMode: (next) => (mode = next) };
}

describe("store failures", () => {
  let issuer: TestIssuer;
  let jwks: JwksServer;
  let built: BuiltApp;
  let baseUrl: string;
  let port: number;
  let grpcClient: LedgerGrpc;
  let setMode: (mode: Mode) => void;
  let token: string;

  const request = (method: string, path: string, json?: unknown) =>
    fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(json === undefined ? {} : { "content-type": "application/json" }),
      },
      body: json === undefined ? undefined : JSON.stringify(json),
    });

  beforeAll(async () => {
    issuer = await TestIssuer.create();
    jwks = await startJwksServer(issuer.jwks);
    const config = loadConfig({
      PORT: "0",
      HOST: "127.0.0.1",
      SQLITE_PATH: ":memory:",
      AUTH_ISSUER: issuer.issuer,
      AUTH_JWKS_URL: jwks.url,
      LOG_LEVEL: "silent",
    });
    const switchable = switchableStore(
      await openProductionStore(config, { conflictPolicy, protectedAreaPolicy: unepOverlapPolicy }),
    );
    setMode = switchable.setMode;
    // One port for HTTP/1.1 and h2c, as in production, so the gRPC client reaches the same app.
    const onePort = createOnePortServerFactory({ graceMs: 1_000 });
    built = await buildApp(config, { store: switchable.store, logger: false, serverFactory: onePort.serverFactory });
    await built.app.listen({ port: 0, host: "127.0.0.1" });
    const address = built.app.server.address();
    port = typeof address === "object" && address ? address.port : 0;
    baseUrl = `http://127.0.0.1:${port}`;
    grpcClient = new LedgerGrpc(port);
    token = await issuer.token({ [issuer.claim("account_id")]: unique("acct-store") });
  });

  afterAll(async () => {
    grpcClient?.close();
    await built?.app.close();
    await jwks?.close();
  });

  /** Leaks nothing of the cause: no driver text, address, path, secret or stack frame. */
  function expectNoLeak(problem: { detail: string }): void {
    for (const secret of ["ECONNREFUSED", "10.9.8.7", "hunter2", "SQLITE", "/srv/secret", "    at "]) {
      expect(JSON.stringify(problem)).not.toContain(secret);
    }
  }

  it("store unreachable → 503 unavailable on every endpoint; /readyz 503; /healthz 200; the sandbox still serves", async () => {
    const [stored] = await expectJson<SourceRecord[]>(await request("POST", "/sources", flat(unique("before"))), 201);
    setMode("unavailable");
    try {
      for (const [method, path, json] of [
        ["POST", "/sources", flat(unique("during"))],
        ["GET", "/sources", undefined],
        ["GET", `/sources/${stored.id}`, undefined],
        ["GET", `/sources/${stored.id}/history`, undefined],
        ["GET", `/sources/${stored.id}/conflicts`, undefined],
        ["GET", "/sources?as_of=2024-06-01T00:00:00Z", undefined],
        ["GET", `/sources/${stored.id}?as_of=2024-06-01T00:00:00Z`, undefined],
        ["DELETE", `/sources/${stored.id}`, undefined],
        ["DELETE", `/sources?alt_id=${stored.alt_id}`, undefined],
      ] as const) {
        const problem = await expectProblem(await request(method, path, json), 503, "unavailable");
        expect(problem.detail).toBe("the store is unavailable; retry later");
        expectNoLeak(problem);
      }
      const ready = await expectProblem(await fetch(`${baseUrl}/readyz`), 503, "unavailable");
      expectNoLeak(ready);
      expect(await expectJson(await fetch(`${baseUrl}/healthz`), 200)).toEqual({ status: "ok" });
      await expectJson(await request("POST", "/sandbox/sources", flat(unique("sandbox-during"))), 201);
      // Authentication still comes first.
      await expectProblem(await fetch(`${baseUrl}/sources`), 401, "unauthenticated");
    } finally {
      setMode("ok");
    }
    expect(await expectJson(await request("GET", `/sources/${stored.id}`), 200)).toEqual(stored);
    await expectJson(await fetch(`${baseUrl}/readyz`), 200);
  });

  it("any other store failure → 500 internal with a fixed detail", async () => {
    setMode("broken");
    try {
      for (const [method, path, json] of [
        ["POST", "/sources", flat(unique("broken"))],
        ["GET", "/sources", undefined],
        ["GET", "/sources/src_01ARZ3NDEKTSV4RRFFQ69G5FAV", undefined],
        ["GET", "/sources/src_01ARZ3NDEKTSV4RRFFQ69G5FAV/history", undefined],
        ["GET", "/sources/src_01ARZ3NDEKTSV4RRFFQ69G5FAV/conflicts", undefined],
        ["GET", "/sources?as_of=2024-06-01T00:00:00Z", undefined],
        ["DELETE", "/sources/src_01ARZ3NDEKTSV4RRFFQ69G5FAV", undefined],
      ] as const) {
        const problem = await expectProblem(await request(method, path, json), 500, "internal");
        expect(problem.detail).toBe("an internal error occurred; it has been logged");
        expect(problem.errors).toEqual([]);
        expectNoLeak(problem);
      }
    } finally {
      setMode("ok");
    }
  });

  it("over gRPC the same failures carry the same codes: UNAVAILABLE, then INTERNAL, with fixed messages", async () => {
    const calls = [
      ["CreateSources", { sources: [sourceInput(unique("grpc-store"))] }],
      ["ListSources", {}],
      ["GetSource", { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" }],
      ["DeleteSource", { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" }],
      ["ListSourceEvents", { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" }],
      ["ListConflicts", { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" }],
      ["GetSource", { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV", as_of: { seconds: 1717200000 } }],
    ] as const;
    for (const [mode, code, message] of [
      ["unavailable", grpc.status.UNAVAILABLE, "the store is unavailable; retry later"],
      ["broken", grpc.status.INTERNAL, "internal error"],
    ] as const) {
      setMode(mode);
      try {
        for (const [method, request] of calls) {
          // The helper's method names predate issue 10's; the loaded service has them all.
          const outcome = await grpcClient.call("SourceLedgerService", method as MethodName, request, token);
          expect(outcome.code, `${mode} ${method}`).toBe(code);
          expect(decodeURIComponent(outcome.details)).toBe(message);
          expectNoLeak({ detail: outcome.details });
        }
      } finally {
        setMode("ok");
      }
    }
  });
});
