/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function, self time per
 * area (src/<dir>/<file>, npm package, node internals, GC, native), and total (inclusive) time of
 * the service's own functions. Percentages are of busy time (samples that are not "(idle)").
 *
 *   node --import tsx bench/cpuprofile.ts <file.cpuprofile> [top] [skip ms]
 */
import { readFileSync } from "node:fs";
import { REPO_ROOT } from "./proc.js";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionTime {
  function: string;
  file: string;
  ms: number;
  pct: number;
}
export interface AreaTime {
  area: string;
  ms: number;
  pct: number;
}
export interface ProfileSummary {
  file: string;
  sampledMs: number;
  idleMs: number;
  busyMs: number;
  topSelf: FunctionTime[];
  byArea: AreaTime[];
  /** Inclusive time of functions in src/ (a function counted once per sample, however deep it recurs). */
  topInclusiveSrc: FunctionTime[];
}

const META = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

function fileOf(frame: CallFrame): string {
  const url = frame.url;
  if (url === "") return META.has(frame.functionName) ? "" : "(native)";
  let path = url.startsWith("file://") ? decodeURIComponent(new URL(url).pathname) : url;
  if (path.startsWith(REPO_ROOT)) path = path.slice(REPO_ROOT.length);
  // The bench runs the servers compiled (bench/.build/src/x.js): name the source file instead,
  // also for another checkout's build (the code before a change, bench/scenarios/before.ts).
  const compiled = /(?:^|\/)bench\/\.build\/((?:src|gen|bench)\/.+)\.js$/.exec(path);
  return compiled ? `${compiled[1]}.ts` : path;
}

function areaOf(frame: CallFrame): string {
  if (META.has(frame.functionName) && frame.url === "") return frame.functionName;
  const file = fileOf(frame);
  if (file === "(native)") return "(native: V8 builtins, C++ bindings)";
  if (file.startsWith("node:")) return "node: internals";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg) return `npm ${pkg[1]}`;
  if (file.startsWith("src/") || file.startsWith("gen/") || file.startsWith("bench/")) return file;
  return file || "(unknown)";
}

/**
 * Function name and file. tsx compiles the TypeScript without keeping line numbers, so an
 * anonymous function is named after the nearest named caller in the same file instead
 * ("(anonymous in runSync)"): native work such as a better-sqlite3 statement shows up there.
 */
function labelOf(frame: CallFrame, callerName?: string): { fn: string; file: string } {
  const file = fileOf(frame);
  const fn = frame.functionName || (callerName ? `(anonymous in ${callerName})` : "(anonymous)");
  return { fn, file };
}

export interface SummaryOptions {
  /** Top entries per table. */
  top?: number;
  /** Leave out samples from the profile's first `skipMs` (process start-up and warm-up). */
  skipMs?: number;
  /** Leave out samples after `untilMs` from the profile's start. */
  untilMs?: number;
}

export function summariseProfile(path: string, options: SummaryOptions = {}): ProfileSummary {
  const top = options.top ?? 15;
  const skipMs = options.skipMs ?? 0;
  const untilMs = options.untilMs ?? Infinity;
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const labels = new Map<number, { fn: string; file: string }>();
  const labelOfNode = (id: number): { fn: string; file: string } => {
    const known = labels.get(id);
    if (known) return known;
    const frame = (byId.get(id) as ProfileNode).callFrame;
    let callerName: string | undefined;
    if (!frame.functionName) {
      for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
        const caller = (byId.get(at) as ProfileNode).callFrame;
        if (caller.url !== frame.url) break;
        if (caller.functionName) {
          callerName = caller.functionName;
          break;
        }
      }
    }
    const label = labelOf(frame, callerName);
    labels.set(id, label);
    return label;
  };
  // Sample i lasts until sample i+1 (the delta stored with the next sample).
  const durationOf = (i: number): number => (profile.timeDeltas[i + 1] ?? 0) / 1000;

  const self = new Map<string, FunctionTime>();
  const areas = new Map<string, number>();
  const inclusive = new Map<string, FunctionTime>();
  let sampledMs = 0;
  let idleMs = 0;
  let elapsedMs = 0;
  profile.samples.forEach((id, i) => {
    elapsedMs += profile.timeDeltas[i] / 1000;
    const ms = durationOf(i);
    const node = byId.get(id);
    if (!node || ms <= 0 || elapsedMs < skipMs || elapsedMs > untilMs) return;
    sampledMs += ms;
    if (node.callFrame.functionName === "(idle)") {
      idleMs += ms;
      return;
    }
    const { fn, file } = labelOfNode(id);
    const key = `${fn}\u0000${file}`;
    const entry = self.get(key) ?? { function: fn, file, ms: 0, pct: 0 };
    entry.ms += ms;
    self.set(key, entry);
    const area = areaOf(node.callFrame);
    areas.set(area, (areas.get(area) ?? 0) + ms);

    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (!frame || !fileOf(frame).startsWith("src/")) continue;
      const label = labelOfNode(at);
      const k = `${label.fn}\u0000${label.file}`;
      if (seen.has(k)) continue;
      seen.add(k);
      const e = inclusive.get(k) ?? { function: label.fn, file: label.file, ms: 0, pct: 0 };
      e.ms += ms;
      inclusive.set(k, e);
    }
  });
  const busyMs = sampledMs - idleMs;
  const pct = (ms: number) => (busyMs > 0 ? (100 * ms) / busyMs : 0);
  const ranked = (m: Map<string, FunctionTime>) =>
    [...m.values()]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top)
      .map((f) => ({ ...f, ms: round(f.ms), pct: round(pct(f.ms)) }));
  return {
    file: path,
    sampledMs: round(sampledMs),
    idleMs: round(idleMs),
    busyMs: round(busyMs),
    topSelf: ranked(self),
    byArea: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([area, ms]) => ({ area, ms: round(ms), pct: round(pct(ms)) })),
    topInclusiveSrc: ranked(inclusive),
  };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

export function formatSummary(s: ProfileSummary, top = 12): string {
  const lines = [
    `busy ${s.busyMs} ms of ${s.sampledMs} ms sampled (idle ${s.idleMs} ms)`,
    "",
    "| self % | function | file |",
    "|---:|---|---|",
    ...s.topSelf.slice(0, top).map((f) => `| ${f.pct.toFixed(1)} | \`${f.function}\` | ${f.file || "—"} |`),
    "",
    "| self % | area |",
    "|---:|---|",
    ...s.byArea.slice(0, 10).map((a) => `| ${a.pct.toFixed(1)} | ${a.area} |`),
    "",
    "| total % | service function (inclusive) | file |",
    "|---:|---|---|",
    ...s.topInclusiveSrc.slice(0, top).map((f) => `| ${f.pct.toFixed(1)} | \`${f.function}\` | ${f.file} |`),
  ];
  return lines.join("\n");
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  const [file, top = "15", skipMs = "0"] = process.argv.slice(2);
  if (!file) {
    process.stderr.write("usage: node --import tsx bench/cpuprofile.ts <file.cpuprofile> [top] [skip ms]\n");
    process.exit(2);
  }
  process.stdout.write(
    `${formatSummary(summariseProfile(file, { top: Number(top), skipMs: Number(skipMs) }), Number(top))}\n`,
  );
}
