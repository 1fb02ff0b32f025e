/**
 * Open-loop HTTP load: requests sent at a fixed rate over a pool of keep-alive connections, each
 * timed from the instant it was due to be sent to the last byte of its answer. A closed loop
 * (autocannon: each connection sends its next request when the last one answers) keeps the server
 * saturated, so its latency is the queue the load itself builds (50 connections / rate); here the
 * rate is chosen, and a request that waits for a free connection or a busy server counts that wait
 * (no coordinated omission). How late this process itself sent them is reported apart
 * (`sendLagP99`): the load generator's own pauses count in the latency too.
 */
import { Agent, type ClientRequest, request } from "node:http";
import { percentile } from "./scenarios/sequential.js";

export interface PacedLoad {
  port: number;
  token: string;
  /** Requests per second, over all connections. */
  rate: number;
  /** At most this many connections (the pool opens them as requests overlap). */
  connections: number;
  /** Seconds. */
  duration: number;
  /** The path of the i-th request (0, 1, …). */
  pathAt: (i: number) => string;
}

export interface PacedResult {
  /** 200 answers per second over the offered duration (the rate when the server keeps up). */
  rps: number;
  /** Latency of the 200 answers and of the unanswered requests (until given up), in ms. */
  p50: number;
  p99: number;
  max: number;
  ok: number;
  /** Other statuses, errors and unanswered requests. */
  failed: number;
  /** Requests still unanswered 10 s after the last was due (destroyed, counted as failed). */
  unanswered: number;
  /** p99 of how late this process sent a request after it was due, in ms. */
  sendLagP99: number;
}

/** Gives up on requests this long after the last one was due. */
const DRAIN_MS = 10_000;

export async function runPacedLoad(load: PacedLoad): Promise<PacedResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.connections });
  const headers = { authorization: `Bearer ${load.token}` };
  const latencies: number[] = [];
  const sendLags: number[] = [];
  const pending = new Map<number, { request: ClientRequest; due: number }>();
  let ok = 0;
  let failed = 0;
  const total = Math.round(load.rate * load.duration);
  const start = performance.now();
  const send = (i: number) => {
    const due = start + (i * 1000) / load.rate;
    sendLags.push(performance.now() - due);
    // A reset mid-answer fires both the request's and the response's 'error': count it once.
    const done = (success: boolean) => {
      if (!pending.delete(i)) return;
      if (success) {
        ok++;
        latencies.push(performance.now() - due);
      } else {
        failed++;
      }
    };
    const req = request({ host: "127.0.0.1", port: load.port, path: load.pathAt(i), headers, agent }, (res) => {
      res.on("data", () => {});
      res.on("end", () => done(res.statusCode === 200));
      res.on("error", () => done(false));
    });
    pending.set(i, { request: req, due });
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
  const deadline = performance.now() + DRAIN_MS;
  while (pending.size > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  // The slowest requests are the ones never answered: they count in the tail with their wait so far.
  const unanswered = pending.size;
  const givenUp = performance.now();
  for (const { request: req, due } of pending.values()) {
    latencies.push(givenUp - due);
    req.destroy();
  }
  pending.clear();
  agent.destroy();
  return {
    rps: ok / load.duration,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies.reduce((a, b) => Math.max(a, b), 0),
    ok,
    failed: failed + unanswered,
    unanswered,
    sendLagP99: percentile(sendLags, 0.99),
  };
}
