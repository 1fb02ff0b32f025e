/**
 * docs/api.md §5–§6 over REST: body size (413), content type (415), unparseable and empty bodies
 * (422), and the problem-details format of every 4xx.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  altIds,
  createOk,
  ENVIRONMENTS,
  expectJson,
  expectProblem,
  feature,
  flat,
  list,
  PROBLEM_KEYS,
  pathOf,
  unique,
} from "./rest-support.js";

const MiB = 1024 * 1024;

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startTestServer();
  token = await server.userToken(unique("acct-limits"));
});

afterAll(async () => {
  await server?.close();
});

/** A valid flat-source body padded with trailing white space to exactly `bytes` bytes. */
function paddedBody(altId: string, bytes: number): string {
  const json = JSON.stringify(flat(altId));
  return json + " ".repeat(bytes - Buffer.byteLength(json));
}

describe.each(ENVIRONMENTS)("%s: body size", (env) => {
  it("a body of exactly 10 MiB is accepted", async () => {
    const body = paddedBody(unique("ten-mib"), 10 * MiB);
    expect(Buffer.byteLength(body)).toBe(10 * MiB);
    await expectJson(
      await server.request("POST", pathOf(env), { token, body, headers: { "content-type": "application/json" } }),
      201,
    );
  });

  it("a body of 10 MiB + 1 byte → 413 problem+json, nothing stored", async () => {
    const alt = unique("too-big");
    const res = await server.request("POST", pathOf(env), {
      token,
      body: paddedBody(alt, 10 * MiB + 1),
      headers: { "content-type": "application/json" },
    });
    const problem = await expectProblem(res, 413, "resource_exhausted");
    expect(problem.detail).toContain("10 MiB");
    expect(problem.title).toBe("Payload Too Large");
    expect(altIds(await list(server, token, "limit=1000", env))).not.toContain(alt);
  });

  it("a streamed (chunked, no Content-Length) body over 10 MiB → 413", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(MiB));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode(JSON.stringify(flat(unique("stream")))));
        if (sent >= 11) controller.close();
        else controller.enqueue(chunk);
        sent += 1;
      },
    });
    const res = await fetch(`${server.baseUrl}${pathOf(env)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit & { duplex: "half" });
    await expectProblem(res, 413, "resource_exhausted");
  });
});

describe.each(ENVIRONMENTS)("%s: content type and parsing", (env) => {
  it.each([
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/xml",
    "application/jsonx",
  ])("Content-Type %s → 415 problem+json", async (type) => {
    const res = await server.request("POST", pathOf(env), {
      token,
      body: JSON.stringify(flat(unique("ct"))),
      headers: { "content-type": type },
    });
    const problem = await expectProblem(res, 415, "invalid_argument");
    expect(problem.detail).toContain("application/json");
    expect(problem.title).toBe("Unsupported Media Type");
  });

  it("no Content-Type at all → 415", async () => {
    const res = await fetch(`${server.baseUrl}${pathOf(env)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: new TextEncoder().encode(JSON.stringify(flat(unique("no-ct")))),
    });
    await expectProblem(res, 415, "invalid_argument");
  });

  it.each([
    ["{", "the body is not valid JSON"],
    ['{"alt_id": "x",}', "the body is not valid JSON"],
    ['{"alt_id": "x"} trailing', "the body is not valid JSON"],
    ["{'alt_id': 'x'}", "the body is not valid JSON"],
    ["NaN", "the body is not valid JSON"],
  ])("unparseable JSON %s → 422 at the root", async (body, detail) => {
    const res = await server.request("POST", pathOf(env), {
      token,
      body,
      headers: { "content-type": "application/json" },
    });
    const problem = await expectProblem(res, 422, "invalid_argument");
    expect(problem.errors).toHaveLength(1);
    expect(problem.errors[0].pointer).toBe("");
    expect(problem.errors[0].detail).toContain(detail);
  });

  it("an empty body → 422 at the root", async () => {
    const res = await server.request("POST", pathOf(env), {
      token,
      body: "",
      headers: { "content-type": "application/json" },
    });
    const problem = await expectProblem(res, 422, "invalid_argument");
    expect(problem.errors).toEqual([{ pointer: "", detail: "the body is empty; send a JSON object" }]);
    expect(problem.detail).toBe("/: the body is empty; send a JSON object");
  });

  it("a JSON body that is only white space → 422", async () => {
    const res = await server.request("POST", pathOf(env), {
      token,
      body: "  \n ",
      headers: { "content-type": "application/json" },
    });
    expect((await expectProblem(res, 422, "invalid_argument")).errors.map((e) => e.pointer)).toEqual([""]);
  });

  it.each([
    ["a byte that starts no character", [0xff], "FF"],
    ["an encoded surrogate", [0xed, 0xa0, 0x80], "ED A0 80"],
    ["an overlong encoding of /", [0xc0, 0xaf], "C0 AF"],
    ["a sequence cut short", [0xe6, 0x97], "E6 97"],
  ])("a body that is not UTF-8 (%s) → 422 at the root naming the bytes, nothing stored", async (_, bytes, shown) => {
    const alt = unique("not-utf8");
    const json = Buffer.from(JSON.stringify(flat(`${alt}-\u0000`)));
    // The alt_id's placeholder (the 6 bytes \u0000) replaced by the bytes under test.
    const at = json.indexOf("\\u0000");
    const body = Buffer.concat([json.subarray(0, at), Buffer.from(bytes), json.subarray(at + 6)]);
    const res = await fetch(`${server.baseUrl}${pathOf(env)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body,
    });
    const problem = await expectProblem(res, 422, "invalid_argument");
    expect(problem.errors).toEqual([
      {
        pointer: "",
        detail: `the body is not valid UTF-8: the bytes at offset ${at} (${shown}) are not a UTF-8 character; send JSON encoded in UTF-8`,
      },
    ]);
    // Not stored, with U+FFFD in their place or otherwise.
    expect(altIds(await list(server, token, "limit=1000", env)).filter((a) => a.startsWith(alt))).toEqual([]);
  });

  it("a UTF-8 body with non-ASCII text round-trips", async () => {
    const alt = unique("naïve-Ω-日本");
    const [record] = await createOk(server, token, feature(alt, { methodology: "Método ✓", tags: ["🌱"] }), env);
    expect(record).toMatchObject({ alt_id: alt, methodology: "Método ✓", tags: ["🌱"] });
  });
});

describe("every 4xx is application/problem+json with type, title, status, detail, code, errors", () => {
  it("401, 403, 404, 405, 409, 413, 415 and 422 alike", async () => {
    const [existing] = await createOk(server, token, flat(unique("exists")));
    const noScope = await server.token({ scope: "read:sources" });
    const cases: [string, () => Promise<Response>, number, string][] = [
      ["401", () => server.request("GET", "/sources"), 401, "unauthenticated"],
      ["403", () => server.request("POST", "/sources", { token: noScope, json: flat("x") }), 403, "permission_denied"],
      ["404 unknown id", () => server.request("GET", "/sources/src_nope", { token }), 404, "not_found"],
      ["404 unknown route", () => server.request("GET", "/nowhere", { token }), 404, "not_found"],
      ["404 unknown sandbox route", () => server.request("GET", "/sandbox/elsewhere"), 404, "not_found"],
      ["405", () => server.request("PATCH", "/sources", { token, json: {} }), 405, "unimplemented"],
      ["409", () => server.request("POST", "/sources", { token, json: flat(existing.alt_id) }), 409, "already_exists"],
      [
        "413",
        () =>
          server.request("POST", "/sources", {
            token,
            body: " ".repeat(10 * MiB + 1),
            headers: { "content-type": "application/json" },
          }),
        413,
        "resource_exhausted",
      ],
      [
        "415",
        () => server.request("POST", "/sources", { token, body: "x", headers: { "content-type": "text/csv" } }),
        415,
        "invalid_argument",
      ],
      ["422 body", () => server.request("POST", "/sources", { token, json: {} }), 422, "invalid_argument"],
      ["422 query", () => server.request("GET", "/sources?limit=x", { token }), 422, "invalid_argument"],
    ];
    for (const [name, send, status, code] of cases) {
      const res = await send();
      const problem = await expectProblem(res, status, code);
      expect(Object.keys(problem), name).toEqual(PROBLEM_KEYS);
      expect(problem.type, name).toBe("about:blank");
    }
  });
});
