/** The bench's one table (stdout), bench/results/*.json, and docs/benchmarks.md (full mode). */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatSummary, type ProfileSummary } from "./cpuprofile.js";
import { REPO_ROOT, SERVICE_NODE_FLAGS } from "./proc.js";

export interface Target {
  /** Compare the row's value, or its ratio to the baseline. */
  on: "value" | "ratio";
  op: ">=" | "<" | "<=";
  threshold: number;
}

export interface Row {
  id: string;
  scenario: string;
  metric: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  target?: Target;
  pass?: boolean;
  /** Failed requests (or, for S6, validity issues on a valid geometry): any makes the row fail. */
  errors?: number;
  /** Key of the CPU profile that explains this row when it misses. */
  profile?: string;
  note?: string;
}

export interface RawScenario {
  label: string;
  perRequest: number;
  server: string;
  runs: {
    rps: number;
    p50: number;
    p99: number;
    failed: number;
    cpu: { serverCores: number; benchCores: number; otherCores: number };
  }[];
}

export interface Report {
  mode: "full" | "quick";
  plan: object;
  startedAt: string;
  seconds: number;
  command: string;
  argv: string[];
  rows: Row[];
  raw: Record<string, RawScenario>;
  memory: object;
  validation: object;
  bodies: object;
  datasets: object[];
  profiles: Record<string, ProfileSummary>;
  /** Figures of the scenarios measured outside the interleaved loads (S9–S11). */
  details?: Record<string, unknown>;
  writeDocs: boolean;
  alg: string;
  cpuCount: number;
  totalMemory: number;
  ledgerBytes: Record<string, number>;
  /** os.loadavg() (1, 5, 15 minutes) when the run started and when it wrote its report. */
  loadAverage?: { start: number[]; end: number[] };
}

function number(value: number, unit: string): string {
  if (!Number.isFinite(value)) return String(value);
  switch (unit) {
    case "req/s":
    case "sources/s":
      return Math.round(value).toLocaleString("en-US");
    case "ms":
      return value < 10 ? value.toFixed(2) : value.toFixed(1);
    case "MB":
    case "µs":
      return value.toFixed(0);
    default:
      return value.toFixed(2);
  }
}

function cells(row: Row): string[] {
  const unit = row.unit === "×" ? "×" : ` ${row.unit}`;
  const target = row.target
    ? row.target.on === "ratio"
      ? `${row.target.op.replace(">=", "≥").replace("<=", "≤")} ${row.target.threshold.toFixed(2)}× baseline`
      : `${row.target.op.replace(">=", "≥").replace("<=", "≤")} ${number(row.target.threshold, row.unit)}${unit}`
    : "";
  const verdict = row.pass === undefined ? "" : row.pass ? "pass" : row.errors ? `FAIL (${row.errors} errors)` : "FAIL";
  return [
    row.scenario,
    row.metric + (row.note ? ` (${row.note})` : ""),
    `${number(row.value, row.unit)}${unit}`,
    row.baseline === undefined ? "" : `${number(row.baseline, row.unit)}${unit}`,
    row.ratio === undefined ? "" : `${row.ratio.toFixed(2)}×`,
    target,
    verdict,
  ];
}

const HEADER = ["scenario", "metric", "value", "baseline", "ratio", "target", "pass/fail"];

export function markdownTable(rows: Row[]): string {
  const escapeCell = (s: string) => s.replace(/\|/g, "\\|");
  return [
    `| ${HEADER.join(" | ")} |`,
    `|${HEADER.map((_, i) => (i >= 2 && i <= 4 ? "---:" : "---")).join("|")}|`,
    ...rows.map((row) => `| ${cells(row).map(escapeCell).join(" | ")} |`),
  ].join("\n");
}

function consoleTable(rows: Row[]): string {
  const all = [HEADER, ...rows.map(cells)];
  const widths = HEADER.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i >= 2 && i <= 4 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join("  ");
  return [line(HEADER), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map((r) => line(cells(r)))].join("\n");
}

function sh(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

export function machine(): Record<string, string> {
  const cpuinfo = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
  const meminfo = existsSync("/proc/meminfo") ? readFileSync("/proc/meminfo", "utf8") : "";
  const memKb = Number(/^MemTotal:\s+(\d+)/m.exec(meminfo)?.[1] ?? 0);
  const tmp = tmpdir();
  // The filesystem the ledgers live on (longest mount point that prefixes the temp dir).
  const mounts = existsSync("/proc/mounts")
    ? readFileSync("/proc/mounts", "utf8")
        .split("\n")
        .map((l) => l.split(" "))
        .filter((f) => f.length > 2 && (tmp === f[1] || tmp.startsWith(f[1].endsWith("/") ? f[1] : `${f[1]}/`)))
        .sort((a, b) => b[1].length - a[1].length)
    : [];
  return {
    nproc: sh("nproc", []),
    cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? "unknown",
    memory: `${(memKb / 1024 / 1024).toFixed(1)} GiB`,
    kernel: sh("uname", ["-sr"]),
    node: process.version,
    source: sh("git", ["-C", REPO_ROOT, "describe", "--always", "--dirty"]),
    ledgerFilesystem: mounts[0] ? `${tmp} on ${mounts[0][0]} (${mounts[0][2]})` : tmp,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Mean cores other processes used during the measured loads. */
export function otherCores(report: Pick<Report, "raw">): number {
  const all = Object.values(report.raw).flatMap((raw) => raw.runs.map((r) => r.cpu.otherCores));
  return all.length ? all.reduce((a, b) => a + b, 0) / all.length : 0;
}

function sharedMachineNote(report: Report): string {
  const other = otherCores(report);
  return other > 0.2
    ? `**The machine was shared during this run**: other processes used ${other.toFixed(2)} cores on average during the loads (of ${report.cpuCount}). Absolute rates are depressed and noisier than on an idle machine; the ratios compare scenarios measured back to back under the same conditions.`
    : `Other processes used ${other.toFixed(2)} cores on average during the loads: the machine was otherwise idle.`;
}

const NOTES_START = "<!-- notes:start -->";
const NOTES_END = "<!-- notes:end -->";

function preservedNotes(path: string): string {
  if (!existsSync(path)) return "";
  const text = readFileSync(path, "utf8");
  const start = text.indexOf(NOTES_START);
  const end = text.indexOf(NOTES_END);
  return start >= 0 && end > start ? text.slice(start + NOTES_START.length, end).trim() : "";
}

function docs(report: Report, host: Record<string, string>): string {
  const path = join(REPO_ROOT, "docs", "benchmarks.md");
  const notes =
    preservedNotes(path) ||
    "_No analysis written yet: the profiles above are the measured hot spots; add the analysis here (kept across regenerations)._";
  const plan = report.plan as {
    runs: number;
    duration: number;
    connections: number;
    batchConnections: number;
    grpcConcurrency: number;
    grpcConnections: number;
    paging?: { cycles: number };
  };
  const missed = report.rows.filter((r) => r.pass === false);
  const profileKeys = [
    ...new Set(missed.map((r) => r.profile).filter((p): p is string => !!p && !!report.profiles[p])),
  ];
  const datasets = report.datasets as {
    count: number;
    method: string;
    seconds: number;
    bytes: number;
    history?: { events: number; pairs: number; eventsPerSource: { min: number; median: number; max: number } };
  }[];
  const load = (values: number[] | undefined) =>
    values ? values.map((v) => v.toFixed(2)).join(" / ") : "not recorded";
  const before = (report.details?.before ?? null) as { commit: string } | null;
  const bodies = report.bodies as Record<string, number>;
  const lines = [
    "# Benchmarks",
    "",
    "<!-- Generated by `npm run bench` (bench/run.ts); only the notes section at the end is hand-written and kept. -->",
    "",
    `Latest full run: ${report.startedAt}, ${report.seconds.toFixed(0)} s, \`${report.command}\`${report.argv.length ? ` (arguments: \`${report.argv.join(" ")}\`)` : ""}.`,
    "",
    "## Machine",
    "",
    `- CPUs: ${host.nproc} × ${host.cpu}`,
    `- Memory: ${host.memory}`,
    `- Kernel: ${host.kernel}`,
    `- Node.js: ${host.node}`,
    `- Ledger files: ${host.ledgerFilesystem}`,
    `- Source: \`${host.source}\` (git describe; \`-dirty\` means uncommitted changes were measured)${before ? `; S4 also on \`${before.commit.slice(0, 7)}\` (\`--before\`)` : ""}`,
    `- Load average (1 / 5 / 15 min, of ${host.nproc} CPUs): ${load(report.loadAverage?.start)} at the start, ${load(report.loadAverage?.end)} at the end`,
    "",
    "## Running it",
    "",
    "```sh",
    "npm run bench              # full, about 12 minutes (6 more to build the ledgers after a store change): 3 runs per scenario, CPU profiles of missed targets, rewrites this file",
    "npm run bench -- --quick   # about 3 minutes: ledgers of 1,000 / 10,000 / 100,000, one run, no profiles, leaves this file alone",
    "npm run bench -- --before 7ecac0d   # also S4 on the code before issue 10, back to back with this code's",
    "```",
    "",
    "Both print one table and write `bench/results/latest.json` (and `full.json` or `quick.json`). Options: `--runs N`, `--duration S`, `--batch-connections N`, `--no-profile`, `--profile-all` (`--profile` in quick mode), `--fresh` (rebuild the cached ledgers), `--no-docs`, `--alg ES256`, `--before COMMIT`. `node --import tsx bench/cpuprofile.ts <file.cpuprofile>` summarises any profile; `node --import tsx bench/report.ts` rewrites this file from `bench/results/full.json`. The quick mode's sizes: S2 over 10,000 records, S3 at 1,000 and 100,000, S4 at 1,000 and 10,000, S9–S11 at 100,000 (one counted walk; 300 boxes and 100 polygons at one connection), S12–S13 at 10,000.",
    "",
    "## How it measures",
    "",
    `Each scenario runs against a real server process (\`bench/server.ts\`, which composes the app exactly like \`src/main.ts\`: one port, HTTP/1.1 + h2c, embedded SQLite store in WAL mode with \`synchronous=FULL\`), compiled with tsc first and run as plain JavaScript with the service's production V8 flags (\`${SERVICE_NODE_FLAGS.join(" ")}\`), like the container image runs it (under tsx, each server would also carry tsx's loader thread, ~55 MB of RSS) on 127.0.0.1, with \`LOG_LEVEL=silent\` and \`AUTH_ISSUER\` pointing at a JWKS the bench serves; every request carries a real ${report.alg} bearer token (one client, so the verified-token cache applies as it would for a real client). HTTP load is autocannon in the bench process with ${plan.connections} connections (batches of 100: ${plan.batchConnections} connections, i.e. ${(plan.batchConnections * 100).toLocaleString("en-US")} sources in flight; at 50 a 3 s window would only see two or three waves of 5,000 sources complete). gRPC load is a closed loop of ${plan.grpcConcurrency} calls in flight on ${plan.grpcConnections} HTTP/2 connection (\`bench/grpc-load.ts\`): a client that writes and reads the HTTP/2 frames itself (\`bench/h2-frames.ts\`, the gRPC counterpart of autocannon: ~0.2–0.3 cores at 9,000 calls/s, where node:http2's own client took 0.6–0.7 at 7,000 and its pauses counted in the latencies it measured), behaving on the wire as grpc-js does (one connection, HTTP/2's 65,535-byte windows, header fields indexed once, a turn's frames in one write), with pre-encoded requests, every answer's trailers decoded and its \`grpc-status\` checked, advertising \`grpc-accept-encoding: gzip\` as Connect's and grpc-js's clients do; GetSource is also measured without that header (judged too; the server answers both alike, since a gRPC answer follows the encoding its request names), and, for information, with node:http2's client (the measure of earlier rounds) and Connect's own Node client. The judged ListSources client has 1 MiB receive windows (grpc-java's default; grpc-go and gRPC's C core grow theirs past it), and an informational row keeps grpc-js's default 64 KiB. ${plan.runs} runs of ${plan.duration} s per scenario, interleaved (every scenario once, then again), after a warm-up per server; after each load the bench waits until the server is idle (requests the generator abandoned at its deadline still finish). A load during which other processes used more than 0.25 cores is measured once more if the run's retry budget allows, keeping the quieter attempt. Values are medians of the runs and ratios medians of the per-run ratios, so a baseline and its scenario are always compared within one run.`,
    "",
    "- **S1 baselines**: a bare Fastify 5 server (`bench/baseline-server.ts`, a separate process, compiled the same way) with JSON routes on the same paths returning the service's real answers as constant values (serialised by Fastify per request): " +
      `one record ${bodies.baselineRecordBytes?.toLocaleString("en-US")} B (service: ${bodies.recordBytes?.toLocaleString("en-US")} B) and a page of 100 records ${bodies.baselinePageBytes?.toLocaleString("en-US")} B (service: ${bodies.pageBytes?.toLocaleString("en-US")} B).`,
    "- **Ledgers** are loaded through the store before the servers start (`bench/seed.ts`): records built like the service builds them (production ids, bounding box and geodesic area from `src/geo`), one account, each a 100-position circle (0.004° radius, ~50 ha) in its own 0.01° cell of a grid, so no two overlap; half are `FIELD`. The store is opened with the production conflict policy, as the service opens it, so every source has its `created` event (issue 10) and a server has nothing to fill in when it opens the file. Ledgers up to 100,000 go through `insertMany`; the 1,000,000 one repeats the 10,000 one in SQL, because `insertMany` loads ~6,000 records/s: each copy gets new ids, alt_ids and creation times and the geometry, box, area and tags of its own cells (copy c is the grid's rows 10c…10c + 9), and each new row its `created` event as the store writes it, so it equals a seeded ledger but for its ids and a spatial search meets one source per cell. The **history ledger** (S12, S13) goes through `insertMany` and `deleteById` with the conflict policy: triples of circles under an ellipse that overlaps all three (3 conflicts for the ellipse, 1 for each circle; every other ellipse in a second account, so the bench account sees those counterparts as refs), every tenth triple's middle circle deleted (`deleted`, and `conflict_cleared` on its ellipse) after each batch of 1,250 triples, so deletes come all along the ledger's time, and as many lone circles, so the stated count is live. Ledgers are cached in `$TMPDIR/source-ledger-bench/<hash of the store's and the seeder's source>/` (about 7 GB for the full set; safe to delete, `--fresh` rebuilds; another code's directory is removed once unused for 6 hours), so only the first run after a store change pays for them. Before the servers start, every ledger file a server serves (and its WAL) is mapped by a helper process that reads one byte of each page and holds the mappings until the last profile is done (`bench/page-cache.ts`, python3's mmap; without it the files are read once): this machine's kernel pages out page cache that no process maps about a minute after its last read (DAMON's reclaim), so ids or boxes read in random order otherwise came from the disk, by how long the server had been idle (S2 read 2,600–5,800 req/s with half of its file in memory, 6,750 with all of it). A load then measures the service, not this machine's disk.",
    ...datasets.map(
      (d) =>
        `  - ${d.count.toLocaleString("en-US")} records${d.history ? ` (history ledger: ${d.history.events.toLocaleString("en-US")} events, ${d.history.eventsPerSource.min}–${d.history.eventsPerSource.max} a source, ${d.history.pairs.toLocaleString("en-US")} live pairs)` : ""}: ${(d.bytes / 1024 / 1024).toFixed(0)} MB, ${d.method}, built in ${d.seconds.toFixed(1)} s`,
    ),
    "- **S2** asks for ids spread over the whole ledger in random order; **S3** always asks for the first page (the query the issue names); **S4** posts GeoJSON FeatureCollections of 1 or 100 new 100-position features (unique alt_ids, cells in a region away from the seeded one, so the conflict check finds no candidates) into a copy of the ledger, and deletes what it created after every load, so each run starts at the planned size (the loads' events stay: the event log is append-only); its two conflicting loads (issue 10) put each feature over one seeded source (~80% of each overlaps), so every source created has a pair, measured, and a `conflict_set` event on both sides (the cleanup clears the seeded side's flag); **S5** calls `GetSource` on a second server process over the S2 ledger; **S6** times `checkGeometry` in the bench process (median of several runs after a warm-up); **S7** reads `VmHWM` from `/proc/<pid>/status` of each server after the runs.",
    `- **S9–S11** (issue 11) run on a server process of their own over the largest ledger (\`search\`). **S9** walks the first 100,000 records in pages of 1,000 on one connection (\`GET /sources?limit=1000\`, then each answer's \`Link: rel="next"\`), checking every page is full and every record comes once, then reads keyset page 1, keyset page 100 (the walk's Link to it), \`offset=0\`, \`offset=99000\` and the ledger's last page by offset one after the other, ${plan.paging?.cycles ?? 10} cycles alternating in order; a warm-up round, then ${plan.runs} counted. The target compares the p50 of page 100 with page 1 from those cycles (same pages, same conditions); the walk's own pages 96–100 against 1–5 are shown too. **S10** asks \`GET /sources?bbox=<box>&limit=100\` with a different random 0.09° box per request, anywhere in the seeded region (81–100 sources each; the counts are in the rows): one connection, one request at a time, timed to the last byte with \`performance.now()\` (a warm-up round, then ${plan.runs} rounds; medians of the rounds' p50 and p99), and autocannon at ${plan.connections} connections against \`GET /sources?limit=N\`, N the median count of 200 preflight boxes; a last, informational row asks for the first page of 100 in random 1° boxes (~10,000 matches, past the store's 5,000 candidates where it walks the list order instead of sorting them). **S11** posts a different random star-shaped 1,000-vertex polygon (~0.045° radius, ~25 KB of JSON) per request to \`POST /sources/search\` with \`limit: 100\`, measured the same two ways.`,
    `- **Issue 10.** With \`--before COMMIT\`, every S4 load also runs on a server compiled from that commit (its tree exported with \`git archive\` to \`$TMPDIR/source-ledger-bench-before/\`, node_modules linked, its own ledgers seeded by its own \`bench/seed.ts\`), immediately before or after this code's same load, the order alternating from run to run; the judged rows compare the medians and take the median of the per-run ratios (sources/s at least 0.90×, single-feature p99 on the large ledger at most 1.10×). **S12** and **S13** run on a server process of their own over the history ledger (\`history\`). **S12** asks \`GET /sources/{id}/history\` (live, deleted and lone sources of the bench account) and \`GET /sources/{id}/conflicts\` (live ones) for a different source per request in a random order at ${plan.connections} connections (target p99 < 10 ms), with \`GET /sources/{id}\` of the same sources as the scale of the machine, both again at one connection, one request at a time (no target), and all three open-loop at a fixed rate, a quarter of that GET's saturated median, over the same connections, each request timed from when it was due to the last byte (\`bench/paced-load.ts\`; no target: a closed loop at 50 connections keeps the server saturated, so its p99 is the queue the load builds); a preflight checks every kind answers 200 and counts events, conflicts and refs. **S13** asks \`GET /sources?limit=100&as_of=<instant>\` with a different random instant per request between the ledger's first and last event, against \`GET /sources?limit=100\` on the same server (target: ratio ≥ 0.5); an informational row asks \`GET /sources/{id}?as_of=<instant>\` of the live sources at an instant within a day after the last change, against S12's \`GET /sources/{id}\`.`,
    "",
    "## Results",
    "",
    markdownTable(report.rows),
    "",
    "### Per scenario (medians over the runs)",
    "",
    "Cores used during the measured loads: the server process, the bench process (autocannon or the gRPC client), and every other process on the machine. A load generator near 1.0 core would be limiting; other processes above ~0.2 cores mean the machine was shared during the run.",
    "",
    "| scenario | rate | p50 ms | p99 ms | server cores | bench cores | other cores | failed |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...Object.entries(report.raw).map(([key, raw]) => {
      const med = (pick: (r: RawScenario["runs"][number]) => number) => median(raw.runs.map(pick));
      const rate = `${Math.round(med((r) => r.rps) * raw.perRequest).toLocaleString("en-US")} ${raw.perRequest > 1 ? "sources/s" : "/s"}`;
      return `| ${key}: ${raw.label} | ${rate} | ${med((r) => r.p50).toFixed(1)} | ${med((r) => r.p99).toFixed(1)} | ${med((r) => r.cpu.serverCores).toFixed(2)} | ${med((r) => r.cpu.benchCores).toFixed(2)} | ${med((r) => r.cpu.otherCores).toFixed(2)} | ${raw.runs.reduce((n, r) => n + r.failed, 0)} |`;
    }),
    "",
    sharedMachineNote(report),
    "",
    `Peak RSS per server (MB): ${Object.entries(report.memory as Record<string, { peakMb: number }>)
      .map(([name, m]) => `${name} ${m.peakMb.toFixed(0)}`)
      .join(", ")}.`,
    "",
  ];
  if (missed.length === 0) {
    lines.push("Every target is met.", "");
  } else {
    lines.push(
      "## Missed targets: measured bottlenecks",
      "",
      `Missed: ${missed.map((r) => `${r.scenario} — ${r.metric}`).join("; ")}.`,
      "",
      "Each profile is `node --cpu-prof` of a fresh server process under that scenario's load (after a 1 s warm-up; start-up and warm-up samples are left out), summarised by `bench/cpuprofile.ts`. Percentages are of the process's busy (non-idle) time. V8 builtins and better-sqlite3's calls have no frames of their own: their time is the self time of the JavaScript function that called them, so `serialize` (Fastify) is its `JSON.stringify`, `(anonymous in runSync)` a SQLite statement and `sqliteTransaction` the COMMIT with its fsync. `(native)` rows are C++ bindings with frames of their own (`writev` is the socket write); `(program)` is work outside any JavaScript frame. The raw profiles are in `bench/results/profiles/` (open them in Chrome DevTools).",
      "",
    );
    for (const key of profileKeys) {
      const explained = missed.filter((r) => r.profile === key).map((r) => `${r.scenario} — ${r.metric}`);
      lines.push(
        `### Profile ${key} (explains: ${explained.join("; ")})`,
        "",
        formatSummary(report.profiles[key], 12),
        "",
      );
    }
  }
  lines.push("## Analysis and what could be tried", "", NOTES_START, notes, NOTES_END, "");
  return lines.join("\n");
}

export async function writeReport(report: Report): Promise<void> {
  const host = machine();
  const table = consoleTable(report.rows);
  process.stdout.write(`\n${table}\n\n`);
  process.stdout.write(`${sharedMachineNote(report).replace(/\*\*/g, "")}\n\n`);
  const json = JSON.stringify({ ...report, machine: host, writeDocs: undefined }, null, 2);
  writeFileSync(join(REPO_ROOT, "bench", "results", "latest.json"), json);
  writeFileSync(join(REPO_ROOT, "bench", "results", `${report.mode}.json`), json);
  if (report.writeDocs) {
    writeFileSync(join(REPO_ROOT, "docs", "benchmarks.md"), docs(report, host));
    process.stderr.write("wrote docs/benchmarks.md\n");
  }
  process.stderr.write("wrote bench/results/latest.json\n");
}

/** `node --import tsx bench/report.ts`: rewrites docs/benchmarks.md from bench/results/full.json (keeping the notes). */
const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  const saved = JSON.parse(readFileSync(join(REPO_ROOT, "bench", "results", "full.json"), "utf8")) as Report & {
    machine: Record<string, string>;
  };
  writeFileSync(join(REPO_ROOT, "docs", "benchmarks.md"), docs(saved, saved.machine));
  process.stderr.write("wrote docs/benchmarks.md from bench/results/full.json\n");
}
