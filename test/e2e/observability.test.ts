import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricValue, samples, scrape } from "../support/metrics.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc } from "./grpc-support.js";
import { createOk, expectProblem, flat, polygon, unique } from "./rest-support.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const LIST = "/sourceledger.v2.SourceLedgerService/ListSources";

function connectList(server: TestServer, token: string | null, headers: Record<string, string> = {}) {
  return server.request("POST", LIST, {
    token: token ?? undefined,
    body: "{}",
    headers: { "content-type": "application/json", ...headers },
  });
}

describe("GET /metrics", () => {
  let server: TestServer;
  let grpc: LedgerGrpc;
  let token: string;

  beforeAll(async () => {
    server = await startTestServer();
    grpc = new LedgerGrpc(server.port);
    token = await server.userToken(unique("acct-metrics"));
  });
  afterAll(async () => {
    grpc.close();
    await server.close();
  });

  it("answers Prometheus text without a token, with the default process metrics", async () => {
    const res = await server.request("GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain("# TYPE source_ledger_requests_total counter");
    expect(text).toContain("# TYPE source_ledger_request_duration_seconds histogram");
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
  });

  it("counts and times REST calls by route pattern and status, never by URL", async () => {
    const id = "src_01ARZ3NDEKTSV4RRFFQ69G5FAV";
    await expectProblem(await server.request("GET", `/sources/${id}`, { token }), 404, "not_found");
    await createOk(server, token, flat(unique("m")));
    const text = await scrape(server);
    const notFound = { protocol: "rest", method: "GET /sources/:id", code: "404" };
    expect(metricValue(text, "source_ledger_requests_total", notFound)).toBe(1);
    expect(metricValue(text, "source_ledger_request_duration_seconds_count", notFound)).toBe(1);
    expect(
      metricValue(text, "source_ledger_requests_total", { protocol: "rest", method: "POST /sources", code: "201" }),
    ).toBe(1);
    expect(text).not.toContain(id);
  });

  it("counts RPCs by protocol, method path and Connect/gRPC code", async () => {
    expect((await connectList(server, token)).status).toBe(200);
    expect((await connectList(server, null)).status).toBe(401);
    const ok = await grpc.call("SourceLedgerService", "ListSources", {}, token);
    expect(ok.code).toBe(0);
    const refused = await grpc.call(
      "SourceLedgerService",
      "GetSource",
      { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" },
      token,
    );
    expect(refused.code).toBe(5);
    const text = await scrape(server);
    const method = LIST.slice(1);
    expect(metricValue(text, "source_ledger_requests_total", { protocol: "connect", method, code: "ok" })).toBe(1);
    expect(
      metricValue(text, "source_ledger_requests_total", { protocol: "connect", method, code: "unauthenticated" }),
    ).toBe(1);
    expect(metricValue(text, "source_ledger_requests_total", { protocol: "grpc", method, code: "ok" })).toBe(1);
    expect(
      metricValue(text, "source_ledger_requests_total", {
        protocol: "grpc",
        method: "sourceledger.v2.SourceLedgerService/GetSource",
        code: "not_found",
      }),
    ).toBe(1);
    expect(
      metricValue(text, "source_ledger_request_duration_seconds_count", { protocol: "grpc", method, code: "ok" }),
    ).toBe(1);
  });

  it("counts gRPC-Web calls by the code in their trailer frame, and JWKS fetches", async () => {
    // One uncompressed, empty ListSourcesRequest frame.
    const res = await fetch(`${server.baseUrl}${LIST}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/grpc-web+proto" },
      body: new Uint8Array(5),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const text = await scrape(server);
    expect(
      metricValue(text, "source_ledger_requests_total", { protocol: "grpc-web", method: LIST.slice(1), code: "ok" }),
    ).toBe(1);
    expect(metricValue(text, "source_ledger_jwks_fetches_total", { outcome: "ok" })).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, "source_ledger_jwks_fetches_total", { outcome: "error" })).toBe(0);
  });

  it("counts a gRPC or gRPC-Web call to an unknown method as an RPC answered unimplemented, not as REST", async () => {
    const res = await fetch(`${server.baseUrl}/sourceledger.v2.SourceLedgerService/NoSuchMethod`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/grpc-web+proto" },
      body: new Uint8Array(5),
    });
    expect(res.headers.get("grpc-status")).toBe("12");
    await res.arrayBuffer();
    const text = await scrape(server);
    expect(
      metricValue(text, "source_ledger_requests_total", {
        protocol: "grpc-web",
        method: "(unmatched)",
        code: "unimplemented",
      }),
    ).toBe(1);
    expect(metricValue(text, "source_ledger_requests_total", { protocol: "rest", method: "POST (unmatched)" })).toBe(0);
  });

  it("times store operations, counts group commits and conflict checks", async () => {
    const first = await createOk(server, token, flat(unique("c"), { geometry: polygon(40, 40, 0.01) }));
    const second = await createOk(server, token, flat(unique("c"), { geometry: polygon(40, 40, 0.01) }));
    expect(second[0].conflict).toBe(true);
    // A taken alt_id is refused before anything is written: its group need not run again.
    const taken = await server.request("POST", "/sources", { token, json: flat(second[0].alt_id as string) });
    expect(taken.status).toBe(409);
    await server.request("GET", `/sources/${first[0].id}`, { token });
    await server.request("DELETE", `/sources/${first[0].id}`, { token });
    const text = await scrape(server);
    for (const operation of ["insert", "list", "get", "delete"]) {
      const labels = { store: "production", operation, outcome: "ok" };
      expect(
        metricValue(text, "source_ledger_store_operation_duration_seconds_count", labels),
        operation,
      ).toBeGreaterThan(0);
    }
    expect(metricValue(text, "source_ledger_sqlite_group_commit_requests_count")).toBeGreaterThan(0);
    expect(metricValue(text, "source_ledger_sqlite_group_commit_sources_sum")).toBeGreaterThan(0);
    expect(samples(text, "source_ledger_sqlite_group_commit_runs_again_total")).toEqual([{ labels: {}, value: 0 }]);
    expect(metricValue(text, "source_ledger_conflict_checks_total", { result: "conflict" })).toBeGreaterThanOrEqual(1);
  });

  it("shows the sandbox's sessions and bytes, and its evictions", async () => {
    await createOk(server, token, flat(unique("s")), "sandbox");
    const text = await scrape(server);
    expect(metricValue(text, "source_ledger_sandbox_sessions")).toBe(1);
    expect(metricValue(text, "source_ledger_sandbox_bytes")).toBeGreaterThan(0);
    expect(samples(text, "source_ledger_sandbox_evictions_total")).toEqual([{ labels: {}, value: 0 }]);
    expect(
      metricValue(text, "source_ledger_store_operation_duration_seconds_count", {
        store: "sandbox",
        operation: "insert",
        outcome: "ok",
      }),
    ).toBe(1);
    expect(samples(text, "source_ledger_request_body_timeouts_total")).toEqual([{ labels: {}, value: 0 }]);
    expect(metricValue(text, "source_ledger_client_errors_total", { reason: "malformed" })).toBe(0);
    expect(samples(text, "source_ledger_client_errors_total")).toHaveLength(3);
  });
});

describe("rate-limit refusals in /metrics", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_READS_PER_S: "1" });
  });
  afterAll(() => server.close());

  it("counts each 429, over REST and RPC", async () => {
    const token = await server.userToken(unique("acct-rate"));
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await server.request("GET", "/sources", { token })).status);
    statuses.push((await connectList(server, token)).status);
    const refused = statuses.filter((status) => status === 429).length;
    expect(refused).toBeGreaterThanOrEqual(2);
    const text = await scrape(server);
    expect(metricValue(text, "source_ledger_rate_limited_total", { kind: "read" })).toBe(refused);
    expect(metricValue(text, "source_ledger_rate_limited_total", { kind: "write" })).toBe(0);
    expect(
      metricValue(text, "source_ledger_requests_total", { protocol: "rest", method: "GET /sources", code: "429" }),
    ).toBe(statuses.slice(0, 4).filter((status) => status === 429).length);
    expect(
      metricValue(text, "source_ledger_requests_total", {
        protocol: "connect",
        method: LIST.slice(1),
        code: "resource_exhausted",
      }),
    ).toBe(1);
  });
});

describe("request ids", () => {
  let server: TestServer;
  let grpc: LedgerGrpc;
  let token: string;
  const lines: string[] = [];

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(...String(chunk).split("\n").filter(Boolean));
        callback();
      },
    });
    server = await startTestServer({}, { logger: { level: "info", stream } });
    grpc = new LedgerGrpc(server.port);
    token = await server.userToken(unique("acct-ids"));
  });
  afterAll(async () => {
    grpc.close();
    await server.close();
  });

  it("echoes a well-formed X-Request-Id and puts it in problem details as instance", async () => {
    const id = "req-42.a:b_C";
    const res = await server.request("GET", "/sources/src_01ARZ3NDEKTSV4RRFFQ69G5FAV", {
      token,
      headers: { "x-request-id": id },
    });
    expect(res.headers.get("x-request-id")).toBe(id);
    const problem = await expectProblem(res, 404, "not_found");
    expect(problem.instance).toBe(`urn:request:${id}`);
  });

  it("generates one when none is sent, and replaces a malformed one", async () => {
    const none = await server.request("GET", "/healthz");
    expect(none.headers.get("x-request-id")).toMatch(UUID);
    for (const bad of ["has space", "x".repeat(129), "semi;colon", "é"]) {
      const res = await server.request("GET", "/nowhere", { headers: { "x-request-id": encodeURI(bad) } });
      const echoed = res.headers.get("x-request-id");
      if (bad === "é") expect(echoed).not.toBe(encodeURI(bad));
      else expect(echoed, bad).toMatch(UUID);
      const problem = await expectProblem(res, 404, "not_found");
      expect(problem.instance).toBe(`urn:request:${echoed}`);
    }
    const maximal = "a".repeat(128);
    expect(
      (await server.request("GET", "/healthz", { headers: { "x-request-id": maximal } })).headers.get("x-request-id"),
    ).toBe(maximal);
  });

  it("echoes it over Connect and gRPC, answers and early refusals alike", async () => {
    for (const [tokenOf, status] of [
      [token, 200],
      [null, 401],
    ] as const) {
      const res = await connectList(server, tokenOf, { "x-request-id": `connect-${status}` });
      expect(res.status).toBe(status);
      expect(res.headers.get("x-request-id")).toBe(`connect-${status}`);
    }
    const ok = await grpc.call("SourceLedgerService", "ListSources", {}, token, { "x-request-id": "grpc-ok" });
    expect(ok.code).toBe(0);
    expect(ok.headers?.get("x-request-id")).toEqual(["grpc-ok"]);
    const refused = await grpc.call("SourceLedgerService", "ListSources", {}, null, { "x-request-id": "grpc-401" });
    expect(refused.code).toBe(16);
    expect([...(refused.headers?.get("x-request-id") ?? []), ...refused.trailers.get("x-request-id")]).toContain(
      "grpc-401",
    );
  });

  it("is in every log line of the request, which never carry the token or the body", async () => {
    const id = unique("log-id");
    const marker = unique("body-marker");
    const before = lines.length;
    const res = await server.request("POST", "/sources", {
      token,
      json: flat(marker),
      headers: { "x-request-id": id },
    });
    expect(res.status).toBe(201);
    await res.text();
    const failed = await server.request("POST", "/sources", { token, json: { alt_id: marker } });
    expect(failed.status).toBe(422);
    // Fastify logs "request completed" once the answer is out.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const logged = lines.slice(before);
    const mine = logged
      .map((line) => JSON.parse(line) as { reqId?: string; msg?: string })
      .filter((l) => l.reqId === id);
    expect(mine.map((line) => line.msg)).toEqual(["incoming request", "request completed"]);
    const all = lines.join("\n");
    expect(all).not.toContain(token);
    expect(all).not.toContain(token.split(".")[2]);
    expect(all).not.toContain(marker);
    expect(all.toLowerCase()).not.toContain("bearer");
  });

  it("writes a credential put in the URL's query as [redacted] (the service never reads one there)", async () => {
    const id = unique("log-query");
    const before = lines.length;
    const res = await server.request("GET", `/sources?limit=1&access_token=${token}`, {
      headers: { "x-request-id": id },
    });
    expect(res.status).toBe(401);
    await res.text();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const logged = lines.slice(before).join("\n");
    expect(logged).not.toContain(token.split(".")[2]);
    const incoming = lines
      .slice(before)
      .map((line) => JSON.parse(line) as { reqId?: string; msg?: string; req?: { url?: string } })
      .find((l) => l.reqId === id && l.msg === "incoming request");
    expect(incoming?.req?.url).toBe("/sources?limit=1&access_token=[redacted]");
  });
});
