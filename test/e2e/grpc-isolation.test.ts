/**
 * Over gRPC: account isolation for all four methods in both services, concurrent creates racing
 * for one alt_id, the sandbox session cap, and REST answered on the same port while a grpc-js
 * channel is open.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  fieldViolations,
  grpc,
  LedgerGrpc,
  SERVICES,
  type ServiceName,
  sourceInput,
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

type Source = Record<string, any>;

describe.each(SERVICES)("%s isolates accounts", (service) => {
  const tag = service === "SourceLedgerService" ? "prod" : "sbx";
  let alice: string;
  let bob: string;
  let aliceSource: Source;

  beforeAll(async () => {
    alice = await server.userToken(`acct-${tag}-alice`);
    bob = await server.userToken(`acct-${tag}-bob`);
    const created = await client.ok(
      service,
      "CreateSources",
      { sources: [sourceInput("alice-1", { methodology: "iso" })] },
      alice,
    );
    aliceSource = created.sources[0];
  });

  it("GetSource of another account's id is NOT_FOUND, worded exactly as an unknown id", async () => {
    const foreign = await client.call(service, "GetSource", { id: aliceSource.id }, bob);
    expect(foreign.code).toBe(grpc.status.NOT_FOUND);
    const unknownId = aliceSource.id.replace(/.$/, (c: string) => (c === "0" ? "1" : "0"));
    const unknown = await client.call(service, "GetSource", { id: unknownId }, bob);
    expect(unknown.code).toBe(grpc.status.NOT_FOUND);
    expect(foreign.details.replace(aliceSource.id, "<id>")).toBe(unknown.details.replace(unknownId, "<id>"));
    expect(foreign.trailers.get("grpc-status-details-bin")).toEqual([]);
  });

  it("ListSources never shows another account's sources, with or without filters", async () => {
    expect((await client.ok(service, "ListSources", {}, bob)).sources).toEqual([]);
    expect((await client.ok(service, "ListSources", { methodology: "iso" }, bob)).sources).toEqual([]);
    if (service === "SandboxSourceLedgerService") {
      expect((await client.ok(service, "ListSources", { id: aliceSource.id }, bob)).sources).toEqual([]);
      expect((await client.ok(service, "ListSources", { alt_id: "alice-1" }, bob)).sources).toEqual([]);
    }
    expect((await client.ok(service, "ListSources", {}, alice)).sources.map((s: Source) => s.id)).toEqual([
      aliceSource.id,
    ]);
  });

  it("DeleteSource of another account's id or alt_id is NOT_FOUND and deletes nothing", async () => {
    expect((await client.call(service, "DeleteSource", { id: aliceSource.id }, bob)).code).toBe(grpc.status.NOT_FOUND);
    expect((await client.call(service, "DeleteSource", { alt_id: "alice-1" }, bob)).code).toBe(grpc.status.NOT_FOUND);
    expect((await client.ok(service, "GetSource", { id: aliceSource.id }, alice)).source.id).toBe(aliceSource.id);
  });

  it("CreateSources writes to the caller's account only: the same alt_id is free in another account", async () => {
    const created = await client.ok(service, "CreateSources", { sources: [sourceInput("alice-1")] }, bob);
    expect(created.sources[0]).toMatchObject({ alt_id: "alice-1", account_id: `acct-${tag}-bob` });
    expect(created.sources[0].id).not.toBe(aliceSource.id);
    // Bob's delete by alt_id removes his own, never Alice's.
    expect((await client.call(service, "DeleteSource", { alt_id: "alice-1" }, bob)).code).toBe(grpc.status.OK);
    expect((await client.ok(service, "GetSource", { id: aliceSource.id }, alice)).source.alt_id).toBe("alice-1");
    expect((await client.ok(service, "ListSources", {}, bob)).sources).toEqual([]);
  });
});

describe.each(SERVICES)("%s under concurrency", (service) => {
  it("20 concurrent CreateSources with one alt_id: exactly one OK, 19 ALREADY_EXISTS", async () => {
    const token = await server.userToken(`acct-race-${service}`);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () =>
        client.call(service, "CreateSources", { sources: [sourceInput("contended")] }, token),
      ),
    );
    const codes = outcomes.map((o) => o.code);
    expect(codes.filter((c) => c === grpc.status.OK)).toHaveLength(1);
    expect(codes.filter((c) => c === grpc.status.ALREADY_EXISTS)).toHaveLength(19);
    for (const o of outcomes.filter((x) => x.code === grpc.status.ALREADY_EXISTS)) {
      expect(fieldViolations(o).map((v) => v.field)).toEqual(["sources[0].alt_id"]);
    }
    const winner = outcomes.find((o) => o.code === grpc.status.OK)!.response.sources[0];
    const listed = (await client.ok(service, "ListSources", {}, token)).sources;
    expect(listed.map((s: Source) => s.id)).toEqual([winner.id]);
  });

  it("concurrent creates of distinct alt_ids all succeed with distinct ids", async () => {
    const token = await server.userToken(`acct-parallel-${service}`);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.call(service, "CreateSources", { sources: [sourceInput(`p-${i}`), sourceInput(`q-${i}`)] }, token),
      ),
    );
    expect(outcomes.map((o) => o.code)).toEqual(Array(20).fill(grpc.status.OK));
    const listed = (await client.ok(service, "ListSources", { limit: 1000 }, token)).sources;
    expect(listed).toHaveLength(40);
    expect(new Set(listed.map((s: Source) => s.id)).size).toBe(40);
  });
});

describe("sandbox session cap", () => {
  it("holds 10,000 sources per account; one more is RESOURCE_EXHAUSTED and nothing of that request is stored", async () => {
    const account = "acct-sandbox-cap";
    const token = await server.userToken(account);
    const service: ServiceName = "SandboxSourceLedgerService";
    for (let batch = 0; batch < 10; batch++) {
      const sources = Array.from({ length: 1000 }, (_, i) => sourceInput(`cap-${batch}-${i}`));
      const outcome = await client.call(service, "CreateSources", { sources }, token);
      expect(outcome.code, `batch ${batch}`).toBe(grpc.status.OK);
      // Keep the response small to read: only the count matters.
      expect(outcome.response.sources).toHaveLength(1000);
    }
    const over = await client.call(
      service,
      "CreateSources",
      { sources: [sourceInput("cap-over-1"), sourceInput("cap-over-2")] },
      token,
    );
    expect(over.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(decodeURIComponent(over.details)).toContain("10000");
    expect((await client.ok(service, "ListSources", { limit: 10, offset: 9995 }, token)).sources).toHaveLength(5);

    // Deleting one makes room for exactly one.
    expect((await client.call(service, "DeleteSource", { alt_id: "cap-0-0" }, token)).code).toBe(grpc.status.OK);
    expect(
      (
        await client.call(
          service,
          "CreateSources",
          { sources: [sourceInput("cap-over-1"), sourceInput("cap-over-2")] },
          token,
        )
      ).code,
    ).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await client.call(service, "CreateSources", { sources: [sourceInput("cap-over-1")] }, token)).code).toBe(
      grpc.status.OK,
    );

    // The cap is per account (per session), and production has none.
    const other = await server.userToken("acct-sandbox-cap-other");
    expect((await client.call(service, "CreateSources", { sources: [sourceInput(uniqueAlt())] }, other)).code).toBe(
      grpc.status.OK,
    );
    expect(
      (await client.call("SourceLedgerService", "CreateSources", { sources: [sourceInput(uniqueAlt())] }, token)).code,
    ).toBe(grpc.status.OK);
  }, 60_000);
});

describe("one port", () => {
  it("answers REST on the gRPC port while a grpc-js channel is open, and both see the same data", async () => {
    const token = await server.userToken("acct-one-port");
    const created = await client.ok(
      "SourceLedgerService",
      "CreateSources",
      { sources: [sourceInput("one-port-1")] },
      token,
    );
    expect(client.clients.SourceLedgerService.getChannel().getConnectivityState(false)).toBe(
      grpc.connectivityState.READY,
    );

    const health = await fetch(`${server.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    const rest = await server.request("GET", `/sources/${created.sources[0].id}`, { token });
    expect(rest.status).toBe(200);
    expect(await rest.json()).toMatchObject({
      id: created.sources[0].id,
      alt_id: "one-port-1",
      account_id: "acct-one-port",
      start_at: "2024-01-01T00:00:00.000Z",
      geometry: { type: "Polygon" },
    });

    // The channel is still usable afterwards.
    const again = await client.ok("SourceLedgerService", "GetSource", { id: created.sources[0].id }, token);
    expect(again.source.alt_id).toBe("one-port-1");
  });
});
