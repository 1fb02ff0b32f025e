import { request as httpRequest } from "node:http";
import http2 from "node:http2";
import { connect } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MALFORMED_HOST } from "../../src/http/host-check.js";
import { MAX_DETAIL_VIOLATIONS } from "../../src/rpc/errors.js";
import { trickleUntilClosed } from "../support/one-port-clients.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { fieldViolations, LedgerGrpc, polygonGeometry, sourceInput, uniqueAlt } from "./grpc-support.js";
import { flat } from "./rest-support.js";

/** Hostile or malformed input: every answer a clear 4xx in problem details, never a 5xx. */
describe("hardening against hostile input", () => {
  let server: TestServer;
  let grpcClient: LedgerGrpc;
  let token: string;

  beforeAll(async () => {
    server = await startTestServer();
    grpcClient = new LedgerGrpc(server.port);
    token = await server.token();
  });
  afterAll(async () => {
    grpcClient.clients.SourceLedgerService.close();
    await server.close();
  });

  const deep = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

  it("a value nested 20,000 deep is a 422 with a bounded message (and a 401 first without a token)", async () => {
    const body =
      `{"alt_id":"deep","start_at":${deep(20_000)},"end_at":"2025-01-01T00:00:00Z","source_type":${deep(20_000)},` +
      `"geometry":{"type":"Polygon","coordinates":[[${deep(20_000)}]]}}`;
    const anonymous = await server.request("POST", "/sources", {
      body,
      headers: { "content-type": "application/json" },
    });
    expect(anonymous.status).toBe(401);
    const response = await server.request("POST", "/sources", {
      token,
      body,
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as { errors: { pointer: string; detail: string }[] };
    const pointers = problem.errors.map((e) => e.pointer);
    expect(pointers).toEqual(expect.arrayContaining(["/start_at", "/source_type", "/geometry/coordinates/0/0"]));
    for (const error of problem.errors) expect(error.detail.length).toBeLessThan(400);
    expect(problem.errors.find((e) => e.pointer === "/start_at")?.detail).toContain("[[[…]]");
  });

  it("a zig-zag polygon too crowded to check is a prompt 422 on create and search, not a stalled server", async () => {
    // 32,000 positions alternating between two radii: valid, but JTS's sweep over it took ~18 s
    // of the event loop (100,000: minutes), stalling every other request.
    const ring: number[][] = [];
    for (let i = 0; i < 31_999; i++) {
      const angle = (2 * Math.PI * i) / 31_999;
      const radius = i % 2 === 1 ? 1 : 0.5;
      ring.push([30.5 + radius * Math.cos(angle), 30.5 + radius * Math.sin(angle)]);
    }
    ring.push(ring[0]);
    const geometry = { type: "Polygon", coordinates: [ring] };
    const create = await server.request("POST", "/sources", {
      token,
      json: { alt_id: "star", start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z", geometry },
    });
    const search = await server.request("POST", "/sources/search", { token, json: { intersects: geometry } });
    for (const [response, pointer] of [
      [create, "/geometry/coordinates"],
      [search, "/intersects/coordinates"],
    ] as const) {
      expect(response.status).toBe(422);
      const problem = (await response.json()) as { errors: { pointer: string; detail: string }[] };
      const crowded = problem.errors.filter((error) => error.pointer.startsWith(pointer));
      expect(crowded).toHaveLength(1);
      expect(crowded[0].pointer).toBe(pointer);
      expect(crowded[0].detail).toMatch(
        /^the polygon is too intricate to check for OGC validity: [\d,]+ pairs of its edge runs \(monotone chains\) overlap in longitude, at most 10,000,000 are checked; simplify it or split it into several sources$/,
      );
    }
  });

  it("long query values, parameter names and paths are quoted as previews cut after 80 characters", async () => {
    const long = "9".repeat(5_000);
    const cut = `${"9".repeat(80)}…`;
    const detailOf = async (path: string, status: number) => {
      const response = await server.request("GET", path, { token });
      expect(response.status, path.slice(0, 40)).toBe(status);
      const problem = (await response.json()) as { detail: string; errors: { detail: string }[] };
      return status === 422 ? problem.errors.map((e) => e.detail).join(" | ") : problem.detail;
    };
    expect(await detailOf(`/sources?limit=${long}`, 422)).toBe(`limit must be an integer, got "${cut}"`);
    expect(await detailOf(`/sources?as_of=${long}`, 422)).toContain(`got "${cut}"`);
    expect(await detailOf(`/sources?source_type=${long}`, 422)).toContain(`got "${cut}"`);
    expect(await detailOf(`/sources?f=${long}`, 422)).toContain(`got "${cut}"`);
    expect(await detailOf(`/sources?${long}=1`, 422)).toMatch(
      new RegExp(`^unknown query parameter "${cut}"; allowed here: `),
    );
    expect(await detailOf(`/${long}`, 404)).toBe(`no route for GET /${"9".repeat(79)}…`);
    expect(await detailOf(`/ogc/collections/${long}`, 404)).toMatch(new RegExp(`^no collection "${cut}"; `));
  });

  it("a body in a content coding is a 415 naming it, compressed or merely labelled; identity is plain", async () => {
    const body = JSON.stringify({ alt_id: "coded", start_at: "2024-01-01T00:00:00Z" });
    for (const [coding, sent] of [
      ["gzip", gzipSync(body)],
      ["br", body],
      ["x".repeat(200), body],
    ] as const) {
      const response = await server.request("POST", "/sources", {
        token,
        body: sent as unknown as string,
        headers: { "content-type": "application/json", "content-encoding": coding },
      });
      expect(response.status).toBe(415);
      expect(((await response.json()) as { detail: string }).detail).toBe(
        `Content-Encoding ${JSON.stringify(coding.length > 80 ? `${coding.slice(0, 80)}…` : coding)} is not supported; send the body uncompressed`,
      );
    }
    const identity = await server.request("POST", "/sources", {
      token,
      body,
      headers: { "content-type": "application/json", "content-encoding": "identity" },
    });
    expect(identity.status).toBe(422);
  });

  it("a transfer coding other than chunked is a 415 naming it; chunked alone is read", async () => {
    const { port } = new URL(server.baseUrl);
    const body = Buffer.from(JSON.stringify({ alt_id: "chunked", start_at: "2024-01-01T00:00:00Z" }));
    const post = (transferEncoding: string, payload: Buffer, path = "/sources") =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), "127.0.0.1");
        let received = "";
        socket.on("data", (chunk) => (received += chunk.toString("latin1")));
        socket.on("end", () => resolve(received));
        socket.on("error", reject);
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
            `authorization: Bearer ${token}\r\ntransfer-encoding: ${transferEncoding}\r\nconnection: close\r\n\r\n`,
        );
        socket.write(`${payload.length.toString(16)}\r\n`);
        socket.write(payload);
        // Not end(): a half-closed socket has Node drop a request not yet answered (no
        // allowHalfOpen), so the answer would be lost whenever the server is slower than the FIN.
        socket.write("\r\n0\r\n\r\n");
      });
    const compressed = await post("gzip, chunked", gzipSync(body));
    expect(compressed.startsWith("HTTP/1.1 415 ")).toBe(true);
    expect(compressed).toContain(
      '"detail":"Transfer-Encoding \\"gzip, chunked\\" is not supported (only chunked is); send the body uncompressed"',
    );
    const chunked = await post("chunked", body);
    // Read and validated: the geometry is missing.
    expect(chunked.startsWith("HTTP/1.1 422 ")).toBe(true);
    // Every route that reads a body refuses it the same way.
    for (const path of ["/sources/search", "/sandbox/sources", "/sandbox/sources/search"]) {
      const refused = await post("gzip, chunked", gzipSync(body), path);
      expect(refused.startsWith("HTTP/1.1 415 "), `${path}: ${refused.slice(0, 200)}`).toBe(true);
      expect(refused).toContain('Transfer-Encoding \\"gzip, chunked\\" is not supported');
    }
  });

  it("a body sent with DELETE is ignored, whatever its coding", async () => {
    const created = await server.request("POST", "/sources", { token, json: flat(uniqueAlt("delete-body")) });
    expect(created.status).toBe(201);
    const [{ id }] = (await created.json()) as { id: string }[];
    const deleted = await server.request("DELETE", `/sources/${id}`, {
      token,
      body: gzipSync("{}") as unknown as string,
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
    expect(deleted.status).toBe(204);
    expect((await server.request("GET", `/sources/${id}`, { token })).status).toBe(404);
  });

  it("a Host that is not a host[:port] is a 400 before anything else; OGC links never echo one", async () => {
    const { port } = new URL(server.baseUrl);
    const raw = (host: string) =>
      new Promise<{ status: number; body: string; link: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            path: "/ogc/collections/sources/items?limit=1",
            headers: { host, authorization: `Bearer ${token}` },
          },
          (res) => {
            let body = "";
            res.on("data", (chunk) => (body += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body, link: String(res.headers.link ?? "") }));
          },
        );
        req.on("error", reject);
        req.end();
      });
    // An IPv6 zone id too: WHATWG URLs, which Connect's handler builds from the Host, have none.
    for (const host of ['evil.example"><script>', "a b", "x.example/path", "x.example:99999999", "[fe80::1%25eth0]"]) {
      const answer = await raw(host);
      expect(answer.status, host).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({
        code: "invalid_argument",
        detail: "the Host header is not a valid host[:port]",
      });
    }
    for (const host of ["ledger.example.org", "ledger.example.org:8443", "[::1]:8080", `127.0.0.1:${port}`]) {
      const answer = await raw(host);
      expect(answer.status, host).toBe(200);
      expect(JSON.parse(answer.body).links[0].href.startsWith(`http://${host}/ogc/`), host).toBe(true);
    }
  });

  it.each([
    ["REST", "/sources", "user@host", "application/json", "{", "400"],
    ["Connect", "/sourceledger.v2.SourceLedgerService/GetSource", "a,b", "application/json", "{", "400"],
    [
      "gRPC-Web",
      "/sourceledger.v2.SourceLedgerService/GetSource",
      "x!y",
      "application/grpc-web+proto",
      "\u0000",
      "200",
    ],
  ])(
    "HTTP/2, %s: a request refused for its Host, its body still trickling, has its stream closed (NO_ERROR)",
    async (_, path, authority, contentType, first, status) => {
      const events = await trickleUntilClosed(
        server.port,
        { ":path": path, ":authority": authority, "content-type": contentType },
        first,
      );
      expect(events).toEqual([`status ${status}`, `closed, code ${http2.constants.NGHTTP2_NO_ERROR}`]);
    },
  );

  it("a Host that is not a host[:port] on an RPC is invalid_argument in the caller's protocol, before the token", async () => {
    const { port } = new URL(server.baseUrl);
    const raw = (path: string, contentType: string, method = "POST") =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const req = httpRequest(
          { host: "127.0.0.1", port, path, method, headers: { host: "a b", "content-type": contentType } },
          (res) => {
            let body = "";
            res.on("data", (chunk) => (body += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          },
        );
        req.on("error", reject);
        req.end(contentType === "application/json" ? "{}" : Buffer.from([0, 0, 0, 0, 0]));
      });
    const method = "/sourceledger.v2.SourceLedgerService/GetSource";
    const connectCall = await raw(method, "application/json");
    expect(connectCall.status).toBe(400);
    expect(JSON.parse(connectCall.body)).toEqual({ code: "invalid_argument", message: MALFORMED_HOST });
    const grpcWeb = await raw(method, "application/grpc-web+proto");
    expect(grpcWeb.status).toBe(200);
    expect(grpcWeb.headers).toMatchObject({ "grpc-status": "3", "grpc-message": encodeURIComponent(MALFORMED_HOST) });
    // A REST route keeps problem details, and so does an OPTIONS on an RPC path (no RPC call).
    for (const [path, verb] of [
      ["/sources", "POST"],
      [method, "OPTIONS"],
    ]) {
      const refused = await raw(path, "application/json", verb);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body)).toMatchObject({ code: "invalid_argument", detail: MALFORMED_HOST });
    }
  });

  it("Expect: 100-continue gets 100 only once the token passed; another expectation is ignored, not a bare 417", async () => {
    const { port } = new URL(server.baseUrl);
    // The head alone, then the body only if the server says 100 Continue (as curl does).
    const exchange = (headers: string, body: string, waitFor100 = true) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), "127.0.0.1");
        let received = "";
        let sentBody = false;
        socket.on("data", (chunk) => {
          received += chunk.toString("latin1");
          if (!sentBody && received.startsWith("HTTP/1.1 100 Continue\r\n\r\n")) {
            sentBody = true;
            socket.write(body);
          }
          // Done once the final answer's body is complete (Content-Length).
          const final = received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, "");
          const head = final.indexOf("\r\n\r\n");
          const length = /\r\ncontent-length: (\d+)/i.exec(final.slice(0, head))?.[1];
          if (head >= 0 && length !== undefined && final.length - head - 4 >= Number(length)) {
            socket.destroy();
            resolve(received);
          }
        });
        socket.on("error", reject);
        socket.write(
          `POST /sources HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${headers}\r\n${waitFor100 ? "" : body}`,
        );
      });
    const body = JSON.stringify({ alt_id: "expecting", start_at: "2024-01-01T00:00:00Z" });
    const anonymous = await exchange("expect: 100-continue\r\n", body);
    expect(anonymous.startsWith("HTTP/1.1 401 ")).toBe(true);
    const accepted = await exchange(`expect: 100-continue\r\nauthorization: Bearer ${token}\r\n`, body);
    expect(accepted.startsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 422 ")).toBe(true);
    const other = await exchange(`expect: 200-ok\r\nauthorization: Bearer ${token}\r\n`, body, false);
    expect(other.startsWith("HTTP/1.1 422 ")).toBe(true);
    expect(other).toMatch(/content-type: application\/problem\+json/i);
  });

  it("a malformed URL is a 400 problem, not Fastify's own error shape, with the request id echoed", async () => {
    const response = await server.request("GET", "/sources/%E0%A4%A", {
      token,
      headers: { "x-request-id": "probe-malformed-url" },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect(response.headers.get("x-request-id")).toBe("probe-malformed-url");
    expect(await response.json()).toMatchObject({
      status: 400,
      code: "invalid_argument",
      detail: "the request URL is malformed",
      instance: "urn:request:probe-malformed-url",
    });
  });

  it("a malformed percent-escape in a query parameter is a 422 pointing at it", async () => {
    const response = await server.request("GET", "/sources?methodology=%E0%A4%A&limit=5", { token });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as { errors: { pointer: string; detail: string }[] };
    expect(problem.errors).toEqual([
      { pointer: "/query/methodology", detail: "methodology has a malformed percent-encoding" },
    ]);
  });

  it("a DELETE by an alt_id with a malformed escape is told that alone, not also that alt_id is missing", async () => {
    const malformed = await server.request("DELETE", "/sources?alt_id=%ED%A0%80", { token });
    expect(malformed.status).toBe(422);
    expect(((await malformed.json()) as { errors: unknown[] }).errors).toEqual([
      { pointer: "/query/alt_id", detail: "alt_id has a malformed percent-encoding" },
    ]);
    const missing = await server.request("DELETE", "/sources", { token });
    expect(((await missing.json()) as { errors: unknown[] }).errors).toEqual([
      { pointer: "/query/alt_id", detail: "alt_id is required to delete without an id in the path" },
    ]);
  });

  it("a REST answer lists at most 1,000 violations, then says how many more", async () => {
    // Out-of-range positions are summarised (docs/api.md §5.4): 1,000 features missing everything
    // give 4,000 violations instead.
    const features = Array.from({ length: 1_000 }, () => ({ type: "Feature", properties: {}, geometry: null }));
    const response = await server.request("POST", "/sources", {
      token,
      json: { type: "FeatureCollection", features },
    });
    expect(response.status).toBe(422);
    const problem = (await response.json()) as { errors: { pointer: string; detail: string }[] };
    expect(problem.errors).toHaveLength(1_001);
    expect(problem.errors[1_000].detail).toMatch(/^and \d+ more violations$/);
  });

  it("over gRPC, a re-sent batch of 1,000 sources is ALREADY_EXISTS with a bounded detail (not a broken stream)", async () => {
    const sources = Array.from({ length: 1_000 }, (_, i) =>
      sourceInput(uniqueAlt("dup"), {
        geometry: polygonGeometry(-60 + (i % 100) * 0.02, -50 + Math.floor(i / 100) * 0.02, 0.01),
      }),
    );
    const first = await grpcClient.call("SourceLedgerService", "CreateSources", { sources }, token);
    expect(first.code).toBe(0);
    const again = await grpcClient.call("SourceLedgerService", "CreateSources", { sources }, token);
    expect(again.code).toBe(6);
    const violations = fieldViolations(again);
    expect(violations).toHaveLength(MAX_DETAIL_VIOLATIONS + 1);
    expect(violations[0].field).toBe("sources[0].alt_id");
    expect(violations[MAX_DETAIL_VIOLATIONS].description).toBe(`and ${1_000 - MAX_DETAIL_VIOLATIONS} more violations`);
  });

  it("over gRPC, a geometry with an error at every position is INVALID_ARGUMENT with a bounded detail", async () => {
    // Non-finite positions are reported one by one (out-of-range ones are summarised).
    const coordinates = Array.from({ length: 2_000 }, () => [Number.NaN, 0]).flat();
    const outcome = await grpcClient.call(
      "SourceLedgerService",
      "CreateSources",
      { sources: [sourceInput(uniqueAlt("wide"), { geometry: { polygon: { rings: [{ coordinates }] } } })] },
      token,
    );
    expect(outcome.code).toBe(3);
    expect(fieldViolations(outcome)).toHaveLength(MAX_DETAIL_VIOLATIONS + 1);
  });

  it("the sandbox bounds a session's memory by positions: 429 resource_exhausted, nothing stored", async () => {
    const own = await server.userToken("acct-positions");
    // 100,000 positions per source, kept short in JSON: a unit square whose bottom edge carries
    // 99,996 collinear points (valid: consecutive collinear points are allowed).
    const ring: number[][] = Array.from({ length: 99_996 }, (_, i) => [i / 100_000, 0]);
    ring.push([1, 0], [1, 1], [0, 1], [0, 0]);
    const feature = (i: number) => ({
      type: "Feature",
      id: `big-${i}`,
      properties: { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" },
      geometry: { type: "Polygon", coordinates: [ring] },
    });
    // 20 sources of 100,000 positions fill the 2,000,000-position budget exactly.
    for (let batch = 0; batch < 10; batch++) {
      const response = await server.request("POST", "/sandbox/sources", {
        token: own,
        json: { type: "FeatureCollection", features: [feature(2 * batch), feature(2 * batch + 1)] },
      });
      expect(response.status).toBe(201);
    }
    const over = await server.request("POST", "/sandbox/sources", {
      token: own,
      json: { type: "FeatureCollection", features: [feature(20)] },
    });
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ code: "resource_exhausted" });
    const listed = await server.request("GET", "/sandbox/sources?limit=1000", { token: own });
    expect(((await listed.json()) as unknown[]).length).toBe(20);
  });
});
