/** The run's clock and its progress lines (stderr). */

let started = Date.now();

/** Starts the run's clock again (run.ts does, once it has read its options); returns the start time. */
export function startClock(): number {
  started = Date.now();
  return started;
}

export const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;
export const log = (message: string) => process.stderr.write(`[bench ${elapsed()}] ${message}\n`);
export const fmt = (n: number) => n.toLocaleString("en-US");
