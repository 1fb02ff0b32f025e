/**
 * docs/api.md §2.8 over REST: while the key server fails, a token the service cannot check is
 * refused with 503 at once, and the key server is not asked again within the backoff.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { expectProblem } from "./rest-support.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  // Failing before the service has fetched any key: nothing is known, every kid needs a fetch.
  server.jwks.setStatus(500);
});

afterAll(async () => {
  await server?.close();
});

describe("signing keys while the key server answers 500", () => {
  it("unknown kids → 503 unavailable quickly, without a fetch per request", async () => {
    const first = await server.request("GET", "/sources", { token: await server.issuer.unknownKid() });
    const failedAt = performance.now();
    const problem = await expectProblem(first, 503, "unavailable");
    expect(problem.detail).toBe("signing keys unavailable");
    expect(first.headers.get("www-authenticate")).toBeNull();
    expect(server.jwks.requests).toBe(1);

    const tokens = await Promise.all(
      Array.from({ length: 20 }, (_, i) => server.issuer.token({}, { kid: `kid-nobody-published-${i}` })),
    );
    const start = performance.now();
    const answers = await Promise.all(tokens.map((token) => server.request("GET", "/sources", { token })));
    const elapsed = performance.now() - start;
    const sinceFailure = performance.now() - failedAt;
    for (const res of answers) {
      await expectProblem(res, 503, "unavailable");
      // Refused within the backoff: the answer says when to try again (the backoff's 1 s, rounded up).
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    // Within the first failure's 1 s backoff there is no fetch at all; a run slower than that
    // may see the one fetch the next backoff window allows, never one per request.
    expect(server.jwks.requests).toBeLessThanOrEqual(sinceFailure < 1_000 ? 1 : 2);
    expect(elapsed).toBeLessThan(2_000);
  });
});
