/**
 * docs/api.md §7 and §10, issue 14 point 1 ("Sandbox budget"), through the public API: one admin
 * token opening sessions for 50 accounts past SANDBOX_MAX_MB keeps the sandbox within its budget,
 * production keeps answering, evicted sessions' ids answer 404, and creates that find every
 * session busy are refused with 429 + Retry-After (REST) / RESOURCE_EXHAUSTED + retry-after (gRPC).
 */
import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SandboxSourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { SandboxSourceStore, SandboxStoreOptions } from "../../src/store/sandbox/index.js";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  collection,
  createOk,
  END,
  expectJson,
  expectProblem,
  feature,
  flat,
  type Json,
  START,
  unique,
} from "./rest-support.js";

// The sandbox store the app creates, kept for the test to read what it accounts (the server runs
// in this process; nothing else about the store changes).
const created = vi.hoisted(() => [] as SandboxSourceStore[]);
vi.mock("../../src/store/sandbox/index.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/store/sandbox/index.js")>();
  return {
    ...actual,
    createSandboxStore: (options: SandboxStoreOptions) => {
      const store = actual.createSandboxStore(options);
      created.push(store);
      return store;
    },
  };
});

const MIB = 1024 * 1024;

/** VmRSS of this process (the server runs in it), in bytes. */
function residentBytes(): number {
  const line = readFileSync("/proc/self/status", "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(line?.match(/(\d+)/)?.[1] ?? Number.NaN) * 1024;
}

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** What the JS heap and the ArrayBuffers of this process hold after full collections. */
async function liveBytes(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

let cell = 0;
/** A field-sized 100-position circle (99 vertices and the closing one) of its own, as GeoJSON. */
function circle(): Json {
  const c = cell++;
  const [cx, cy] = [-60 + (c % 1000) * 0.01, -40 + Math.floor(c / 1000) * 0.01];
  const ring = Array.from({ length: 99 }, (_, i) => {
    const angle = (2 * Math.PI * i) / 99;
    return [cx + 0.004 * Math.cos(angle), cy + 0.004 * Math.sin(angle)];
  });
  ring.push(ring[0]);
  return { type: "Polygon", coordinates: [ring] };
}

/** `n` features with 100-position circles. */
const fields = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => feature(`${prefix}-${i}`, {}, circle()));

describe("a flood of admin-opened sessions past SANDBOX_MAX_MB", () => {
  const BUDGET_MB = 4;
  let server: TestServer;
  let sandbox: SandboxSourceStore;
  let admin: string;

  beforeAll(async () => {
    server = await startTestServer({ SANDBOX_MAX_MB: String(BUDGET_MB) });
    sandbox = created[created.length - 1];
    admin = await server.adminToken();
  });

  afterAll(async () => {
    await server?.close();
  });

  it("50 accounts: the accounted bytes never pass the budget, RSS stays bounded, production keeps working, evicted ids 404", async () => {
    const user = await server.userToken(unique("acct-prod"));
    // A first create, so that what every create compiles and caches is in the baseline.
    await createOk(server, admin, collection(fields("warm", 300)), "sandbox", "?account_id=warm-up");
    const liveBefore = await liveBytes();
    const rssBefore = residentBytes();
    const firstIds: string[] = [];
    let refused = 0;
    for (let account = 0; account < 50; account++) {
      // 300 field-sized sources a request: ~0.75 MB a session as accounted, 38 MB asked for in all.
      const res = await server.request("POST", `/sandbox/sources?account_id=flood-${account}`, {
        token: admin,
        json: collection(fields(`f${account}`, 300)),
      });
      if (res.status === 429) {
        refused += 1;
        expect(res.headers.get("retry-after")).toBe("1");
        await res.arrayBuffer();
      } else {
        const records = await expectJson<{ id: string }[]>(res, 201);
        firstIds.push(records[0].id);
      }
      expect(sandbox.bytesUsed()).toBeLessThanOrEqual(BUDGET_MB * MIB);
      // Production is untouched by the sandbox's churn.
      if (account % 10 === 0) {
        const [source] = await createOk(server, user, flat(unique("prod")), "production");
        expect(await expectJson(await server.request("GET", `/sources/${source.id}`, { token: user }), 200)).toEqual(
          source,
        );
      }
    }
    // Sequential requests: every session but the one being created is idle, so none is refused.
    expect(refused).toBe(0);
    expect(sandbox.sessionCount()).toBeLessThanOrEqual(5);
    expect(sandbox.bytesUsed()).toBeGreaterThan((BUDGET_MB - 1) * MIB);
    // What stays alive after a full GC grew by about the budget, not by the 40 MB asked for (or the
    // ~170 MB the old nested-array layout held for 15,000 such sources).
    const live = (await liveBytes()) - liveBefore;
    expect(live, `live heap + ArrayBuffers grew by ${(live / MIB).toFixed(1)} MB`).toBeLessThan((BUDGET_MB + 4) * MIB);
    // RSS, coarser: it also keeps the pages V8 grew to for the requests' garbage (~110-160 MB here).
    const grown = residentBytes() - rssBefore;
    expect(grown, `RSS grew by ${(grown / MIB).toFixed(0)} MB`).toBeLessThan(250 * MIB);

    // The first accounts were evicted: their ids answer 404, for the admin and for the account.
    await expectProblem(
      await server.request("GET", `/sandbox/sources/${firstIds[0]}`, { token: admin }),
      404,
      "not_found",
    );
    const owner = await server.userToken("flood-0");
    await expectProblem(
      await server.request("GET", `/sandbox/sources/${firstIds[0]}`, { token: owner }),
      404,
      "not_found",
    );
    // The latest is kept.
    const latest = firstIds[firstIds.length - 1];
    expect((await server.request("GET", `/sandbox/sources/${latest}`, { token: admin })).status).toBe(200);
  });

  it("a session that alone would outgrow the budget is refused 429 without Retry-After, evicting nobody", async () => {
    const latest = await expectJson<{ id: string }[]>(
      await server.request("GET", "/sandbox/sources?limit=1", { token: admin }),
      200,
    );
    const sessions = sandbox.sessionCount();
    // 1,000 sources of 100 positions: ~2.7 MB; two such requests pass 4 MB.
    const account = unique("acct-big");
    await createOk(server, admin, collection(fields("big-a", 1000)), "sandbox", `?account_id=${account}`);
    const res = await server.request("POST", `/sandbox/sources?account_id=${account}`, {
      token: admin,
      json: collection(fields("big-b", 1000)),
    });
    const body = await expectProblem(res, 429, "resource_exhausted");
    expect(body.detail).toBe(
      `a sandbox session holds at most ${BUDGET_MB} MB of memory; delete some sources or wait for the session to expire`,
    );
    expect(res.headers.get("retry-after")).toBeNull();
    expect(sandbox.sessionCount()).toBeLessThanOrEqual(sessions + 1);
    expect(sandbox.bytesUsed()).toBeLessThanOrEqual(BUDGET_MB * MIB);
    expect(latest).toHaveLength(1);
  });

  it("the per-session caps answer as before: 10,000 sources → 429, without Retry-After", async () => {
    const capped = await startTestServer({ SANDBOX_MAX_MB: "64" });
    try {
      const token = await capped.userToken(unique("acct-cap"));
      for (let batch = 0; batch < 10; batch++) {
        await createOk(capped, token, collection(fields(`cap${batch}`, 1000)), "sandbox");
      }
      const over = await capped.request("POST", "/sandbox/sources", { token, json: flat("one-too-many") });
      expect(over.headers.get("retry-after")).toBeNull();
      const body = await expectProblem(over, 429, "resource_exhausted");
      expect(body.detail).toContain("at most 10000 sources");
      // 10,000 sources of 100 positions fit well within 64 MB: the compact layout, accounted.
      const store = created[created.length - 1];
      expect(store.bytesUsed()).toBeLessThan(32 * MIB);
    } finally {
      await capped.close();
    }
  });
});

describe("a burst of creates while every session is busy", () => {
  let server: TestServer;
  let sandbox: SandboxSourceStore;
  let admin: string;

  beforeAll(async () => {
    // Room for one or two of the burst's sessions at a time.
    server = await startTestServer({ SANDBOX_MAX_MB: "1" });
    sandbox = created[created.length - 1];
    admin = await server.adminToken();
    // The token verified once, so that no request of a burst waits for the verification.
    await createOk(server, admin, flat("warm-up"), "sandbox", "?account_id=warm-up");
  });

  afterAll(async () => {
    await server?.close();
  });

  /** Up to `bursts` bursts of 50 concurrent creates, one account each; stops after one with a refusal. */
  async function burstUntilRefused<T>(
    bursts: number,
    create: (account: string) => Promise<T>,
    refused: (outcome: T) => boolean,
  ): Promise<T[]> {
    const outcomes: T[] = [];
    for (let burst = 0; burst < bursts; burst++) {
      const accounts = Array.from({ length: 50 }, (_, i) => `burst-${burst}-${i}-${unique("a")}`);
      outcomes.push(...(await Promise.all(accounts.map(create))));
      expect(sandbox.bytesUsed()).toBeLessThanOrEqual(MIB);
      if (outcomes.some(refused)) break;
    }
    return outcomes;
  }

  it("REST: each create is 201 or 429 resource_exhausted with Retry-After: 1; the budget holds", async () => {
    const body = JSON.stringify(collection(fields("burst", 150)));
    const outcomes = await burstUntilRefused(
      20,
      async (account) => {
        const res = await server.request("POST", `/sandbox/sources?account_id=${account}`, {
          token: admin,
          body,
          headers: { "content-type": "application/json" },
        });
        const text = await res.text();
        return { status: res.status, retryAfter: res.headers.get("retry-after"), text };
      },
      (outcome) => outcome.status === 429,
    );
    const refusals = outcomes.filter((o) => o.status === 429);
    expect(refusals.length, "no create of the bursts was refused").toBeGreaterThan(0);
    for (const outcome of outcomes) expect([201, 429], outcome.text).toContain(outcome.status);
    for (const refusal of refusals) {
      expect(refusal.retryAfter).toBe("1");
      const problem = JSON.parse(refusal.text);
      expect(problem).toMatchObject({ status: 429, code: "resource_exhausted" });
      expect(problem.detail).toMatch(/^the sandbox holds at most 1 MB of memory across all accounts, .*retry in 1 s$/);
    }
    // Production answers throughout.
    const user = await server.userToken(unique("acct-prod"));
    await createOk(server, user, flat(unique("prod")), "production");
  });

  it("gRPC (Connect's client): RESOURCE_EXHAUSTED with retry-after in the metadata", async () => {
    const client = createClient(SandboxSourceLedgerService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const headers = { authorization: `Bearer ${admin}` };
    const period = {
      startAt: { seconds: BigInt(Date.parse(START) / 1000) },
      endAt: { seconds: BigInt(Date.parse(END) / 1000) },
    };
    const sources = Array.from({ length: 150 }, (_, i) => {
      const ring = (circle().coordinates as number[][][])[0];
      return {
        altId: `g-${i}`,
        geometry: { kind: { case: "polygon" as const, value: { rings: [{ coordinates: ring.flat() }] } } },
        ...period,
      };
    });
    const outcomes = await burstUntilRefused(
      20,
      (accountId) =>
        client.createSources({ accountId, sources }, { headers }).then(
          () => null,
          (error: unknown) => ConnectError.from(error),
        ),
      (outcome) => outcome !== null,
    );
    const refusals = outcomes.filter((o): o is ConnectError => o !== null);
    expect(refusals.length, "no create of the bursts was refused").toBeGreaterThan(0);
    for (const error of refusals) {
      expect(error.code, error.message).toBe(Code.ResourceExhausted);
      expect(error.metadata.get("retry-after")).toBe("1");
      expect(error.rawMessage).toContain("across all accounts");
    }
  });
});

describe("SANDBOX_MAX_SESSIONS", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ SANDBOX_MAX_SESSIONS: "3" });
  });

  afterAll(async () => {
    await server?.close();
  });

  it("an admin opening a fourth session evicts the least recently used idle one; its ids answer 404", async () => {
    const admin = await server.adminToken();
    const firsts: string[] = [];
    for (const account of ["cap-a", "cap-b", "cap-c"]) {
      const [record] = await createOk(server, admin, flat(`${account}-1`), "sandbox", `?account_id=${account}`);
      firsts.push(record.id);
    }
    // cap-a's own use makes cap-b the least recently used.
    const owner = await server.userToken("cap-a");
    expect((await server.request("GET", `/sandbox/sources/${firsts[0]}`, { token: owner })).status).toBe(200);

    await createOk(server, admin, flat("cap-d-1"), "sandbox", "?account_id=cap-d");
    await expectProblem(
      await server.request("GET", `/sandbox/sources/${firsts[1]}`, { token: admin }),
      404,
      "not_found",
    );
    for (const id of [firsts[0], firsts[2]]) {
      expect((await server.request("GET", `/sandbox/sources/${id}`, { token: admin })).status).toBe(200);
    }
    // A create in a session that exists opens none: nobody is evicted.
    await createOk(server, admin, flat("cap-d-2"), "sandbox", "?account_id=cap-d");
    for (const id of [firsts[0], firsts[2]]) {
      expect((await server.request("GET", `/sandbox/sources/${id}`, { token: admin })).status).toBe(200);
    }
    // /metrics counts the one eviction and shows the three sessions held.
    const metrics = await (await server.request("GET", "/metrics")).text();
    expect(metrics).toMatch(/^source_ledger_sandbox_evictions_total 1$/m);
    expect(metrics).toMatch(/^source_ledger_sandbox_sessions 3$/m);
  });
});

describe("the compact layout gives geometry back exactly as submitted", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });

  afterAll(async () => {
    await server?.close();
  });

  it("REST: a MultiPolygon with a hole, -0 and altitudes (dropped) reads back from create, get and list", async () => {
    const token = await server.userToken(unique("acct-exact"));
    // Written by hand: JSON.stringify would write -0 as 0.
    const geometry =
      '{"type":"MultiPolygon","coordinates":[' +
      "[[[-0,-0,12.5],[2.000000000000001,-0],[2.000000000000001,2,-3],[-0,2],[-0,-0,7]]," +
      "[[0.5,0.5],[0.5,1.5],[1.5,1.5],[1.5,0.5],[0.5,0.5]]]," +
      "[[[10.123456789012344,10],[11,10],[11,11],[10.123456789012344,11],[10.123456789012344,10]]]]}";
    const body = `{"alt_id":"exact","start_at":"${START}","end_at":"${END}","geometry":${geometry}}`;
    const [created] = await expectJson<{ id: string; geometry: Json }[]>(
      await server.request("POST", "/sandbox/sources", {
        token,
        body,
        headers: { "content-type": "application/json" },
      }),
      201,
    );
    const expected = {
      type: "MultiPolygon",
      coordinates: [
        [
          [
            [0, 0],
            [2.000000000000001, 0],
            [2.000000000000001, 2],
            [0, 2],
            [0, 0],
          ],
          [
            [0.5, 0.5],
            [0.5, 1.5],
            [1.5, 1.5],
            [1.5, 0.5],
            [0.5, 0.5],
          ],
        ],
        [
          [
            [10.123456789012344, 10],
            [11, 10],
            [11, 11],
            [10.123456789012344, 11],
            [10.123456789012344, 10],
          ],
        ],
      ],
    };
    expect(created.geometry).toEqual(expected);
    const got = await expectJson<{ geometry: Json }>(
      await server.request("GET", `/sandbox/sources/${created.id}`, { token }),
      200,
    );
    expect(got.geometry).toEqual(expected);
    const [listed] = await expectJson<{ geometry: Json }[]>(
      await server.request("GET", "/sandbox/sources?alt_id=exact", { token }),
      200,
    );
    expect(listed.geometry).toEqual(expected);
  });

  it("gRPC (binary): every double to the bit, -0 as 0 (as every store and codec writes it), holes and parts in order", async () => {
    const client = createClient(SandboxSourceLedgerService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const headers = { authorization: `Bearer ${await server.userToken(unique("acct-exact-grpc"))}` };
    const shell = [-0, -0, 2, -0, 2, 2, -0, 2, -0, -0];
    const hole = [0.5, 0.5, 0.5, 1.5, 1.5, 1.5, 1.5, 0.5, 0.5, 0.5];
    const part2 = [10, 10, 11, 10, 0.1 + 0.2 + 10.7, 11, 10, 11, 10, 10];
    const polygon = (rings: number[][]) => ({ rings: rings.map((coordinates) => ({ coordinates })) });
    const created = await client.createSources(
      {
        sources: [
          {
            altId: "exact-grpc",
            geometry: {
              kind: { case: "multiPolygon", value: { polygons: [polygon([shell, hole]), polygon([part2])] } },
            },
            startAt: { seconds: BigInt(Date.parse(START) / 1000) },
            endAt: { seconds: BigInt(Date.parse(END) / 1000) },
          },
        ],
      },
      { headers },
    );
    const { source } = await client.getSource({ id: created.sources[0].id }, { headers });
    const kind = source?.geometry?.kind;
    expect(kind?.case).toBe("multiPolygon");
    const rings =
      kind?.case === "multiPolygon" ? kind.value.polygons.map((p) => p.rings.map((r) => r.coordinates)) : [];
    // toStrictEqual compares with Object.is: any -0 left fails, and every other double is exact.
    expect(rings).toStrictEqual([[shell.map((c) => c + 0), hole], [part2]]);
    expect(Object.is(rings[0][0][0], 0)).toBe(true);
  });
});
