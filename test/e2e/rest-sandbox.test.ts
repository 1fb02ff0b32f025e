/**
 * docs/api.md §7 over REST: the sandbox validates, answers and formats like production, keeps
 * nothing in the store, holds one session per account, caps a session at 10,000 sources, and
 * drops idle sessions after SANDBOX_TTL_S.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  altIds,
  collection,
  createOk,
  expectJson,
  expectProblem,
  expectViolation,
  feature,
  flat,
  inListOrder,
  list,
  manyFeatures,
  polygon,
  SANDBOX_ID,
  unique,
} from "./rest-support.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

describe("records", () => {
  it("sandbox ids are sandbox_ + a UUID v4, and every key is present with conflict false, unep_overlap null", async () => {
    const account = unique("acct-sbx");
    const token = await server.userToken(account);
    const records = await createOk(
      server,
      token,
      collection([
        feature("one", { methodology: "m", attribute_type: ["BIODIVERSITY"] }, polygon(0, 0, 2)),
        feature("two", {}, polygon(1, 1, 2)),
      ]),
      "sandbox",
    );
    expect(altIds(records)).toEqual(["one", "two"]);
    for (const record of records) {
      expect(record.id).toMatch(SANDBOX_ID);
      // Overlapping sources: production would analyse them; the sandbox never does.
      expect(record.conflict).toBe(false);
      expect(record.unep_overlap).toBeNull();
      expect(record.account_id).toBe(account);
    }
    expect(records[0]).toMatchObject({
      methodology: "m",
      attribute_type: ["BIODIVERSITY"],
      tags: [],
      steward_id: null,
    });
    expect(new Set(records.map((r) => r.id)).size).toBe(2);
  });

  it("the three body shapes work as in production", async () => {
    const token = await server.userToken(unique("acct-sbx"));
    const [a] = await createOk(server, token, flat("flat"), "sandbox");
    const [b] = await createOk(server, token, feature("feature"), "sandbox");
    const [c, d] = await createOk(
      server,
      token,
      collection([feature("fc-1"), feature("fc-2", { tags: ["own"] })], { tags: ["shared"] }),
      "sandbox",
    );
    expect([a, b, c, d].map((r) => [r.alt_id, r.tags])).toEqual([
      ["flat", []],
      ["feature", []],
      ["fc-1", ["shared"]],
      ["fc-2", ["own"]],
    ]);
  });
});

describe("same validation, codes and formats as production", () => {
  const invalid: [string, unknown, string, string][] = [
    [
      "bowtie",
      collection([
        feature(
          "x",
          {},
          {
            type: "Polygon",
            coordinates: [
              [
                [0, 0],
                [1, 1],
                [1, 0],
                [0, 1],
                [0, 0],
              ],
            ],
          },
        ),
      ]),
      "/features/0/geometry/coordinates/0",
      "self-intersects",
    ],
    ["end before start", flat("x", { end_at: "2020-01-01T00:00:00Z" }), "/end_at", "end_at must be after start_at"],
    ["lower-case enum", feature("x", { source_type: "site" }), "/properties/source_type", "source_type must be one of"],
    ["1,001 features", collection(manyFeatures("many", 1001)), "/features", "at most 1000 sources"],
    [
      "repeat alt_id",
      collection([feature("r"), feature("r", {}, polygon(3, 3))]),
      "/features/1/id",
      `alt_id "r" repeats source 0`,
    ],
  ];

  it.each(invalid)("%s → the same 422 in both environments", async (_name, body, pointer, detail) => {
    const token = await server.userToken(unique("acct-sbx-val"));
    // One request id for both, so that the problems' `instance` is the same too.
    const headers = { "x-request-id": unique("same-422") };
    const production = await server.request("POST", "/sources", { token, json: body, headers });
    const sandbox = await server.request("POST", "/sandbox/sources", { token, json: body, headers });
    const [p, s] = [await production.text(), await sandbox.text()];
    expect(s).toBe(p);
    await expectViolation(new Response(s, { status: sandbox.status, headers: sandbox.headers }), pointer, detail);
    expect(await list(server, token, "", "sandbox")).toEqual([]);
  });

  it("409 for a stored alt_id, and deleting frees it", async () => {
    const token = await server.userToken(unique("acct-sbx"));
    const [stored] = await createOk(server, token, flat("dup"), "sandbox");
    const res = await server.request("POST", "/sandbox/sources", {
      token,
      json: collection([feature("new"), feature("dup", {}, polygon(3, 3))]),
    });
    const body = await expectProblem(res, 409, "already_exists");
    expect(body.errors).toEqual([
      { pointer: "/features/1/id", detail: `alt_id "dup" is already used by a source of this account` },
    ]);
    expect(await list(server, token, "", "sandbox")).toEqual([stored]);
    expect((await server.request("DELETE", `/sandbox/sources/${stored.id}`, { token })).status).toBe(204);
    await createOk(server, token, flat("dup"), "sandbox");
  });

  it("unparseable JSON → 422, text/plain → 415, > 10 MiB → 413", async () => {
    const token = await server.userToken(unique("acct-sbx"));
    const bad = await server.request("POST", "/sandbox/sources", {
      token,
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect((await expectProblem(bad, 422, "invalid_argument")).errors[0].pointer).toBe("");
    await expectProblem(
      await server.request("POST", "/sandbox/sources", {
        token,
        body: "{}",
        headers: { "content-type": "text/plain" },
      }),
      415,
      "invalid_argument",
    );
    const huge = await server.request("POST", "/sandbox/sources", {
      token,
      body: " ".repeat(10 * 1024 * 1024 + 1),
      headers: { "content-type": "application/json" },
    });
    await expectProblem(huge, 413, "resource_exhausted");
  });
});

describe("list", () => {
  it("filters by id and alt_id (sandbox only), alone and with the others", async () => {
    const token = await server.userToken(unique("acct-sbx-list"));
    const records = await createOk(
      server,
      token,
      collection([
        feature("a", { methodology: "M1" }),
        feature("b", { methodology: "M2" }, polygon(2, 0)),
        feature("c", { methodology: "M1" }, polygon(4, 0)),
      ]),
      "sandbox",
    );
    expect(await list(server, token, `id=${records[1].id}`, "sandbox")).toEqual([records[1]]);
    expect(await list(server, token, "alt_id=c", "sandbox")).toEqual([records[2]]);
    expect(await list(server, token, "alt_id=c&methodology=M2", "sandbox")).toEqual([]);
    expect(await list(server, token, `alt_id=a&id=${records[0].id}&methodology=M1`, "sandbox")).toEqual([records[0]]);
    expect(await list(server, token, "alt_id=zzz", "sandbox")).toEqual([]);
    // One request shares one created_at, so the random UUIDs order them.
    const ordered = inListOrder(records);
    expect(await list(server, token, "", "sandbox")).toEqual(ordered);
    expect(await list(server, token, "methodology=M1", "sandbox")).toEqual(
      ordered.filter((r) => r.methodology === "M1"),
    );
    expect(await list(server, token, "limit=1&offset=1", "sandbox")).toEqual([ordered[1]]);
  });

  it("rejects malformed and unknown parameters like production", async () => {
    const token = await server.userToken(unique("acct-sbx-list"));
    await expectViolation(
      await server.request("GET", "/sandbox/sources?limit=1001", { token }),
      "/query/limit",
      "limit must be from 1 to 1000",
    );
    await expectViolation(
      await server.request("GET", "/sandbox/sources?alt_id=", { token }),
      "/query/alt_id",
      "must not be empty",
    );
    await expectViolation(
      await server.request("GET", "/sandbox/sources?id=a&id=b", { token }),
      "/query/id",
      "at most once",
    );
    await expectViolation(
      await server.request("GET", "/sandbox/sources?bogus=1", { token }),
      "/query/bogus",
      "unknown query parameter",
    );
  });
});

describe("nothing reaches production", () => {
  it("sandbox creates are invisible to the production list, and do not hold alt_ids there", async () => {
    const token = await server.userToken(unique("acct-sbx-prod"));
    const records = await createOk(server, token, collection(manyFeatures("only-sandbox", 25)), "sandbox");
    expect(await list(server, token, "limit=1000", "production")).toEqual([]);
    for (const record of records.slice(0, 3)) {
      await expectProblem(await server.request("GET", `/sources/${record.id}`, { token }), 404, "not_found");
    }
    // Production accepts the same alt_ids: they were never written to the store.
    const production = await createOk(server, token, collection(manyFeatures("only-sandbox", 25)), "production");
    expect(altIds(production)).toEqual(altIds(records));
    // And the sandbox still holds its own copies, separately.
    expect(await list(server, token, "limit=1000", "sandbox")).toEqual(inListOrder(records));
  });
});

describe("sessions", () => {
  it("each account has its own session: no cross-account reads, lists or deletes", async () => {
    const tokenA = await server.userToken(unique("acct-sess-a"));
    const tokenB = await server.userToken(unique("acct-sess-b"));
    const [a] = await createOk(server, tokenA, flat("same-alt"), "sandbox");
    // B may use the same alt_id: a different session.
    const [b] = await createOk(server, tokenB, flat("same-alt"), "sandbox");
    expect(await list(server, tokenA, "", "sandbox")).toEqual([a]);
    expect(await list(server, tokenB, "", "sandbox")).toEqual([b]);
    expect(await list(server, tokenB, `id=${a.id}`, "sandbox")).toEqual([]);
    await expectProblem(await server.request("GET", `/sandbox/sources/${a.id}`, { token: tokenB }), 404, "not_found");
    await expectProblem(
      await server.request("DELETE", `/sandbox/sources/${a.id}`, { token: tokenB }),
      404,
      "not_found",
    );
    expect((await server.request("DELETE", "/sandbox/sources?alt_id=same-alt", { token: tokenB })).status).toBe(204);
    expect(await list(server, tokenA, "", "sandbox")).toEqual([a]);
    expect(await list(server, tokenB, "", "sandbox")).toEqual([]);
  });
});

describe("capacity", () => {
  it("a session holds 10,000 sources; one more → 429 resource_exhausted; deleting makes room", async () => {
    const token = await server.userToken(unique("acct-sbx-cap"));
    for (let batch = 0; batch < 10; batch++) {
      const res = await server.request("POST", "/sandbox/sources", {
        token,
        json: collection(manyFeatures(`cap${batch}`, 1000)),
      });
      expect(res.status, await res.clone().text()).toBe(201);
      await res.arrayBuffer();
    }
    const over = await server.request("POST", "/sandbox/sources", { token, json: flat("one-too-many") });
    const body = await expectProblem(over, 429, "resource_exhausted");
    expect(body.detail).toContain("at most 10000 sources");
    expect(await list(server, token, "alt_id=one-too-many", "sandbox")).toEqual([]);
    // All-or-nothing at the cap too: a request that would cross it stores nothing.
    const [first] = await list(server, token, "limit=1", "sandbox");
    expect((await server.request("DELETE", `/sandbox/sources/${first.id}`, { token })).status).toBe(204);
    await expectProblem(
      await server.request("POST", "/sandbox/sources", {
        token,
        json: collection([feature("fits"), feature("does-not", {}, polygon(3, 3))]),
      }),
      429,
      "resource_exhausted",
    );
    expect(await list(server, token, "alt_id=fits", "sandbox")).toEqual([]);
    await createOk(server, token, flat("fits"), "sandbox");
    // Another account's session is not affected by this one being full.
    await createOk(server, await server.userToken(unique("acct-sbx-cap-other")), flat("free"), "sandbox");
    // Nor is production.
    await createOk(server, token, flat("production-is-separate"), "production");
  });
});

describe("time to live", () => {
  let ttlServer: TestServer;

  beforeAll(async () => {
    ttlServer = await startTestServer({ SANDBOX_TTL_S: "1" });
  });

  afterAll(async () => {
    await ttlServer?.close();
  });

  it("an idle session is dropped after SANDBOX_TTL_S seconds; production is kept", async () => {
    const token = await ttlServer.userToken(unique("acct-ttl"));
    const [sandbox] = await createOk(ttlServer, token, flat("short-lived"), "sandbox");
    const [production] = await createOk(ttlServer, token, flat("long-lived"), "production");
    expect(await list(ttlServer, token, "", "sandbox")).toEqual([sandbox]);
    await new Promise((resolve) => setTimeout(resolve, 2_200));
    expect(await list(ttlServer, token, "", "sandbox")).toEqual([]);
    await expectProblem(await ttlServer.request("GET", `/sandbox/sources/${sandbox.id}`, { token }), 404, "not_found");
    expect(await expectJson(await ttlServer.request("GET", `/sources/${production.id}`, { token }), 200)).toEqual(
      production,
    );
    // The alt_id is free again in a new session.
    await createOk(ttlServer, token, flat("short-lived"), "sandbox");
  });
});
