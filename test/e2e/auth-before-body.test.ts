/**
 * docs/api.md §2.4: authentication comes first, from the headers, before the body is read, for
 * REST and every RPC protocol. A client without a valid token cannot make the server buffer or
 * parse a large body: the JSON parser never sees it (counted here), and the refusal is 401 (or 403
 * without the scope) even where the body would also be too large, of the wrong type or garbage.
 */
import http2 from "node:http2";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { h1Request } from "../support/one-port-clients.js";
import { startTestServer, type TestServer } from "../support/server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** A syntactically valid JSON body of about `mb` megabytes. */
function bigJson(mb: number): string {
  return JSON.stringify({ alt_id: "big", tags: ["x".repeat(mb * 1024 * 1024)] });
}

/** Counts the JSON.parse calls given more than a megabyte: none may happen before authentication. */
function countLargeParses(): { count(): number } {
  const original = JSON.parse;
  let large = 0;
  vi.spyOn(JSON, "parse").mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    if (typeof text === "string" && text.length > 1_000_000) large++;
    return original(text, reviver);
  });
  return { count: () => large };
}

const REST_PATHS = ["/sources", "/sandbox/sources"];

describe.each(REST_PATHS)("REST %s: 401 and 403 before the body is read", (path) => {
  it("a 10 MB JSON body without a token → 401 problem details, never parsed", async () => {
    const parses = countLargeParses();
    const res = await h1Request(server.port, path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: bigJson(10),
    });
    expect(res.status).toBe(401);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.headers["www-authenticate"]).toBe(
      'Bearer error="invalid_token", error_description="missing bearer token"',
    );
    expect(JSON.parse(res.body)).toMatchObject({
      status: 401,
      code: "unauthenticated",
      detail: "missing bearer token",
    });
    expect(parses.count()).toBe(0);
  });

  it("a body over 10 MiB without a token → 401, not 413", async () => {
    const res = await h1Request(server.port, path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: bigJson(11),
    });
    expect(res.status).toBe(401);
  });

  it("a text/plain body without a token → 401, not 415", async () => {
    const res = await h1Request(server.port, path, {
      method: "POST",
      headers: { "content-type": "text/plain", authorization: "Bearer not.a.token" },
      body: "hello",
    });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ code: "unauthenticated", detail: "malformed token" });
  });

  it("a valid token without write:sources and a 10 MB body → 403 insufficient_scope, never parsed", async () => {
    const parses = countLargeParses();
    const token = await server.token({ scope: "read:sources" });
    const res = await h1Request(server.port, path, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: bigJson(10),
    });
    expect(res.status).toBe(403);
    expect(res.headers["www-authenticate"]).toBe('Bearer error="insufficient_scope", scope="write:sources"');
    expect(parses.count()).toBe(0);
  });

  it("with a valid token the body is read as before: text/plain → 415, unparseable → 422", async () => {
    const token = await server.token();
    const plain = await h1Request(server.port, path, {
      method: "POST",
      headers: { "content-type": "text/plain", authorization: `Bearer ${token}` },
      body: "hello",
    });
    expect(plain.status).toBe(415);
    const broken = await h1Request(server.port, path, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: "{",
    });
    expect(broken.status).toBe(422);
  });
});

const GRPC_BODY_BYTES = 10 * 1024 * 1024;
const RPC = "/sourceledger.v2.SourceLedgerService/CreateSources";

describe("Connect, gRPC and gRPC-Web: refused in their own error form before the message is decoded", () => {
  it("Connect JSON, a 10 MB message without a token → HTTP 401 with Connect's error JSON, never parsed", async () => {
    const parses = countLargeParses();
    const res = await h1Request(server.port, RPC, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sources: [{ altId: "x".repeat(10 * 1024 * 1024) }] }),
    });
    expect(res.status).toBe(401);
    expect(res.headers["content-type"]).toBe("application/json");
    expect(res.headers["www-authenticate"]).toBe(
      'Bearer error="invalid_token", error_description="missing bearer token"',
    );
    expect(JSON.parse(res.body)).toEqual({ code: "unauthenticated", message: "missing bearer token" });
    expect(parses.count()).toBe(0);
  });

  it("Connect proto, garbage without a token → 401 unauthenticated, not a decode error", async () => {
    const res = await h1Request(server.port, RPC, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: "\u00ff\u00ff\u00ff not protobuf",
    });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toEqual({ code: "unauthenticated", message: "missing bearer token" });
  });

  it("Connect, a token without the method's scope → 403 permission_denied with the challenge", async () => {
    const token = await server.token({ scope: "read:sources" });
    const res = await h1Request(server.port, RPC, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: "{}",
    });
    expect(res.status).toBe(403);
    expect(res.headers["www-authenticate"]).toBe('Bearer error="insufficient_scope", scope="write:sources"');
    expect(JSON.parse(res.body)).toEqual({ code: "permission_denied", message: "token lacks scope write:sources" });
  });

  it("gRPC-Web, garbage without a token → HTTP 200 with grpc-status 16 in the headers (trailers-only)", async () => {
    const res = await h1Request(server.port, RPC, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: "garbage",
    });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/grpc-web+proto");
    expect(res.headers["grpc-status"]).toBe("16");
    expect(res.headers["grpc-message"]).toBe("missing%20bearer%20token");
    expect(res.headers["www-authenticate"]).toBe(
      'Bearer error="invalid_token", error_description="missing bearer token"',
    );
  });

  it("gRPC over h2c, a 10 MB garbage message without a token → status 16 in the trailers", async () => {
    // A larger session memory than the default 10 MB: the whole message is handed to the client at once.
    const session = http2.connect(`http://127.0.0.1:${server.port}`, { maxSessionMemory: 64 });
    try {
      const result = await new Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders }>(
        (resolve, reject) => {
          const stream = session.request({ ":method": "POST", ":path": RPC, "content-type": "application/grpc" });
          let headers: http2.IncomingHttpHeaders = {};
          stream.on("response", (h) => {
            headers = h;
          });
          stream.on("trailers", (trailers) => resolve({ headers, trailers }));
          stream.on("error", reject);
          stream.on("data", () => {});
          stream.end(Buffer.alloc(GRPC_BODY_BYTES, 0xff));
        },
      );
      expect(result.headers[":status"]).toBe(200);
      expect(result.headers["content-type"]).toBe("application/grpc");
      expect(result.trailers["grpc-status"]).toBe("16");
      expect(result.trailers["grpc-message"]).toBe("missing%20bearer%20token");
      expect(result.trailers["www-authenticate"]).toBe(
        'Bearer error="invalid_token", error_description="missing bearer token"',
      );
    } finally {
      session.close();
    }
  });
});
