/**
 * docs/api.md §9.9: gRPC health (grpc.health.v1) and server reflection (grpc.reflection.v1,
 * v1alpha) on the one port, no token, seen by real clients: @grpc/grpc-js for health, `buf curl`
 * without `--schema` (reflection only) for the rest.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { openProductionStore } from "../../src/store/open.js";
import { type SourceStore, StoreUnavailableError } from "../../src/store/port.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { PROTO_ROOT } from "./grpc-support.js";
import { expectJson, flat, type SourceRecord, unique } from "./rest-support.js";

const run = promisify(execFile);
const BUF = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "buf");
const POLL_MS = 100;

const healthDefinition = protoLoader.loadSync("grpc/health/v1/health.proto", {
  includeDirs: [PROTO_ROOT],
  keepCase: true,
  enums: String,
  defaults: true,
});
const HealthClient = (
  grpc.loadPackageDefinition(healthDefinition) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  }
).grpc.health.v1.Health;

interface HealthAnswer {
  status: string;
}

type HealthClientCalls = grpc.Client & {
  Check(request: { service: string }, callback: (error: grpc.ServiceError | null, answer?: HealthAnswer) => void): void;
  Watch(request: { service: string }, options?: grpc.CallOptions): grpc.ClientReadableStream<HealthAnswer>;
};

/** The real production store, whose ping fails while `down` is set (the readiness /readyz checks). */
function pingSwitch(): { open: (config: Parameters<typeof openProductionStore>[0]) => Promise<SourceStore> } & {
  down: boolean;
} {
  const state = {
    down: false,
    async open(config: Parameters<typeof openProductionStore>[0]): Promise<SourceStore> {
      const inner = await openProductionStore(config, { conflictPolicy, protectedAreaPolicy: unepOverlapPolicy });
      return new Proxy(inner, {
        get(target, property) {
          if (property === "ping" && state.down) {
            return () => Promise.reject(new StoreUnavailableError("connect ECONNREFUSED 10.9.8.7:27017"));
          }
          const value = Reflect.get(target, property);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    },
  };
  return state;
}

/** Calls Check; resolves with the status name, or the gRPC error code when the call fails. */
function check(client: HealthClientCalls, service: string): Promise<string | grpc.status> {
  return new Promise((resolve) => {
    client.Check({ service }, (error, answer) => resolve(error ? error.code : (answer?.status ?? "")));
  });
}

/** A Watch whose answers are collected; `next()` waits for the answer after those already read. */
function watch(client: HealthClientCalls, service: string, options?: grpc.CallOptions) {
  const call = client.Watch({ service }, options);
  const statuses: string[] = [];
  let ended: grpc.StatusObject | undefined;
  const waiters: (() => void)[] = [];
  call.on("data", (answer: HealthAnswer) => {
    statuses.push(answer.status);
    for (const wake of waiters.splice(0)) wake();
  });
  call.on("error", () => {});
  call.on("status", (status: grpc.StatusObject) => {
    ended = status;
    for (const wake of waiters.splice(0)) wake();
  });
  let read = 0;
  return {
    statuses,
    ended: () => ended,
    /** The next status, or undefined if none came within `ms`. */
    async next(ms = 3_000): Promise<string | undefined> {
      const deadline = Date.now() + ms;
      while (statuses.length <= read && ended === undefined && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, deadline - Date.now());
        });
      }
      return read < statuses.length ? statuses[read++] : undefined;
    },
    cancel: () => call.cancel(),
  };
}

describe("gRPC health (grpc-js)", () => {
  let server: TestServer;
  let client: HealthClientCalls;
  const store = pingSwitch();

  beforeAll(async () => {
    server = await startTestServer({}, { healthWatchPollMs: POLL_MS, store: (config) => store.open(config) });
    client = new HealthClient(
      `127.0.0.1:${server.port}`,
      grpc.credentials.createInsecure(),
    ) as unknown as HealthClientCalls;
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it("Check: SERVING for the server and every service served, without a token", async () => {
    for (const service of [
      "",
      "sourceledger.v2.SourceLedgerService",
      "sourceledger.v2.SandboxSourceLedgerService",
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]) {
      expect(await check(client, service), service).toBe("SERVING");
    }
  });

  it("Check: an unknown service → NOT_FOUND", async () => {
    expect(await check(client, "sourceledger.v1.Nope")).toBe(grpc.status.NOT_FOUND);
  });

  it("Check: NOT_SERVING while the store does not answer its ping (/readyz 503), SERVING again after", async () => {
    store.down = true;
    try {
      expect(await check(client, "")).toBe("NOT_SERVING");
      expect(await check(client, "sourceledger.v2.SourceLedgerService")).toBe("NOT_SERVING");
      expect((await server.request("GET", "/readyz")).status).toBe(503);
    } finally {
      store.down = false;
    }
    expect(await check(client, "")).toBe("SERVING");
  });

  it("Watch: the status at once, then each change within the poll interval, until cancelled", async () => {
    const watching = watch(client, "sourceledger.v2.SourceLedgerService");
    try {
      expect(await watching.next()).toBe("SERVING");
      store.down = true;
      expect(await watching.next(20 * POLL_MS)).toBe("NOT_SERVING");
      store.down = false;
      expect(await watching.next(20 * POLL_MS)).toBe("SERVING");
      // No change, no message.
      expect(await watching.next(5 * POLL_MS)).toBeUndefined();
      expect(watching.ended()).toBeUndefined();
    } finally {
      store.down = false;
      watching.cancel();
    }
  });

  it("Watch with a deadline longer than a timer holds (30 days): it keeps streaming, not deadline_exceeded at once", async () => {
    // grpc-js sends "2592000S" (2.592e9 ms): past setTimeout's 2^31 − 1 ms, which fires after 1 ms.
    const watching = watch(client, "", { deadline: Date.now() + 30 * 24 * 3_600_000 });
    try {
      expect(await watching.next()).toBe("SERVING");
      expect(await watching.next(5 * POLL_MS)).toBeUndefined();
      expect(watching.ended()).toBeUndefined();
      store.down = true;
      expect(await watching.next(20 * POLL_MS)).toBe("NOT_SERVING");
    } finally {
      store.down = false;
      watching.cancel();
    }
  });

  it("Watch over the Connect protocol with connect-timeout-ms past a timer's reach (30 days): it keeps streaming", async () => {
    const request = Buffer.from(JSON.stringify({ service: "" }));
    const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), request]);
    envelope.writeUInt32BE(request.length, 1);
    const abort = new AbortController();
    const res = await fetch(`${server.baseUrl}/grpc.health.v1.Health/Watch`, {
      method: "POST",
      headers: {
        "content-type": "application/connect+json",
        "connect-protocol-version": "1",
        "connect-timeout-ms": String(30 * 24 * 3_600_000),
      },
      body: envelope,
      signal: abort.signal,
    });
    try {
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const first = await reader.read();
      const chunk = Buffer.from(first.value ?? []);
      // One message (flags 0), then nothing: a deadline that fired would end the stream at once.
      expect(chunk[0]).toBe(0);
      expect(JSON.parse(chunk.subarray(5, 5 + chunk.readUInt32BE(1)).toString())).toEqual({ status: "SERVING" });
      expect(chunk.length).toBe(5 + chunk.readUInt32BE(1));
      const next = await Promise.race([
        reader.read().then((r) => (r.done ? "ended" : `more: ${Buffer.from(r.value).toString("latin1")}`)),
        new Promise((resolve) => setTimeout(() => resolve("open"), 5 * POLL_MS)),
      ]);
      expect(next).toBe("open");
    } finally {
      abort.abort();
    }
  });

  it("Watch of an unknown service: SERVICE_UNKNOWN, and the call stays open", async () => {
    const watching = watch(client, "sourceledger.v1.Nope");
    try {
      expect(await watching.next()).toBe("SERVICE_UNKNOWN");
      expect(await watching.next(5 * POLL_MS)).toBeUndefined();
      expect(watching.ended()).toBeUndefined();
    } finally {
      watching.cancel();
    }
  });

  it("counts health calls in /metrics as gRPC calls", async () => {
    const text = await (await server.request("GET", "/metrics")).text();
    expect(text).toMatch(
      /source_ledger_requests_total\{protocol="grpc",method="grpc.health.v1.Health\/Check",code="ok"\}/,
    );
    expect(text).toMatch(
      /source_ledger_requests_total\{protocol="grpc",method="grpc.health.v1.Health\/Check",code="not_found"\} 1/,
    );
  });
});

describe("gRPC health: closing the server", () => {
  it("ends open Watch calls, so closing does not wait for them", async () => {
    const server = await startTestServer({});
    const client = new HealthClient(
      `127.0.0.1:${server.port}`,
      grpc.credentials.createInsecure(),
    ) as unknown as HealthClientCalls;
    try {
      const watching = watch(client, "");
      expect(await watching.next()).toBe("SERVING");
      const started = Date.now();
      await server.close();
      // The default poll is 5 s and the one-port server's grace 2 s: the Watch ended on its own.
      expect(Date.now() - started).toBeLessThan(1_500);
      await watching.next(1_000);
      expect(watching.ended()?.code).toBe(grpc.status.OK);
    } finally {
      client.close();
    }
  });
});

describe("server reflection (buf curl without --schema)", () => {
  let server: TestServer;
  let url: string;

  /** `buf curl` over h2c with gRPC, the schema from the server's reflection only. */
  async function bufCurl(...args: string[]): Promise<string> {
    const { stdout } = await run(BUF, ["curl", "--http2-prior-knowledge", "--protocol", "grpc", ...args], {
      timeout: 20_000,
    });
    return stdout;
  }

  beforeAll(async () => {
    server = await startTestServer();
    url = `http://127.0.0.1:${server.port}`;
  });

  afterAll(async () => {
    await server?.close();
  });

  const SERVICES = [
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
    "sourceledger.v2.SandboxSourceLedgerService",
    "sourceledger.v2.SourceLedgerService",
  ];

  for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
    it(`--list-services and --list-methods (${protocol})`, async () => {
      const services = await bufCurl("--reflect-protocol", protocol, "--list-services", url);
      expect(services.trim().split("\n").sort()).toEqual(SERVICES);
      const methods = (await bufCurl("--reflect-protocol", protocol, "--list-methods", url)).trim().split("\n");
      for (const method of [
        "grpc.health.v1.Health/Check",
        "grpc.health.v1.Health/Watch",
        "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        "sourceledger.v2.SourceLedgerService/GetSource",
        "sourceledger.v2.SourceLedgerService/SearchSources",
        "sourceledger.v2.SandboxSourceLedgerService/CreateSources",
      ]) {
        expect(methods).toContain(method);
      }
      // The reflection service asked is the one named (counted in /metrics as a gRPC call).
      const version = protocol.slice("grpc-".length);
      const metrics = await (await server.request("GET", "/metrics")).text();
      expect(metrics).toContain(
        `{protocol="grpc",method="grpc.reflection.${version}.ServerReflection/ServerReflectionInfo",code="ok"}`,
      );
    });

    it(`a GetSource call built from reflection succeeds (${protocol})`, async () => {
      const token = await server.token();
      const [record] = await expectJson<SourceRecord[]>(
        await server.request("POST", "/sources", { token, json: flat(unique("reflected")) }),
        201,
      );
      const answer = JSON.parse(
        await bufCurl(
          "--reflect-protocol",
          protocol,
          "-H",
          `authorization: Bearer ${token}`,
          "-d",
          JSON.stringify({ id: record.id }),
          `${url}/sourceledger.v2.SourceLedgerService/GetSource`,
        ),
      ) as { source: { id: string; altId: string; startAt: string } };
      expect(answer.source.id).toBe(record.id);
      expect(answer.source.altId).toBe(record.alt_id);
      // A google.protobuf.Timestamp: the dependency came with the file.
      expect(answer.source.startAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    });
  }

  it("a health check with buf curl, no token; a bad token is ignored", async () => {
    expect(JSON.parse(await bufCurl(`${url}/grpc.health.v1.Health/Check`))).toEqual({ status: "SERVING" });
    const withBadToken = await bufCurl("-H", "authorization: Bearer not-a-token", `${url}/grpc.health.v1.Health/Check`);
    expect(JSON.parse(withBadToken)).toEqual({ status: "SERVING" });
  });

  it("the ledger still needs a token through reflection", async () => {
    const failed = await bufCurl("-d", "{}", `${url}/sourceledger.v2.SourceLedgerService/ListSources`).then(
      () => null,
      (error: { stderr: string }) => error,
    );
    expect(failed?.stderr).toMatch(/unauthenticated/);
  });
});
