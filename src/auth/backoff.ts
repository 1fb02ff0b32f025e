/**
 * Exponential backoff without jitter: the delays after consecutive failures are `initialMs`,
 * `2 × initialMs`, `4 × initialMs`, … up to `maxMs`, and a success starts over. Without jitter
 * the schedule is predictable (and documented); the one caller, the JWKS key set, runs once per
 * process, so there is no herd of clients to spread out.
 */
export class Backoff {
  /** Consecutive failures, counted only until the delay reaches the cap. */
  private failures = 0;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
  ) {
    if (!(initialMs > 0) || !(maxMs >= initialMs)) {
      throw new RangeError("backoff needs 0 < initialMs <= maxMs");
    }
  }

  /** Records a failure; returns how long to wait before the next attempt. */
  fail(): number {
    // Stop counting up once the cap is reached, so the exponent never grows without bound.
    const delay = Math.min(this.maxMs, this.initialMs * 2 ** this.failures);
    if (delay < this.maxMs) this.failures += 1;
    return delay;
  }

  succeed(): void {
    this.failures = 0;
  }
}
