/** The run's plan: ledger sizes, repetitions, durations and concurrency of the full and quick modes. */

export interface Plan {
  mode: "full" | "quick";
  /** Ledger sizes per role. */
  get: number;
  listSmall: number;
  listLarge: number;
  postSmall: number;
  postLarge: number;
  /** S12 and S13's ledger with conflicts (issue 10): live sources. */
  history: number;
  /** Ledgers to build; `base` ones are replicated from that (smaller) ledger. */
  datasets: { count: number; base?: number }[];
  runs: number;
  duration: number;
  warmup: number;
  profileSeconds: number;
  validationRuns: number;
  /** Extra attempts for a load during which other processes used over 0.25 cores (the quietest is kept). */
  noiseRetries: number;
  /** Seconds of measuring again the run may spend in all. */
  retryBudget: number;
  connections: number;
  /** Connections for batches of 100 (sources in flight = 100 × this). */
  batchConnections: number;
  grpcConcurrency: number;
  grpcConnections: number;
  /**
   * S9: each round walks `pages` pages of `pageSize` from the start (its first and last `sample`
   * pages reported), then reads the compared pages `cycles` times, alternating.
   */
  paging: { pageSize: number; pages: number; sample: number; cycles: number };
  /** S10 and S11: requests per run at one connection (`largeBox`: in one round, S10's 1° boxes). */
  oneConnection: { bbox: number; polygon: number; largeBox: number };
}

/** The plan of either mode, before `--runs`, `--duration` and `--batch-connections` adjust it. */
export function planFor(quick: boolean): Plan {
  return quick
    ? {
        mode: "quick",
        get: 10_000,
        listSmall: 1_000,
        listLarge: 100_000,
        postSmall: 1_000,
        postLarge: 10_000,
        history: 10_000,
        datasets: [{ count: 1_000 }, { count: 10_000 }, { count: 100_000, base: 10_000 }],
        runs: 1,
        duration: 2,
        warmup: 0.5,
        profileSeconds: 2,
        validationRuns: 5,
        noiseRetries: 0,
        retryBudget: 0,
        connections: 50,
        batchConnections: 10,
        grpcConcurrency: 50,
        grpcConnections: 1,
        paging: { pageSize: 1_000, pages: 100, sample: 5, cycles: 6 },
        oneConnection: { bbox: 300, polygon: 100, largeBox: 10 },
      }
    : {
        mode: "full",
        get: 100_000,
        listSmall: 10_000,
        listLarge: 1_000_000,
        postSmall: 1_000,
        postLarge: 100_000,
        history: 100_000,
        datasets: [{ count: 1_000 }, { count: 10_000 }, { count: 100_000 }, { count: 1_000_000, base: 10_000 }],
        runs: 3,
        duration: 3,
        warmup: 1,
        profileSeconds: 4,
        validationRuns: 9,
        noiseRetries: 1,
        retryBudget: 20,
        connections: 50,
        batchConnections: 10,
        grpcConcurrency: 50,
        grpcConnections: 1,
        paging: { pageSize: 1_000, pages: 100, sample: 5, cycles: 10 },
        oneConnection: { bbox: 1_000, polygon: 300, largeBox: 30 },
      };
}
