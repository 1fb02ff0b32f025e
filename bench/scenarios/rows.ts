/**
 * From measured runs to report rows: values are medians over runs; ratios are medians of the
 * per-run ratios (so a baseline and its scenario are always compared within one run).
 */
import type { RawScenario, Row } from "../report.js";
import type { Measured, Scenario } from "./types.js";

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The median of the per-run ratios a[i] / b[i]. */
export const ratios = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]));

/** Per-run series of one scenario (by key), in run order. */
export interface Measurements {
  /** Rate per run: requests/s, or sources/s for batches (× perRequest). */
  rps(key: string): number[];
  p99(key: string): number[];
  p50(key: string): number[];
  /**
   * The server's CPU per unit of the rate (µs per request, or per source for batches): its cores
   * over the rate. A load generator sharing the machine moves the rate more than this.
   */
  cpuPerUnit(key: string): number[];
  /** Failed requests over all runs. */
  failed(key: string): number;
  label(key: string): string;
  /** The loads (scenario keys) that raised a server's peak RSS, with the MB each added over all runs, largest first. */
  peakRaises(server: string): { key: string; mb: number }[];
}

export function measurements(scenarios: Scenario[], results: Map<string, Measured[]>): Measurements {
  const scenario = (key: string) => scenarios.find((s) => s.key === key) as Scenario;
  const series = (key: string, pick: (r: Measured, s: Scenario) => number) =>
    (results.get(key) as Measured[]).map((r) => pick(r, scenario(key)));
  return {
    rps: (key) => series(key, (r, s) => r.rps * s.perRequest),
    p99: (key) => series(key, (r) => r.p99),
    p50: (key) => series(key, (r) => r.p50),
    cpuPerUnit: (key) => series(key, (r, s) => (1e6 * r.cpu.serverCores) / (r.rps * s.perRequest)),
    failed: (key) => series(key, (r) => r.failed).reduce((a, b) => a + b, 0),
    label: (key) => scenario(key).label,
    peakRaises: (server) =>
      scenarios
        .filter((s) => s.server === server)
        .map((s) => ({ key: s.key, mb: series(s.key, (r) => r.peakRaisedMb).reduce((a, b) => a + b, 0) }))
        .filter((raise) => raise.mb > 0)
        .sort((a, b) => b.mb - a.mb),
  };
}

/** Every row with its error count (0 when it has none) and, if it has a target, whether it passed. */
export function judged(rows: Row[]): Row[] {
  const out = rows.map((row) => ({ ...row, errors: row.errors ?? 0 }));
  for (const row of out) {
    if (!row.target) continue;
    const x = row.target.on === "ratio" ? (row.ratio as number) : row.value;
    const { op, threshold } = row.target;
    row.pass =
      (op === ">=" ? x >= threshold : op === "<" ? x < threshold : x <= threshold) && !(row.errors && row.errors > 0);
  }
  return out;
}

/** The report's raw section: every scenario's runs, in the scenarios' order. */
export function rawRuns(scenarios: Scenario[], results: Map<string, Measured[]>): Record<string, RawScenario> {
  return Object.fromEntries(
    scenarios.map((s) => [
      s.key,
      { label: s.label, perRequest: s.perRequest, server: s.server, runs: results.get(s.key) as Measured[] },
    ]),
  );
}
