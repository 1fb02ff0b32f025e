/**
 * docs/api.md §6: a request message that is not valid protobuf is the caller's fault. Over every
 * protocol it is refused as invalid_argument with a fixed text, never as internal with the parser's
 * own words, and only after authentication.
 */
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOT_JSON, NOT_PROTOBUF } from "../../src/rpc/decode-errors.js";
import { grpcStatusFields, h1Request } from "../support/one-port-clients.js";
import { startTestServer, type TestServer } from "../support/server.js";

let server: TestServer;
let token: string;
beforeAll(async () => {
  server = await startTestServer();
  token = await server.token();
});
afterAll(async () => {
  await server.close();
});

const PATH = "/sourceledger.v2.SourceLedgerService/CreateSources";
const SANDBOX_PATH = "/sourceledger.v2.SandboxSourceLedgerService/CreateSources";
/** Field 0 with wire type 7: no protobuf parser accepts it. */
const GARBAGE = Buffer.from([0x07, 0xff, 0xff, 0xff]);

/** A length-prefixed (gRPC / gRPC-Web) message frame. */
const frame = (payload: Uint8Array) => encodeEnvelope(0, payload);

describe("a request message that is not protobuf", () => {
  it("Connect (application/proto) → HTTP 400 invalid_argument with the fixed text", async () => {
    const res = await h1Request(server.port, PATH, {
      method: "POST",
      headers: { "content-type": "application/proto", authorization: `Bearer ${token}` },
      body: GARBAGE.toString("latin1"),
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ code: "invalid_argument", message: NOT_PROTOBUF });
    expect(res.body).not.toContain("parse binary");
  });

  it("gRPC-Web → grpc-status 3 and the fixed text in the trailer frame", async () => {
    const res = await new Promise<Buffer>((resolve, reject) => {
      import("node:http").then(({ request }) => {
        const req = request(
          {
            host: "127.0.0.1",
            port: server.port,
            path: PATH,
            method: "POST",
            headers: { "content-type": "application/grpc-web+proto", authorization: `Bearer ${token}` },
          },
          (r) => {
            const chunks: Buffer[] = [];
            r.on("data", (c: Buffer) => chunks.push(c));
            r.on("end", () => resolve(Buffer.concat(chunks)));
          },
        );
        req.on("error", reject);
        req.end(frame(GARBAGE));
      }, reject);
    });
    const trailer = res.subarray(5).toString("latin1");
    expect(res[0]).toBe(0x80);
    expect(trailer).toContain("grpc-status: 3\r\n");
    expect(trailer).toContain(`grpc-message: ${encodeURIComponent(NOT_PROTOBUF)}\r\n`);
    expect(trailer).not.toContain("parse");
  });

  it("gRPC over h2c → status 3 (INVALID_ARGUMENT) and the fixed text in the trailers", async () => {
    const trailers = await grpcStatusFields(
      server.port,
      PATH,
      { "content-type": "application/grpc", authorization: `Bearer ${token}` },
      frame(GARBAGE),
    );
    expect(trailers["grpc-status"]).toBe("3");
    expect(trailers["grpc-message"]).toBe(encodeURIComponent(NOT_PROTOBUF));
  });

  it("Connect JSON that does not parse → HTTP 400 invalid_argument with a fixed text, not V8's parser message", async () => {
    const res = await h1Request(server.port, PATH, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: '{"sources": [',
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ code: "invalid_argument", message: NOT_JSON });
  });

  it("Connect JSON that is not UTF-8 → HTTP 400 invalid_argument naming the bytes, not read as U+FFFD", async () => {
    const json = Buffer.from('{"sources":[{"altId":"cx-?"}]}');
    const at = json.indexOf("?");
    json[at] = 0xff;
    const res = await fetch(`http://127.0.0.1:${server.port}${SANDBOX_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: json,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: "invalid_argument",
      message: `the message is not valid UTF-8: the bytes at offset ${at} (FF) are not a UTF-8 character; send JSON encoded in UTF-8`,
    });
  });

  it.each([
    ["gRPC over h2c", "application/grpc+json"],
    ["gRPC-Web", "application/grpc-web+json"],
  ])(
    "%s JSON that is not UTF-8 → status 3 naming the bytes (one decoder for every JSON codec)",
    async (_, contentType) => {
      const alt = "cx-utf8-?";
      const json = Buffer.from(JSON.stringify({ sources: [{ altId: alt }] }));
      const at = json.indexOf("?");
      json[at] = 0xff;
      const expected = `the message is not valid UTF-8: the bytes at offset ${at} (FF) are not a UTF-8 character; send JSON encoded in UTF-8`;
      const headers = { "content-type": contentType, authorization: `Bearer ${token}` };
      if (contentType === "application/grpc+json") {
        const trailers = await grpcStatusFields(server.port, SANDBOX_PATH, headers, frame(json));
        expect(trailers["grpc-status"]).toBe("3");
        expect(decodeURIComponent(String(trailers["grpc-message"]))).toBe(expected);
      } else {
        const web = await fetch(`http://127.0.0.1:${server.port}${SANDBOX_PATH}`, {
          method: "POST",
          headers,
          body: new Uint8Array(frame(json)),
        });
        const answer = Buffer.from(await web.arrayBuffer());
        expect(answer[0]).toBe(0x80);
        const trailer = answer.subarray(5).toString("latin1");
        expect(trailer).toContain("grpc-status: 3\r\n");
        expect(trailer).toContain(`grpc-message: ${encodeURIComponent(expected)}\r\n`);
      }
    },
  );

  it("JSON escaping half a surrogate pair: invalid_argument over gRPC and gRPC-Web too (a status, not an empty answer)", async () => {
    const expected =
      "the message is not Unicode text: \\ud800 at offset 2 escapes half of a UTF-16 surrogate pair alone";
    const body = frame(Buffer.from('{"\\ud800":1}'));
    const trailers = await grpcStatusFields(
      server.port,
      "/sourceledger.v2.SourceLedgerService/ListSources",
      { "content-type": "application/grpc+json", authorization: `Bearer ${token}` },
      body,
    );
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(trailers["grpc-message"]))).toBe(expected);
    const web = await fetch(`http://127.0.0.1:${server.port}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+json" },
      body: new Uint8Array(body),
    });
    // gRPC-Web: the status in the trailer frame (flag 0x80) that ends the body.
    const answer = Buffer.from(await web.arrayBuffer());
    expect(answer[0]).toBe(0x80);
    const trailer = answer.subarray(5).toString("latin1");
    expect(trailer).toContain("grpc-status: 3\r\n");
    expect(trailer).toContain(`grpc-message: ${encodeURIComponent(expected)}\r\n`);
  });

  it("JSON that parses but names an unknown field keeps its useful message", async () => {
    const res = await h1Request(server.port, PATH, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: '{"bogus": 1}',
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).message).toContain('key "bogus" is unknown');
  });

  it("a valid message still reaches the service (its own validation answers)", async () => {
    const res = await h1Request(server.port, PATH, {
      method: "POST",
      headers: { "content-type": "application/proto", authorization: `Bearer ${token}` },
      body: "",
    });
    // An empty message decodes; the ledger refuses it: at least one source is required.
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({
      code: "invalid_argument",
      message: "sources: at least one source is required",
    });
  });
});
