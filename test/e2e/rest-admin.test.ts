/**
 * docs/api.md §2, role admin, over REST: listing across accounts, naming the account on create and
 * on delete by alt_id, reading and deleting any account's source; `account_id` from anyone else
 * is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  altIds,
  createOk,
  ENVIRONMENTS,
  expectJson,
  expectProblem,
  expectViolation,
  flat,
  list,
  pathOf,
  type SourceRecord,
  unique,
} from "./rest-support.js";

let server: TestServer;
let admin: string;
const A = "acct-admin-a";
const B = "acct-admin-b";
let tokenA: string;
let tokenB: string;

beforeAll(async () => {
  server = await startTestServer();
  admin = await server.adminToken();
  tokenA = await server.userToken(A);
  tokenB = await server.userToken(B);
});

afterAll(async () => {
  await server?.close();
});

describe.each(ENVIRONMENTS)("%s", (env) => {
  let a1: SourceRecord;
  let a2: SourceRecord;
  let b1: SourceRecord;

  beforeAll(async () => {
    [a1, a2] = await createOk(
      server,
      tokenA,
      {
        type: "FeatureCollection",
        features: [
          {
            type: "Feature",
            id: unique("a1"),
            geometry: {
              type: "Polygon",
              coordinates: [
                [
                  [0, 0],
                  [1, 0],
                  [1, 1],
                  [0, 0],
                ],
              ],
            },
            properties: { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" },
          },
          {
            type: "Feature",
            id: unique("a2"),
            geometry: {
              type: "Polygon",
              coordinates: [
                [
                  [2, 0],
                  [3, 0],
                  [3, 1],
                  [2, 0],
                ],
              ],
            },
            properties: { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" },
          },
        ],
      },
      env,
    );
    [b1] = await createOk(server, tokenB, flat(unique("b1")), env);
  });

  it("GET /sources spans all accounts", async () => {
    const all = await list(server, admin, "limit=1000", env);
    expect(all.map((r) => r.id)).toEqual(expect.arrayContaining([a1.id, a2.id, b1.id]));
    expect(all.find((r) => r.id === a1.id)).toEqual(a1);
    expect(all.find((r) => r.id === b1.id)).toEqual(b1);
    // Users still see only their own account.
    expect((await list(server, tokenA, "limit=1000", env)).every((r) => r.account_id === A)).toBe(true);
  });

  it("account_id= restricts the admin's list to one account", async () => {
    const onlyA = await list(server, admin, `account_id=${A}&limit=1000`, env);
    expect(onlyA.length).toBeGreaterThanOrEqual(2);
    expect(onlyA.every((r) => r.account_id === A)).toBe(true);
    expect(onlyA.map((r) => r.id)).toEqual(expect.arrayContaining([a1.id, a2.id]));
    const onlyB = await list(server, admin, `account_id=${B}&limit=1000`, env);
    expect(onlyB).toContainEqual(b1);
    expect(onlyB.every((r) => r.account_id === B)).toBe(true);
    expect(await list(server, admin, "account_id=acct-nobody", env)).toEqual([]);
  });

  it("an admin without an account claim must name the account on create", async () => {
    const res = await server.request("POST", pathOf(env), { token: admin, json: flat(unique("adm-none")) });
    await expectViolation(res, "/query/account_id", "must name the target account with account_id");
  });

  it("an admin creates in the account named by ?account_id=, visible to that account", async () => {
    const [record] = await createOk(server, admin, flat(unique("adm-made")), env, `?account_id=${B}`);
    expect(record.account_id).toBe(B);
    expect(record.created_by).toBe("Admin");
    expect(record.updated_by).toBe("Admin");
    expect(await expectJson(await server.request("GET", pathOf(env, `/${record.id}`), { token: tokenB }), 200)).toEqual(
      record,
    );
    await expectProblem(await server.request("GET", pathOf(env, `/${record.id}`), { token: tokenA }), 404, "not_found");
  });

  it("an admin with an account claim creates in its own account by default, or in the named one", async () => {
    const own = unique("acct-admin-own");
    const token = await server.adminToken({ [server.issuer.claim("account_id")]: own });
    const [mine] = await createOk(server, token, flat(unique("adm-own")), env);
    expect(mine.account_id).toBe(own);
    const [theirs] = await createOk(server, token, flat(unique("adm-other")), env, `?account_id=${A}`);
    expect(theirs.account_id).toBe(A);
  });

  it("an empty ?account_id= is refused", async () => {
    await expectViolation(
      await server.request("POST", pathOf(env, "?account_id="), { token: admin, json: flat(unique("x")) }),
      "/query/account_id",
      "must not be empty",
    );
    await expectViolation(
      await server.request("GET", pathOf(env, "?account_id="), { token: admin }),
      "/query/account_id",
      "must not be empty",
    );
  });

  it("an admin reads and deletes any account's source by id", async () => {
    expect(await expectJson(await server.request("GET", pathOf(env, `/${a1.id}`), { token: admin }), 200)).toEqual(a1);
    expect(await expectJson(await server.request("GET", pathOf(env, `/${b1.id}`), { token: admin }), 200)).toEqual(b1);
    const [victim] = await createOk(server, tokenB, flat(unique("b-victim")), env);
    const res = await server.request("DELETE", pathOf(env, `/${victim.id}`), { token: admin });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    await expectProblem(await server.request("GET", pathOf(env, `/${victim.id}`), { token: tokenB }), 404, "not_found");
  });

  it("an admin deleting by alt_id must name the account", async () => {
    const [victim] = await createOk(server, tokenA, flat(unique("a-alt-victim")), env);
    const path = pathOf(env, `?alt_id=${encodeURIComponent(victim.alt_id)}`);
    await expectViolation(
      await server.request("DELETE", path, { token: admin }),
      "/query/account_id",
      "must name the account with account_id",
    );
    // Still there.
    expect(await expectJson(await server.request("GET", pathOf(env, `/${victim.id}`), { token: tokenA }), 200)).toEqual(
      victim,
    );
    // The wrong account: 404, and still there.
    await expectProblem(await server.request("DELETE", `${path}&account_id=${B}`, { token: admin }), 404, "not_found");
    const res = await server.request("DELETE", `${path}&account_id=${A}`, { token: admin });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    await expectProblem(await server.request("GET", pathOf(env, `/${victim.id}`), { token: tokenA }), 404, "not_found");
  });

  it("a non-admin passing account_id → 422 on every call that takes it, even naming its own account", async () => {
    for (const account of [A, B]) {
      await expectViolation(
        await server.request("POST", pathOf(env, `?account_id=${account}`), {
          token: tokenA,
          json: flat(unique("na")),
        }),
        "/query/account_id",
        "account_id is accepted only from admin tokens",
      );
      await expectViolation(
        await server.request("GET", pathOf(env, `?account_id=${account}`), { token: tokenA }),
        "/query/account_id",
        "only from admin tokens",
      );
      await expectViolation(
        await server.request("DELETE", pathOf(env, `/${a1.id}?account_id=${account}`), { token: tokenA }),
        "/query/account_id",
        "only from admin tokens",
      );
      await expectViolation(
        await server.request("DELETE", pathOf(env, `?alt_id=${encodeURIComponent(a1.alt_id)}&account_id=${account}`), {
          token: tokenA,
        }),
        "/query/account_id",
        "only from admin tokens",
      );
    }
    // Nothing was created or deleted.
    expect(altIds(await list(server, tokenA, "limit=1000", env))).toEqual(
      expect.arrayContaining([a1.alt_id, a2.alt_id]),
    );
    expect((await list(server, tokenA, "limit=1000", env)).some((r) => r.alt_id.startsWith("na-"))).toBe(false);
  });
});
