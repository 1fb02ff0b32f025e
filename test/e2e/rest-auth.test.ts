/**
 * docs/api.md §2 over REST: authentication (401), scopes (403), the account claim, the order of
 * checks (authentication, then scope, then everything else) and created_by / updated_by.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  createOk,
  ENVIRONMENTS,
  type Environment,
  expectJson,
  expectProblem,
  flat,
  list,
  pathOf,
  type SourceRecord,
  unique,
} from "./rest-support.js";

type Scope = "read:sources" | "write:sources" | "delete:sources";
const ALL: Scope[] = ["read:sources", "write:sources", "delete:sources"];

interface Endpoint {
  name: string;
  method: string;
  path: string;
  scope: Scope;
  json?: unknown;
}

let server: TestServer;
/** Per environment: stored sources of acct-1 that the scope tests aim at (one per delete style). */
type Targets = { byId: SourceRecord; byAlt: SourceRecord };
const target: Partial<Record<Environment, Targets>> = {};

function endpoints(env: Environment): Endpoint[] {
  const { byId, byAlt } = target[env] as Targets;
  return [
    {
      name: `POST ${pathOf(env)}`,
      method: "POST",
      path: pathOf(env),
      scope: "write:sources",
      json: flat(unique("auth-new")),
    },
    { name: `GET ${pathOf(env)}`, method: "GET", path: pathOf(env), scope: "read:sources" },
    { name: `GET ${pathOf(env, "/{id}")}`, method: "GET", path: pathOf(env, `/${byId.id}`), scope: "read:sources" },
    {
      name: `DELETE ${pathOf(env, "/{id}")}`,
      method: "DELETE",
      path: pathOf(env, `/${byId.id}`),
      scope: "delete:sources",
    },
    {
      name: `DELETE ${pathOf(env, "?alt_id=")}`,
      method: "DELETE",
      path: pathOf(env, `?alt_id=${encodeURIComponent(byAlt.alt_id)}`),
      scope: "delete:sources",
    },
  ];
}

const allEndpoints = () => ENVIRONMENTS.flatMap(endpoints);

async function createTarget(env: Environment): Promise<SourceRecord> {
  const [record] = await createOk(server, await server.token(), flat(unique(`auth-target-${env}`)), env);
  return record;
}

/** Recreates the targets a call with enough scope deleted. */
async function restoreTargets(): Promise<void> {
  const token = await server.token();
  for (const env of ENVIRONMENTS) {
    const targets = target[env] as Targets;
    for (const which of ["byId", "byAlt"] as const) {
      const res = await server.request("GET", pathOf(env, `/${targets[which].id}`), { token });
      await res.arrayBuffer();
      if (res.status === 404) targets[which] = await createTarget(env);
    }
  }
}

beforeAll(async () => {
  server = await startTestServer();
  for (const env of ENVIRONMENTS) target[env] = { byId: await createTarget(env), byAlt: await createTarget(env) };
});

afterAll(async () => {
  await server?.close();
});

/** The stored targets are still there, unchanged (a refused call had no effect). */
async function expectTargetsUntouched(): Promise<void> {
  const token = await server.token();
  for (const env of ENVIRONMENTS) {
    for (const record of Object.values(target[env] as Targets)) {
      const got = await expectJson(await server.request("GET", pathOf(env, `/${record.id}`), { token }), 200);
      expect(got).toEqual(record);
    }
  }
}

describe("401 unauthenticated", () => {
  const cases: [string, () => Promise<Record<string, string>>, string][] = [
    ["no Authorization header", async () => ({}), "missing bearer token"],
    ["empty Authorization header", async () => ({ authorization: "" }), "missing bearer token"],
    ["Bearer without a token", async () => ({ authorization: "Bearer" }), "missing bearer token"],
    [
      "Basic credentials",
      async () => ({ authorization: "Basic dXNlcjpwYXNzd29yZA==" }),
      "authorization scheme must be Bearer",
    ],
    [
      "a token without a scheme",
      async () => ({ authorization: await server.token() }),
      "authorization scheme must be Bearer",
    ],
    ["a malformed token", async () => ({ authorization: `Bearer ${server.issuer.malformed()}` }), "malformed token"],
    ["a token with characters outside b64token", async () => ({ authorization: "Bearer a.b.c d" }), "malformed token"],
    ["three dots of garbage", async () => ({ authorization: "Bearer aaa.bbb.ccc" }), "malformed token"],
    [
      "a forged signature",
      async () => ({ authorization: `Bearer ${await server.issuer.forged()}` }),
      "signature verification failed",
    ],
    ["an expired token", async () => ({ authorization: `Bearer ${await server.issuer.expired()}` }), "token expired"],
    [
      "a not-yet-valid token",
      async () => ({ authorization: `Bearer ${await server.issuer.notYetValid()}` }),
      "token not yet valid",
    ],
    [
      "a wrong issuer",
      async () => ({ authorization: `Bearer ${await server.issuer.wrongIssuer()}` }),
      "unexpected issuer",
    ],
    [
      "a wrong audience",
      async () => ({ authorization: `Bearer ${await server.issuer.wrongAudience()}` }),
      "unexpected audience",
    ],
    ["alg none", async () => ({ authorization: `Bearer ${server.issuer.algNone()}` }), "unsupported algorithm"],
    [
      "HMAC confusion (HS256 keyed with the public key)",
      async () => ({ authorization: `Bearer ${await server.issuer.hmacConfusion()}` }),
      "unsupported algorithm",
    ],
    [
      "an unknown kid",
      async () => ({ authorization: `Bearer ${await server.issuer.unknownKid()}` }),
      "unknown signing key",
    ],
    [
      "an account claim that is not Unicode text (a lone surrogate)",
      async () => ({
        authorization: `Bearer ${await server.token({ [server.issuer.claim("account_id")]: "acct-\ud800" })}`,
      }),
      "invalid account_id claim",
    ],
  ];

  it.each(cases)("%s → 401 on every endpoint of both environments", async (_name, headersOf, reason) => {
    const headers = await headersOf();
    for (const endpoint of allEndpoints()) {
      const res = await server.request(endpoint.method, endpoint.path, { headers, json: endpoint.json });
      const body = await expectProblem(res, 401, "unauthenticated");
      expect(res.headers.get("www-authenticate"), endpoint.name).toBe(
        `Bearer error="invalid_token", error_description="${reason}"`,
      );
      expect(body.detail).toBe(reason);
      expect(body.errors).toEqual([]);
    }
    await expectTargetsUntouched();
  });

  it("a token without exp → 401", async () => {
    const res = await server.request("GET", "/sources", { token: await server.token({ exp: undefined }) });
    await expectProblem(res, 401, "unauthenticated");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer error="invalid_token"/);
  });

  it("the bearer scheme name is case-insensitive", async () => {
    const res = await server.request("GET", "/sources", {
      headers: { authorization: `bearer ${await server.token()}` },
    });
    await expectJson(res, 200);
  });

  it("honours the 5 s clock tolerance on exp and nbf", async () => {
    await expectJson(await server.request("GET", "/sources", { token: await server.issuer.expired(2) }), 200);
    await expectJson(await server.request("GET", "/sources", { token: await server.issuer.notYetValid(2) }), 200);
  });
});

describe("403 insufficient scope", () => {
  it.each(ALL)("a token lacking %s → 403 on exactly the endpoints that need it", async (missing) => {
    const token = await server.token({ scope: ALL.filter((s) => s !== missing).join(" ") });
    for (const endpoint of allEndpoints()) {
      const res = await server.request(endpoint.method, endpoint.path, { token, json: endpoint.json });
      if (endpoint.scope !== missing) {
        expect(res.status, endpoint.name).not.toBe(403);
        await res.arrayBuffer();
        continue;
      }
      const body = await expectProblem(res, 403, "permission_denied");
      expect(res.headers.get("www-authenticate"), endpoint.name).toBe(
        `Bearer error="insufficient_scope", scope="${missing}"`,
      );
      expect(body.detail).toContain(missing);
    }
    // The sources deleted above (scope present) are recreated for the next case.
    await restoreTargets();
  });

  it.each(ALL)("a token with only %s reaches only its own endpoints", async (only) => {
    const token = await server.token({ scope: only });
    for (const endpoint of allEndpoints()) {
      const res = await server.request(endpoint.method, endpoint.path, { token, json: endpoint.json });
      if (endpoint.scope === only) {
        expect(res.status, endpoint.name).toBeLessThan(300);
        await res.arrayBuffer();
      } else {
        await expectProblem(res, 403, "permission_denied");
        expect(res.headers.get("www-authenticate")).toBe(
          `Bearer error="insufficient_scope", scope="${endpoint.scope}"`,
        );
      }
    }
    await restoreTargets();
  });

  it("a token with no scope at all → 403 naming the scope each endpoint needs", async () => {
    const token = await server.token({ scope: undefined });
    for (const endpoint of allEndpoints()) {
      const res = await server.request(endpoint.method, endpoint.path, { token, json: endpoint.json });
      await expectProblem(res, 403, "permission_denied");
      expect(res.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="${endpoint.scope}"`);
    }
    await expectTargetsUntouched();
  });

  it("scopes are exact: a look-alike scope does not count", async () => {
    const token = await server.token({ scope: "read:source READ:SOURCES read:sources:all" });
    const res = await server.request("GET", "/sources", { token });
    await expectProblem(res, 403, "permission_denied");
    expect(res.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="read:sources"`);
  });
});

describe("scopes from scp and permissions", () => {
  it("scp as an array grants its scopes", async () => {
    const token = await server.token({ scope: undefined, scp: ["read:sources"] });
    await expectJson(await server.request("GET", "/sources", { token }), 200);
    const res = await server.request("POST", "/sources", { token, json: flat(unique("scp")) });
    await expectProblem(res, 403, "permission_denied");
    expect(res.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="write:sources"`);
  });

  it("permissions as an array grants its scopes", async () => {
    const token = await server.token({ scope: undefined, permissions: ["write:sources"] });
    await createOk(server, token, flat(unique("perm")));
    const res = await server.request("GET", "/sources", { token });
    await expectProblem(res, 403, "permission_denied");
    expect(res.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="read:sources"`);
  });

  it("the scopes are the union of scope, scp and permissions", async () => {
    const token = await server.token({
      scope: "read:sources",
      scp: ["write:sources"],
      permissions: ["delete:sources"],
    });
    for (const env of ENVIRONMENTS) {
      const [created] = await createOk(server, token, flat(unique("union")), env);
      await expectJson(await server.request("GET", pathOf(env, `/${created.id}`), { token }), 200);
      const res = await server.request("DELETE", pathOf(env, `/${created.id}`), { token });
      expect(res.status).toBe(204);
      expect(await res.text()).toBe("");
    }
  });
});

describe("account claim", () => {
  it("a non-admin token without an account claim → 403 on every endpoint, with nothing done", async () => {
    const token = await server.token({ [server.issuer.claim("account_id")]: undefined });
    for (const endpoint of allEndpoints()) {
      const res = await server.request(endpoint.method, endpoint.path, { token, json: endpoint.json });
      const body = await expectProblem(res, 403, "permission_denied");
      expect(body.detail).toBe("token has no account claim");
      // Not a scope problem: no insufficient_scope challenge.
      expect(res.headers.get("www-authenticate")).toBeNull();
    }
    await expectTargetsUntouched();
  });

  it("a role other than admin does not stand in for the account claim", async () => {
    const token = await server.token({
      [server.issuer.claim("account_id")]: undefined,
      [server.issuer.claim("role")]: "auditor",
    });
    await expectProblem(await server.request("GET", "/sources", { token }), 403, "permission_denied");
  });

  it("scope is checked before the account claim", async () => {
    const token = await server.token({ [server.issuer.claim("account_id")]: undefined, scope: "write:sources" });
    const res = await server.request("GET", "/sources", { token });
    await expectProblem(res, 403, "permission_denied");
    expect(res.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="read:sources"`);
  });
});

describe("authentication and scope come before validation", () => {
  const invalidRequests: { name: string; method: string; path: string; scope: Scope; body?: string; json?: unknown }[] =
    [
      { name: "unparseable JSON", method: "POST", path: "/sources", scope: "write:sources", body: "{not json" },
      { name: "an empty body", method: "POST", path: "/sources", scope: "write:sources", body: "" },
      { name: "an invalid source", method: "POST", path: "/sources", scope: "write:sources", json: { alt_id: "" } },
      {
        name: "a non-admin account_id on create",
        method: "POST",
        path: "/sources?account_id=acct-2",
        scope: "write:sources",
        json: flat("x"),
      },
      {
        name: "a sandbox invalid source",
        method: "POST",
        path: "/sandbox/sources",
        scope: "write:sources",
        json: [1, 2],
      },
      { name: "a malformed list query", method: "GET", path: "/sources?limit=abc&bogus=1", scope: "read:sources" },
      {
        name: "a sandbox malformed list query",
        method: "GET",
        path: "/sandbox/sources?offset=-1",
        scope: "read:sources",
      },
      {
        name: "an unknown query parameter on get",
        method: "GET",
        path: "/sources/src_x?bogus=1",
        scope: "read:sources",
      },
      { name: "delete without alt_id", method: "DELETE", path: "/sources", scope: "delete:sources" },
      {
        name: "sandbox delete with an empty alt_id",
        method: "DELETE",
        path: "/sandbox/sources?alt_id=",
        scope: "delete:sources",
      },
    ];
  const withBody = (r: (typeof invalidRequests)[number]) =>
    r.body !== undefined ? { body: r.body, headers: { "content-type": "application/json" } } : { json: r.json };

  it.each(invalidRequests)("$name: no token → 401, a token without $scope → 403, a full token → 422", async (r) => {
    const noToken = await server.request(r.method, r.path, withBody(r));
    await expectProblem(noToken, 401, "unauthenticated");
    expect(noToken.headers.get("www-authenticate")).toMatch(/^Bearer error="invalid_token"/);

    const badToken = await server.request(r.method, r.path, { ...withBody(r), token: await server.issuer.expired() });
    await expectProblem(badToken, 401, "unauthenticated");

    const noScope = await server.request(r.method, r.path, {
      ...withBody(r),
      token: await server.token({ scope: ALL.filter((s) => s !== r.scope).join(" ") }),
    });
    await expectProblem(noScope, 403, "permission_denied");
    expect(noScope.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="${r.scope}"`);

    const noAccount = await server.request(r.method, r.path, {
      ...withBody(r),
      token: await server.token({ [server.issuer.claim("account_id")]: undefined }),
    });
    await expectProblem(noAccount, 403, "permission_denied");

    await expectProblem(
      await server.request(r.method, r.path, { ...withBody(r), token: await server.token() }),
      422,
      "invalid_argument",
    );
  });
});

describe("created_by and updated_by", () => {
  it.each(ENVIRONMENTS)("%s: are the client_name claim when present", async (env) => {
    const account = unique("acct-by");
    const token = await server.userToken(account, { [server.issuer.claim("client_name")]: "Acme Farms Integration" });
    const [record] = await createOk(server, token, flat(unique("by-name")), env);
    expect(record.created_by).toBe("Acme Farms Integration");
    expect(record.updated_by).toBe("Acme Farms Integration");
    expect(record.account_id).toBe(account);
  });

  it.each(ENVIRONMENTS)("%s: are sub when there is no client_name claim", async (env) => {
    const account = unique("acct-by");
    const token = await server.userToken(account, {
      sub: "machine-42@clients",
      [server.issuer.claim("client_name")]: undefined,
    });
    const [record] = await createOk(server, token, flat(unique("by-sub")), env);
    expect(record.created_by).toBe("machine-42@clients");
    expect(record.updated_by).toBe("machine-42@clients");
    const [listed] = await list(server, token, "", env);
    expect(listed).toEqual(record);
  });
});

describe("signing keys out of reach", () => {
  let unreachable: TestServer;

  beforeAll(async () => {
    // Port 9 (discard) is closed here: every key fetch fails at once.
    unreachable = await startTestServer({ AUTH_JWKS_URL: "http://127.0.0.1:9/.well-known/jwks.json" });
  });

  afterAll(async () => {
    await unreachable?.close();
  });

  it("a well-formed token that cannot be checked → 503 unavailable, not 401, and no address in the body", async () => {
    const res = await fetch(`${unreachable.baseUrl}/sources`, {
      headers: { authorization: `Bearer ${await unreachable.userToken("acct-keys")}` },
    });
    const problem = await expectProblem(res, 503, "unavailable");
    expect(problem.detail).toBe("signing keys unavailable");
    expect(JSON.stringify(problem)).not.toContain("127.0.0.1");
    expect(res.headers.get("www-authenticate")).toBeNull();
  });
});
