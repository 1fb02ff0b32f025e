/**
 * Keyset paging end to end (docs/api.md §10, contract §10): walking every page of GET /sources by
 * its Link header and of ListSources by next_page_token while another client creates and deletes
 * sources, in production and in the sandbox; page tokens refused when replayed with other filters,
 * by another account, in the other environment, tampered with, or with offset; the Link URL.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prng } from "../support/geometry-fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { fieldViolations, grpc, LedgerGrpc, type ServiceName } from "./grpc-support.js";
import {
  cellAllocator,
  createAll,
  expectDistinct,
  featureOf,
  type Json,
  nextLink,
  type RpcSource,
  rpc,
  rpcOk,
  rpcSourceInput,
  serviceOf,
  tokenOf,
  walkRest,
} from "./paging-support.js";
import { type Environment, expectJson, expectViolation, pathOf, type SourceRecord } from "./rest-support.js";

let server: TestServer;
let client: LedgerGrpc;

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

/** Every source of this file gets a cell of its own: none overlaps another (no conflict analysis work). */
const freshGeometry = cellAllocator(-60, -40, 200, 0.01, 0.004);

const tsMs = (t: { seconds: string; nanos: number }) => Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);

/** List order (docs/api.md §4.5): created_at, then id. */
function byListOrder(a: { at: number; id: string }, b: { at: number; id: string }): number {
  return a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

interface WalkPage {
  ids: string[];
  cursor: string | null;
}

/** One protocol and environment's way to create, delete and page through an account's sources. */
interface WalkTarget {
  /** Creates `count` sources; returns their ids (in request order). */
  create(count: number): Promise<{ id: string; at: number }[]>;
  remove(id: string): Promise<void>;
  /** The first page (cursor null), or the page a cursor (a Link URL, a next_page_token) names. */
  page(cursor: string | null): Promise<WalkPage>;
}

let altCounter = 0;
const nextAlt = (prefix: string) => `${prefix}-${++altCounter}`;

function restTarget(env: Environment, token: string, limit: number): WalkTarget {
  return {
    async create(count) {
      const features = Array.from({ length: count }, () => featureOf(nextAlt("walk"), freshGeometry()));
      const records = await createAll(server, token, features, env);
      return records.map((r) => ({ id: r.id, at: Date.parse(r.created_at) }));
    },
    async remove(id) {
      const res = await server.request("DELETE", pathOf(env, `/${id}`), { token });
      expect(res.status, await res.text()).toBe(204);
    },
    async page(cursor) {
      const res = await server.request("GET", cursor ?? pathOf(env, `?limit=${limit}`), { token });
      const link = nextLink(res);
      const records = await expectJson<SourceRecord[]>(res, 200);
      if (link !== null) {
        // Path-relative, the same path, the caller's limit, no offset.
        expect(link.startsWith(`${pathOf(env)}?`), link).toBe(true);
        const params = new URL(link, server.baseUrl).searchParams;
        expect([...params.keys()].sort()).toEqual(["limit", "page_token"]);
        expect(params.get("limit")).toBe(String(limit));
      }
      return { ids: records.map((r) => r.id), cursor: link };
    },
  };
}

function grpcTarget(service: ServiceName, token: string, limit: number): WalkTarget {
  return {
    async create(count) {
      const created: { id: string; at: number }[] = [];
      for (let i = 0; i < count; i += 1_000) {
        const sources = Array.from({ length: Math.min(1_000, count - i) }, () =>
          rpcSourceInput(nextAlt("walk"), freshGeometry()),
        );
        const response = await rpcOk<{ sources: RpcSource[] }>(client, service, "CreateSources", { sources }, token);
        created.push(...response.sources.map((s) => ({ id: s.id, at: tsMs(s.created_at) })));
      }
      return created;
    },
    async remove(id) {
      await rpcOk(client, service, "DeleteSource", { id }, token);
    },
    async page(cursor) {
      const response = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        service,
        "ListSources",
        { limit, page_token: cursor ?? "" },
        token,
      );
      return { ids: response.sources.map((s) => s.id), cursor: response.next_page_token || null };
    },
  };
}

/**
 * Seeds `seedCount` sources, deletes some of them, then walks every page while, concurrently with
 * each page request, the same account (another client) deletes sources the walk has not reached
 * yet and some it has passed, creates sources (always after the cursor: they are newer than every
 * seeded one) and deletes some of those again. Asserts docs/api.md §10's promise: no record twice,
 * none deleted before the walk, every record live for the whole walk exactly once, in list order.
 */
async function walkUnderChurn(target: WalkTarget, seedCount: number, limit: number, seed: number): Promise<void> {
  const random = prng(seed);
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];

  const seeded = (await target.create(seedCount)).sort(byListOrder).map((s) => s.id);
  const indexOf = new Map(seeded.map((id, i) => [id, i]));
  const alive = new Set(seeded);

  const preDeleted = new Set<string>();
  while (preDeleted.size < Math.ceil(seedCount / 100)) preDeleted.add(pick(seeded));
  for (const id of preDeleted) {
    await target.remove(id);
    alive.delete(id);
  }
  // Every source created from now on is strictly newer than every seeded one.
  await sleep(5);

  const deletedAhead = new Set<string>();
  const deletedBehind = new Set<string>();
  const created: { id: string; mustAppear: boolean; deleted: boolean }[] = [];
  /** A page covers `limit` live records past the cursor; deletions stretch that a little. */
  const margin = 3 * limit;

  async function churn(step: number, maxSeen: number): Promise<void> {
    const work: Promise<void>[] = [];
    const ahead = seeded.filter((id, i) => i > maxSeen + margin && alive.has(id));
    for (let k = 0; k < 2 && ahead.length > 0; k++) {
      const id = ahead.splice(Math.floor(random() * ahead.length), 1)[0];
      alive.delete(id);
      deletedAhead.add(id);
      work.push(target.remove(id));
    }
    const behind = seeded.filter((id, i) => i <= maxSeen && alive.has(id));
    if (behind.length > 0) {
      const id = pick(behind);
      alive.delete(id);
      deletedBehind.add(id);
      work.push(target.remove(id));
    }
    const doomed = created.filter((c) => !c.deleted);
    if (step % 2 === 1 && doomed.length > 0) {
      const victim = pick(doomed);
      victim.deleted = true;
      work.push(target.remove(victim.id));
    }
    work.push(
      target.create(3).then((made) => {
        for (const { id } of made) created.push({ id, mustAppear: false, deleted: false });
      }),
    );
    await Promise.all(work);
  }

  const seen: string[] = [];
  const pageSizes: number[] = [];
  let maxSeen = -1;
  let cursor: string | null = null;
  let cursorIsSeeded = true;
  for (let step = 0; ; step++) {
    expect(step, "the walk does not end").toBeLessThan(seedCount);
    // This request starts after every earlier create finished; a cursor on a seeded record lies
    // before all of them, so the walk must reach each one that is not deleted.
    if (cursorIsSeeded) for (const c of created) c.mustAppear = true;
    const [page]: [WalkPage, unknown] = await Promise.all([target.page(cursor), churn(step, maxSeen)]);
    seen.push(...page.ids);
    pageSizes.push(page.ids.length);
    for (const id of page.ids) maxSeen = Math.max(maxSeen, indexOf.get(id) ?? -1);
    const last = page.ids.at(-1);
    cursorIsSeeded = last !== undefined && indexOf.has(last);
    cursor = page.cursor;
    if (cursor === null) break;
  }

  expectDistinct(seen);
  const seenSet = new Set(seen);
  // Every page but the last is full; the last one has no next link / an empty token.
  expect(
    pageSizes.slice(0, -1).every((n) => n === limit),
    `page sizes ${pageSizes.join(",")}`,
  ).toBe(true);
  expect(pageSizes.at(-1)).toBeLessThanOrEqual(limit);
  expect(pageSizes.length).toBeGreaterThanOrEqual(Math.floor((seedCount * 0.9) / limit));

  const createdIds = new Set(created.map((c) => c.id));
  expect(
    seen.filter((id) => !indexOf.has(id) && !createdIds.has(id)),
    "only this walk's sources",
  ).toEqual([]);
  expect(
    [...preDeleted].filter((id) => seenSet.has(id)),
    "deleted before the walk",
  ).toEqual([]);
  expect(
    [...deletedAhead].filter((id) => seenSet.has(id)),
    "deleted before the walk reached them",
  ).toEqual([]);
  expect(
    [...deletedBehind].filter((id) => !seenSet.has(id)),
    "deleted after the walk passed them",
  ).toEqual([]);
  const liveThroughout = seeded.filter((id) => alive.has(id));
  expect(
    liveThroughout.filter((id) => !seenSet.has(id)),
    "live during the whole walk but skipped",
  ).toEqual([]);
  const mustAppear = created.filter((c) => c.mustAppear && !c.deleted).map((c) => c.id);
  expect(
    mustAppear.filter((id) => !seenSet.has(id)),
    "created after the cursor, never deleted, but skipped",
  ).toEqual([]);
  // Seeded records come in list order.
  const seededOrder = seen.filter((id) => indexOf.has(id)).map((id) => indexOf.get(id) as number);
  expect(seededOrder.every((index, i) => i === 0 || seededOrder[i - 1] < index)).toBe(true);

  // The churn really happened on both sides of the cursor.
  expect(deletedAhead.size).toBeGreaterThanOrEqual(seedCount / limit);
  expect(deletedBehind.size).toBeGreaterThan(5);
  expect(mustAppear.length).toBeGreaterThan(10);
  expect(created.some((c) => c.deleted)).toBe(true);
}

describe("walking every page while another client creates and deletes", () => {
  it("REST, production: 2,500 sources in pages of 100 by the Link header", { timeout: 120_000 }, async () => {
    const token = await server.userToken("acct-walk-rest");
    // Another account's sources never show up (checked: every listed id is this walk's).
    await restTarget("production", await server.userToken("acct-walk-other"), 100).create(50);
    await walkUnderChurn(restTarget("production", token, 100), 2_500, 100, 11);
  });

  it("gRPC, production: 2,500 sources in pages of 100 by next_page_token", { timeout: 120_000 }, async () => {
    const token = await server.userToken("acct-walk-grpc");
    await walkUnderChurn(grpcTarget("SourceLedgerService", token, 100), 2_500, 100, 12);
  });

  it("REST, sandbox: 600 sources in pages of 50", { timeout: 60_000 }, async () => {
    const token = await server.userToken("acct-walk-sbx-rest");
    await walkUnderChurn(restTarget("sandbox", token, 50), 600, 50, 13);
  });

  it("gRPC, sandbox: 600 sources in pages of 50", { timeout: 60_000 }, async () => {
    const token = await server.userToken("acct-walk-sbx-grpc");
    await walkUnderChurn(grpcTarget("SandboxSourceLedgerService", token, 50), 600, 50, 14);
  });
});

// ---- tokens that do not belong to the listing ------------------------------------------------------

/** Tampered variants of a token: characters flipped at the start, middle and end, truncated, extended. */
function tamperedVariants(token: string): [string, string][] {
  const flip = (at: number) => {
    const c = token[at];
    return token.slice(0, at) + (c === "A" ? "B" : "A") + token.slice(at + 1);
  };
  const middle = Math.floor(token.length / 2);
  return [
    ["first character flipped", flip(0)],
    ["a middle character flipped", flip(middle)],
    ["last character flipped", flip(token.length - 1)],
    ["truncated", token.slice(0, -1)],
    ["extended", `${token}AA`],
  ];
}

const NOT_THIS_LISTING = "page_token does not belong to this listing";
const WITH_OFFSET = "page_token cannot be combined with offset";

describe("REST: a page token is bound to its listing", () => {
  let tokenA: string;
  let tokenB: string;
  const T: Record<Environment, string> = { production: "", sandbox: "" };

  beforeAll(async () => {
    tokenA = await server.userToken("acct-token-a");
    tokenB = await server.userToken("acct-token-b");
    for (const env of ["production", "sandbox"] as const) {
      const features = Array.from({ length: 5 }, (_, i) =>
        featureOf(`m1-${i}`, freshGeometry(), { methodology: "M1", source_type: "FIELD" }),
      );
      await createAll(server, tokenA, features, env);
      await createAll(server, tokenB, features, env);
      const link = nextLink(await server.request("GET", pathOf(env, "?methodology=M1&limit=2"), { token: tokenA }));
      expect(link).not.toBeNull();
      T[env] = tokenOf(link as string);
    }
  });

  for (const env of ["production", "sandbox"] as const) {
    const other: Environment = env === "production" ? "sandbox" : "production";

    it(`${env}: the same listing accepts its token and resumes after the first page`, async () => {
      const res = await server.request("GET", pathOf(env, `?methodology=M1&limit=2&page_token=${T[env]}`), {
        token: tokenA,
      });
      expect(nextLink(res)).not.toBeNull();
      const page = await expectJson<SourceRecord[]>(res, 200);
      const all = await expectJson<SourceRecord[]>(
        await server.request("GET", pathOf(env, "?methodology=M1"), { token: tokenA }),
        200,
      );
      expect(page.map((r) => r.id)).toEqual(all.slice(2, 4).map((r) => r.id));
    });

    it(`${env}: the limit is not bound to the token: it may change from page to page (docs/api.md §12)`, async () => {
      const all = await expectJson<SourceRecord[]>(
        await server.request("GET", pathOf(env, "?methodology=M1"), { token: tokenA }),
        200,
      );
      const res = await server.request("GET", pathOf(env, `?methodology=M1&limit=3&page_token=${T[env]}`), {
        token: tokenA,
      });
      expect(res.headers.get("link")).toBeNull();
      expect((await expectJson<SourceRecord[]>(res, 200)).map((r) => r.id)).toEqual(all.slice(2).map((r) => r.id));
    });

    const replays: [string, () => string, () => string][] = [
      ["other filters", () => pathOf(env, `?methodology=M2&limit=2&page_token=${T[env]}`), () => tokenA],
      [
        "a filter added",
        () => pathOf(env, `?methodology=M1&source_type=FIELD&limit=2&page_token=${T[env]}`),
        () => tokenA,
      ],
      ["the filters dropped", () => pathOf(env, `?limit=2&page_token=${T[env]}`), () => tokenA],
      ["another account", () => pathOf(env, `?methodology=M1&limit=2&page_token=${T[env]}`), () => tokenB],
      [`the ${other}`, () => pathOf(other, `?methodology=M1&limit=2&page_token=${T[env]}`), () => tokenA],
    ];
    it.each(replays)(`${env} token replayed with %s → 422 at /query/page_token`, async (_, path, token) => {
      await expectViolation(
        await server.request("GET", path(), { token: token() }),
        "/query/page_token",
        NOT_THIS_LISTING,
      );
    });

    it(`${env}: a tampered token → 422 at /query/page_token`, async () => {
      for (const [how, tampered] of tamperedVariants(T[env])) {
        const res = await server.request(
          "GET",
          pathOf(env, `?methodology=M1&limit=2&page_token=${encodeURIComponent(tampered)}`),
          { token: tokenA },
        );
        expect(res.status, how).toBe(422);
        await expectViolation(res, "/query/page_token", NOT_THIS_LISTING);
      }
    });

    it(`${env}: page_token with offset → 422 at /query/page_token`, async () => {
      for (const offset of [0, 3]) {
        await expectViolation(
          await server.request("GET", pathOf(env, `?methodology=M1&limit=2&page_token=${T[env]}&offset=${offset}`), {
            token: tokenA,
          }),
          "/query/page_token",
          WITH_OFFSET,
        );
      }
    });
  }
});

describe("gRPC: a page token is bound to its listing", () => {
  let tokenA: string;
  let tokenB: string;
  const T: Record<Environment, string> = { production: "", sandbox: "" };
  const listing = { methodology: "M1", limit: 2 };

  beforeAll(async () => {
    tokenA = await server.userToken("acct-rpc-token-a");
    tokenB = await server.userToken("acct-rpc-token-b");
    for (const env of ["production", "sandbox"] as const) {
      for (const token of [tokenA, tokenB]) {
        const sources = Array.from({ length: 5 }, (_, i) =>
          rpcSourceInput(`m1-${i}`, freshGeometry(), { methodology: "M1" }),
        );
        await rpcOk(client, serviceOf(env), "CreateSources", { sources }, token);
      }
      const first = await rpcOk<{ next_page_token: string }>(client, serviceOf(env), "ListSources", listing, tokenA);
      expect(first.next_page_token).not.toBe("");
      T[env] = first.next_page_token;
    }
  });

  async function expectTokenRefused(service: ServiceName, request: Json, token: string, detail: string): Promise<void> {
    const outcome = await rpc(client, service, "ListSources", request, token);
    expect(outcome.code, outcome.details).toBe(grpc.status.INVALID_ARGUMENT);
    const violations = fieldViolations(outcome);
    expect(violations.map((v) => v.field)).toEqual(["page_token"]);
    expect(violations[0].description).toContain(detail);
  }

  for (const env of ["production", "sandbox"] as const) {
    const service = serviceOf(env);
    const otherService = serviceOf(env === "production" ? "sandbox" : "production");

    it(`${env}: the same listing accepts its token; the last page's token is empty`, async () => {
      const second = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        service,
        "ListSources",
        { ...listing, page_token: T[env] },
        tokenA,
      );
      expect(second.sources).toHaveLength(2);
      const third = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        service,
        "ListSources",
        { ...listing, page_token: second.next_page_token },
        tokenA,
      );
      expect(third.sources).toHaveLength(1);
      expect(third.next_page_token).toBe("");
    });

    it(`${env}: the limit may change from page to page`, async () => {
      const rest = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        service,
        "ListSources",
        { methodology: "M1", limit: 1000, page_token: T[env] },
        tokenA,
      );
      expect(rest.sources).toHaveLength(3);
      expect(rest.next_page_token).toBe("");
    });

    it(`${env}: replayed with other filters, by another account, in the other environment → INVALID_ARGUMENT on page_token`, async () => {
      await expectTokenRefused(service, { methodology: "M2", limit: 2, page_token: T[env] }, tokenA, NOT_THIS_LISTING);
      await expectTokenRefused(service, { limit: 2, page_token: T[env] }, tokenA, NOT_THIS_LISTING);
      await expectTokenRefused(
        service,
        { ...listing, source_type: "SOURCE_TYPE_FIELD", page_token: T[env] },
        tokenA,
        NOT_THIS_LISTING,
      );
      await expectTokenRefused(service, { ...listing, page_token: T[env] }, tokenB, NOT_THIS_LISTING);
      await expectTokenRefused(otherService, { ...listing, page_token: T[env] }, tokenA, NOT_THIS_LISTING);
    });

    it(`${env}: tampered → INVALID_ARGUMENT on page_token`, async () => {
      for (const [, tampered] of tamperedVariants(T[env])) {
        await expectTokenRefused(service, { ...listing, page_token: tampered }, tokenA, NOT_THIS_LISTING);
      }
    });

    it(`${env}: with offset → INVALID_ARGUMENT on page_token`, async () => {
      for (const offset of [0, 3]) {
        await expectTokenRefused(service, { ...listing, page_token: T[env], offset }, tokenA, WITH_OFFSET);
      }
    });
  }
});

// ---- the Link URL ---------------------------------------------------------------------------------

describe("the Link URL repeats the caller's filters and limit", () => {
  for (const env of ["production", "sandbox"] as const) {
    it(`${env}: filters (repeated, encoded, the new ones) and limit kept, offset dropped; following it pages on`, async () => {
      const token = await server.userToken(`acct-link-${env}`);
      const features = Array.from({ length: 9 }, (_, i) =>
        featureOf(`link-${i}`, freshGeometry(), {
          methodology: "M one/ü&=+",
          source_type: "FIELD",
          attribute_type: i % 2 === 0 ? ["CARBON_REMOVAL"] : ["BIODIVERSITY", "WATER_QUALITY"],
        }),
      );
      const created = await createAll(server, token, features, env);
      await createAll(server, token, [featureOf("link-other", freshGeometry(), { methodology: "other" })], env);

      const filters = new URLSearchParams([
        ["methodology", "M one/ü&=+"],
        ["attribute_type", "CARBON_REMOVAL"],
        ["attribute_type", "BIODIVERSITY"],
        ["source_type", "FIELD"],
        ["conflict", "false"],
        ["active_at", "2024-06-01T12:00:00+02:00"],
        ["bbox", "-60.5,-40.5,-30,-30"],
      ]);
      const first = `${pathOf(env)}?${filters}&limit=2&offset=1`;
      const res = await server.request("GET", first, { token });
      const link = nextLink(res);
      const page = await expectJson<SourceRecord[]>(res, 200);
      expect(page).toHaveLength(2);
      expect(link).not.toBeNull();
      // A path-relative reference to the same path.
      expect((link as string).startsWith(`${pathOf(env)}?`), link as string).toBe(true);
      const params = new URL(link as string, server.baseUrl).searchParams;
      const expected = new URLSearchParams(filters);
      expected.append("limit", "2");
      const kept = [...params].filter(([name]) => name !== "page_token");
      expect(kept).toEqual([...expected]);
      expect(params.getAll("page_token")).toHaveLength(1);
      expect(params.has("offset")).toBe(false);

      // Following the links gives the rest of the listing, in order, and ends without a Link.
      const rest = await walkRest(server, token, link as string);
      const full = await expectJson<SourceRecord[]>(
        await server.request("GET", `${pathOf(env)}?${filters}&limit=1000`, { token }),
        200,
      );
      expect(new Set(full.map((r) => r.id))).toEqual(new Set(created.map((r) => r.id)));
      expect([...page, ...rest.records]).toEqual(full.slice(1));
      expect(rest.pageSizes).toEqual([2, 2, 2]);
      for (const next of rest.links) {
        expect([...new URL(next, server.baseUrl).searchParams].filter(([name]) => name !== "page_token")).toEqual([
          ...expected,
        ]);
      }
    });

    it(`${env}: a listing that ends exactly at a page boundary has no Link on its last (full) page`, async () => {
      const token = await server.userToken(`acct-boundary-${env}`);
      await createAll(
        server,
        token,
        Array.from({ length: 4 }, (_, i) => featureOf(`b-${i}`, freshGeometry())),
        env,
      );
      const walk = await walkRest(server, token, pathOf(env, "?limit=2"));
      expect(walk.pageSizes).toEqual([2, 2]);
      expect(walk.links).toHaveLength(1);
      const single = await server.request("GET", pathOf(env, "?limit=4"), { token });
      expect(single.headers.get("link")).toBeNull();
      expect(await expectJson<SourceRecord[]>(single, 200)).toHaveLength(4);
    });
  }
});

// ---- the cursor's own record, admins, restarts ---------------------------------------------------

describe("keyset edges", () => {
  for (const env of ["production", "sandbox"] as const) {
    it(`${env}, REST and gRPC: the next page starts right after a cursor whose record was deleted`, async () => {
      const token = await server.userToken(`acct-cursor-${env}`);
      await createAll(
        server,
        token,
        Array.from({ length: 8 }, (_, i) => featureOf(`c-${i}`, freshGeometry())),
        env,
      );
      const all = await expectJson<SourceRecord[]>(await server.request("GET", pathOf(env), { token }), 200);
      expect(all).toHaveLength(8);

      // REST: page 1 holds 0..2; delete 2 (the cursor) and 3; page 2 is 4..6.
      const res = await server.request("GET", pathOf(env, "?limit=3"), { token });
      const link = nextLink(res);
      expect((await expectJson<SourceRecord[]>(res, 200)).map((r) => r.id)).toEqual(all.slice(0, 3).map((r) => r.id));
      // gRPC: the same first page, its token taken before the deletes.
      const first = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        serviceOf(env),
        "ListSources",
        { limit: 3 },
        token,
      );
      expect(first.sources.map((s) => s.id)).toEqual(all.slice(0, 3).map((r) => r.id));
      for (const doomed of [all[2], all[3]]) {
        expect((await server.request("DELETE", pathOf(env, `/${doomed.id}`), { token })).status).toBe(204);
      }
      const second = await walkRest(server, token, link as string);
      expect(second.records.map((r) => r.id)).toEqual(all.slice(4).map((r) => r.id));
      expect(second.pageSizes).toEqual([3, 1]);

      const rpcSecond = await rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        serviceOf(env),
        "ListSources",
        { limit: 3, page_token: first.next_page_token },
        token,
      );
      expect(rpcSecond.sources.map((s) => s.id)).toEqual(all.slice(4, 7).map((r) => r.id));

      // Every record after the cursor deleted: the token still works and gives an empty last page.
      for (const doomed of all.slice(4)) {
        expect((await server.request("DELETE", pathOf(env, `/${doomed.id}`), { token })).status).toBe(204);
      }
      const empty = await server.request("GET", link as string, { token });
      expect(empty.headers.get("link")).toBeNull();
      expect(await expectJson(empty, 200)).toEqual([]);
    });
  }

  it("an admin walks every account's sources once; its token is not a user's", async () => {
    const admin = await server.adminToken();
    for (const account of ["acct-admin-1", "acct-admin-2"]) {
      const features = Array.from({ length: 5 }, (_, i) => featureOf(`adm-${i}`, freshGeometry()));
      await createAll(server, await server.userToken(account), features);
    }
    const everything = await walkRest(server, admin, "/sources?limit=1000");
    // About 20 pages, whatever the other tests of this file left.
    const pageSize = Math.max(3, Math.ceil(everything.records.length / 20));
    const walk = await walkRest(server, admin, `/sources?limit=${pageSize}`);
    expect(walk.records.map((r) => r.id)).toEqual(everything.records.map((r) => r.id));
    expect(new Set(walk.records.map((r) => r.account_id)).size).toBeGreaterThan(1);
    expect(walk.pageSizes.length).toBeGreaterThanOrEqual(4);
    // The admin's token, replayed by a user of one of the accounts.
    const user = await server.userToken(walk.records[0].account_id);
    await expectViolation(
      await server.request("GET", walk.links[0], { token: user }),
      "/query/page_token",
      NOT_THIS_LISTING,
    );
    // account_id is one of the filters a token is bound to.
    const scoped = nextLink(
      await server.request("GET", "/sources?account_id=acct-admin-1&limit=2", { token: admin }),
    ) as string;
    expect(new URL(scoped, server.baseUrl).searchParams.get("account_id")).toBe("acct-admin-1");
    const swapped = scoped.replace("account_id=acct-admin-1", "account_id=acct-admin-2");
    await expectViolation(
      await server.request("GET", swapped, { token: admin }),
      "/query/page_token",
      NOT_THIS_LISTING,
    );
  });
});

describe("a production page token outlives a restart (docs/api.md §10: tokens do not expire)", () => {
  it("REST and gRPC tokens minted before a restart resume the listing after it", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-paging-restart-"));
    const env = { SQLITE_PATH: join(dir, "ledger.sqlite") };
    try {
      const before = await startTestServer(env);
      let all: SourceRecord[];
      let link: string;
      let rpcToken: string;
      try {
        const token = await before.userToken("acct-restart");
        await createAll(
          before,
          token,
          Array.from({ length: 5 }, (_, i) => featureOf(`r-${i}`, freshGeometry(), { methodology: "R" })),
        );
        all = await expectJson<SourceRecord[]>(await before.request("GET", "/sources?methodology=R", { token }), 200);
        link = nextLink(await before.request("GET", "/sources?methodology=R&limit=2", { token })) as string;
        const rpcClient = new LedgerGrpc(before.port);
        try {
          const first = await rpcOk<{ next_page_token: string }>(
            rpcClient,
            "SourceLedgerService",
            "ListSources",
            { methodology: "R", limit: 2 },
            token,
          );
          rpcToken = first.next_page_token;
        } finally {
          rpcClient.close();
        }
      } finally {
        await before.close();
      }

      const after = await startTestServer(env);
      try {
        const token = await after.userToken("acct-restart");
        const rest = await walkRest(after, token, link);
        expect(rest.records.map((r) => r.id)).toEqual(all.slice(2).map((r) => r.id));
        const rpcClient = new LedgerGrpc(after.port);
        try {
          const second = await rpcOk<{ sources: RpcSource[] }>(
            rpcClient,
            "SourceLedgerService",
            "ListSources",
            { methodology: "R", limit: 2, page_token: rpcToken },
            token,
          );
          expect(second.sources.map((s) => s.id)).toEqual(all.slice(2, 4).map((r) => r.id));
        } finally {
          rpcClient.close();
        }
      } finally {
        await after.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
