/** Ledgers (cached across runs, keyed by the code that shapes them), built by bench/seed.ts in child processes. */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { REPO_ROOT, runNode } from "../proc.js";
import type { DatasetInfo } from "../seed.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";

function filesUnder(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => relative(REPO_ROOT, join(e.parentPath, e.name)))
    .sort();
}

function seedFingerprint(): string {
  const hash = createHash("sha256");
  const files = [
    ...filesUnder("src/store"),
    "src/ledger/ids.ts",
    "src/geo/area.ts",
    "src/geo/bbox.ts",
    "bench/seed.ts",
    "bench/geometry.ts",
  ];
  for (const file of files) hash.update(file).update(readFileSync(join(REPO_ROOT, file)));
  return hash.digest("hex").slice(0, 16);
}

/** Another code's ledgers are removed once unused for this long (another checkout may be running its bench). */
const STALE_MS = 6 * 3600_000;

/** The cache directory of the current code's ledgers, emptied first if `fresh`. */
export function cacheDirectory(fresh: boolean): string {
  const cacheRoot = join(tmpdir(), "source-ledger-bench");
  const fingerprint = seedFingerprint();
  const cacheDir = join(cacheRoot, fingerprint);
  mkdirSync(cacheDir, { recursive: true });
  // Marks it used (its mtime), so another checkout's bench leaves it alone for STALE_MS.
  const now = new Date();
  utimesSync(cacheDir, now, now);
  // Ledgers of older code are useless and large (the 1,000,000 one is ~6 GB); those of code that
  // ran lately may be another checkout's (a worktree, the code before a change) and stay a while.
  for (const entry of readdirSync(cacheRoot)) {
    const dir = join(cacheRoot, entry);
    if (entry !== fingerprint && Date.now() - statSync(dir).mtimeMs > STALE_MS) {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (fresh) for (const entry of readdirSync(cacheDir)) rmSync(join(cacheDir, entry), { recursive: true, force: true });
  return cacheDir;
}

export interface Ledgers {
  /** The plain ledgers by record count. */
  byCount: Map<number, DatasetInfo>;
  /** S12 and S13's ledger with conflicts, deletes and their events (seedHistoryLedger). */
  history: DatasetInfo;
  /** The cache directory they are in. */
  cacheDir: string;
}

/**
 * Builds the ledgers not cached yet (`fresh`: all of them): the plain ones and the history ledger
 * of `historyCount`; returns each one's info.
 */
export async function prepareLedgers(
  datasets: Plan["datasets"],
  historyCount: number,
  fresh: boolean,
): Promise<Ledgers> {
  const cacheDir = cacheDirectory(fresh);
  // A replicated ledger is not the same ledger as a distinct one of that size: separate files.
  const pathOf = (count: number, base?: number) =>
    join(cacheDir, base === undefined ? `ledger-${count}.sqlite` : `ledger-${count}-from-${base}.sqlite`);
  const historyPath = join(cacheDir, `ledger-history-${historyCount}.sqlite`);
  const ready = (path: string) => existsSync(`${path}.json`) && existsSync(path);
  const seed = async (path: string, args: string[], what: string) => {
    if (ready(path)) return;
    rmSync(`${path}.json`, { force: true });
    const t = Date.now();
    await runNode("bench/seed.ts", [path, ...args]);
    log(`${what} built in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  };
  const build = (count: number, base?: number) =>
    seed(
      pathOf(count, base),
      base === undefined ? [String(count)] : [String(count), pathOf(base)],
      `ledger of ${fmt(count)}${base ? ` (replicated from ${fmt(base)})` : ""}`,
    );
  // Two chains in parallel (two cores): each replicated ledger after its base, the rest alongside.
  const replicated = datasets.filter((d) => d.base !== undefined);
  const bases = new Set(replicated.map((d) => d.base));
  const chainA = async () => {
    for (const d of replicated) {
      await build(d.base as number);
      await build(d.count, d.base);
    }
  };
  const chainB = async () => {
    for (const d of datasets) if (d.base === undefined && !bases.has(d.count)) await build(d.count);
    await seed(historyPath, [String(historyCount), "history"], `history ledger of ${fmt(historyCount)}`);
  };
  await Promise.all([chainA(), chainB()]);
  const read = (path: string) => JSON.parse(readFileSync(`${path}.json`, "utf8")) as DatasetInfo;
  const byCount = new Map<number, DatasetInfo>();
  for (const d of datasets) byCount.set(d.count, read(pathOf(d.count, d.base)));
  return { byCount, history: read(historyPath), cacheDir };
}
