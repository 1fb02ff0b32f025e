/**
 * docs/api.md §4 over REST: GET /sources/{id}, DELETE /sources/{id}, DELETE /sources?alt_id=, in
 * both environments, and ids that belong to the other environment.
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
  unique,
} from "./rest-support.js";

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startTestServer();
  token = await server.userToken(unique("acct-gd"));
});

afterAll(async () => {
  await server?.close();
});

async function expectNoContent(res: Response): Promise<void> {
  expect(res.status).toBe(204);
  expect(await res.text()).toBe("");
  expect(res.headers.get("content-type")).toBeNull();
}

describe.each(ENVIRONMENTS)("%s", (env) => {
  it("GET by id → 200 with the record as created", async () => {
    const [created] = await createOk(server, token, flat(unique("get"), { methodology: "m", tags: ["a"] }), env);
    expect(await expectJson(await server.request("GET", pathOf(env, `/${created.id}`), { token }), 200)).toEqual(
      created,
    );
  });

  it("DELETE by id → 204 with an empty body; then GET and DELETE → 404", async () => {
    const [created] = await createOk(server, token, flat(unique("del")), env);
    await expectNoContent(await server.request("DELETE", pathOf(env, `/${created.id}`), { token }));
    const get = await expectProblem(
      await server.request("GET", pathOf(env, `/${created.id}`), { token }),
      404,
      "not_found",
    );
    expect(get.detail).toBe(`source "${created.id}" not found`);
    expect(get.errors).toEqual([]);
    await expectProblem(await server.request("DELETE", pathOf(env, `/${created.id}`), { token }), 404, "not_found");
    expect(altIds(await list(server, token, "", env))).not.toContain(created.alt_id);
  });

  it("DELETE ?alt_id= → 204; again → 404; the source is gone", async () => {
    const alt = unique("del alt/ü?&");
    const [created] = await createOk(server, token, flat(alt), env);
    const path = pathOf(env, `?alt_id=${encodeURIComponent(alt)}`);
    await expectNoContent(await server.request("DELETE", path, { token }));
    const again = await expectProblem(await server.request("DELETE", path, { token }), 404, "not_found");
    expect(again.detail).toBe(`source with alt_id "${alt}" not found`);
    await expectProblem(await server.request("GET", pathOf(env, `/${created.id}`), { token }), 404, "not_found");
  });

  it("DELETE ?alt_id= deletes only that source", async () => {
    const [keep, drop] = await createOk(
      server,
      token,
      {
        type: "FeatureCollection",
        features: [unique("keep"), unique("drop")].map((id, i) => ({
          type: "Feature",
          id,
          geometry: {
            type: "Polygon",
            coordinates: [
              [
                [i * 2, 0],
                [i * 2 + 1, 0],
                [i * 2 + 1, 1],
                [i * 2, 0],
              ],
            ],
          },
          properties: { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" },
        })),
      },
      env,
    );
    await expectNoContent(
      await server.request("DELETE", pathOf(env, `?alt_id=${encodeURIComponent(drop.alt_id)}`), { token }),
    );
    expect(await expectJson(await server.request("GET", pathOf(env, `/${keep.id}`), { token }), 200)).toEqual(keep);
  });

  it.each(["src_01ARZ3NDEKTSV4RRFFQ69G5FAV", "sandbox_00000000-0000-4000-8000-000000000000", "nope", "%20", "src_"])(
    "an unknown id (%s) → 404 on GET and DELETE",
    async (id) => {
      await expectProblem(await server.request("GET", pathOf(env, `/${id}`), { token }), 404, "not_found");
      await expectProblem(await server.request("DELETE", pathOf(env, `/${id}`), { token }), 404, "not_found");
    },
  );

  it("an empty id (a trailing slash) → 404 on GET and DELETE, not a validation error", async () => {
    for (const method of ["GET", "DELETE"]) {
      const problem = await expectProblem(await server.request(method, pathOf(env, "/"), { token }), 404, "not_found");
      expect(problem.errors).toEqual([]);
    }
  });

  it("an empty id before /history or /conflicts → 404 no route, not a validation error", async () => {
    for (const view of ["history", "conflicts"]) {
      const path = pathOf(env, `//${view}`);
      const problem = await expectProblem(await server.request("GET", path, { token }), 404, "not_found");
      expect(problem.detail).toBe(`no route for GET ${path}`);
      expect(problem.errors).toEqual([]);
    }
  });

  it("an id of 101 characters or 10,000 → 404 on every route by id, quoting only its first 80 characters", async () => {
    for (const length of [101, 10_000]) {
      const id = `${"x".repeat(length - 1)}y`;
      const quoted = `source "${"x".repeat(80)}…" not found`;
      for (const [method, suffix] of [
        ["GET", ""],
        ["DELETE", ""],
        ["GET", "/history"],
        ["GET", "/conflicts"],
      ] as const) {
        const res = await server.request(method, pathOf(env, `/${id}${suffix}`), { token });
        const problem = await expectProblem(res, 404, "not_found");
        expect(problem.detail, `${method} ${suffix} at ${length}`).toBe(quoted);
      }
    }
  });

  it("an alt_id over 256 characters → 422 on DELETE, as the list filter; a long unknown one is quoted cut", async () => {
    await expectViolation(
      await server.request("DELETE", pathOf(env, `?alt_id=${"a".repeat(257)}`), { token }),
      "/query/alt_id",
      "alt_id must be at most 256 characters, got 257",
    );
    const res = await server.request("DELETE", pathOf(env, `?alt_id=${"a".repeat(256)}`), { token });
    expect((await expectProblem(res, 404, "not_found")).detail).toBe(
      `source with alt_id "${"a".repeat(80)}…" not found`,
    );
  });

  it("an unknown alt_id → 404", async () => {
    const res = await server.request("DELETE", pathOf(env, `?alt_id=${unique("never")}`), { token });
    await expectProblem(res, 404, "not_found");
  });

  it("DELETE without alt_id → 422 at /query/alt_id; an empty alt_id too", async () => {
    await expectViolation(
      await server.request("DELETE", pathOf(env), { token }),
      "/query/alt_id",
      "alt_id is required",
    );
    await expectViolation(
      await server.request("DELETE", pathOf(env, "?alt_id="), { token }),
      "/query/alt_id",
      "alt_id must not be empty",
    );
    await expectViolation(
      await server.request("DELETE", pathOf(env, "?alt_id=a&alt_id=b"), { token }),
      "/query/alt_id",
      "at most once",
    );
  });

  it("unknown query parameters on GET/DELETE by id, and on DELETE by alt_id → 422", async () => {
    const [created] = await createOk(server, token, flat(unique("q")), env);
    await expectViolation(
      await server.request("GET", pathOf(env, `/${created.id}?fields=id`), { token }),
      "/query/fields",
      "unknown query parameter",
    );
    await expectViolation(
      await server.request("DELETE", pathOf(env, `/${created.id}?force=1`), { token }),
      "/query/force",
      "unknown query parameter",
    );
    await expectViolation(
      await server.request("DELETE", pathOf(env, `?alt_id=${encodeURIComponent(created.alt_id)}&id=${created.id}`), {
        token,
      }),
      "/query/id",
      "unknown query parameter",
    );
    // Nothing was deleted.
    expect(await expectJson(await server.request("GET", pathOf(env, `/${created.id}`), { token }), 200)).toEqual(
      created,
    );
  });

  it("PUT and PATCH are not allowed", async () => {
    const res = await server.request("PUT", pathOf(env), { token, json: flat("x") });
    await expectProblem(res, 405, "unimplemented");
    expect(res.headers.get("allow")).toBe("GET, POST, DELETE");
    const byId = await server.request("PATCH", pathOf(env, "/src_x"), { token, json: {} });
    await expectProblem(byId, 405, "unimplemented");
    expect(byId.headers.get("allow")).toBe("GET, DELETE");
  });
});

describe("ids never cross environments", () => {
  it("a sandbox id → 404 in production; a production id → 404 in the sandbox, for GET and DELETE", async () => {
    const [sandbox] = await createOk(server, token, flat(unique("sbx")), "sandbox");
    const [production] = await createOk(server, token, flat(unique("prd")), "production");
    await expectProblem(await server.request("GET", `/sources/${sandbox.id}`, { token }), 404, "not_found");
    await expectProblem(await server.request("DELETE", `/sources/${sandbox.id}`, { token }), 404, "not_found");
    await expectProblem(await server.request("GET", `/sandbox/sources/${production.id}`, { token }), 404, "not_found");
    await expectProblem(
      await server.request("DELETE", `/sandbox/sources/${production.id}`, { token }),
      404,
      "not_found",
    );
    // Deleting by alt_id in one environment does not reach the other.
    await expectProblem(
      await server.request("DELETE", `/sources?alt_id=${encodeURIComponent(sandbox.alt_id)}`, { token }),
      404,
      "not_found",
    );
    await expectProblem(
      await server.request("DELETE", `/sandbox/sources?alt_id=${encodeURIComponent(production.alt_id)}`, { token }),
      404,
      "not_found",
    );
    // Both untouched.
    expect(await expectJson(await server.request("GET", `/sandbox/sources/${sandbox.id}`, { token }), 200)).toEqual(
      sandbox,
    );
    expect(await expectJson(await server.request("GET", `/sources/${production.id}`, { token }), 200)).toEqual(
      production,
    );
  });

  it("the same alt_id may live in both environments at once", async () => {
    const alt = unique("both-envs");
    const [sandbox] = await createOk(server, token, flat(alt), "sandbox");
    const [production] = await createOk(server, token, flat(alt), "production");
    await expectNoContent(
      await server.request("DELETE", `/sandbox/sources?alt_id=${encodeURIComponent(alt)}`, { token }),
    );
    expect(await expectJson(await server.request("GET", `/sources/${production.id}`, { token }), 200)).toEqual(
      production,
    );
    await expectProblem(await server.request("GET", `/sandbox/sources/${sandbox.id}`, { token }), 404, "not_found");
  });
});
