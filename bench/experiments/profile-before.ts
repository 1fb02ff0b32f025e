/**
 * Experiment, not part of `npm run bench`: where a create costs more than on the code before a
 * change. One S4 load on this code and on the code of `--before` (bench/scenarios/before.ts: the
 * commit exported, compiled, its own ledger), each on a fresh server under `node --cpu-prof`,
 * alternating, `--rounds` times; then each function's self time per 1,000 sources created on
 * either side, largest difference first. Uses the bench's cached ledgers (run `npm run bench`
 * once first, or it builds the one it needs).
 *
 *   node --import tsx bench/experiments/profile-before.ts --before 7ecac0d
 *        [--load single|batch|conflict-single|conflict-batch] [--stored 100000] [--seconds 6]
 *        [--rounds 2] [--top 25]
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ProfileSummary, summariseProfile } from "../cpuprofile.js";
import { compileServers, SERVER_BUILD_DIR, SERVICE_NODE_FLAGS, spawnServer, waitUntilIdle } from "../proc.js";
import { prepareBefore } from "../scenarios/before.js";
import { prepareLedgers } from "../scenarios/ledgers.js";
import { runLoad } from "../scenarios/load.js";
import { planFor } from "../scenarios/options.js";
import { removeCreatedSources } from "../scenarios/s4-create.js";
import type { LoadKind } from "../scenarios/types.js";
import { BENCH_ACCOUNT, BENCH_ACTOR } from "../seed.js";
import { startIssuer } from "../tokens.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
};
const commit = option("--before", "");
if (!commit) {
  process.stderr.write("usage: node --import tsx bench/experiments/profile-before.ts --before <commit> [...]\n");
  process.exit(2);
}
const kind = option("--load", "conflict-single");
const stored = Number(option("--stored", "100000"));
const seconds = Number(option("--seconds", "6"));
const rounds = Number(option("--rounds", "2"));
const top = Number(option("--top", "25"));
const features = kind.endsWith("batch") ? 100 : 1;
const load: LoadKind = { kind: "create", features, conflictsIn: kind.startsWith("conflict") ? stored : undefined };

const plan = planFor(false);
const ledgers = await prepareLedgers([{ count: stored }], plan.history, false);
const before = await prepareBefore(commit, [stored], ledgers.cacheDir);
await compileServers();
const issuer = await startIssuer("RS256");
const token = await issuer.token({ accountId: BENCH_ACCOUNT, actor: BENCH_ACTOR });
const work = mkdtempSync(join(tmpdir(), "source-ledger-profile-before-"));
process.once("exit", () => rmSync(work, { recursive: true, force: true }));

interface Side {
  name: string;
  ledger: string;
  cwd?: string;
}
const sides: Side[] = [
  { name: `before (${before.short})`, ledger: before.ledgers.get(stored)?.path as string, cwd: before.dir },
  { name: "this code", ledger: ledgers.byCount.get(stored)?.path as string },
];

/** Self ms per function (key: function + file) and sources created, summed over the rounds. */
const totals = sides.map(() => ({ self: new Map<string, number>(), sources: 0, busyMs: 0 }));

async function profileOnce(side: Side, round: number): Promise<{ summary: ProfileSummary; sources: number }> {
  const file = join(work, `${round}-${side.cwd ? "before" : "after"}.sqlite`);
  copyFileSync(side.ledger, file);
  const dir = join(work, `profile-${round}-${side.cwd ? "before" : "after"}`);
  mkdirSync(dir);
  const spawned = Date.now();
  const server = await spawnServer({
    name: side.name,
    entry: `${SERVER_BUILD_DIR}/bench/server.js`,
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      LEDGER_STORE: "sqlite",
      SQLITE_PATH: file,
      AUTH_ISSUER: issuer.issuer,
      LOG_LEVEL: "silent",
      RATE_LIMIT_READS_PER_S: "0",
      RATE_LIMIT_WRITES_PER_S: "0",
    },
    nodeArgs: [...SERVICE_NODE_FLAGS, "--cpu-prof", "--cpu-prof-dir", dir],
    cwd: side.cwd,
  });
  await runLoad(plan, server.port, load, token, 1);
  await waitUntilIdle(server.pid);
  removeCreatedSources(file);
  const from = Date.now() - spawned;
  const result = await runLoad(plan, server.port, load, token, seconds);
  const until = Date.now() - spawned;
  await waitUntilIdle(server.pid);
  await server.stop();
  const profile = readdirSync(dir).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f)) as string;
  const summary = summariseProfile(join(dir, profile), { skipMs: from, untilMs: until, top: 100_000 });
  rmSync(file, { force: true });
  return { summary, sources: result.ok * features };
}

for (let round = 1; round <= rounds; round++) {
  const order = round % 2 === 1 ? [0, 1] : [1, 0];
  for (const i of order) {
    const { summary, sources } = await profileOnce(sides[i], round);
    const total = totals[i];
    total.sources += sources;
    total.busyMs += summary.busyMs;
    for (const f of summary.topSelf) {
      const key = `${f.function}\u0000${f.file}`;
      total.self.set(key, (total.self.get(key) ?? 0) + f.ms);
    }
    process.stderr.write(
      `round ${round} ${sides[i].name}: ${sources} sources, busy ${summary.busyMs} ms, ${((1000 * summary.busyMs) / sources).toFixed(0)} ms of CPU per 1,000 sources\n`,
    );
  }
}
await issuer.close();

const per1000 = (i: number, ms: number) => (1000 * ms) / totals[i].sources;
const keys = new Set([...totals[0].self.keys(), ...totals[1].self.keys()]);
const rows = [...keys].map((key) => {
  const [fn, file] = key.split("\u0000");
  const was = per1000(0, totals[0].self.get(key) ?? 0);
  const now = per1000(1, totals[1].self.get(key) ?? 0);
  return { fn, file, was, now, delta: now - was };
});
rows.sort((a, b) => Math.abs(b.delta) - Math.abs(a.delta));
const busy = totals.map((t, i) => per1000(i, t.busyMs));
console.log(`load ${kind} at ${stored.toLocaleString("en-US")} stored, ${rounds} rounds of ${seconds} s a side`);
console.log(
  `CPU ms per 1,000 sources: before ${busy[0].toFixed(0)}, this code ${busy[1].toFixed(0)} (${((100 * (busy[1] - busy[0])) / busy[0]).toFixed(1)}%)`,
);
console.log("\n| function | file | before ms/1,000 | this code ms/1,000 | difference |\n|---|---|---:|---:|---:|");
for (const r of rows.slice(0, top)) {
  console.log(
    `| \`${r.fn}\` | ${r.file || "—"} | ${r.was.toFixed(1)} | ${r.now.toFixed(1)} | ${r.delta >= 0 ? "+" : ""}${r.delta.toFixed(1)} |`,
  );
}
