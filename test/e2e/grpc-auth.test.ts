/**
 * Authentication and authorisation over gRPC (grpc-js), Connect (JSON over HTTP/1.1), gRPC via
 * Connect's own client (HTTP/2) and gRPC-Web: status codes, messages and the WWW-Authenticate
 * challenge, which Connect sends as gRPC trailer metadata.
 */

import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxSourceLedgerService, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  grpc,
  LedgerGrpc,
  METHODS,
  type MethodName,
  metadataValue,
  SERVICES,
  sourceInput,
  type UnaryOutcome,
  uniqueAlt,
} from "./grpc-support.js";

let server: TestServer;
let client: LedgerGrpc;

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

const SCOPE_OF: Record<MethodName, string> = {
  CreateSources: "write:sources",
  ListSources: "read:sources",
  GetSource: "read:sources",
  DeleteSource: "delete:sources",
};
const ALL_SCOPES = ["read:sources", "write:sources", "delete:sources"];

/** A request each method would accept from a fully authorised caller (or answer NOT_FOUND). */
function requestFor(method: MethodName): object {
  switch (method) {
    case "CreateSources":
      return { sources: [sourceInput(uniqueAlt("auth"))] };
    case "ListSources":
      return {};
    case "GetSource":
      return { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" };
    case "DeleteSource":
      return { id: "src_01ARZ3NDEKTSV4RRFFQ69G5FAV" };
  }
}

/** grpc-js passes grpc-message through decodeURI, so Connect's encodeURIComponent escapes (%3A, %2C) survive. */
function message(outcome: UnaryOutcome): string {
  return decodeURIComponent(outcome.details);
}

function expectInvalidToken(outcome: UnaryOutcome, description?: string): void {
  expect(outcome.code).toBe(grpc.status.UNAUTHENTICATED);
  expect(outcome.response).toBeUndefined();
  const challenge = metadataValue(outcome, "www-authenticate");
  // Connect sends error metadata in the trailers of the gRPC response.
  expect(challenge?.in).toBe("trailers");
  expect(challenge?.value).toMatch(/^Bearer error="invalid_token"(, error_description="[^"]*")?$/);
  if (description) {
    expect(challenge?.value).toBe(`Bearer error="invalid_token", error_description="${description}"`);
    expect(message(outcome)).toBe(description);
  }
}

describe("UNAUTHENTICATED over grpc-js", () => {
  it.each(SERVICES.flatMap((s) => METHODS.map((m) => [s, m] as const)))(
    "%s/%s without metadata → 16 with a challenge",
    async (service, method) => {
      const outcome = await client.call(service, method, requestFor(method), null);
      expectInvalidToken(outcome, "missing bearer token");
    },
  );

  const badTokens: [string, () => Promise<string> | string, string][] = [
    ["alg none", () => server.issuer.algNone(), "unsupported algorithm"],
    ["HMAC keyed with the public key", () => server.issuer.hmacConfusion(), "unsupported algorithm"],
    ["expired", () => server.issuer.expired(), "token expired"],
    ["not yet valid", () => server.issuer.notYetValid(), "token not yet valid"],
    ["wrong issuer", () => server.issuer.wrongIssuer(), "unexpected issuer"],
    ["wrong audience", () => server.issuer.wrongAudience(), "unexpected audience"],
    ["forged signature", () => server.issuer.forged(), "signature verification failed"],
    ["unknown kid", () => server.issuer.unknownKid(), "unknown signing key"],
    ["malformed", () => server.issuer.malformed(), "malformed token"],
    ["without exp", () => server.token({ exp: undefined }), "missing exp claim"],
  ];

  it.each(badTokens)("a token that is %s → 16 on every method of both services", async (_kind, make, description) => {
    const token = await make();
    for (const service of SERVICES) {
      for (const method of METHODS) {
        const outcome = await client.call(service, method, requestFor(method), token);
        expect(outcome.code, `${service}/${method}`).toBe(grpc.status.UNAUTHENTICATED);
        expectInvalidToken(outcome, description);
      }
    }
  });

  it.each([
    ["Basic dXNlcjpwYXNz", "authorization scheme must be Bearer"],
    ["Bearer", "missing bearer token"],
    ["Bearer not a token", "malformed token"],
    ["", "missing bearer token"],
  ])("authorization %j → 16", async (authorization, description) => {
    const outcome = await client.call(
      "SourceLedgerService",
      "ListSources",
      {},
      null,
      authorization === "" ? {} : { authorization },
    );
    expectInvalidToken(outcome, description);
  });

  it("authentication comes before scope: an expired token without any scope is 16, not 7", async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await server.token({ scope: undefined, iat: now - 3600, exp: now - 60 });
    const outcome = await client.call("SourceLedgerService", "ListSources", {}, token);
    expectInvalidToken(outcome, "token expired");
  });

  it("authenticates before validating: an invalid request without a token is 16, not 3", async () => {
    const outcome = await client.call("SourceLedgerService", "CreateSources", { sources: [] }, null);
    expectInvalidToken(outcome, "missing bearer token");
  });

  it("accepts the scheme name in any case", async () => {
    const token = await server.token();
    const outcome = await client.call("SourceLedgerService", "ListSources", {}, null, {
      authorization: `bEaReR ${token}`,
    });
    expect(outcome.code).toBe(grpc.status.OK);
  });
});

describe("PERMISSION_DENIED over grpc-js", () => {
  it.each(SERVICES.flatMap((s) => METHODS.map((m) => [s, m] as const)))(
    "%s/%s without its scope → 7 with insufficient_scope",
    async (service, method) => {
      const needed = SCOPE_OF[method];
      const token = await server.token({ scope: ALL_SCOPES.filter((s) => s !== needed).join(" ") });
      const outcome = await client.call(service, method, requestFor(method), token);
      expect(outcome.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(message(outcome)).toBe(`token lacks scope ${needed}`);
      const challenge = metadataValue(outcome, "www-authenticate");
      expect(challenge).toEqual({ in: "trailers", value: `Bearer error="insufficient_scope", scope="${needed}"` });
    },
  );

  it("checks scope before validation: an invalid create without write:sources is 7, not 3", async () => {
    const token = await server.token({ scope: "read:sources" });
    const outcome = await client.call("SourceLedgerService", "CreateSources", { sources: [{ alt_id: "" }] }, token);
    expect(outcome.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(metadataValue(outcome, "www-authenticate")?.value).toBe(
      'Bearer error="insufficient_scope", scope="write:sources"',
    );
  });

  it("checks scope before existence: GetSource of an unknown id without read:sources is 7, not 5", async () => {
    const token = await server.token({ scope: "write:sources" });
    const outcome = await client.call("SandboxSourceLedgerService", "GetSource", { id: "sandbox_nope" }, token);
    expect(outcome.code).toBe(grpc.status.PERMISSION_DENIED);
  });

  it("takes scopes from scope, scp and permissions together", async () => {
    const token = await server.token({
      scope: "read:sources",
      scp: ["write:sources"],
      permissions: ["delete:sources"],
    });
    for (const method of METHODS) {
      const outcome = await client.call("SandboxSourceLedgerService", method, requestFor(method), token);
      expect([grpc.status.OK, grpc.status.NOT_FOUND], method).toContain(outcome.code);
    }
  });

  it("a token without any scope is 7 on every method", async () => {
    const token = await server.token({ scope: undefined });
    for (const method of METHODS) {
      const outcome = await client.call("SourceLedgerService", method, requestFor(method), token);
      expect(outcome.code, method).toBe(grpc.status.PERMISSION_DENIED);
      expect(metadataValue(outcome, "www-authenticate")?.value).toBe(
        `Bearer error="insufficient_scope", scope="${SCOPE_OF[method]}"`,
      );
    }
  });

  it.each(SERVICES.flatMap((s) => METHODS.map((m) => [s, m] as const)))(
    "%s/%s from a non-admin without an account claim → 7",
    async (service, method) => {
      const token = await server.token({ [server.issuer.claim("account_id")]: undefined });
      const outcome = await client.call(service, method, requestFor(method), token);
      expect(outcome.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(message(outcome)).toBe("token has no account claim");
      // docs/api.md §2 prescribes a challenge only for a missing scope; this is not one, so it must not
      // claim insufficient_scope.
      expect(metadataValue(outcome, "www-authenticate")?.value ?? "").not.toContain("insufficient_scope");
    },
  );

  it("an admin without an account claim is let through", async () => {
    const outcome = await client.call("SourceLedgerService", "ListSources", {}, await server.adminToken());
    expect(outcome.code).toBe(grpc.status.OK);
  });
});

describe("Connect's own clients on the same port", () => {
  const baseUrl = () => server.baseUrl;
  let connectJson: Client<typeof SourceLedgerService>;
  let grpcOverH2: Client<typeof SandboxSourceLedgerService>;
  let grpcWeb: Client<typeof SourceLedgerService>;

  beforeAll(() => {
    connectJson = createClient(
      SourceLedgerService,
      createConnectTransport({ baseUrl: baseUrl(), httpVersion: "1.1", useBinaryFormat: false }),
    );
    grpcOverH2 = createClient(SandboxSourceLedgerService, createGrpcTransport({ baseUrl: baseUrl() })); // gRPC is always HTTP/2 (h2c here)
    grpcWeb = createClient(SourceLedgerService, createGrpcWebTransport({ baseUrl: baseUrl(), httpVersion: "1.1" }));
  });

  async function rejection(promise: Promise<unknown>): Promise<ConnectError> {
    try {
      await promise;
    } catch (error) {
      return ConnectError.from(error);
    }
    throw new Error("expected the call to fail");
  }

  it("Connect JSON without a token: unauthenticated with the challenge in the error metadata", async () => {
    const error = await rejection(connectJson.listSources({}));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toBe("missing bearer token");
    expect(error.metadata.get("www-authenticate")).toBe(
      'Bearer error="invalid_token", error_description="missing bearer token"',
    );
  });

  it("Connect JSON, missing scope: permission_denied with insufficient_scope", async () => {
    const token = await server.token({ scope: "read:sources" });
    const error = await rejection(
      connectJson.deleteSource(
        { key: { case: "id", value: "src_x" } },
        { headers: { authorization: `Bearer ${token}` } },
      ),
    );
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.metadata.get("www-authenticate")).toBe('Bearer error="insufficient_scope", scope="delete:sources"');
  });

  it("Connect JSON with a valid token creates and reads a source", async () => {
    const headers = { authorization: `Bearer ${await server.userToken("acct-connect-json")}` };
    const coordinates = [1, 1, 1.01, 1, 1.01, 1.01, 1, 1.01, 1, 1];
    const created = await connectJson.createSources(
      {
        sources: [
          {
            altId: "cj-1",
            geometry: { kind: { case: "polygon", value: { rings: [{ coordinates }] } } },
            startAt: { seconds: 1704067200n, nanos: 0 },
            endAt: { seconds: 1735689600n, nanos: 0 },
          },
        ],
      },
      { headers },
    );
    expect(created.sources).toHaveLength(1);
    const [source] = created.sources;
    expect(source.id).toMatch(/^src_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(source.accountId).toBe("acct-connect-json");
    expect(source.createdBy).toBe("Client acct-connect-json");
    expect(source.geometry?.kind.case).toBe("polygon");
    expect(source.geometry?.kind.value).toMatchObject({ rings: [{ coordinates }] });
    expect(source.startAt?.seconds).toBe(1704067200n);
    // The grpc-js client sees the same record.
    const viaGrpc = await client.ok(
      "SourceLedgerService",
      "GetSource",
      { id: source.id },
      headers.authorization.slice(7),
    );
    expect(viaGrpc.source).toMatchObject({
      id: source.id,
      alt_id: "cj-1",
      geometry: { polygon: { rings: [{ coordinates }] } },
    });
  });

  it("gRPC (HTTP/2) via Connect's client: an expired token is unauthenticated with the challenge", async () => {
    const error = await rejection(
      grpcOverH2.getSource(
        { id: "sandbox_x" },
        { headers: { authorization: `Bearer ${await server.issuer.expired()}` } },
      ),
    );
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toBe("token expired");
    expect(error.metadata.get("www-authenticate")).toBe(
      'Bearer error="invalid_token", error_description="token expired"',
    );
  });

  it("gRPC (HTTP/2) via Connect's client, missing scope: permission_denied with the challenge", async () => {
    const token = await server.token({ scope: "read:sources delete:sources" });
    const error = await rejection(
      grpcOverH2.createSources({ sources: [] }, { headers: { authorization: `Bearer ${token}` } }),
    );
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.metadata.get("www-authenticate")).toBe('Bearer error="insufficient_scope", scope="write:sources"');
  });

  it("gRPC-Web: without a token unauthenticated with the challenge; with one, a list", async () => {
    const error = await rejection(grpcWeb.listSources({}));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.metadata.get("www-authenticate")).toBe(
      'Bearer error="invalid_token", error_description="missing bearer token"',
    );

    const token = await server.userToken("acct-grpc-web");
    const grpcJs = await client.ok("SourceLedgerService", "CreateSources", { sources: [sourceInput("web-1")] }, token);
    const listed = await grpcWeb.listSources({}, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.sources.map((s) => s.id)).toEqual([grpcJs.sources[0].id]);
    expect(listed.sources[0].altId).toBe("web-1");
    expect(listed.sources[0].accountId).toBe("acct-grpc-web");
  });
});
