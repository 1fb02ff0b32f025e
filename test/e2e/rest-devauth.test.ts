/**
 * docs/api.md §3 end to end: with AUTH_ISSUER unset the running server is its own identity provider
 * (POST /oauth/token, GET /.well-known/jwks.json), and its tokens drive the REST API (docs/api.md §2) with the
 * audience-namespaced claims, scopes and roles of the clients file.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { altIds, createOk, expectJson, expectProblem, flat, list, unique } from "./rest-support.js";

const AUDIENCE = "https://ledger.example.test/";
const NS = "https://ledger.example.test";

const CLIENTS = [
  {
    client_id: "farm",
    client_secret: "farm-secret",
    account_id: "acct-farm",
    role: "user",
    client_name: "Farm Co",
    scopes: ["read:sources", "write:sources", "delete:sources"],
  },
  {
    client_id: "viewer",
    client_secret: "viewer-secret",
    account_id: "acct-farm",
    role: "user",
    client_name: "Viewer",
    scopes: ["read:sources"],
  },
  {
    client_id: "other",
    client_secret: "other-secret",
    account_id: "acct-other",
    role: "user",
    client_name: "Other Co",
    scopes: ["read:sources", "write:sources", "delete:sources"],
  },
  {
    client_id: "admin",
    client_secret: "admin-secret",
    role: "admin",
    client_name: "Registry admin",
    scopes: ["read:sources", "write:sources", "delete:sources"],
  },
];

let dir: string;
let server: TestServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ledger-devauth-"));
  const clientsFile = join(dir, "clients.json");
  writeFileSync(clientsFile, JSON.stringify(CLIENTS));
  server = await startTestServer({
    AUTH_ISSUER: "",
    AUTH_JWKS_URL: "",
    AUTH_AUDIENCE: AUDIENCE,
    DEV_CLIENTS_FILE: clientsFile,
  });
});

afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function tokenResponse(clientId: string, secret: string, scope?: string): Promise<Response> {
  return server.request("POST", "/oauth/token", {
    json: {
      client_id: clientId,
      client_secret: secret,
      audience: AUDIENCE,
      grant_type: "client_credentials",
      ...(scope ? { scope } : {}),
    },
  });
}

async function tokenFor(clientId: string, scope?: string): Promise<string> {
  const secret = CLIENTS.find((c) => c.client_id === clientId)?.client_secret as string;
  const body = await expectJson<{ access_token: string; token_type: string; expires_in: number; scope: string }>(
    await tokenResponse(clientId, secret, scope),
    200,
  );
  expect(body.token_type).toBe("Bearer");
  expect(body.expires_in).toBeGreaterThan(0);
  return body.access_token;
}

describe("the development identity provider", () => {
  it("issues tokens with the issuer http://<host>:<port>/ and audience-namespaced claims", async () => {
    const claims = decodeJwt(await tokenFor("farm"));
    expect(claims.iss).toBe(`http://127.0.0.1:${server.port}/`);
    expect(claims.aud === AUDIENCE || (Array.isArray(claims.aud) && claims.aud.includes(AUDIENCE))).toBe(true);
    expect(claims[`${NS}/account_id`]).toBe("acct-farm");
    expect(claims[`${NS}/client_name`]).toBe("Farm Co");
    expect(typeof claims.exp).toBe("number");
  });

  it("serves its public keys at /.well-known/jwks.json without a token", async () => {
    const jwks = await expectJson<{ keys: Record<string, unknown>[] }>(
      await server.request("GET", "/.well-known/jwks.json"),
      200,
    );
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const key of jwks.keys) {
      expect(key.kid).toBeTypeOf("string");
      for (const secret of ["d", "p", "q", "dp", "dq", "qi"]) expect(key).not.toHaveProperty(secret);
    }
  });

  it("a wrong secret → 401 invalid_client", async () => {
    const res = await tokenResponse("farm", "not-the-secret");
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "invalid_client" });
  });

  it("narrows scopes to those requested", async () => {
    const res = await tokenResponse("farm", "farm-secret", "read:sources");
    const body = await expectJson<{ access_token: string; scope: string }>(res, 200);
    expect(body.scope).toBe("read:sources");
    const token = body.access_token;
    await expectJson(await server.request("GET", "/sources", { token }), 200);
    const denied = await server.request("POST", "/sources", { token, json: flat(unique("narrow")) });
    await expectProblem(denied, 403, "permission_denied");
    expect(denied.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="write:sources"`);
  });
});

describe("its tokens on the REST API", () => {
  it("a user creates in its account, with created_by = client_name", async () => {
    const [record] = await createOk(server, await tokenFor("farm"), flat(unique("dev")));
    expect(record.account_id).toBe("acct-farm");
    expect(record.created_by).toBe("Farm Co");
  });

  it("a read-only client reads its account but cannot write or delete", async () => {
    const farm = await tokenFor("farm");
    const [record] = await createOk(server, farm, flat(unique("viewable")));
    const viewer = await tokenFor("viewer");
    expect(await expectJson(await server.request("GET", `/sources/${record.id}`, { token: viewer }), 200)).toEqual(
      record,
    );
    await expectProblem(
      await server.request("POST", "/sources", { token: viewer, json: flat(unique("v")) }),
      403,
      "permission_denied",
    );
    await expectProblem(
      await server.request("DELETE", `/sources/${record.id}`, { token: viewer }),
      403,
      "permission_denied",
    );
  });

  it("accounts are isolated; the admin sees and names accounts", async () => {
    const farm = await tokenFor("farm");
    const other = await tokenFor("other");
    const admin = await tokenFor("admin");
    const [mine] = await createOk(server, farm, flat(unique("farm-only")));
    await expectProblem(await server.request("GET", `/sources/${mine.id}`, { token: other }), 404, "not_found");
    expect(altIds(await list(server, other, "limit=1000"))).not.toContain(mine.alt_id);
    expect(await list(server, admin, "account_id=acct-farm&limit=1000")).toContainEqual(mine);
    await expectProblem(
      await server.request("POST", "/sources", { token: admin, json: flat(unique("adm")) }),
      422,
      "invalid_argument",
    );
    const [made] = await createOk(server, admin, flat(unique("adm")), "production", "?account_id=acct-other");
    expect(made).toMatchObject({ account_id: "acct-other", created_by: "Registry admin" });
  });

  it("tokens of another issuer are refused", async () => {
    const foreign = await server.issuer.token({ aud: AUDIENCE });
    const res = await server.request("GET", "/sources", { token: foreign });
    await expectProblem(res, 401, "unauthenticated");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer error="invalid_token"/);
  });
});

describe("a path served by other methods is 405 with Allow, not 404 (docs/api.md §15)", () => {
  it.each([
    ["POST", "/healthz", "GET"],
    ["DELETE", "/readyz", "GET"],
    ["POST", "/metrics", "GET"],
    ["PUT", "/openapi.json", "GET"],
    ["POST", "/docs", "GET"],
    ["POST", "/ogc", "GET"],
    ["DELETE", "/ogc/conformance", "GET"],
    ["GET", "/oauth/token", "POST"],
    ["POST", "/.well-known/jwks.json", "GET"],
    ["OPTIONS", "/healthz", "GET"],
    // Paths with routes of their own for the methods they refuse: OPTIONS among them.
    ["OPTIONS", "/sources", "GET, POST, DELETE"],
    ["OPTIONS", "/sources/src_x", "GET, DELETE"],
    ["OPTIONS", "/sandbox/sources/src_x/history", "GET"],
    ["GET", "/sources/search", "POST"],
    ["OPTIONS", "/ogc/collections/sources/items", "GET, POST"],
    // RPC paths: a routing answer, so before the token (none is sent here).
    ["GET", "/sourceledger.v2.SourceLedgerService/ListSources", "POST"],
    ["OPTIONS", "/sourceledger.v2.SandboxSourceLedgerService/CreateSources", "POST"],
    ["PUT", "/grpc.health.v1.Health/Check", "POST"],
  ])("%s %s → 405, Allow: %s", async (method, path, allow) => {
    const res = await server.request(method, path);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe(allow);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({
      status: 405,
      code: "unimplemented",
      detail: `method not allowed; allowed: ${allow}`,
    });
  });

  it("a path served by no method stays 404", async () => {
    const res = await server.request("POST", "/healthz/nowhere");
    expect(res.status).toBe(404);
    expect((await res.json()).detail).toBe("no route for POST /healthz/nowhere");
  });
});
