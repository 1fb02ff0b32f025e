import { setFlagsFromString } from "node:v8";

/**
 * How far V8 lets the old generation grow past what survived the last full collection before it
 * collects again: a factor of 1 + percent / 100. V8 picks up to 4 on its own, and under list loads
 * (pages alive across several young collections are promoted, then die) the old generation grew to
 * ~165 MB around ~45 MB live, the gRPC server's peak RSS to 330–370 MB (S7's budget: 300). Side
 * runs (docs/benchmarks.md, issue 13): at 3 a full run's peak was 305 MB; at 2.5 full runs read
 * 297–319 MB. Side runs of the gRPC and REST list loads on one server: 256 MB at 2.5, 233 MB at 2,
 * list throughput and GetSource's p99 unchanged beyond the noise (an earlier round's 37–42 ms p99
 * at 2 was measured with a load client that took 0.65 of the two cores itself); the next full run
 * at 2 peaked at 246 MB.
 */
export const HEAP_GROWING_PERCENT = 100;

const FLAG = "--heap-growing-percent";

/** Whether a command-line argument sets the flag (V8 takes `_` and `-` alike in flag names). */
function setsFlag(arg: string): boolean {
  const name = arg.split("=", 1)[0].replaceAll("_", "-");
  return name === FLAG;
}

/**
 * Sets the heap growth before the service allocates much (V8 reads it at each full collection),
 * unless the command line sets it (`node --heap-growing-percent=N …`): an operator's choice wins.
 * True when it set it.
 */
export function limitHeapGrowth(
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
): boolean {
  if (execArgv.some(setsFlag)) return false;
  setFlags(`${FLAG}=${HEAP_GROWING_PERCENT}`);
  return true;
}
