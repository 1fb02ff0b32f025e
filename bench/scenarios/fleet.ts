/**
 * The service processes the scenarios load (bench/server.ts, compiled): one per role, each over
 * its ledger; the ones that get writes over a copy of it in the run's directory. With `--before`,
 * two more run the code before issue 10 (before.ts) over its own copies of S4's ledgers.
 */
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { holdInPageCache } from "../page-cache.js";
import { SERVER_BUILD_DIR, SERVICE_NODE_FLAGS, type ServerProcess, spawnServer } from "../proc.js";
import type { BeforeCode } from "./before.js";
import type { Ledgers } from "./ledgers.js";
import { log } from "./log.js";
import type { Plan } from "./options.js";

interface ServerSpec {
  name: string;
  /** The ledger file it serves (a copy of it when it gets writes). */
  ledger: string;
  writes: boolean;
  /** The checkout whose compiled server it runs (default: this one). */
  cwd?: string;
}

export interface Fleet {
  /** Running servers by name (S1's baseline is added to them as "baseline"). */
  servers: Map<string, ServerProcess>;
  /** The store file each service serves, by server name. */
  files: Map<string, string>;
  /** How many service processes (the baseline not counted). */
  services: number;
  /** Starts another process of a service over its file (the CPU profiles use fresh ones). */
  start(name: string, nodeArgs?: string[]): Promise<ServerProcess>;
  stopAll(): Promise<void>;
  /** Lets go of the ledgers' pages (bench/page-cache.ts), once no server reads them any more. */
  releaseCache(): void;
}

/** The name of the server running the code before issue 10 in `server`'s place. */
export const beforeServer = (server: string) => `${server}-before`;

function serverSpecs(plan: Plan, ledgers: Ledgers, before: BeforeCode | null): ServerSpec[] {
  const plain = (count: number) => ledgers.byCount.get(count)?.path as string;
  const specs: ServerSpec[] = [
    { name: "get", ledger: plain(plan.get), writes: false },
    { name: "grpc", ledger: plain(plan.get), writes: false },
    { name: "list-small", ledger: plain(plan.listSmall), writes: false },
    { name: "list-large", ledger: plain(plan.listLarge), writes: false },
    // S9–S11 (paging and search) read the same ledger from a process of their own, so S3's and
    // S7's figures for list-large stay what they were (pages of 1,000 records raise the peak RSS).
    { name: "search", ledger: plain(plan.listLarge), writes: false },
    { name: "create-small", ledger: plain(plan.postSmall), writes: true },
    { name: "create-large", ledger: plain(plan.postLarge), writes: true },
    // S12 and S13 (issue 10): history, conflicts and as_of over the ledger with conflicts.
    { name: "history", ledger: ledgers.history.path, writes: false },
  ];
  if (before !== null) {
    for (const [name, count] of [
      ["create-small", plan.postSmall],
      ["create-large", plan.postLarge],
    ] as const) {
      const ledger = before.ledgers.get(count)?.path as string;
      specs.push({ name: beforeServer(name), ledger, writes: true, cwd: before.dir });
    }
  }
  return specs;
}

/** Starts every service, in parallel, with `issuer` as AUTH_ISSUER. */
export async function startFleet(
  plan: Plan,
  ledgers: Ledgers,
  issuer: string,
  runDir: string,
  before: BeforeCode | null,
): Promise<Fleet> {
  const specs = serverSpecs(plan, ledgers, before);
  const files = new Map<string, string>();
  for (const spec of specs) {
    if (!spec.writes) files.set(spec.name, spec.ledger);
    else {
      const copy = join(runDir, `${spec.name}.sqlite`);
      copyFileSync(spec.ledger, copy);
      files.set(spec.name, copy);
    }
  }
  const serviceEnv = (file: string): Record<string, string> => ({
    PORT: "0",
    HOST: "127.0.0.1",
    LEDGER_STORE: "sqlite",
    SQLITE_PATH: file,
    AUTH_ISSUER: issuer,
    LOG_LEVEL: "silent",
    // One bench client is one account: the per-account limits would measure themselves.
    RATE_LIMIT_READS_PER_S: "0",
    RATE_LIMIT_WRITES_PER_S: "0",
  });
  const start = (name: string, nodeArgs: string[] = []) =>
    spawnServer({
      name,
      entry: `${SERVER_BUILD_DIR}/bench/server.js`,
      env: serviceEnv(files.get(name) as string),
      nodeArgs: [...SERVICE_NODE_FLAGS, ...nodeArgs],
      cwd: specs.find((s) => s.name === name)?.cwd,
    });

  const cacheStart = performance.now();
  const hold = await holdInPageCache([...files.values()]);
  log(
    `ledgers ${hold.mapped ? "held in the page cache (mapped by a helper)" : `read once into the page cache (not held: ${hold.reason})`}: ${(hold.bytes / 2 ** 30).toFixed(1)} GiB in ${((performance.now() - cacheStart) / 1000).toFixed(1)} s`,
  );
  log("starting servers");
  const servers = new Map<string, ServerProcess>(
    await Promise.all(specs.map(async (spec) => [spec.name, await start(spec.name)] as const)),
  );
  return {
    servers,
    files,
    services: specs.length,
    start,
    stopAll: async () => {
      await Promise.all([...servers.values()].map((s) => s.stop()));
    },
    releaseCache: () => hold.release(),
  };
}
