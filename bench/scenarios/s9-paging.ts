/**
 * S9 (issue 11, "read the ledger at any scale"): walking the first 100,000 records of the large
 * ledger in pages of 1,000, `GET /sources?limit=1000` and then each answer's `Link: <…>;
 * rel="next"`, on one connection, one page at a time. Target: the last pages cost no more than
 * 1.2× the first ones (p50 of pages 96–100 against pages 1–5, every walk pooled). For contrast,
 * offset paging at the same depths (`offset=0…4000` and `offset=95000…99000`, `limit=1000`), and
 * at the end of the ledger (the last 5 pages: 995,000…999,000 at 1,000,000 stored).
 *
 * Each round is one walk, then the offset pages (the early ones, then the late ones); a first
 * round is a warm-up and is not counted. Every walk is checked: each page full, every record of
 * the 100,000 exactly once, and offset page 100 starting at the walk's page 100.
 */
import type { ServerProcess } from "../proc.js";
import type { Row } from "../report.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";
import { median } from "./rows.js";
import { nextLink, type OneConnection, oneConnection, percentile, recordsOf } from "./sequential.js";
import type { Scenario } from "./types.js";

export interface Paging {
  stored: number;
  pageSize: number;
  pages: number;
  /** Pages compared at each end of the walk. */
  sample: number;
  /** Per counted walk: every page's ms, in order. */
  keysetWalks: number[][];
  /** Per counted round: the offset pages' ms, at the walk's first and last `sample` pages. */
  offsetEarly: number[][];
  offsetLate: number[][];
  /** Per counted round: offset pages at the very end of the ledger (informational). */
  offsetEnd: number[][];
  /** Bytes of the largest page. */
  pageBytes: number;
  /** The keyset URL of the walk's last page (the profile loads it). */
  lastPagePath: string;
}

interface Walk {
  ms: number[];
  /** Path of each page. */
  paths: string[];
  /** First id of each page. */
  firstIds: string[];
  bytes: number;
}

async function walk(connection: OneConnection, pageSize: number, pages: number): Promise<Walk> {
  const out: Walk = { ms: [], paths: [], firstIds: [], bytes: 0 };
  const seen = new Set<string>();
  let path: string | undefined = `/sources?limit=${pageSize}`;
  for (let page = 1; page <= pages; page++) {
    if (path === undefined) throw new Error(`S9: the walk ended after ${page - 1} pages (no Link: rel="next")`);
    const answer = await connection.send("GET", path);
    const records = recordsOf(answer, `S9 page ${page}`);
    if (records.length !== pageSize) throw new Error(`S9: page ${page} has ${records.length} records`);
    for (const record of records) seen.add(record.id);
    out.ms.push(answer.ms);
    out.paths.push(path);
    out.firstIds.push(records[0].id);
    out.bytes = Math.max(out.bytes, answer.bytes);
    path = nextLink(answer.link);
  }
  if (seen.size !== pageSize * pages) {
    throw new Error(`S9: the walk saw ${seen.size} distinct records in ${pages} pages of ${pageSize}`);
  }
  return out;
}

/** The offset pages at `pageNumbers`, checked against the walk's first ids (when it got that far). */
async function offsetPages(
  connection: OneConnection,
  pageSize: number,
  pageNumbers: number[],
  walked: Walk,
): Promise<number[]> {
  const ms: number[] = [];
  for (const page of pageNumbers) {
    const answer = await connection.send("GET", `/sources?limit=${pageSize}&offset=${(page - 1) * pageSize}`);
    const records = recordsOf(answer, `S9 offset page ${page}`);
    const walkedFirst = walked.firstIds[page - 1];
    if (records.length !== pageSize || (walkedFirst !== undefined && records[0].id !== walkedFirst)) {
      throw new Error(`S9: offset page ${page} has ${records.length} records or does not start where the walk's does`);
    }
    ms.push(answer.ms);
  }
  return ms;
}

export async function measure(plan: Plan, server: ServerProcess, token: string): Promise<Paging> {
  const { pageSize, pages, sample } = plan.paging;
  const early = Array.from({ length: sample }, (_, i) => i + 1);
  const late = Array.from({ length: sample }, (_, i) => pages - sample + 1 + i);
  const lastPage = Math.floor(plan.listLarge / pageSize);
  const end = Array.from({ length: sample }, (_, i) => lastPage - sample + 1 + i);
  const result: Paging = {
    stored: plan.listLarge,
    pageSize,
    pages,
    sample,
    keysetWalks: [],
    offsetEarly: [],
    offsetLate: [],
    offsetEnd: [],
    pageBytes: 0,
    lastPagePath: "",
  };
  const connection = oneConnection(server.port, token);
  try {
    for (let round = 0; round <= plan.runs; round++) {
      const walked = await walk(connection, pageSize, pages);
      const offsetEarly = await offsetPages(connection, pageSize, early, walked);
      const offsetLate = await offsetPages(connection, pageSize, late, walked);
      const offsetEnd = await offsetPages(connection, pageSize, end, walked);
      const sum = walked.ms.reduce((a, b) => a + b, 0);
      log(
        `S9 ${round === 0 ? "warm-up" : `run ${round}`}: walk of ${fmt(pages * pageSize)} in ${(sum / 1000).toFixed(2)} s; keyset p50 ${percentile(walked.ms.slice(0, sample), 0.5).toFixed(1)} → ${percentile(walked.ms.slice(-sample), 0.5).toFixed(1)} ms, offset ${percentile(offsetEarly, 0.5).toFixed(1)} → ${percentile(offsetLate, 0.5).toFixed(1)} ms (→ ${percentile(offsetEnd, 0.5).toFixed(1)} ms at the end)`,
      );
      if (round === 0) continue;
      result.keysetWalks.push(walked.ms);
      result.offsetEarly.push(offsetEarly);
      result.offsetLate.push(offsetLate);
      result.offsetEnd.push(offsetEnd);
      result.pageBytes = Math.max(result.pageBytes, walked.bytes);
      result.lastPagePath = walked.paths[pages - 1];
    }
  } finally {
    connection.close();
  }
  return result;
}

/** The walk's last page again and again on one connection: what the profile of S9 loads. */
export function profileScenario(paging: Paging): Scenario {
  return {
    key: "S9-late",
    label: `GET page ${paging.pages} of the keyset walk (its Link), one connection`,
    server: "search",
    load: { kind: "paths", paths: [paging.lastPagePath], connections: 1 },
    perRequest: 1,
  };
}

export function rows(paging: Paging): Row[] {
  const { sample, pages, pageSize } = paging;
  const p50 = (values: number[]) => percentile(values, 0.5);
  const keysetEarly = p50(paging.keysetWalks.flatMap((w) => w.slice(0, sample)));
  const keysetLate = p50(paging.keysetWalks.flatMap((w) => w.slice(-sample)));
  const offsetEarly = p50(paging.offsetEarly.flat());
  const offsetLate = p50(paging.offsetLate.flat());
  const offsetEnd = p50(paging.offsetEnd.flat());
  const endPage = Math.floor(paging.stored / pageSize);
  const firstPage = median(paging.keysetWalks.map((w) => w[0]));
  const lastPage = median(paging.keysetWalks.map((w) => w[pages - 1]));
  const walkSeconds = median(paging.keysetWalks.map((w) => w.reduce((a, b) => a + b, 0) / 1000));
  const earlyPages = `pages 1–${sample}`;
  const latePages = `pages ${pages - sample + 1}–${pages}`;
  const walked = fmt(pages * pageSize);
  const scenario = `S9 keyset walk: GET /sources?limit=${fmt(pageSize)}, then each Link, ${walked} of ${fmt(paging.stored)} stored, one connection`;
  return [
    {
      id: "S9.keyset",
      scenario,
      metric: `p50, ${latePages} vs ${earlyPages}`,
      value: keysetLate,
      unit: "ms",
      baseline: keysetEarly,
      ratio: keysetLate / keysetEarly,
      target: { on: "ratio", op: "<=", threshold: 1.2 },
      profile: "S9-late",
      note: `page 1 ${firstPage.toFixed(1)} ms, page ${pages} ${lastPage.toFixed(1)} ms, medians of ${paging.keysetWalks.length} walks`,
    },
    {
      id: "S9.offset",
      scenario: `S9 offset paging at the same depths: GET /sources?limit=${fmt(pageSize)}&offset=…`,
      metric: `p50, offset ${fmt((pages - sample) * pageSize)}–${fmt((pages - 1) * pageSize)} vs 0–${fmt((sample - 1) * pageSize)}`,
      value: offsetLate,
      unit: "ms",
      baseline: offsetEarly,
      ratio: offsetLate / offsetEarly,
    },
    {
      id: "S9.offset-end",
      scenario: `S9 offset paging at the end of the ledger (informational)`,
      metric: `p50, offset ${fmt((endPage - sample) * pageSize)}–${fmt((endPage - 1) * pageSize)} vs 0–${fmt((sample - 1) * pageSize)}`,
      value: offsetEnd,
      unit: "ms",
      baseline: offsetEarly,
      ratio: offsetEnd / offsetEarly,
    },
    {
      id: "S9.walk",
      scenario,
      metric: `one walk, sum of the ${pages} pages' latencies (median of walks)`,
      value: walkSeconds,
      unit: "s",
      note: `largest page ${fmt(paging.pageBytes)} B`,
    },
  ];
}
