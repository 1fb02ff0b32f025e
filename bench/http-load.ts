/** HTTP load with autocannon (in this process), summarised the same way for every scenario. */
import autocannon, { type Request } from "autocannon";

export interface HttpLoad {
  port: number;
  connections: number;
  /** Seconds. */
  duration: number;
  /** One entry is enough: its setupRequest is called for every request. */
  requests: Request[];
  headers?: Record<string, string>;
}

export interface LoadResult {
  /** Successful (2xx) requests per second over the run. */
  rps: number;
  /** Latency percentiles in ms (autocannon's histogram, 1 ms resolution below 1 ms is lost). */
  p50: number;
  p99: number;
  mean: number;
  /** 2xx responses. */
  ok: number;
  /** Anything else: non-2xx answers, socket errors, timeouts. */
  failed: number;
  statusCodes: Record<string, number>;
  seconds: number;
  /** Response bytes per second (HTTP only). */
  bytesPerSecond?: number;
}

export async function runHttpLoad(load: HttpLoad): Promise<LoadResult> {
  const result = await autocannon({
    url: `http://127.0.0.1:${load.port}`,
    connections: load.connections,
    duration: load.duration,
    headers: load.headers,
    requests: load.requests,
    timeout: 30,
  });
  const ok = result["2xx"];
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  return {
    rps: ok / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: result.latency.mean,
    ok,
    failed: result.non2xx + result.errors + result.timeouts,
    statusCodes,
    seconds: result.duration,
    bytesPerSecond: result.throughput.mean,
  };
}
