/**
 * JWKS fetch discipline (docs/api.md §2.8) against a real key server on 127.0.0.1 that answers,
 * fails, hangs or talks nonsense on demand and counts what it is asked. The key set's clock is
 * injected, so cooldowns and backoffs pass without waiting; fetch timeouts are real but small.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AuthenticationError, SigningKeysUnavailableError } from "../../src/auth/errors.js";
import { JwksFetchError } from "../../src/auth/jwks-fetch.js";
import { type RemoteKeysOptions, remoteKeys } from "../../src/auth/keys.js";
import { createTokenVerifier, type TokenVerifier } from "../../src/auth/verifier.js";
import { jwksOf, TestIssuer } from "../support/jwt.js";
import { type KeyServer, type KeyServerMode, startKeyServer } from "../support/key-server.js";

let idp: TestIssuer;
let servers: KeyServer[] = [];

beforeAll(async () => {
  idp = await TestIssuer.create({ alg: "ES256" });
});

afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

async function keyServer(mode: KeyServerMode = "healthy", issuer = idp): Promise<KeyServer> {
  const server = await startKeyServer(issuer.jwks, mode);
  servers.push(server);
  return server;
}

/** A fake clock for the key set: starts at 1,000,000 ms and moves only when told. */
function fakeClock() {
  let now = 1_000_000;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** The cache is off so every verification reaches the key set. */
function verifierOf(server: KeyServer, options: RemoteKeysOptions = {}, issuer = idp): TokenVerifier {
  return createTokenVerifier({
    issuer: issuer.issuer,
    audience: issuer.audience,
    keys: remoteKeys(server.url, options),
    cacheSize: 0,
  });
}

/** Signed by the issuer's key but naming a kid no key set lists. */
function randomKidToken(): Promise<string> {
  return idp.token({}, { kid: `random-${randomUUID()}` });
}

function goodToken(): Promise<string> {
  return idp.token({ sub: `client-${randomUUID()}` });
}

function randomKidTokens(count: number): Promise<string[]> {
  return Promise.all(Array.from({ length: count }, randomKidToken));
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected the verification to fail");
    },
    (error: unknown) => error,
  );
}

async function unavailable(promise: Promise<unknown>): Promise<SigningKeysUnavailableError> {
  const error = await failureOf(promise);
  expect(error).toBeInstanceOf(SigningKeysUnavailableError);
  return error as SigningKeysUnavailableError;
}

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  const error = await failureOf(promise);
  expect(error).toBeInstanceOf(AuthenticationError);
  return (error as AuthenticationError).reason;
}

/** Settles each verification and times it from the start of the batch. */
async function timed(
  verifications: Promise<unknown>[],
): Promise<{ results: PromiseSettledResult<unknown>[]; ms: number[] }> {
  const start = performance.now();
  const ms: number[] = [];
  const results = await Promise.allSettled(
    verifications.map((verification, index) =>
      verification.finally(() => {
        ms[index] = performance.now() - start;
      }),
    ),
  );
  return { results, ms };
}

function expectAllUnavailable(results: PromiseSettledResult<unknown>[]): void {
  for (const result of results) {
    expect(result.status).toBe("rejected");
    expect((result as PromiseRejectedResult).reason).toBeInstanceOf(SigningKeysUnavailableError);
  }
}

describe("remoteKeys while the key server answers 500", () => {
  it("200 concurrent verifications with random kids: exactly one fetch, all fail promptly with SigningKeysUnavailableError", async () => {
    const server = await keyServer("error");
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now });
    const tokens = await randomKidTokens(200);

    const first = await timed(tokens.map((token) => verify(token)));
    expectAllUnavailable(first.results);
    expect(server.requests).toBe(1);
    expect(Math.max(...first.ms)).toBeLessThan(1_000);
    const error = (first.results[0] as PromiseRejectedResult).reason as SigningKeysUnavailableError;
    expect(error.cause).toBeInstanceOf(JwksFetchError);
    expect((error.cause as Error).message).toBe("the JWKS endpoint answered HTTP 500");
    expect(error.retryAfterSeconds).toBe(1);

    // Within the 1 s backoff: no fetch at all, each one refused at once.
    clock.advance(999);
    const second = await timed((await randomKidTokens(200)).map((token) => verify(token)));
    expectAllUnavailable(second.results);
    expect(server.requests).toBe(1);
    expect(Math.max(...second.ms)).toBeLessThan(250);
  });

  it("a token signed by a known key still needs the first fetch: without any key it fails the same way", async () => {
    const server = await keyServer("error");
    const verify = verifierOf(server, { clock: fakeClock().now });
    await unavailable(verify(await goodToken()));
    await unavailable(verify(await goodToken()));
    expect(server.requests).toBe(1);
  });
});

describe("remoteKeys while the key server hangs", () => {
  it("the first callers share one fetch and wait at most the timeout; later ones within the backoff fail at once", async () => {
    const server = await keyServer("hang");
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now, timeoutMs: 150 });

    const tokens = [await goodToken(), ...(await randomKidTokens(49))];
    const first = await timed(tokens.map((token) => verify(token)));
    expectAllUnavailable(first.results);
    expect(server.requests).toBe(1);
    expect(Math.min(...first.ms)).toBeGreaterThanOrEqual(140);
    expect(Math.max(...first.ms)).toBeLessThan(150 + 500);
    const cause = ((first.results[0] as PromiseRejectedResult).reason as Error).cause;
    expect((cause as Error).message).toBe("the JWKS endpoint did not answer within 150 ms");

    const laterTokens = [await goodToken(), ...(await randomKidTokens(49))];
    const later = await timed(laterTokens.map((token) => verify(token)));
    expectAllUnavailable(later.results);
    expect(server.requests).toBe(1);
    expect(Math.max(...later.ms)).toBeLessThan(100);

    // Once the backoff has passed, one new fetch, again bounded by the timeout.
    clock.advance(1_000);
    const third = await timed((await randomKidTokens(20)).map((token) => verify(token)));
    expectAllUnavailable(third.results);
    expect(server.requests).toBe(2);
    expect(Math.max(...third.ms)).toBeLessThan(150 + 500);
  });

  it("known keys verify without waiting, even when their age calls for a refresh that hangs", async () => {
    const server = await keyServer();
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now, timeoutMs: 300 });
    await verify(await goodToken());
    expect(server.requests).toBe(1);

    server.mode = "hang";
    clock.advance(600_000); // the 10 minute maximum age: a background refresh starts
    const tokens = await Promise.all(Array.from({ length: 20 }, goodToken));
    const during = await timed(tokens.map((token) => verify(token)));
    expect(during.results.every((result) => result.status === "fulfilled")).toBe(true);
    expect(Math.max(...during.ms)).toBeLessThan(100);
    await vi.waitFor(() => expect(server.requests).toBe(2));

    // An unknown kid shares the refresh in flight, and fails when it times out.
    await unavailable(verify(await randomKidToken()));
    expect(server.requests).toBe(2);
    await expect(verify(await goodToken())).resolves.toBeDefined();
    expect(server.requests).toBe(2);
  });
});

describe("remoteKeys with a malformed answer", () => {
  it.each([
    ["a body that is not JSON", "malformed", "the JWKS response is not JSON"],
    ["HTTP 500", "error", "the JWKS endpoint answered HTTP 500"],
  ] as const)("%s is a failure like any other: backoff, then known keys only", async (_name, mode, message) => {
    const server = await keyServer();
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now });
    await verify(await goodToken());
    server.mode = mode;
    clock.advance(30_000);
    const error = await unavailable(verify(await randomKidToken()));
    expect((error.cause as Error).message).toBe(message);
    expect(server.requests).toBe(2);
    await unavailable(verify(await randomKidToken()));
    await expect(verify(await goodToken())).resolves.toBeDefined();
    expect(server.requests).toBe(2);
  });
});

describe("remoteKeys backoff", () => {
  it("grows from 1 s by doubling to a 60 s cap, and a success resets it", async () => {
    const server = await keyServer("error");
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now });
    await unavailable(verify(await randomKidToken()));
    expect(server.requests).toBe(1);

    let fetches = 1;
    for (const delay of [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]) {
      clock.advance(delay - 1);
      const early = await unavailable(verify(await randomKidToken()));
      expect(early.retryAfterSeconds).toBe(1);
      expect(server.requests).toBe(fetches);
      clock.advance(1);
      const failed = await unavailable(verify(await randomKidToken()));
      fetches += 1;
      expect(server.requests).toBe(fetches);
      expect(failed.retryAfterSeconds).toBe(Math.min(2 * delay, 60_000) / 1000);
    }

    server.mode = "healthy";
    clock.advance(60_000);
    await expect(verify(await goodToken())).resolves.toBeDefined();
    expect(server.requests).toBe(fetches + 1);

    // The next failure backs off 1 s again, not 60 s.
    server.mode = "error";
    clock.advance(30_000);
    expect((await unavailable(verify(await randomKidToken()))).retryAfterSeconds).toBe(1);
    expect(server.requests).toBe(fetches + 2);
    clock.advance(999);
    await unavailable(verify(await randomKidToken()));
    expect(server.requests).toBe(fetches + 2);
    clock.advance(1);
    await unavailable(verify(await randomKidToken()));
    expect(server.requests).toBe(fetches + 3);
  });

  it("takes its initial delay and cap from the options", async () => {
    const server = await keyServer("error");
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now, backoffInitialMs: 100, backoffMaxMs: 250 });
    await unavailable(verify(await randomKidToken()));
    for (const delay of [100, 200, 250, 250]) {
      clock.advance(delay - 1);
      await unavailable(verify(await randomKidToken()));
      const before = server.requests;
      clock.advance(1);
      await unavailable(verify(await randomKidToken()));
      expect(server.requests).toBe(before + 1);
    }
  });
});

describe("remoteKeys during an outage, for keys already fetched", () => {
  it("verifies tokens signed by a known key with zero fetches", async () => {
    const server = await keyServer();
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now });
    await verify(await goodToken());
    expect(server.requests).toBe(1);

    server.mode = "error";
    clock.advance(30_000);
    await unavailable(verify(await randomKidToken())); // the failure that starts the outage
    expect(server.requests).toBe(2);
    const tokens = await Promise.all(Array.from({ length: 100 }, goodToken));
    const principals = await Promise.all(tokens.map((token) => verify(token)));
    expect(principals.every((principal) => principal.accountId === "acct-1")).toBe(true);
    clock.advance(10 * 60_000);
    await expect(verify(await goodToken())).resolves.toBeDefined();
    // The one background refresh the age called for; an unknown kid waits for it to fail.
    await vi.waitFor(() => expect(server.requests).toBe(3));
    await unavailable(verify(await randomKidToken()));
    clock.advance(1_000);
    await expect(verify(await goodToken())).resolves.toBeDefined();
    expect(server.requests).toBe(3); // within that failure's 2 s backoff
  });
});

describe("remoteKeys while the key server is healthy", () => {
  it("an unknown kid refetches once, then is 401 unknown signing key; no refetch within the 30 s cooldown", async () => {
    const server = await keyServer();
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now });
    // The very first fetch does not make an unknown kid known: one fetch, 401.
    expect(await reasonOf(verify(await randomKidToken()))).toBe("unknown signing key");
    expect(server.requests).toBe(1);

    clock.advance(29_999);
    expect(await reasonOf(verify(await randomKidToken()))).toBe("unknown signing key");
    expect(server.requests).toBe(1);

    clock.advance(1);
    const burst = await Promise.allSettled((await randomKidTokens(200)).map((token) => verify(token)));
    expect(server.requests).toBe(2);
    for (const result of burst) {
      expect(result.status).toBe("rejected");
      expect(((result as PromiseRejectedResult).reason as AuthenticationError).reason).toBe("unknown signing key");
    }
    await expect(verify(await goodToken())).resolves.toBeDefined();
    expect(server.requests).toBe(2);
  });

  it("follows a key rotation: a new key is fetched on first sight, a removed one stops after the age refresh", async () => {
    const before = idp;
    const after = await TestIssuer.create({ alg: "ES256", issuer: before.issuer, audience: before.audience });
    const server = await keyServer("healthy", before);
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now });
    await verify(await before.token());

    server.setKeys(jwksOf(before.key, after.key));
    clock.advance(30_000);
    await expect(verify(await after.token())).resolves.toBeDefined();
    await expect(verify(await before.token())).resolves.toBeDefined();
    expect(server.requests).toBe(2);

    server.setKeys(after.jwks);
    clock.advance(600_000);
    // The refresh runs in the background: the old key verifies until it has answered.
    await expect(verify(await before.token({ sub: "during-refresh" }))).resolves.toBeDefined();
    await vi.waitFor(async () => {
      expect(await reasonOf(verify(await before.token()))).toBe("unknown signing key");
    });
    expect(server.requests).toBe(3);
    await expect(verify(await after.token())).resolves.toBeDefined();
  });

  it("recovers when the key server comes back: the first fetch after the backoff brings the keys", async () => {
    const server = await keyServer("error");
    const clock = fakeClock();
    const verify = verifierOf(server, { clock: clock.now });
    await unavailable(verify(await goodToken()));
    server.mode = "healthy";
    await unavailable(verify(await goodToken())); // still within the backoff
    clock.advance(1_000);
    await expect(verify(await goodToken())).resolves.toBeDefined();
    expect(server.requests).toBe(2);
  });
});
