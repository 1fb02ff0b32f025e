/**
 * The measured runs, interleaved: every scenario once, in the order given, then again, `plan.runs`
 * times, so a baseline and the scenario compared with it are measured back to back in each run.
 */
import { cpuSecondsOf, machineBusySeconds, memoryOf, type ServerProcess, waitUntilIdle } from "../proc.js";
import { runLoad } from "./load.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";
import { removeCreatedSources } from "./s4-create.js";
import type { Measured, Scenario } from "./types.js";

/** Other processes busier than this during a load make it a candidate for measuring again. */
const NOISY_CORES = 0.25;

/** One load against a server, with the CPU each side used; waits for the server to go idle after. */
async function measure(
  plan: Plan,
  server: ServerProcess,
  scenario: Scenario,
  token: string,
  duration: number,
): Promise<Measured> {
  const before = {
    server: cpuSecondsOf(server.pid),
    bench: cpuSecondsOf("self"),
    machine: machineBusySeconds(),
    peakMb: memoryOf(server.pid).peakMb,
    at: performance.now(),
  };
  const result = await runLoad(plan, server.port, scenario.load, token, duration);
  const wall = (performance.now() - before.at) / 1000;
  const serverCores = (cpuSecondsOf(server.pid) - before.server) / wall;
  const benchCores = (cpuSecondsOf("self") - before.bench) / wall;
  const otherCores = Math.max(0, (machineBusySeconds() - before.machine) / wall - serverCores - benchCores);
  // Requests the load generator gave up on at the deadline may still be running in the server.
  await waitUntilIdle(server.pid);
  if (scenario.cleans) removeCreatedSources(scenario.cleans);
  const peakRaisedMb = memoryOf(server.pid).peakMb - before.peakMb;
  return { ...result, cpu: { serverCores, benchCores, otherCores }, peakRaisedMb };
}

/**
 * Runs every scenario `plan.runs` times, interleaved, and returns each scenario's measured runs
 * (keyed by scenario key, in the scenarios' order). The first time a scenario meets its server it
 * gets a warm-up load first; a load during which other processes were busy is measured again
 * while the run's retry budget lasts, keeping the quieter attempt. `orderOf` may reorder the
 * scenarios of a run (1, 2, …): S4's comparison with the code before alternates which goes first.
 */
export async function runInterleaved(
  plan: Plan,
  scenarios: Scenario[],
  servers: Map<string, ServerProcess>,
  token: string,
  orderOf: (scenarios: Scenario[], run: number) => Scenario[] = (all) => all,
): Promise<Map<string, Measured[]>> {
  const results = new Map<string, Measured[]>(scenarios.map((s) => [s.key, []]));
  const retries = { seconds: 0 };
  const warmed = new Set<string>();
  for (let run = 1; run <= plan.runs; run++) {
    for (const scenario of orderOf(scenarios, run)) {
      const server = servers.get(scenario.server) as ServerProcess;
      const warmKey = `${scenario.server}/${scenario.key}`;
      let warmupRaisedMb = 0;
      if (!warmed.has(warmKey)) {
        warmupRaisedMb = (await measure(plan, server, scenario, token, plan.warmup)).peakRaisedMb;
        warmed.add(warmKey);
      }
      const measured = await measureQuietest(plan, server, scenario, token, run, retries);
      const result = { ...measured, peakRaisedMb: measured.peakRaisedMb + warmupRaisedMb };
      (results.get(scenario.key) as Measured[]).push(result);
      logRun(run, scenario, result);
    }
  }
  return results;
}

/** One measured load, repeated (up to `plan.noiseRetries` times, within the budget) while other processes were busy. */
async function measureQuietest(
  plan: Plan,
  server: ServerProcess,
  scenario: Scenario,
  token: string,
  run: number,
  retries: { seconds: number },
): Promise<Measured> {
  let result = await measure(plan, server, scenario, token, plan.duration);
  let raisedMb = result.peakRaisedMb;
  for (let retry = 1; retry <= plan.noiseRetries && result.cpu.otherCores > NOISY_CORES; retry++) {
    if (retries.seconds + plan.duration > plan.retryBudget) break;
    retries.seconds += plan.duration;
    log(`run ${run} ${scenario.key}: other processes used ${result.cpu.otherCores.toFixed(2)} cores; measuring again`);
    const again = await measure(plan, server, scenario, token, plan.duration);
    raisedMb += again.peakRaisedMb;
    if (again.cpu.otherCores < result.cpu.otherCores) result = again;
  }
  // The peak is the process's, whichever attempt is kept: every attempt's rise counts.
  return { ...result, peakRaisedMb: raisedMb };
}

function logRun(run: number, scenario: Scenario, result: Measured): void {
  const failures = result.failed > 0 ? `, ${result.failed} FAILED ${JSON.stringify(result.statusCodes)}` : "";
  log(
    `run ${run} ${scenario.key.padEnd(26)} ${fmt(Math.round(result.rps * scenario.perRequest)).padStart(7)} ${scenario.perRequest > 1 ? "sources/s" : "req/s"}, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms; cores: server ${result.cpu.serverCores.toFixed(2)}, bench ${result.cpu.benchCores.toFixed(2)}, other ${result.cpu.otherCores.toFixed(2)}${failures}`,
  );
}
