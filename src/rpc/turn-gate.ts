/**
 * The lean gRPC path's calls per turn. Side runs (one connection, 50 calls in flight, GetSource):
 * all at once 4,660–4,990 calls/s with the server 80% busy; 2 a turn 4,670–5,430; 4 6,140–6,740;
 * 8 6,270–6,810; 16 6,070–7,520, the server 91–97% busy from 4 up.
 */
export const GRPC_CALLS_PER_TURN = 8;

/**
 * Admits at most `perTurn` calls to the service per event-loop turn; the rest wait for the next
 * turn (a setImmediate), in arrival order.
 *
 * Why: Node writes an HTTP/2 session's frames once per turn. When one socket read brings dozens of
 * gRPC calls (one connection, many calls in flight: how grpc-js calls), answering all of them
 * before anything is written makes client and server work in turns, each idle while the other
 * works: one connection kept the server only ~80% busy. Answering a few per turn lets each
 * group's answers leave while the next group is worked on (docs/benchmarks.md, issue 13).
 */
export class TurnGate {
  readonly #perTurn: number;
  /** Calls admitted in this turn. */
  #admitted = 0;
  readonly #waiting: (() => void)[] = [];
  #scheduled = false;

  constructor(perTurn: number) {
    if (!Number.isInteger(perTurn) || perTurn < 1)
      throw new RangeError(`perTurn must be a positive integer, not ${perTurn}`);
    this.#perTurn = perTurn;
  }

  /** Resolves when the call may run: undefined when it may run now (no await needed). */
  pass(): Promise<void> | undefined {
    if (!this.#scheduled) {
      // No turn of the gate pending: this is a new turn (nobody waits, as waiting schedules one).
      this.#admitted = 0;
      this.#schedule();
    }
    if (this.#waiting.length === 0 && this.#admitted < this.#perTurn) {
      this.#admitted++;
      return undefined;
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Calls waiting for a later turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#nextTurn);
  }

  readonly #nextTurn = (): void => {
    this.#scheduled = false;
    const admitted = this.#waiting.splice(0, this.#perTurn);
    this.#admitted = admitted.length;
    for (const resolve of admitted) resolve();
    if (this.#waiting.length > 0) this.#schedule();
  };
}
