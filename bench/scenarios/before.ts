/**
 * The code before a change, for S4's interleaved comparison (`npm run bench -- --before <commit>`;
 * issue 10 compares with 7ecac0d, main's commit its branch started from): the commit's tree is
 * exported with `git archive` (no worktree, nothing in this repository's git state changes) to
 * `$TMPDIR/source-ledger-bench-before/<commit>/`, its node_modules is a link to this checkout's
 * (the dependencies must be the same: package.json is compared), its servers are compiled with
 * tsc there, and S4's ledgers are seeded by its own bench/seed.ts into its own store schema
 * (cached next to this code's ledgers, in `before-<commit>/`). Its servers run from that tree, with
 * the same flags, environment, tokens and load as this code's.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileServers, REPO_ROOT, runNode } from "../proc.js";
import type { DatasetInfo } from "../seed.js";
import { fmt, log } from "./log.js";

export interface BeforeCode {
  /** The full commit id. */
  commit: string;
  /** Its first 7 characters, for labels. */
  short: string;
  /** The exported tree. */
  dir: string;
  /** S4's ledgers, seeded by that code, by record count. */
  ledgers: Map<number, DatasetInfo>;
}

const git = (...args: string[]) => execFileSync("git", ["-C", REPO_ROOT, ...args], { encoding: "utf8" }).trim();

/** Exports `commit` (once), compiles its servers and seeds its ledgers of `counts` records. */
export async function prepareBefore(commit: string, counts: number[], cacheDir: string): Promise<BeforeCode> {
  const full = git("rev-parse", "--verify", `${commit}^{commit}`);
  const short = full.slice(0, 7);
  const dir = join(tmpdir(), "source-ledger-bench-before", full.slice(0, 12));
  const complete = join(dir, ".exported");
  if (!existsSync(complete)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync("sh", ["-c", `git -C "${REPO_ROOT}" archive --format=tar ${full} | tar -x -C "${dir}"`]);
    symlinkSync(realpathSync(join(REPO_ROOT, "node_modules")), join(dir, "node_modules"));
    writeFileSync(complete, `${full}\n`);
    log(`code before: ${short} exported to ${dir}`);
  }
  // The code before runs on this checkout's node_modules: every package it names must be here at
  // the same version (this code may name more).
  const named = (root: string): Record<string, string> => {
    const p = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    return { ...p.dependencies, ...p.devDependencies };
  };
  const here = named(REPO_ROOT);
  const other = Object.entries(named(dir)).filter(([name, version]) => here[name] !== version);
  if (other.length > 0) {
    const list = other.map(([name, version]) => `${name}@${version}`).join(", ");
    throw new Error(`${short} needs ${list}, not in this node_modules: its servers cannot run here`);
  }
  const compiling = Date.now();
  await compileServers(dir);
  log(`code before: ${short}'s servers compiled in ${((Date.now() - compiling) / 1000).toFixed(1)} s`);
  const ledgerDir = join(cacheDir, `before-${full.slice(0, 12)}`);
  mkdirSync(ledgerDir, { recursive: true });
  const ledgers = new Map<number, DatasetInfo>();
  for (const count of counts) {
    const path = join(ledgerDir, `ledger-${count}.sqlite`);
    if (!existsSync(path) || !existsSync(`${path}.json`)) {
      rmSync(`${path}.json`, { force: true });
      const t = Date.now();
      await runNode("bench/seed.ts", [path, String(count)], [], true, dir);
      log(
        `code before: ledger of ${fmt(count)} built by ${short}'s seeder in ${((Date.now() - t) / 1000).toFixed(1)} s`,
      );
    }
    ledgers.set(count, JSON.parse(readFileSync(`${path}.json`, "utf8")) as DatasetInfo);
  }
  return { commit: full, short, dir, ledgers };
}
