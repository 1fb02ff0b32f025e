import { Code, ConnectError, createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { SandboxSourceLedgerService, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { AuthenticationError, SigningKeysUnavailableError } from "../../src/auth/errors.js";
import { createAuthInterceptor, isPublicService, scopeForMethod } from "../../src/auth/interceptor.js";
import { principalKey } from "../../src/auth/principal.js";
import type { Scope } from "../../src/auth/scopes.js";
import { createTokenVerifier } from "../../src/auth/verifier.js";
import type { Principal } from "../../src/model/principal.js";
import { TestIssuer } from "../support/jwt.js";

function principal(overrides: Partial<Principal> = {}): Principal {
  return {
    subject: "client-1",
    accountId: "acct-1",
    role: "user",
    isAdmin: false,
    scopes: new Set<Scope>(["read:sources", "write:sources", "delete:sources"]),
    actor: "Client One",
    expiresAt: Math.floor(Date.now() / 1000) + 3600,
    ...overrides,
  };
}

/** Tokens are looked up by name, so each test states exactly what the verifier concluded. */
const PRINCIPALS: Record<string, Principal> = {
  good: principal(),
  readonly: principal({ scopes: new Set(["read:sources"]) }),
  accountless: principal({ accountId: null }),
  accountlessReadonly: principal({ accountId: null, scopes: new Set(["read:sources"]) }),
  admin: principal({ role: "admin", isAdmin: true, accountId: null, scopes: new Set(["read:sources"]) }),
};

async function fakeVerify(token: string): Promise<Principal> {
  if (token === "expired") throw new AuthenticationError("token expired");
  if (token === "keys-down") throw new SigningKeysUnavailableError();
  if (token === "boom") throw new Error("database password is hunter2");
  const found = PRINCIPALS[token];
  if (found === undefined) throw new AuthenticationError("signature verification failed");
  return found;
}

function harness(interceptor: Interceptor) {
  const seen: { principal: Principal | undefined; calls: number } = { principal: undefined, calls: 0 };
  const transport = createRouterTransport(
    (router) => {
      const record = (values: { get: (key: typeof principalKey) => Principal | undefined }) => {
        seen.calls += 1;
        seen.principal = values.get(principalKey);
      };
      for (const service of [SourceLedgerService, SandboxSourceLedgerService]) {
        router.service(service, {
          createSources: (_req, ctx) => {
            record(ctx.values);
            return {};
          },
          listSources: (_req, ctx) => {
            record(ctx.values);
            return {};
          },
          getSource: (_req, ctx) => {
            record(ctx.values);
            return {};
          },
          deleteSource: (_req, ctx) => {
            record(ctx.values);
            return {};
          },
        });
      }
    },
    { router: { interceptors: [interceptor] } },
  );
  return {
    client: createClient(SourceLedgerService, transport),
    sandbox: createClient(SandboxSourceLedgerService, transport),
    seen,
  };
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConnectError);
  return error as ConnectError;
}

const withAuth = (value: string) => ({ headers: { authorization: value } });

describe("createAuthInterceptor", () => {
  const { client, sandbox, seen } = harness(
    createAuthInterceptor({ verify: fakeVerify, requiredScope: scopeForMethod }),
  );

  it.each([
    ["no Authorization header", undefined, "missing bearer token"],
    ["an empty Authorization header", "", "missing bearer token"],
    ["Bearer without a token", "Bearer ", "missing bearer token"],
    ["the Basic scheme", "Basic Y2xpZW50OnNlY3JldA==", "authorization scheme must be Bearer"],
    ["a token glued to the scheme", "Bearergood", "authorization scheme must be Bearer"],
    ["a token with spaces", "Bearer good extra", "malformed token"],
    ["a token the verifier rejects", "Bearer forged", "signature verification failed"],
    ["an expired token", "Bearer expired", "token expired"],
  ])("answers %s with Unauthenticated and an invalid_token challenge", async (_name, header, reason) => {
    const before = seen.calls;
    const error = await failure(client.listSources({}, header === undefined ? {} : withAuth(header)));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toBe(reason);
    expect(error.metadata.get("www-authenticate")).toBe(`Bearer error="invalid_token", error_description="${reason}"`);
    expect(seen.calls).toBe(before);
  });

  it("accepts the scheme name in any case", async () => {
    await client.listSources({}, withAuth("bearer good"));
    expect(seen.principal).toBe(PRINCIPALS.good);
  });

  it("puts the principal into the context values", async () => {
    await client.createSources({}, withAuth("Bearer good"));
    expect(seen.principal).toBe(PRINCIPALS.good);
  });

  it.each([
    ["CreateSources", (token: string) => client.createSources({}, withAuth(token)), "write:sources"],
    ["DeleteSource", (token: string) => client.deleteSource({}, withAuth(token)), "delete:sources"],
    ["sandbox CreateSources", (token: string) => sandbox.createSources({}, withAuth(token)), "write:sources"],
  ])(
    "refuses %s without its scope with PermissionDenied and an insufficient_scope challenge",
    async (_name, call, scope) => {
      const before = seen.calls;
      const error = await failure(call("Bearer readonly"));
      expect(error.code).toBe(Code.PermissionDenied);
      expect(error.rawMessage).toBe(`token lacks scope ${scope}`);
      expect(error.metadata.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);
      expect(seen.calls).toBe(before);
    },
  );

  it("lets a read-only token read", async () => {
    await client.getSource({ id: "x" }, withAuth("Bearer readonly"));
    await sandbox.listSources({}, withAuth("Bearer readonly"));
    expect(seen.principal).toBe(PRINCIPALS.readonly);
  });

  it("refuses a non-admin token without an account claim", async () => {
    const error = await failure(client.listSources({}, withAuth("Bearer accountless")));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toBe("token has no account claim");
    expect(error.metadata.get("www-authenticate")).toBeNull();
  });

  it("checks scope before the account claim", async () => {
    const error = await failure(client.createSources({}, withAuth("Bearer accountlessReadonly")));
    expect(error.rawMessage).toBe("token lacks scope write:sources");
  });

  it("lets an admin without an account claim through", async () => {
    await client.listSources({}, withAuth("Bearer admin"));
    expect(seen.principal).toBe(PRINCIPALS.admin);
  });

  it("answers Unavailable when signing keys cannot be fetched", async () => {
    const error = await failure(client.listSources({}, withAuth("Bearer keys-down")));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.metadata.get("www-authenticate")).toBeNull();
  });

  it("does not leak the message of an unexpected verifier failure", async () => {
    const error = await failure(client.listSources({}, withAuth("Bearer boom")));
    expect(error.code).toBe(Code.Internal);
    expect(error.rawMessage).toBe("authentication failed");
  });

  it("refuses a method with no scope mapping after authenticating", async () => {
    const strict = harness(createAuthInterceptor({ verify: fakeVerify, requiredScope: () => undefined }));
    expect((await failure(strict.client.listSources({}))).code).toBe(Code.Unauthenticated);
    const error = await failure(strict.client.listSources({}, withAuth("Bearer good")));
    expect(error.code).toBe(Code.Internal);
    expect(strict.seen.calls).toBe(0);
  });
});

describe("public services (auth/scopes.ts)", () => {
  it("are gRPC health and both reflections, and nothing of the API", () => {
    expect(
      [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "sourceledger.v2.SourceLedgerService",
        "sourceledger.v2.SandboxSourceLedgerService",
      ].map(isPublicService),
    ).toEqual([true, true, true, false, false]);
  });

  it("are called without a token, and a bad one is ignored; the API still needs one", async () => {
    const interceptor = createAuthInterceptor({ verify: fakeVerify, requiredScope: scopeForMethod });
    const transport = createRouterTransport(
      (router) => {
        router.service(Health, { check: () => ({ status: HealthCheckResponse_ServingStatus.SERVING }) });
        router.service(SourceLedgerService, { listSources: () => ({}) });
      },
      { router: { interceptors: [interceptor] } },
    );
    const health = createClient(Health, transport);
    expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    expect((await health.check({}, withAuth("Bearer forged"))).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    const error = await failure(createClient(SourceLedgerService, transport).listSources({}));
    expect(error.code).toBe(Code.Unauthenticated);
  });
});

describe("scopeForMethod", () => {
  it("maps every method of the service", () => {
    expect(SourceLedgerService.methods.map((method) => [method.name, scopeForMethod(method.name)])).toEqual([
      ["CreateSources", "write:sources"],
      ["ListSources", "read:sources"],
      ["GetSource", "read:sources"],
      ["DeleteSource", "delete:sources"],
      ["SearchSources", "read:sources"],
      ["ListSourceEvents", "read:sources"],
      ["ListConflicts", "read:sources"],
    ]);
    expect(scopeForMethod("createSources")).toBeUndefined();
  });
});

describe("createAuthInterceptor with the real verifier", () => {
  let idp: TestIssuer;
  let client: ReturnType<typeof harness>["client"];
  let seen: ReturnType<typeof harness>["seen"];
  beforeAll(async () => {
    idp = await TestIssuer.create({ alg: "ES256" });
    const verify = createTokenVerifier({ issuer: idp.issuer, audience: idp.audience, keys: idp.keys });
    ({ client, seen } = harness(createAuthInterceptor({ verify, requiredScope: scopeForMethod })));
  });

  it("authenticates a signed token end to end", async () => {
    await client.listSources({}, withAuth(`Bearer ${await idp.token()}`));
    expect(seen.principal).toMatchObject({ accountId: "acct-1", actor: "Client One" });
  });

  it("turns an alg-none token into invalid_token", async () => {
    const error = await failure(client.listSources({}, withAuth(`Bearer ${idp.algNone()}`)));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.metadata.get("www-authenticate")).toBe(
      'Bearer error="invalid_token", error_description="unsupported algorithm"',
    );
  });

  it("checks authentication before scope", async () => {
    const error = await failure(client.createSources({}, withAuth(`Bearer ${await idp.wrongAudience()}`)));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toBe("unexpected audience");
  });

  it("grants by the permissions claim as well", async () => {
    const token = await idp.token({ scope: undefined, permissions: ["delete:sources"] });
    await client.deleteSource({}, withAuth(`Bearer ${token}`));
    const error = await failure(client.listSources({}, withAuth(`Bearer ${token}`)));
    expect(error.code).toBe(Code.PermissionDenied);
  });
});
