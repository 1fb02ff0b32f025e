import { createServer } from "node:http";
import { CompactSign, type JWTVerifyGetKey } from "jose";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AuthenticationError, SigningKeysUnavailableError } from "../../src/auth/errors.js";
import { createTokenVerifier, remoteKeys, type TokenVerifierOptions } from "../../src/auth/verifier.js";
import { nowSeconds, rawToken, startJwksServer, type TestAlgorithm, TestIssuer } from "../support/jwt.js";

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AuthenticationError);
  return (error as AuthenticationError).reason;
}

function verifierFor(issuer: TestIssuer, overrides: Partial<TokenVerifierOptions> = {}) {
  return createTokenVerifier({ issuer: issuer.issuer, audience: issuer.audience, keys: issuer.keys, ...overrides });
}

describe.each<TestAlgorithm>(["RS256", "ES256"])("createTokenVerifier with %s keys", (alg) => {
  let idp: TestIssuer;
  beforeAll(async () => {
    idp = await TestIssuer.create({ alg });
  });

  it("accepts a good token and builds the principal from namespaced claims", async () => {
    const principal = await verifierFor(idp)(await idp.token());
    expect(principal).toEqual({
      subject: "client-1@clients",
      accountId: "acct-1",
      role: "user",
      isAdmin: false,
      scopes: new Set(["read:sources", "write:sources", "delete:sources"]),
      actor: "Client One",
      expiresAt: expect.any(Number),
    });
  });

  it.each([
    ["alg none", (i: TestIssuer) => i.algNone(), "unsupported algorithm"],
    ["HMAC keyed with the public key", (i: TestIssuer) => i.hmacConfusion(), "unsupported algorithm"],
    ["expired", (i: TestIssuer) => i.expired(), "token expired"],
    ["not yet valid", (i: TestIssuer) => i.notYetValid(), "token not yet valid"],
    ["wrong issuer", (i: TestIssuer) => i.wrongIssuer(), "unexpected issuer"],
    ["wrong audience", (i: TestIssuer) => i.wrongAudience(), "unexpected audience"],
    ["forged with a known kid", (i: TestIssuer) => i.forged(), "signature verification failed"],
    ["unknown kid", (i: TestIssuer) => i.unknownKid(), "unknown signing key"],
    ["malformed", (i: TestIssuer) => i.malformed(), "malformed token"],
    ["no exp", (i: TestIssuer) => i.token({ exp: undefined }), "missing exp claim"],
    ["no iss", (i: TestIssuer) => i.token({ iss: undefined }), "unexpected issuer"],
    ["no aud", (i: TestIssuer) => i.token({ aud: undefined }), "unexpected audience"],
    ["no sub", (i: TestIssuer) => i.token({ sub: undefined }), "missing sub claim"],
  ] as const)("rejects a token that is %s", async (_name, make, reason) => {
    expect(await reasonOf(verifierFor(idp)(await make(idp)))).toBe(reason);
  });
});

describe("createTokenVerifier and the spelling of a signature", () => {
  it("accepts a token only as base64url writes its signature: no padding, no spare bits set", async () => {
    const idp = await TestIssuer.create({ alg: "RS256" });
    const token = await idp.token();
    const verify = verifierFor(idp);
    await expect(verify(token)).resolves.toMatchObject({ accountId: "acct-1" });
    // A 256-byte RS256 signature leaves 4 spare bits in its last character: 15 other spellings of
    // the same bytes, each also with padding.
    const head = token.slice(0, -1);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const last = alphabet.indexOf(token.at(-1) as string);
    const spellings = Array.from({ length: 16 }, (_, low) => alphabet[(last & ~0b1111) | low])
      .flatMap((c) => [`${head}${c}`, `${head}${c}==`])
      .filter((spelling) => spelling !== token);
    expect(spellings).toHaveLength(31);
    for (const spelling of spellings) expect(await reasonOf(verify(spelling))).toBe("malformed token");
  });
});

describe("createTokenVerifier claims", () => {
  let idp: TestIssuer;
  beforeAll(async () => {
    idp = await TestIssuer.create({ audience: "https://ledger.example/api/" });
  });

  it("namespaces custom claims by the audience with its trailing slash trimmed", async () => {
    expect(idp.claim("account_id")).toBe("https://ledger.example/api/account_id");
    const principal = await verifierFor(idp)(await idp.token());
    expect(principal.accountId).toBe("acct-1");
  });

  it("ignores claims under another namespace", async () => {
    const token = await idp.token({
      [idp.claim("account_id")]: undefined,
      "https://ledger.example/api//account_id": "acct-x",
      "https://other.example/account_id": "acct-y",
    });
    expect((await verifierFor(idp)(token)).accountId).toBeNull();
  });

  it("accepts an audience array that contains the audience", async () => {
    const token = await idp.token({ aud: ["https://other.example", idp.audience] });
    expect((await verifierFor(idp)(token)).subject).toBe("client-1@clients");
  });

  it("takes the union of scope, scp and permissions", async () => {
    const token = await idp.token({
      scope: "read:sources  openid",
      scp: ["write:sources"],
      permissions: ["delete:sources", "read:sources"],
    });
    const principal = await verifierFor(idp)(token);
    expect([...principal.scopes].sort()).toEqual(["delete:sources", "openid", "read:sources", "write:sources"]);
  });

  it("accepts scp as a space-separated string", async () => {
    const token = await idp.token({ scope: undefined, scp: "read:sources write:sources" });
    expect([...(await verifierFor(idp)(token)).scopes]).toEqual(["read:sources", "write:sources"]);
  });

  it("has no scopes when none of the claims is present", async () => {
    const token = await idp.token({ scope: undefined });
    expect((await verifierFor(idp)(token)).scopes.size).toBe(0);
  });

  it.each([
    ["scope", { scope: ["read:sources"] }, "invalid scope claim"],
    ["scp", { scp: [1] }, "invalid scp claim"],
    ["permissions", { permissions: "read:sources" }, "invalid permissions claim"],
    ["account_id", { "https://ledger.example/api/account_id": 42 }, "invalid account_id claim"],
    ["role", { "https://ledger.example/api/role": ["admin"] }, "invalid role claim"],
    ["client_name", { "https://ledger.example/api/client_name": "" }, "invalid client_name claim"],
    ["v1_client_id", { "https://ledger.example/api/v1_client_id": {} }, "invalid v1_client_id claim"],
    ["exp", { exp: "tomorrow" }, "invalid exp claim"],
    ["nbf", { nbf: "now" }, "invalid nbf claim"],
    // Not Unicode text: a lone surrogate would be stored as U+FFFD, alike for different accounts.
    ["sub (a lone surrogate)", { sub: "client-\ud800" }, "invalid sub claim"],
    [
      "account_id (a lone surrogate)",
      { "https://ledger.example/api/account_id": "acct-\udc00-1" },
      "invalid account_id claim",
    ],
    [
      "client_name (a lone surrogate)",
      { "https://ledger.example/api/client_name": "\ud83d" },
      "invalid client_name claim",
    ],
  ] as const)("rejects a mistyped %s claim", async (_claim, overrides, reason) => {
    expect(await reasonOf(verifierFor(idp)(await idp.token(overrides)))).toBe(reason);
  });

  it("accepts claims with paired surrogates (characters beyond the BMP)", async () => {
    const principal = await verifierFor(idp)(
      await idp.token({ "https://ledger.example/api/account_id": "acct-\u{1F30D}", sub: "client-\u{1D11E}" }),
    );
    expect(principal.accountId).toBe("acct-\u{1F30D}");
    expect(principal.subject).toBe("client-\u{1D11E}");
  });

  it("recognises admins, who may have no account", async () => {
    const token = await idp.token({ [idp.claim("role")]: "admin", [idp.claim("account_id")]: undefined });
    const principal = await verifierFor(idp)(token);
    expect(principal).toMatchObject({ isAdmin: true, role: "admin", accountId: null });
  });

  it("does not treat other roles as admin", async () => {
    const token = await idp.token({ [idp.claim("role")]: "Admin" });
    expect((await verifierFor(idp)(token)).isAdmin).toBe(false);
  });

  it("uses sub as the actor when there is no client_name", async () => {
    const token = await idp.token({ [idp.claim("client_name")]: undefined });
    expect((await verifierFor(idp)(token)).actor).toBe("client-1@clients");
  });

  it("honours the 5 second clock tolerance on exp and nbf", async () => {
    const verify = verifierFor(idp, { cacheSize: 0 });
    const now = nowSeconds();
    await expect(verify(await idp.token({ exp: now - 3 }))).resolves.toBeDefined();
    await expect(verify(await idp.token({ nbf: now + 3 }))).resolves.toBeDefined();
    expect(await reasonOf(verify(await idp.token({ exp: now - 6 })))).toBe("token expired");
    expect(await reasonOf(verify(await idp.token({ nbf: now + 8 })))).toBe("token not yet valid");
  });

  it("rejects an unsigned token even with a valid-looking signature part", async () => {
    const token = rawToken({ alg: "none" }, idp.claims(), "c2lnbmF0dXJl");
    expect(await reasonOf(verifierFor(idp)(token))).toBe("unsupported algorithm");
  });

  it("rejects a properly signed token whose payload is not JSON", async () => {
    const token = await new CompactSign(new TextEncoder().encode("not json"))
      .setProtectedHeader({ alg: idp.key.alg, kid: idp.key.kid })
      .sign(idp.key.privateKey);
    expect(await reasonOf(verifierFor(idp)(token))).toBe("malformed token");
  });

  it("rejects an oversized token before parsing it", async () => {
    expect(await reasonOf(verifierFor(idp)("a".repeat(20_000)))).toBe("malformed token");
  });

  it("reads the expected issuer through a function each time", async () => {
    let issuer = "https://not-yet.test/";
    const verify = createTokenVerifier({ issuer: () => issuer, audience: idp.audience, keys: idp.keys });
    const token = await idp.token();
    expect(await reasonOf(verify(token))).toBe("unexpected issuer");
    issuer = idp.issuer;
    await expect(verify(token)).resolves.toBeDefined();
  });

  it("keeps the jose error code but not the jose error, which carries the claims", async () => {
    const error = await verifierFor(idp)(await idp.expired()).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ reason: "token expired", joseCode: "ERR_JWT_EXPIRED" });
    expect((error as Error).cause).toBeUndefined();
  });
});

describe("createTokenVerifier cache", () => {
  let idp: TestIssuer;
  beforeAll(async () => {
    idp = await TestIssuer.create({ alg: "ES256" });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function countingKeys(): { keys: JWTVerifyGetKey; calls: () => number } {
    let calls = 0;
    const inner = idp.keys;
    return {
      keys: (header, token) => {
        calls += 1;
        return inner(header, token);
      },
      calls: () => calls,
    };
  }

  it("verifies the same token once", async () => {
    const counter = countingKeys();
    const verify = verifierFor(idp, { keys: counter.keys });
    const token = await idp.token();
    const first = await verify(token);
    const second = await verify(token);
    expect(second).toBe(first);
    expect(counter.calls()).toBe(1);
  });

  it("shares one verification between concurrent first uses", async () => {
    const counter = countingKeys();
    const verify = verifierFor(idp, { keys: counter.keys });
    const token = await idp.token();
    await Promise.all([verify(token), verify(token), verify(token)]);
    expect(counter.calls()).toBe(1);
  });

  it("stops accepting a cached token at exp + 5 s", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const start = nowSeconds();
    const counter = countingKeys();
    const verify = verifierFor(idp, { keys: counter.keys });
    const token = await idp.token({ iat: start, exp: start + 60 });
    await verify(token);

    vi.setSystemTime((start + 64) * 1000);
    await expect(verify(token)).resolves.toBeDefined();
    expect(counter.calls()).toBe(1);

    vi.setSystemTime((start + 65) * 1000);
    expect(await reasonOf(verify(token))).toBe("token expired");
  });

  it("never caches failures", async () => {
    const counter = countingKeys();
    const verify = verifierFor(idp, { keys: counter.keys });
    const token = await idp.forged();
    expect(await reasonOf(verify(token))).toBe("signature verification failed");
    expect(await reasonOf(verify(token))).toBe("signature verification failed");
    expect(counter.calls()).toBe(2);
  });

  it("evicts the least recently used token beyond its size", async () => {
    const counter = countingKeys();
    const verify = verifierFor(idp, { keys: counter.keys, cacheSize: 2 });
    const [a, b, c] = await Promise.all([idp.token({ sub: "a" }), idp.token({ sub: "b" }), idp.token({ sub: "c" })]);
    await verify(a);
    await verify(b);
    await verify(a); // a is now the most recently used
    await verify(c); // evicts b
    expect(counter.calls()).toBe(3);
    await verify(a);
    expect(counter.calls()).toBe(3);
    await verify(b);
    expect(counter.calls()).toBe(4);
  });

  it("does not serve a cached principal once the expected issuer changes", async () => {
    let issuer = idp.issuer;
    const verify = createTokenVerifier({ issuer: () => issuer, audience: idp.audience, keys: idp.keys });
    const token = await idp.token();
    await verify(token);
    issuer = "https://another.test/";
    expect(await reasonOf(verify(token))).toBe("unexpected issuer");
  });
});

describe("remoteKeys", () => {
  it("verifies against a JWKS served over HTTP", async () => {
    const idp = await TestIssuer.create();
    const server = await startJwksServer(idp.jwks);
    try {
      const verify = verifierFor(idp, { keys: remoteKeys(server.url) });
      await expect(verify(await idp.token())).resolves.toMatchObject({ accountId: "acct-1" });
      expect(await reasonOf(verify(await idp.forged()))).toBe("signature verification failed");
      expect(server.requests).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("refetches the JWKS when a token names an unknown kid (key rotation)", async () => {
    const before = await TestIssuer.create();
    const after = await TestIssuer.create({ issuer: before.issuer });
    const server = await startJwksServer(before.jwks);
    try {
      const verify = verifierFor(before, { keys: remoteKeys(server.url, { cooldownMs: 0 }) });
      await verify(await before.token());
      server.setKeys({ keys: [...before.jwks.keys, ...after.jwks.keys] });
      await expect(verify(await after.token())).resolves.toBeDefined();
      expect(server.requests).toBe(2);
    } finally {
      await server.close();
    }
  });

  it("does not refetch for an unknown kid within the cooldown", async () => {
    const before = await TestIssuer.create();
    const after = await TestIssuer.create({ issuer: before.issuer });
    const server = await startJwksServer(before.jwks);
    try {
      const verify = verifierFor(before, { keys: remoteKeys(server.url) });
      await verify(await before.token());
      server.setKeys(after.jwks);
      expect(await reasonOf(verify(await after.token()))).toBe("unknown signing key");
      expect(server.requests).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("reports an unreachable JWKS as unavailable keys, not as a bad token", async () => {
    const idp = await TestIssuer.create();
    const server = await startJwksServer(idp.jwks);
    server.setStatus(503);
    try {
      const verify = verifierFor(idp, { keys: remoteKeys(server.url) });
      await expect(verify(await idp.token())).rejects.toBeInstanceOf(SigningKeysUnavailableError);
    } finally {
      await server.close();
    }
  });

  it("times out a JWKS endpoint that does not answer", async () => {
    const hanging = createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
    const address = hanging.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const idp = await TestIssuer.create();
    try {
      const verify = verifierFor(idp, {
        keys: remoteKeys(`http://127.0.0.1:${port}/.well-known/jwks.json`, { timeoutMs: 200 }),
      });
      await expect(verify(await idp.token())).rejects.toBeInstanceOf(SigningKeysUnavailableError);
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });
});
