import { setFlagsFromString } from "node:v8";

/**
 * How far V8 lets the old generation grow past what survived the last full collection before it
 * collects again: a factor of 1 + percent / 100. V8 picks up to 4 on its own, and under list loads
 * (pages alive across several young collections are promoted, then die) the old generation grew to
 * ~165 MB around ~45 MB live, the service's peak RSS to 330–370 MB. At 3 the peak stayed under
 * 300 MB (S7) with no throughput lost beyond the noise; at 2 and 1.5 it fell to 214–236 MB but
 * gRPC p99 rose by a third and list throughput fell (docs/benchmarks.md, issue 13).
 */
export const HEAP_GROWING_PERCENT = 200;

const FLAG = "--heap-growing-percent";

/**
 * Sets the heap growth before the service allocates much (V8 reads it at each full collection),
 * unless the command line sets it (`node --heap-growing-percent=N …`): an operator's choice wins.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => arg === FLAG || arg.startsWith(`${FLAG}=`))) return false;
  setFlagsFromString(`${FLAG}=${HEAP_GROWING_PERCENT}`);
  return true;
}
