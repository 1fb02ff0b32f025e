/** What the scenario modules define and what the interleaved runs measure. */
import type { GrpcLoad } from "../grpc-load.js";
import type { LoadResult } from "../http-load.js";

export type LoadKind =
  | { kind: "get"; ids: string[] }
  | { kind: "list" }
  /** POST /sources; `conflictsIn`: each feature overlaps one of the ledger's first N seeded cells (S4's conflicting loads). */
  | { kind: "create"; features: number; conflictsIn?: number }
  | {
      kind: "grpc";
      ids: string[];
      client: GrpcLoad["client"];
      acceptCompression: boolean;
      method?: "get" | "list";
      /** The client's HTTP/2 receive windows (bench/grpc-load.ts); HTTP/2's 65,535 when absent. */
      windowBytes?: number;
    }
  /** GET each path in turn (S9's late page, S10's boxes and its reference page); `connections` overrides the plan's. */
  | { kind: "paths"; paths: string[]; connections?: number }
  /** POST /sources/search with each body in turn (S11). */
  | { kind: "search"; bodies: string[]; connections?: number };

export interface Scenario {
  key: string;
  label: string;
  server: string;
  load: LoadKind;
  /** Sources per successful request (create). */
  perRequest: number;
  /** The ledger file to clean after each load (creates). */
  cleans?: string;
}

export interface Measured extends LoadResult {
  /** Cores used during the load: the server process, this process (load generator), everything else. */
  cpu: { serverCores: number; benchCores: number; otherCores: number };
  /**
   * How far the server's peak RSS (VmHWM) rose during this load, in MB (S7 names the loads that
   * set a server's peak); the first run's includes its warm-up's.
   */
  peakRaisedMb: number;
}
