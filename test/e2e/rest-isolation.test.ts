/**
 * docs/api.md §2 account isolation over REST, in both environments: another account's sources are
 * invisible (404, not listed, not deletable, exactly as if they did not exist) and stay untouched.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  collection,
  createOk,
  ENVIRONMENTS,
  type Environment,
  expectJson,
  expectProblem,
  feature,
  flat,
  inListOrder,
  list,
  pathOf,
  polygon,
  type SourceRecord,
  unique,
} from "./rest-support.js";

let server: TestServer;
let tokenA: string;
let tokenB: string;
const mine: Partial<Record<Environment, SourceRecord[]>> = {};

const PROPS = {
  methodology: "isolation-methodology",
  steward_id: "isolation-steward",
  project_id: "isolation-project",
  outcome_reporting_year: 2031,
  source_type: "DEVICE",
  attribute_type: ["RENEWABLE_ENERGY"],
  geometry_source: "EXTERNAL_REGISTRY",
};

beforeAll(async () => {
  server = await startTestServer();
  tokenA = await server.userToken(unique("acct-iso-a"));
  tokenB = await server.userToken(unique("acct-iso-b"));
  for (const env of ENVIRONMENTS) {
    mine[env] = await createOk(
      server,
      tokenA,
      collection([
        feature("iso-1", PROPS, polygon(0, 0)),
        feature("iso-2", PROPS, polygon(2, 0)),
        feature("iso-3", PROPS, polygon(4, 0)),
      ]),
      env,
    );
  }
});

afterAll(async () => {
  await server?.close();
});

describe.each(ENVIRONMENTS)("%s", (env) => {
  const records = () => mine[env] as SourceRecord[];

  async function expectUntouched(): Promise<void> {
    expect(await list(server, tokenA, "", env)).toEqual(inListOrder(records()));
    for (const record of records()) {
      expect(
        await expectJson(await server.request("GET", pathOf(env, `/${record.id}`), { token: tokenA }), 200),
      ).toEqual(record);
    }
  }

  it("GET another account's id → 404, with the same answer as for an id that never existed", async () => {
    for (const record of records()) {
      const other = await expectProblem(
        await server.request("GET", pathOf(env, `/${record.id}`), { token: tokenB }),
        404,
        "not_found",
      );
      expect(other).toEqual({
        type: "about:blank",
        title: "Not Found",
        status: 404,
        detail: `source "${record.id}" not found`,
        instance: expect.stringMatching(/^urn:request:/),
        code: "not_found",
        errors: [],
      });
    }
    const fakeId =
      env === "production" ? "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" : "sandbox_00000000-0000-4000-8000-000000000000";
    const none = await expectProblem(
      await server.request("GET", pathOf(env, `/${fakeId}`), { token: tokenB }),
      404,
      "not_found",
    );
    expect(none.detail).toBe(`source "${fakeId}" not found`);
  });

  it("list: not listed, with or without filters", async () => {
    expect(await list(server, tokenB, "", env)).toEqual([]);
    expect(await list(server, tokenB, "limit=1000", env)).toEqual([]);
    for (const query of [
      `methodology=${PROPS.methodology}`,
      `steward_id=${PROPS.steward_id}`,
      `project_id=${PROPS.project_id}`,
      "outcome_reporting_year=2031",
      "source_type=DEVICE",
      "attribute_type=RENEWABLE_ENERGY",
      "geometry_source=EXTERNAL_REGISTRY",
    ]) {
      expect(await list(server, tokenB, query, env), query).toEqual([]);
    }
    if (env === "sandbox") {
      expect(await list(server, tokenB, `id=${records()[0].id}`, env)).toEqual([]);
      expect(await list(server, tokenB, "alt_id=iso-1", env)).toEqual([]);
    }
  });

  it("DELETE by id and by alt_id → 404, and nothing is deleted", async () => {
    for (const record of records()) {
      await expectProblem(
        await server.request("DELETE", pathOf(env, `/${record.id}`), { token: tokenB }),
        404,
        "not_found",
      );
      await expectProblem(
        await server.request("DELETE", pathOf(env, `?alt_id=${record.alt_id}`), { token: tokenB }),
        404,
        "not_found",
      );
    }
    await expectUntouched();
  });

  it("the other account may use the same alt_ids; deleting its own leaves the first account's alone", async () => {
    const [theirs] = await createOk(server, tokenB, flat("iso-1"), env);
    expect(theirs.account_id).not.toBe(records()[0].account_id);
    expect((await server.request("DELETE", pathOf(env, "?alt_id=iso-1"), { token: tokenB })).status).toBe(204);
    expect((await server.request("DELETE", pathOf(env, "?alt_id=iso-1"), { token: tokenB })).status).toBe(404);
    await expectUntouched();
  });

  it("the first account's data is untouched by all of the above", async () => {
    await expectUntouched();
    // And a third account sees nothing of either.
    const tokenC = await server.userToken(unique("acct-iso-c"));
    expect(await list(server, tokenC, "", env)).toEqual([]);
    await expectProblem(
      await server.request("GET", pathOf(env, `/${records()[1].id}`), { token: tokenC }),
      404,
      "not_found",
    );
  });
});

it("an unknown account id in the token only ever sees its own (empty) ledger", async () => {
  const token = await server.userToken(unique("acct-iso-empty"));
  for (const env of ENVIRONMENTS) expect(await list(server, token, "limit=1000", env)).toEqual([]);
});
