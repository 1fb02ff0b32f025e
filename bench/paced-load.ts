/**
 * Open-loop HTTP load: requests sent at a fixed rate over a pool of keep-alive connections, each
 * timed from the instant it was due to be sent to the last byte of its answer. A closed loop
 * (autocannon: each connection sends its next request when the last one answers) keeps the server
 * saturated, so its latency is the queue the load itself builds (50 connections / rate); here the
 * rate is chosen, and a request that waits for a free connection or a busy server counts that wait
 * (no coordinated omission).
 */
import { Agent, request } from "node:http";
import { percentile } from "./scenarios/sequential.js";

export interface PacedLoad {
  port: number;
  token: string;
  /** Requests per second, over all connections. */
  rate: number;
  connections: number;
  /** Seconds. */
  duration: number;
  /** The path of the i-th request (0, 1, …). */
  pathAt: (i: number) => string;
}

export interface PacedResult {
  /** Answers per second over the run (the offered rate when the server keeps up). */
  rps: number;
  p50: number;
  p99: number;
  max: number;
  ok: number;
  failed: number;
  /** Requests still unanswered 10 s after the last was due (counted as failed). */
  unanswered: number;
}

export async function runPacedLoad(load: PacedLoad): Promise<PacedResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.connections });
  const headers = { authorization: `Bearer ${load.token}` };
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let pending = 0;
  const total = Math.round(load.rate * load.duration);
  const start = performance.now();
  const send = (i: number) => {
    const due = start + (i * 1000) / load.rate;
    pending++;
    const done = (success: boolean) => {
      pending--;
      latencies.push(performance.now() - due);
      if (success) ok++;
      else failed++;
    };
    const req = request({ host: "127.0.0.1", port: load.port, path: load.pathAt(i), headers, agent }, (res) => {
      res.on("data", () => {});
      res.on("end", () => done(res.statusCode === 200));
      res.on("error", () => done(false));
    });
    req.on("error", () => done(false));
    req.end();
  };
  await new Promise<void>((resolve) => {
    let next = 0;
    const tick = () => {
      const dueBy = Math.floor(((performance.now() - start) * load.rate) / 1000);
      while (next < total && next <= dueBy) send(next++);
      if (next >= total) resolve();
      else setTimeout(tick, Math.max(0, start + (next * 1000) / load.rate - performance.now()));
    };
    tick();
  });
  const deadline = performance.now() + 10_000;
  while (pending > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const unanswered = pending;
  agent.destroy();
  const seconds = (performance.now() - start) / 1000;
  return {
    rps: ok / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: Math.max(...latencies),
    ok,
    failed: failed + unanswered,
    unanswered,
  };
}
