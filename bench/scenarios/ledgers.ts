/** Ledgers (cached across runs, keyed by the code that shapes them), built by bench/seed.ts in child processes. */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
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

/** The cache directory of the current code's ledgers, emptied first if `fresh`. */
function cacheDirectory(fresh: boolean): string {
  const cacheRoot = join(tmpdir(), "source-ledger-bench");
  const fingerprint = seedFingerprint();
  const cacheDir = join(cacheRoot, fingerprint);
  mkdirSync(cacheDir, { recursive: true });
  // Ledgers of older code are useless and large (the 1,000,000 one is ~5 GB).
  for (const entry of readdirSync(cacheRoot))
    if (entry !== fingerprint) rmSync(join(cacheRoot, entry), { recursive: true, force: true });
  if (fresh) for (const entry of readdirSync(cacheDir)) rmSync(join(cacheDir, entry), { force: true });
  return cacheDir;
}

/** Builds the ledgers not cached yet (`fresh`: all of them); returns each one's info by record count. */
export async function prepareLedgers(datasets: Plan["datasets"], fresh: boolean): Promise<Map<number, DatasetInfo>> {
  const cacheDir = cacheDirectory(fresh);
  // A replicated ledger is not the same ledger as a distinct one of that size: separate files.
  const pathOf = (count: number, base?: number) =>
    join(cacheDir, base === undefined ? `ledger-${count}.sqlite` : `ledger-${count}-from-${base}.sqlite`);
  const ready = (path: string) => existsSync(`${path}.json`) && existsSync(path);
  const build = async (count: number, base?: number) => {
    const path = pathOf(count, base);
    if (ready(path)) return;
    rmSync(`${path}.json`, { force: true });
    const t = Date.now();
    await runNode("bench/seed.ts", base === undefined ? [path, String(count)] : [path, String(count), pathOf(base)]);
    log(
      `ledger of ${fmt(count)} built in ${((Date.now() - t) / 1000).toFixed(1)} s${base ? ` (replicated from ${fmt(base)})` : ""}`,
    );
  };
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
  };
  await Promise.all([chainA(), chainB()]);
  const infos = new Map<number, DatasetInfo>();
  for (const d of datasets) {
    infos.set(d.count, JSON.parse(readFileSync(`${pathOf(d.count, d.base)}.json`, "utf8")) as DatasetInfo);
  }
  return infos;
}
