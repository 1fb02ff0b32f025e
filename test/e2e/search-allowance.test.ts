/**
 * A search whose candidates fail the exact test is read in bounded turns (docs/api.md §13): each
 * read of the store stops once its exact tests have read EXACT_TEST_POSITIONS positions of candidate
 * geometry. A page that holds a record by then ends there, with a next link (REST) or
 * next_page_token (gRPC) resuming after the last candidate tested; a page that holds none reads on
 * in a later turn of the event loop (up to READ_ON_TURNS reads; test/ledger covers the cap), so
 * no page here but the last is empty (GDAL stops at an empty page). The matches of an offset are skipped across turns. Both environments, REST and gRPC.
 *
 * The fixture, in list order: a small source on a square "donut" area, three sources of 100,000
 * positions inside its hole (their boxes meet its envelope, their geometry never meets it), then
 * two more small sources on the donut. Two decoys spend the allowance. A search `as_of` a past
 * instant (production) walks the sources as they were in the same turns.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXACT_TEST_POSITIONS, READ_ON_TURNS } from "../../src/model/exact-tests.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc, ts } from "./grpc-support.js";
import {
  createAll,
  decoyInHole,
  donutAt,
  featureOf,
  type Geometry,
  type Json,
  nextLink,
  protoGeometry,
  type RpcSource,
  rect,
  rpcOk,
  serviceOf,
  walkRest,
} from "./paging-support.js";
import { type Environment, expectJson, pathOf, type SourceRecord } from "./rest-support.js";

const [X, Y] = [100, 10];
const DECOY_POSITIONS = 100_000;
const DECOYS = 3;

/** The area: [X-1, X+20] × [Y-1, Y+20] with a hole [X+0.01, X+19] × [Y+0.01, Y+19]. */
const DONUT = donutAt(X, Y);
/** A narrower donut around the decoys only: their boxes meet its envelope, nothing else does. */
const WEST = rect(X - 1, Y - 1, X + 5, Y + 20, [X + 0.01, Y + 0.01, X + 4.9, Y + 19]);

let server: TestServer;
let client: LedgerGrpc;
let token: string;
/** Per environment, the three matches' ids in list order. */
const matches: Record<Environment, string[]> = { production: [], sandbox: [] };

beforeAll(async () => {
  // Two decoys must spend the allowance, and one must not.
  expect(2 * DECOY_POSITIONS).toBeGreaterThanOrEqual(EXACT_TEST_POSITIONS);
  expect(DECOY_POSITIONS).toBeLessThan(EXACT_TEST_POSITIONS);
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
  token = await server.userToken("acct-search-allowance");
  const decoys = Array.from({ length: DECOYS }, (_, i) =>
    featureOf(`decoy-${i}`, decoyInHole(X, Y, i, DECOY_POSITIONS)),
  );
  const onTheRing = (i: number) => featureOf(`on-the-ring-${i}`, rect(X + 19.5, Y + 1 + i, X + 19.7, Y + 1.2 + i));
  for (const env of ["production", "sandbox"] as const) {
    // One request each, in this order: the list order.
    const [first] = await createAll(server, token, [onTheRing(0)], env);
    await createAll(server, token, decoys, env);
    const [second] = await createAll(server, token, [onTheRing(1)], env);
    const [third] = await createAll(server, token, [onTheRing(2)], env);
    matches[env].push(first.id, second.id, third.id);
  }
}, 180_000);

afterAll(async () => {
  client?.close();
  await server?.close();
});

describe.each(["production", "sandbox"] as const)("%s", (env) => {
  it("REST: the first page ends after two decoys with its one match and a Link; the next holds the other two", async () => {
    const walk = await walkRest(server, token, pathOf(env, "/search"), { body: { intersects: DONUT, limit: 10 } });
    expect(walk.pageSizes).toEqual([1, 2]);
    expect(walk.links).toHaveLength(1);
    expect(walk.records.map((r) => r.id)).toEqual(matches[env]);
  });

  it("REST: a page that would be empty reads on; the offset's matches are skipped across turns", async () => {
    // Offset 2: the first match skipped, two decoys spend the allowance with one match still to
    // skip; the next turn tests the third decoy, skips the second match, keeps the third.
    const walk = await walkRest(server, token, pathOf(env, "/search"), {
      body: { intersects: DONUT, limit: 10, offset: 2 },
    });
    expect(walk.pageSizes).toEqual([1]);
    expect(walk.records.map((r) => r.id)).toEqual(matches[env].slice(2));
  });

  it("REST: a search only the decoys' boxes meet answers one empty page, without a Link", async () => {
    const walk = await walkRest(server, token, pathOf(env, "/search"), { body: { intersects: WEST, limit: 10 } });
    expect(walk.pageSizes).toEqual([0]);
    expect(walk.links).toEqual([]);
  });

  it("gRPC: SearchSources ends its pages the same way; next_page_token resumes after the decoys", async () => {
    const service = serviceOf(env);
    const search = (geometry: Geometry, query: Json) =>
      rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        service,
        "SearchSources",
        { geometry: protoGeometry(geometry), query },
        token,
      );
    const first = await search(DONUT, { limit: 10 });
    expect(first.sources.map((s) => s.id)).toEqual(matches[env].slice(0, 1));
    expect(first.next_page_token).not.toBe("");
    const second = await search(DONUT, { limit: 10, page_token: first.next_page_token });
    expect(second.sources.map((s) => s.id)).toEqual(matches[env].slice(1));
    expect(second.next_page_token).toBe("");

    const skipping = await search(DONUT, { limit: 10, offset: 2 });
    expect(skipping.sources.map((s) => s.id)).toEqual(matches[env].slice(2));
    expect(skipping.next_page_token).toBe("");
    expect(await search(WEST, { limit: 10 })).toEqual({ sources: [], next_page_token: "" });
  });
});

describe("production, an account whose decoys outlast READ_ON_TURNS reads", () => {
  it("REST: the first page is answered empty with a Link after ten reads; the next holds the match, with the offset carried", async () => {
    const account = await server.userToken("acct-search-allowance-cap");
    // Two decoys a read: READ_ON_TURNS reads test 2 × READ_ON_TURNS of them, and one more follows.
    const decoys = Array.from({ length: 2 * READ_ON_TURNS + 1 }, (_, i) =>
      featureOf(`cap-decoy-${i}`, decoyInHole(X, Y, i, DECOY_POSITIONS)),
    );
    await createAll(server, account, decoys, "production", 3);
    const matchesHere: string[] = [];
    for (const i of [0, 1]) {
      const [created] = await createAll(server, account, [
        featureOf(`cap-ring-${i}`, rect(X + 19.5, Y + 5 + i, X + 19.7, Y + 5.2 + i)),
      ]);
      matchesHere.push(created.id);
    }
    const walk = await walkRest(server, account, pathOf("production", "/search"), {
      body: { intersects: DONUT, limit: 10 },
    });
    expect(walk.pageSizes).toEqual([0, 2]);
    expect(walk.records.map((r) => r.id)).toEqual(matchesHere);
    // With an offset: the empty page's token carries the match still to skip; the Link is
    // followed with the body without its offset (page_token with offset is a 422).
    const body = { intersects: DONUT, limit: 10 };
    const first = await server.request("POST", pathOf("production", "/search"), {
      token: account,
      json: { ...body, offset: 1 },
    });
    const link = nextLink(first);
    expect(await expectJson<SourceRecord[]>(first, 200)).toEqual([]);
    expect(link).not.toBeNull();
    const second = await server.request("POST", link as string, { token: account, json: body });
    expect(nextLink(second)).toBeNull();
    expect((await expectJson<SourceRecord[]>(second, 200)).map((r) => r.id)).toEqual(matchesHere.slice(1));
  }, 120_000);
});

describe("production, a search as_of an instant (docs/api.md §13, §14): the same turns over the sources as they were", () => {
  it("REST and gRPC: pages end after the decoys as a live search's do, the records as they were at the instant", async () => {
    const account = await server.userToken("acct-search-allowance-as-of");
    const onTheRing = (i: number) => featureOf(`as-of-ring-${i}`, rect(X + 19.5, Y + 1 + i, X + 19.7, Y + 1.2 + i));
    const decoys = Array.from({ length: DECOYS }, (_, i) =>
      featureOf(`as-of-decoy-${i}`, decoyInHole(X, Y, i, DECOY_POSITIONS)),
    );
    const [first] = await createAll(server, account, [onTheRing(0)]);
    await createAll(server, account, decoys);
    const [second] = await createAll(server, account, [onTheRing(1)]);
    const [third] = await createAll(server, account, [onTheRing(2)]);
    await sleep(5);
    const instant = new Date();
    await sleep(5);
    // Gone from the live ledger after the instant: only a read of the past still finds it.
    expect((await server.request("DELETE", `/sources/${third.id}`, { token: account })).status).toBe(204);
    const then = [first.id, second.id, third.id];

    const walk = await walkRest(server, account, pathOf("production", "/search"), {
      body: { intersects: DONUT, limit: 10, as_of: instant.toISOString() },
    });
    expect(walk.pageSizes).toEqual([1, 2]);
    expect(walk.records.map((r) => r.id)).toEqual(then);
    const skipping = await walkRest(server, account, pathOf("production", "/search"), {
      body: { intersects: DONUT, limit: 10, offset: 2, as_of: instant.toISOString() },
    });
    expect(skipping.records.map((r) => r.id)).toEqual(then.slice(2));
    // The live search no longer holds the deleted one.
    const live = await walkRest(server, account, pathOf("production", "/search"), {
      body: { intersects: DONUT, limit: 10 },
    });
    expect(live.records.map((r) => r.id)).toEqual(then.slice(0, 2));

    const asOf = ts(instant.toISOString());
    const search = (query: Json) =>
      rpcOk<{ sources: RpcSource[]; next_page_token: string }>(
        client,
        serviceOf("production"),
        "SearchSources",
        { geometry: protoGeometry(DONUT), query: { ...query, as_of: asOf } },
        account,
      );
    const page1 = await search({ limit: 10 });
    expect(page1.sources.map((s) => s.id)).toEqual(then.slice(0, 1));
    expect(page1.next_page_token).not.toBe("");
    const page2 = await search({ limit: 10, page_token: page1.next_page_token });
    expect(page2.sources.map((s) => s.id)).toEqual(then.slice(1));
    expect(page2.next_page_token).toBe("");
  }, 120_000);
});
