/**
 * CPU profiles (`node --cpu-prof`) of the scenarios behind missed targets, or of all of them:
 * a fresh server process per scenario under its load (S6: bench/validate.ts as a script).
 */
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type ProfileSummary, summariseProfile } from "../cpuprofile.js";
import { REPO_ROOT, runNode, waitUntilIdle } from "../proc.js";
import type { Row } from "../report.js";
import type { Fleet } from "./fleet.js";
import { runLoad } from "./load.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";
import { removeCreatedSources } from "./s4-create.js";
import type { Scenario } from "./types.js";

export const PROFILE_DIR = join(REPO_ROOT, "bench", "results", "profiles");

/** The scenarios `--profile-all` profiles, in this order (then S6). */
const PROFILED = [
  "S2",
  "S3-small",
  "S3-large",
  "S4-batch-large",
  "S4-single-large",
  "S4-conflict-batch",
  "S4-conflict-single",
  "S5",
  "S9-late",
  "S10-bbox",
  "S11-polygon",
  "S12-history",
  "S12-conflicts",
  "S13-as-of",
  "S13-get-as-of",
];

export interface ProfileRequest {
  plan: Plan;
  /** The judged rows: a row that missed its target names the profile that explains it. */
  rows: Row[];
  scenarios: Scenario[];
  /** Starts the fresh server processes (the fleet's own are stopped by then). */
  fleet: Fleet;
  token: string;
  /** `--profile-all`: every profiled scenario, missed or not. */
  all: boolean;
}

/** Profiles what is wanted, one after the other; the summaries by profile key. */
export async function profileScenarios(request: ProfileRequest): Promise<Record<string, ProfileSummary>> {
  const { plan, rows, all } = request;
  const profiles: Record<string, ProfileSummary> = {};
  const wanted = new Set<string>(
    all ? PROFILED.concat("S6") : rows.filter((r) => r.pass === false && r.profile).map((r) => r.profile as string),
  );
  if (wanted.size === 0) return profiles;
  log(`profiling ${[...wanted].join(", ")}`);
  rmSync(PROFILE_DIR, { recursive: true, force: true });
  for (const key of wanted) {
    // One directory per profile: Node writes one file per thread (tsx's loader, in S6, runs in a worker),
    // named CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; thread 0 is the main thread.
    const dir = join(PROFILE_DIR, key);
    mkdirSync(dir, { recursive: true });
    if (key === "S6") {
      await runNode("bench/validate.ts", [String(plan.profileSeconds)], profileArgs(dir));
      profiles[key] = summariseProfile(mainThreadProfile(dir), { skipMs: 1000 });
      log(`profiled S6: busy ${profiles[key].busyMs} ms`);
      continue;
    }
    const scenario = request.scenarios.find((s) => s.key === key) as Scenario;
    profiles[key] = await profileServer(request, scenario, dir);
  }
  return profiles;
}

const profileArgs = (dir: string) => ["--cpu-prof", "--cpu-prof-dir", dir];

function mainThreadProfile(dir: string): string {
  const file = readdirSync(dir).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
  if (!file) throw new Error(`no main-thread profile in ${dir}: ${readdirSync(dir).join(", ")}`);
  return join(dir, file);
}

/** One scenario against a fresh server under the profiler: a warm-up load, then the profiled one. */
async function profileServer(
  { plan, fleet, token }: ProfileRequest,
  scenario: Scenario,
  dir: string,
): Promise<ProfileSummary> {
  const spawned = Date.now();
  const server = await fleet.start(scenario.server, profileArgs(dir));
  await runLoad(plan, server.port, scenario.load, token, plan.warmup);
  await waitUntilIdle(server.pid);
  if (scenario.cleans) removeCreatedSources(scenario.cleans);
  // The profile's clock starts with the process: keep only the measured load's samples.
  const from = Date.now() - spawned;
  const result = await runLoad(plan, server.port, scenario.load, token, plan.profileSeconds);
  const until = Date.now() - spawned;
  await waitUntilIdle(server.pid);
  await server.stop();
  if (scenario.cleans) removeCreatedSources(scenario.cleans);
  const summary = summariseProfile(mainThreadProfile(dir), { skipMs: from, untilMs: until });
  log(
    `profiled ${scenario.key}: ${fmt(Math.round(result.rps * scenario.perRequest))}/s under the profiler, busy ${summary.busyMs} ms`,
  );
  return summary;
}
