/**
 * The service processes the scenarios load (bench/server.ts, compiled): one per role, each over
 * its ledger; the ones that get writes over a copy of it in the run's directory.
 */
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { SERVER_BUILD_DIR, SERVICE_NODE_FLAGS, type ServerProcess, spawnServer } from "../proc.js";
import type { DatasetInfo } from "../seed.js";
import { log } from "./log.js";
import type { Plan } from "./options.js";

interface ServerSpec {
  name: string;
  /** Which ledger (count) it serves; copies are made for the ones that get writes. */
  ledger: number;
  writes: boolean;
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
}

function serverSpecs(plan: Plan): ServerSpec[] {
  return [
    { name: "get", ledger: plan.get, writes: false },
    { name: "grpc", ledger: plan.get, writes: false },
    { name: "list-small", ledger: plan.listSmall, writes: false },
    { name: "list-large", ledger: plan.listLarge, writes: false },
    // S9–S11 (paging and search) read the same ledger from a process of their own, so S3's and
    // S7's figures for list-large stay what they were (pages of 1,000 records raise the peak RSS).
    { name: "search", ledger: plan.listLarge, writes: false },
    { name: "create-small", ledger: plan.postSmall, writes: true },
    { name: "create-large", ledger: plan.postLarge, writes: true },
  ];
}

/** Starts every service, in parallel, with `issuer` as AUTH_ISSUER. */
export async function startFleet(
  plan: Plan,
  ledgers: Map<number, DatasetInfo>,
  issuer: string,
  runDir: string,
): Promise<Fleet> {
  const specs = serverSpecs(plan);
  const ledgerPath = (count: number) => (ledgers.get(count) as DatasetInfo).path;
  const files = new Map<string, string>();
  for (const spec of specs) {
    if (!spec.writes) files.set(spec.name, ledgerPath(spec.ledger));
    else {
      const copy = join(runDir, `${spec.name}.sqlite`);
      copyFileSync(ledgerPath(spec.ledger), copy);
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
    });

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
  };
}
