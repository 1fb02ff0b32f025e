/**
 * One connection, one request at a time (S9's walks, S10's and S11's latency at one connection):
 * node:http over a keep-alive agent with a single socket, each request timed from the call to the
 * last byte of its answer with performance.now() (autocannon's histogram has 1 ms resolution,
 * too coarse for a 5 ms target). The body is read whole; parsing it is left to the caller, after
 * the clock has stopped.
 */
import { Agent, request } from "node:http";

export interface Timed {
  /** From the call to the answer's last byte. */
  ms: number;
  status: number;
  body: string;
  /** The answer's `Link` header, if any. */
  link: string | undefined;
  bytes: number;
}

export interface OneConnection {
  send(method: "GET" | "POST", path: string, body?: string): Promise<Timed>;
  close(): void;
}

export function oneConnection(port: number, token: string): OneConnection {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return {
    send(method, path, body) {
      return new Promise((resolve, reject) => {
        const headers: Record<string, string> = { authorization: `Bearer ${token}` };
        if (body !== undefined) {
          headers["content-type"] = "application/json";
          headers["content-length"] = String(Buffer.byteLength(body));
        }
        const started = performance.now();
        const req = request({ host: "127.0.0.1", port, method, path, headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const ms = performance.now() - started;
            const buffer = Buffer.concat(chunks);
            const header = res.headers.link;
            const link = Array.isArray(header) ? header.join(", ") : header;
            resolve({ ms, status: res.statusCode ?? 0, body: buffer.toString("utf8"), link, bytes: buffer.length });
          });
        });
        req.on("error", reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}

/** The target of an RFC 8288 `Link: <…>; rel="next"` header, or undefined. */
export function nextLink(link: string | undefined): string | undefined {
  if (link === undefined) return undefined;
  for (const part of link.split(/,\s*(?=<)/)) {
    const match = /^<([^>]*)>\s*;\s*rel="?next"?\s*$/.exec(part.trim());
    if (match) return match[1];
  }
  return undefined;
}

/** Nearest-rank percentile (p in 0…1) of unsorted values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/** The answer as a JSON array of records (their ids), or an error naming what came instead. */
export function recordsOf(answer: Timed, what: string): { id: string; created_at: string }[] {
  if (answer.status !== 200) throw new Error(`${what} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  return JSON.parse(answer.body) as { id: string; created_at: string }[];
}

/** min / median / max of counts, as "81–100, median 95". */
export function countSummary(counts: readonly number[]): { min: number; median: number; max: number; text: string } {
  const sorted = [...counts].sort((a, b) => a - b);
  const min = sorted[0] ?? 0;
  const max = sorted[sorted.length - 1] ?? 0;
  const median = percentile(sorted, 0.5);
  return { min, median, max, text: `${min}–${max} per request, median ${median}` };
}

export interface OneRequest {
  method: "GET" | "POST";
  path: string;
  body?: string;
}

export interface Rounds {
  /** Per round. */
  p50: number[];
  p99: number[];
  /** Records in each counted answer. */
  counts: number[];
  /** Answers with a `Link: rel="next"` (more matches than the limit). */
  truncated: number;
}

/**
 * `rounds` × `perRound` requests on one connection, after `warmup` uncounted ones; request i (all
 * rounds and the warm-up numbered together) is `requestAt(i)`, so none repeats another.
 */
export async function timedRounds(options: {
  port: number;
  token: string;
  rounds: number;
  perRound: number;
  warmup: number;
  requestAt: (i: number) => OneRequest;
  what: string;
  onRound?: (round: number, p50: number, p99: number) => void;
}): Promise<Rounds> {
  const { rounds, perRound, warmup, requestAt, what } = options;
  const out: Rounds = { p50: [], p99: [], counts: [], truncated: 0 };
  const connection = oneConnection(options.port, options.token);
  let i = 0;
  try {
    for (; i < warmup; i++) {
      const { method, path, body } = requestAt(i);
      recordsOf(await connection.send(method, path, body), what);
    }
    for (let round = 1; round <= rounds; round++) {
      const ms: number[] = [];
      for (let n = 0; n < perRound; n++, i++) {
        const { method, path, body } = requestAt(i);
        const answer = await connection.send(method, path, body);
        ms.push(answer.ms);
        out.counts.push(recordsOf(answer, what).length);
        if (nextLink(answer.link) !== undefined) out.truncated += 1;
      }
      out.p50.push(percentile(ms, 0.5));
      out.p99.push(percentile(ms, 0.99));
      options.onRound?.(round, percentile(ms, 0.5), percentile(ms, 0.99));
    }
  } finally {
    connection.close();
  }
  return out;
}
