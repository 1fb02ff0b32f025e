import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTokenVerifier } from "../../src/auth/verifier.js";
import { DevClientsFileError } from "../../src/dev-identity/dev-clients.js";
import { createDevIdentityProvider, type DevIdentityProvider } from "../../src/dev-identity/dev-provider.js";

const AUDIENCE = "https://source-ledger.local";
const ISSUER = "http://127.0.0.1:8080/";

const CLIENTS = [
  {
    client_id: "field-app",
    client_secret: "s3cret-field",
    account_id: "acct-field",
    role: "user",
    client_name: "Field App",
    scopes: ["read:sources", "write:sources"],
  },
  {
    client_id: "ops",
    client_secret: "s3cret-ops",
    role: "admin",
    scopes: ["read:sources", "write:sources", "delete:sources"],
  },
];

function recordingLogger() {
  const lines: string[] = [];
  return { lines, logger: { info: (message: string) => lines.push(message) } };
}

async function appFor(provider: DevIdentityProvider): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(provider.plugin);
  await app.ready();
  return app;
}

let dir: string;
let clientsFile: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dev-idp-"));
  clientsFile = join(dir, "clients.json");
  await writeFile(clientsFile, JSON.stringify(CLIENTS));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("development identity provider with a clients file", () => {
  let provider: DevIdentityProvider;
  let app: FastifyInstance;
  const log = recordingLogger();

  beforeAll(async () => {
    provider = await createDevIdentityProvider({ audience: AUDIENCE, clientsFile, logger: log.logger });
    provider.setIssuer(ISSUER);
    app = await appFor(provider);
  });
  afterAll(async () => {
    await app.close();
  });

  const token = (body: Record<string, unknown>) => app.inject({ method: "POST", url: "/oauth/token", payload: body });
  const request = (overrides: Record<string, unknown> = {}) => ({
    client_id: "field-app",
    client_secret: "s3cret-field",
    audience: AUDIENCE,
    grant_type: "client_credentials",
    ...overrides,
  });

  it("issues a token with the client's claims and all its scopes", async () => {
    const response = await token(request());
    expect(response.statusCode).toBe(200);
    expect(response.headers["cache-control"]).toBe("no-store");
    const body = response.json();
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 3600,
      scope: "read:sources write:sources",
    });
    expect(decodeProtectedHeader(body.access_token)).toMatchObject({
      alg: "ES256",
      typ: "JWT",
      kid: expect.any(String),
    });
    const claims = decodeJwt(body.access_token);
    expect(claims).toMatchObject({
      iss: ISSUER,
      aud: AUDIENCE,
      sub: "field-app",
      scope: "read:sources write:sources",
      [`${AUDIENCE}/account_id`]: "acct-field",
      [`${AUDIENCE}/role`]: "user",
      [`${AUDIENCE}/client_name`]: "Field App",
      [`${AUDIENCE}/v1_client_id`]: "field-app",
    });
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(3600);
  });

  it("issues tokens that createTokenVerifier accepts", async () => {
    const verify = createTokenVerifier({ issuer: () => provider.issuer(), audience: AUDIENCE, keys: provider.keys });
    const { access_token } = (await token(request())).json();
    await expect(verify(access_token)).resolves.toMatchObject({
      subject: "field-app",
      accountId: "acct-field",
      isAdmin: false,
      actor: "Field App",
      scopes: new Set(["read:sources", "write:sources"]),
    });
  });

  it("issues admin tokens without an account claim", async () => {
    const response = await token(request({ client_id: "ops", client_secret: "s3cret-ops" }));
    const claims = decodeJwt(response.json().access_token);
    expect(claims[`${AUDIENCE}/role`]).toBe("admin");
    expect(claims).not.toHaveProperty(`${AUDIENCE}/account_id`);
    expect(claims).not.toHaveProperty(`${AUDIENCE}/client_name`);
  });

  it("narrows the scopes to those requested", async () => {
    const response = await token(request({ scope: "write:sources" }));
    expect(response.json().scope).toBe("write:sources");
    expect(decodeJwt(response.json().access_token).scope).toBe("write:sources");
  });

  it("refuses a scope the client does not have", async () => {
    const response = await token(request({ scope: "read:sources delete:sources" }));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: "invalid_scope" });
  });

  it.each([
    ["a wrong secret", { client_secret: "guess" }],
    ["an unknown client", { client_id: "nobody" }],
    ["another client's secret", { client_secret: "s3cret-ops" }],
  ])("answers %s with 401 invalid_client", async (_name, overrides) => {
    const response = await token(request(overrides));
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "invalid_client", error_description: "unknown client or wrong secret" });
  });

  it("answers another grant type with unsupported_grant_type", async () => {
    const response = await token(request({ grant_type: "password" }));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: "unsupported_grant_type" });
  });

  it("answers missing fields with invalid_request naming them", async () => {
    const response = await token({ client_id: "field-app" });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: "invalid_request",
      error_description: "missing required parameter(s): grant_type, client_secret",
    });
  });

  it("defaults a missing audience to the service's own; another audience is still invalid_target", async () => {
    const { audience: _omitted, ...withoutAudience } = request();
    const response = await token(withoutAudience);
    expect(response.statusCode).toBe(200);
    expect(decodeJwt(response.json().access_token).aud).toBe(AUDIENCE);
    const other = await token(request({ audience: "https://elsewhere.example" }));
    expect(other.statusCode).toBe(400);
    expect(other.json()).toMatchObject({ error: "invalid_target" });
  });

  it("answers a non-string field with invalid_request", async () => {
    const response = await token(request({ scope: ["read:sources"] }));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "invalid_request", error_description: "scope must be a string" });
  });

  it("answers another audience with invalid_target", async () => {
    const response = await token(request({ audience: "https://elsewhere.test" }));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: "invalid_target" });
  });

  it("accepts an RFC 6749 form body", async () => {
    const response = await app.inject({
      method: "POST",
      url: "/oauth/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams(request({ scope: "read:sources" })).toString(),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().scope).toBe("read:sources");
  });

  it("refuses repeated form parameters", async () => {
    const response = await app.inject({
      method: "POST",
      url: "/oauth/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `${new URLSearchParams(request()).toString()}&scope=read:sources&scope=write:sources`,
    });
    expect(response.json()).toEqual({ error: "invalid_request", error_description: "scope must not be repeated" });
  });

  it("accepts client credentials in HTTP Basic", async () => {
    const basic = Buffer.from("field-app:s3cret-field").toString("base64");
    const response = await app.inject({
      method: "POST",
      url: "/oauth/token",
      headers: { authorization: `Basic ${basic}` },
      payload: { grant_type: "client_credentials", audience: AUDIENCE },
    });
    expect(response.statusCode).toBe(200);
  });

  it("challenges a failed HTTP Basic login", async () => {
    const basic = Buffer.from("field-app:wrong").toString("base64");
    const response = await app.inject({
      method: "POST",
      url: "/oauth/token",
      headers: { authorization: `Basic ${basic}` },
      payload: { grant_type: "client_credentials", audience: AUDIENCE },
    });
    expect(response.statusCode).toBe(401);
    expect(response.headers["www-authenticate"]).toBe('Basic realm="dev-identity-provider"');
  });

  it("refuses credentials sent both ways", async () => {
    const basic = Buffer.from("field-app:s3cret-field").toString("base64");
    const response = await app.inject({
      method: "POST",
      url: "/oauth/token",
      headers: { authorization: `Basic ${basic}` },
      payload: request(),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toBe("invalid_request");
  });

  it("answers unparsable JSON without echoing the body", async () => {
    const response = await app.inject({
      method: "POST",
      url: "/oauth/token",
      headers: { "content-type": "application/json" },
      payload: '{"client_secret":"s3cret-field",',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "invalid_request", error_description: "body is not valid JSON" });
    expect(response.body).not.toContain("s3cret");
  });

  it("answers other content types and empty bodies with invalid_request", async () => {
    const text = await app.inject({
      method: "POST",
      url: "/oauth/token",
      headers: { "content-type": "text/plain" },
      payload: "x",
    });
    expect(text.statusCode).toBe(400);
    expect(text.json().error).toBe("invalid_request");
    const empty = await app.inject({ method: "POST", url: "/oauth/token" });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toBe("invalid_request");
  });

  it("answers an oversized body with invalid_request", async () => {
    const response = await token(request({ scope: "x".repeat(20_000) }));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "invalid_request", error_description: "request body too large" });
  });

  it("serves a JWKS with only public members", async () => {
    const response = await app.inject({ method: "GET", url: "/.well-known/jwks.json" });
    expect(response.statusCode).toBe(200);
    const { keys } = response.json();
    expect(keys).toHaveLength(1);
    expect(Object.keys(keys[0]).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
    expect(keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    for (const secret of ["d", "p", "q", "dp", "dq", "qi", "k"]) expect(keys[0]).not.toHaveProperty(secret);
    const { access_token } = (await token(request())).json();
    expect(decodeProtectedHeader(access_token).kid).toBe(keys[0].kid);
  });

  it("has no demo client and logs no secret", () => {
    expect(provider.demoClient).toBeUndefined();
    expect(JSON.stringify(log.lines)).not.toContain("s3cret");
  });
});

describe("development identity provider without a clients file", () => {
  it("creates a demo client with a random secret and all scopes", async () => {
    const log = recordingLogger();
    const provider = await createDevIdentityProvider({
      audience: AUDIENCE,
      logger: log.logger,
      issuer: ISSUER,
      tokenTtlSeconds: 60,
    });
    const other = await createDevIdentityProvider({ audience: AUDIENCE, logger: log.logger });
    expect(provider.demoClient).toMatchObject({ client_id: "demo-client", account_id: "demo-account" });
    expect(provider.demoClient?.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(provider.demoClient?.client_secret).not.toBe(other.demoClient?.client_secret);
    expect(JSON.stringify(log.lines)).not.toContain(provider.demoClient?.client_secret);

    const app = await appFor(provider);
    try {
      const response = await app.inject({
        method: "POST",
        url: "/oauth/token",
        payload: { ...provider.demoClient, audience: AUDIENCE, grant_type: "client_credentials" },
      });
      expect(response.json()).toMatchObject({ expires_in: 60, scope: "read:sources write:sources delete:sources" });
      const claims = decodeJwt(response.json().access_token);
      expect(claims).toMatchObject({ [`${AUDIENCE}/account_id`]: "demo-account", [`${AUDIENCE}/role`]: "user" });
    } finally {
      await app.close();
    }
  });

  it("refuses to issue tokens before the issuer is known", async () => {
    const provider = await createDevIdentityProvider({ audience: AUDIENCE, logger: recordingLogger().logger });
    expect(() => provider.issuer()).toThrow(/setIssuer/);
    const app = await appFor(provider);
    try {
      const response = await app.inject({
        method: "POST",
        url: "/oauth/token",
        payload: { ...provider.demoClient, audience: AUDIENCE, grant_type: "client_credentials" },
      });
      expect(response.statusCode).toBe(500);
      expect(response.json().error).toBe("server_error");
    } finally {
      await app.close();
    }
  });

  it("namespaces claims by the audience without its trailing slash", async () => {
    const provider = await createDevIdentityProvider({
      audience: "https://api.test/",
      logger: recordingLogger().logger,
      issuer: ISSUER,
    });
    const app = await appFor(provider);
    try {
      const response = await app.inject({
        method: "POST",
        url: "/oauth/token",
        payload: { ...provider.demoClient, audience: "https://api.test/", grant_type: "client_credentials" },
      });
      expect(decodeJwt(response.json().access_token)).toHaveProperty("https://api.test/account_id", "demo-account");
    } finally {
      await app.close();
    }
  });
});

describe("development identity provider logging", () => {
  it("never writes a client secret to the request log, even at trace level", async () => {
    const lines: string[] = [];
    const provider = await createDevIdentityProvider({
      audience: AUDIENCE,
      clientsFile,
      logger: recordingLogger().logger,
      issuer: ISSUER,
    });
    const app = Fastify({ logger: { level: "trace", stream: { write: (line: string) => lines.push(line) } } });
    await app.register(provider.plugin);
    try {
      const good = {
        client_id: "field-app",
        client_secret: "s3cret-field",
        audience: AUDIENCE,
        grant_type: "client_credentials",
      };
      await app.inject({ method: "POST", url: "/oauth/token", payload: good });
      await app.inject({ method: "POST", url: "/oauth/token", payload: { ...good, client_secret: "s3cret-wrong" } });
      await app.inject({
        method: "POST",
        url: "/oauth/token",
        headers: { "content-type": "application/json" },
        payload: '{"client_secret":"s3cret-field",',
      });
      await app.inject({ method: "POST", url: "/oauth/token", payload: { ...good, padding: "x".repeat(20_000) } });
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join("\n")).not.toContain("s3cret");
    } finally {
      await app.close();
    }
  });
});

describe("setIssuer", () => {
  it("sets the issuer and refuses a malformed one", async () => {
    const provider = await createDevIdentityProvider({ audience: AUDIENCE, logger: recordingLogger().logger });
    provider.setIssuer("http://127.0.0.1:8080/");
    expect(provider.issuer()).toBe("http://127.0.0.1:8080/");
    expect(() => provider.setIssuer("127.0.0.1:8080")).toThrow();
  });
});

describe("DEV_CLIENTS_FILE validation", () => {
  async function startWith(content: string): Promise<Error> {
    const file = join(dir, `clients-${Math.random().toString(36).slice(2)}.json`);
    await writeFile(file, content);
    const error = await createDevIdentityProvider({
      audience: AUDIENCE,
      clientsFile: file,
      logger: recordingLogger().logger,
    }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(DevClientsFileError);
    return error as Error;
  }
  const valid = CLIENTS[0];

  it.each([
    ["invalid JSON", '[{"client_secret": "hunter2"', /not valid JSON/],
    ["not an array", JSON.stringify(valid), /non-empty JSON array/],
    ["an empty array", "[]", /non-empty JSON array/],
    ["a missing secret", JSON.stringify([{ ...valid, client_secret: undefined }]), /\[0\] client_secret is required/],
    [
      "a missing account for a user",
      JSON.stringify([{ ...valid, account_id: undefined }]),
      /\[0\] account_id is required/,
    ],
    [
      "an unknown scope",
      JSON.stringify([{ ...valid, scopes: ["admin:all"] }]),
      /\[0\] scopes: unknown scope "admin:all"/,
    ],
    ["a misspelt field", JSON.stringify([{ ...valid, acount_id: "x" }]), /\[0\] unknown field\(s\) acount_id/],
    ["a duplicate client_id", JSON.stringify([valid, valid]), /\[1\] duplicate client_id "field-app"/],
    ["a non-string role", JSON.stringify([{ ...valid, role: 1 }]), /\[0\] role must be a non-empty string/],
  ])("fails start on %s with a clear message that quotes no secret", async (_name, content, message) => {
    const error = await startWith(content);
    expect(error.message).toMatch(message);
    expect(error.message).toContain("DEV_CLIENTS_FILE");
    expect(error.message).not.toMatch(/hunter2|s3cret/);
  });

  it("fails start on a missing file", async () => {
    const error = await createDevIdentityProvider({
      audience: AUDIENCE,
      clientsFile: join(dir, "nope.json"),
      logger: recordingLogger().logger,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DevClientsFileError);
    expect((error as Error).message).toMatch(/cannot be read \(ENOENT\)/);
  });
});
