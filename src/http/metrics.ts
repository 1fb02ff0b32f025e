import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { rpcProtocolOf } from "../rpc/answer-status.js";
import type { StoreOperation } from "../store/timed.js";
import type { ClientErrorCounts } from "./client-errors.js";
import type { RateKind } from "./rate-limit.js";
import type { DeadlineCounts } from "./request-deadline.js";
import { recordedRpcCode } from "./rpc-outcome.js";

/** Latency buckets in seconds: 0.5 ms to 10 s. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Group-commit sizes: requests per transaction, and sources (up to the 1,000 a group holds). */
const GROUP_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000];

/** What the sandbox store can tell on a scrape. */
export interface SandboxGauges {
  sessionCount(): number;
  bytesUsed(): number;
  evictionCount(): number;
}

/** The counters other modules keep as plain objects, read on every scrape. */
export interface ScrapedCounts {
  deadline: DeadlineCounts;
  clientErrors: ClientErrorCounts;
  sandbox: SandboxGauges;
}

/**
 * One app's metrics (docs/api.md §1.3), in a registry of its own: tests build several apps in one
 * process, and prom-client's global registry would mix them (and refuse a metric registered twice).
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<"protocol" | "method" | "code">;
  readonly requestSeconds: Histogram<"protocol" | "method" | "code">;
  readonly storeSeconds: Histogram<"store" | "operation" | "outcome">;
  readonly groupCommitRequests: Histogram;
  readonly groupCommitSources: Histogram;
  readonly groupsRunAgain: Counter;
  readonly conflictChecks: Counter<"result">;
  readonly overlayFailures: Counter<"engine">;
  readonly overlaysTooIntricate: Counter;
  readonly protectedAreaOverlapsSampled: Counter;
  readonly rateLimited: Counter<"kind">;
  readonly jwksFetches: Counter<"outcome">;

  constructor(counts: ScrapedCounts) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: "source_ledger_requests_total",
      help: "Requests answered, by protocol (rest, connect, grpc, grpc-web), method (RPC path or HTTP method and route pattern) and code (HTTP status for REST, Connect/gRPC code for RPC).",
      labelNames: ["protocol", "method", "code"],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: "source_ledger_request_duration_seconds",
      help: "Time from a request's arrival to its answer's last byte, labelled as source_ledger_requests_total.",
      labelNames: ["protocol", "method", "code"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.storeSeconds = new Histogram({
      name: "source_ledger_store_operation_duration_seconds",
      help: "Store call latency by store (production, sandbox), operation (insert, list, get, delete) and outcome (ok, error).",
      labelNames: ["store", "operation", "outcome"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.groupCommitRequests = new Histogram({
      name: "source_ledger_sqlite_group_commit_requests",
      help: "Create requests committed together in one SQLite transaction (group commit).",
      buckets: GROUP_BUCKETS,
      registers,
    });
    this.groupCommitSources = new Histogram({
      name: "source_ledger_sqlite_group_commit_sources",
      help: "Sources committed together in one SQLite transaction (group commit).",
      buckets: GROUP_BUCKETS,
      registers,
    });
    this.groupsRunAgain = new Counter({
      name: "source_ledger_sqlite_group_commit_runs_again_total",
      help: "SQLite group commits run a second time, each create request in a savepoint, because one failed after writing (group-commit.ts).",
      registers,
    });
    this.conflictChecks = new Counter({
      name: "source_ledger_conflict_checks_total",
      help: "Pairs of production sources checked for a conflict (docs/api.md §8), by result (conflict, clear).",
      labelNames: ["result"],
      registers,
    });
    this.overlayFailures = new Counter({
      name: "source_ledger_overlay_engine_failures_total",
      help: "Conflict-check overlays an engine failed on, by engine; the next engine that may run is tried, and when none is left the pair is flagged.",
      labelNames: ["engine"],
      registers,
    });
    this.overlaysTooIntricate = new Counter({
      name: "source_ledger_overlays_too_intricate_total",
      help: "Conflict-check overlays not attempted because counting showed them past the overlay limits (docs/api.md §8.2); each such pair is flagged.",
      registers,
    });
    this.protectedAreaOverlapsSampled = new Counter({
      name: "source_ledger_protected_area_overlaps_sampled_total",
      help: "Protected-area overlaps estimated by sampling (docs/api.md §8.3): an overlay failed in every engine, or was past the overlay limits or the create request's allowance (§8.5).",
      registers,
    });
    this.rateLimited = new Counter({
      name: "source_ledger_rate_limited_total",
      help: "Requests refused by the per-account rate limits (docs/api.md §2.9), by kind (read, write).",
      labelNames: ["kind"],
      registers,
    });
    this.jwksFetches = new Counter({
      name: "source_ledger_jwks_fetches_total",
      help: "Fetches of the signing keys (AUTH_JWKS_URL), by outcome (ok, error).",
      labelNames: ["outcome"],
      registers,
    });
    // Kept by other modules as plain numbers; read on each scrape.
    scraped(registers, "source_ledger_request_body_timeouts_total", "Requests cut off by REQUEST_TIMEOUT_MS (408).", {
      counter: true,
      read: () => [[{}, counts.deadline.bodyTimeouts]],
    });
    scraped(
      registers,
      "source_ledger_client_errors_total",
      "Requests refused by the HTTP/1.1 parser before any route ran, by reason (timeout 408, header_overflow 431, malformed 400).",
      {
        counter: true,
        labelNames: ["reason"],
        read: () => [
          [{ reason: "timeout" }, counts.clientErrors.timeout],
          [{ reason: "header_overflow" }, counts.clientErrors.headerOverflow],
          [{ reason: "malformed" }, counts.clientErrors.malformed],
        ],
      },
    );
    scraped(registers, "source_ledger_sandbox_sessions", "Sandbox sessions held in memory.", {
      read: () => [[{}, counts.sandbox.sessionCount()]],
    });
    scraped(registers, "source_ledger_sandbox_bytes", "The sandbox budget's estimate of the bytes all sessions hold.", {
      read: () => [[{}, counts.sandbox.bytesUsed()]],
    });
    scraped(
      registers,
      "source_ledger_sandbox_evictions_total",
      "Idle sandbox sessions evicted to make room within SANDBOX_MAX_MB or SANDBOX_MAX_SESSIONS.",
      { counter: true, read: () => [[{}, counts.sandbox.evictionCount()]] },
    );
  }

  /** A store observer (store/timed.ts) for the store named `store`. */
  storeObserver(store: "production" | "sandbox") {
    return (operation: StoreOperation, seconds: number, ok: boolean): void => {
      this.storeSeconds.observe({ store, operation, outcome: ok ? "ok" : "error" }, seconds);
    };
  }

  /** Counts a rate-limit refusal. */
  rateLimitRefused(kind: RateKind): void {
    this.rateLimited.inc({ kind });
  }
}

type LabelValues = Record<string, string>;

/**
 * A metric whose values live elsewhere and are read when scraped. A counter is reset and set to
 * the value kept elsewhere (prom-client's counters have no `set`).
 */
function scraped(
  registers: Registry[],
  name: string,
  help: string,
  options: { counter?: boolean; labelNames?: string[]; read: () => [LabelValues, number][] },
): void {
  const labelNames = options.labelNames ?? [];
  if (options.counter) {
    new Counter({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const [labels, value] of options.read()) {
          if (labelNames.length === 0) this.inc(value);
          else this.inc(labels, value);
        }
      },
    });
    return;
  }
  new Gauge({
    name,
    help,
    labelNames,
    registers,
    collect() {
      for (const [labels, value] of options.read()) {
        if (labelNames.length === 0) this.set(value);
        else this.set(labels, value);
      }
    },
  });
}

/**
 * Counts and times every answer (onResponse, after the last byte): RPCs by their path and the
 * Connect/gRPC code they ended with, everything else as `rest` by HTTP method and route pattern
 * (never the URL as sent, which carries ids) and status.
 */
/** Counts and times one answered request (its protocol, method and code labels, its duration). */
export type RequestObserver = (protocol: string, method: string, code: string, seconds: number) => void;

/**
 * The observer of `metrics`. Called for every request: the labelled children are looked up once
 * per label set, so a request costs a Map lookup instead of prom-client hashing its labels twice.
 */
export function requestObserver(metrics: ServiceMetrics): RequestObserver {
  const children = new Map<string, { count: { inc(): void }; seconds: { observe(value: number): void } }>();
  return (protocol, method, code, seconds) => {
    const key = `${protocol}\u0000${method}\u0000${code}`;
    let child = children.get(key);
    if (child === undefined) {
      const labels = { protocol, method, code };
      child = { count: metrics.requests.labels(labels), seconds: metrics.requestSeconds.labels(labels) };
      children.set(key, child);
    }
    child.count.inc();
    child.seconds.observe(seconds);
  };
}

/** Observes every answer Fastify writes (REST, OGC, Connect's routes); the lean gRPC path observes its own. */
export function installRequestMetrics(
  app: FastifyInstance,
  observe: RequestObserver,
  rpcMethods: ReadonlyMap<string, string>,
): void {
  app.addHook("onResponse", (request, reply, done) => {
    const { protocol, method, code } = requestLabels(request, reply, rpcMethods);
    observe(protocol, method, code, reply.elapsedTime / 1000);
    done();
  });
}

/** The label of a request no route took. */
const UNMATCHED = "(unmatched)";

/** Route pattern → its label: a parameter's pattern left out (`/sources/:id(^.+$)` is `/sources/:id`). */
const patterns = new Map<string, string>();
function patternOf(route: string): string {
  let pattern = patterns.get(route);
  if (pattern === undefined) {
    pattern = route.replace(/(:\w+)\([^/]*\)/g, "$1");
    patterns.set(route, pattern);
  }
  return pattern;
}

function requestLabels(
  request: FastifyRequest,
  reply: FastifyReply,
  rpcMethods: ReadonlyMap<string, string>,
): { protocol: string; method: string; code: string } {
  const route = request.routeOptions.url;
  if (route !== undefined && rpcMethods.has(route)) {
    const code = recordedRpcCode(request) ?? (reply.statusCode === 200 ? "ok" : "unknown");
    return { protocol: rpcProtocolOf(request.headers["content-type"]), method: route.slice(1), code };
  }
  if (route === undefined && request.method === "POST") {
    // A gRPC or gRPC-Web call to a method the server does not have (or refused before routing):
    // counted as an RPC with the code it was answered, not as a REST answer's HTTP 200.
    const protocol = rpcProtocolOf(request.headers["content-type"]);
    if (protocol !== "connect") return { protocol, method: UNMATCHED, code: recordedRpcCode(request) ?? "unknown" };
  }
  const pattern = route === undefined ? UNMATCHED : patternOf(route);
  return { protocol: "rest", method: `${request.method} ${pattern}`, code: String(reply.statusCode) };
}

/** `GET /metrics`: the registry in Prometheus' text format, no token needed. */
export function metricsRoute(app: FastifyInstance, metrics: ServiceMetrics): void {
  app.get("/metrics", async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
