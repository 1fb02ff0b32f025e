/**
 * S9 (issue 11, "read the ledger at any scale"): the first 100,000 records of the large ledger in
 * pages of 1,000, `GET /sources?limit=1000` and then each answer's `Link: <…>; rel="next"`, on
 * one connection, one page at a time. Target: the last page costs no more than 1.2× the first.
 *
 * Per round: one walk of the 100 pages (timed page by page, and checked: each page full, every
 * record exactly once), then `plan.paging.cycles` cycles of the pages compared, back to back:
 * keyset page 1 and page 100 (the walk's own Link to it: a page token stays valid), and, for
 * contrast, offset paging at the same depths (`offset=0` and `offset=99000`) and at the end of
 * the ledger (`offset=999000` at 1,000,000 stored), each cycle in the opposite order of the one
 * before. The judged ratio is the p50 of page 100 over the p50 of page 1 from those cycles: the
 * same pages under the same conditions, where the walk's own series drifts with the server's
 * garbage collection (its pages 1–5 and 96–100 are reported beside it). A first round is a
 * warm-up and is not counted. Offset pages are checked to start where the walk's pages do.
 */
import type { ServerProcess } from "../proc.js";
import type { Row } from "../report.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";
import { median } from "./rows.js";
import { nextLink, type OneConnection, oneConnection, percentile, type Timed } from "./sequential.js";
import type { Scenario } from "./types.js";

/** The pages compared in the cycles, by name. */
const COMPARED = ["keysetFirst", "keysetLast", "offsetFirst", "offsetLast", "offsetEnd"] as const;
type Compared = (typeof COMPARED)[number];

export interface Paging {
  stored: number;
  pageSize: number;
  pages: number;
  /** Pages at each end of the walk reported from its own series. */
  sample: number;
  /** Per counted walk: every page's ms, in order. */
  walks: number[][];
  /** Every counted cycle's ms, per compared page. */
  cycles: Record<Compared, number[]>;
  /** The paths of the compared pages (keysetLast: the walk's Link to its last page). */
  paths: Record<Compared, string>;
  /** Bytes of the largest page. */
  pageBytes: number;
}

const ID_PATTERN = /\{"id":"([^"]+)"/g;

/** The ids of a page (without parsing its 3 MB: the client's own garbage would time into the next page). */
function idsOf(answer: Timed, what: string): string[] {
  if (answer.status !== 200) throw new Error(`S9 ${what} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  return Array.from(answer.body.matchAll(ID_PATTERN), (match) => match[1]);
}

interface Walk {
  ms: number[];
  paths: string[];
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
    const ids = idsOf(answer, `page ${page}`);
    if (ids.length !== pageSize) throw new Error(`S9: page ${page} has ${ids.length} records`);
    for (const id of ids) seen.add(id);
    out.ms.push(answer.ms);
    out.paths.push(path);
    out.firstIds.push(ids[0]);
    out.bytes = Math.max(out.bytes, answer.bytes);
    path = nextLink(answer.link);
  }
  if (seen.size !== pageSize * pages) {
    throw new Error(`S9: the walk saw ${seen.size} distinct records in ${pages} pages of ${pageSize}`);
  }
  return out;
}

export async function measure(plan: Plan, server: ServerProcess, token: string): Promise<Paging> {
  const { pageSize, pages, sample, cycles } = plan.paging;
  const endPage = Math.floor(plan.listLarge / pageSize);
  const offsetPath = (page: number) => `/sources?limit=${pageSize}&offset=${(page - 1) * pageSize}`;
  const result: Paging = {
    stored: plan.listLarge,
    pageSize,
    pages,
    sample,
    walks: [],
    cycles: { keysetFirst: [], keysetLast: [], offsetFirst: [], offsetLast: [], offsetEnd: [] },
    paths: {
      keysetFirst: `/sources?limit=${pageSize}`,
      keysetLast: "",
      offsetFirst: offsetPath(1),
      offsetLast: offsetPath(pages),
      offsetEnd: offsetPath(endPage),
    },
    pageBytes: 0,
  };
  const connection = oneConnection(server.port, token);
  try {
    for (let round = 0; round <= plan.runs; round++) {
      const walked = await walk(connection, pageSize, pages);
      result.paths.keysetLast = walked.paths[pages - 1];
      // Where each compared page must start (the end of the ledger is past the walk: not checked).
      const firstId: Partial<Record<Compared, string>> = {
        keysetFirst: walked.firstIds[0],
        keysetLast: walked.firstIds[pages - 1],
        offsetFirst: walked.firstIds[0],
        offsetLast: walked.firstIds[pages - 1],
      };
      const times: Record<Compared, number[]> = {
        keysetFirst: [],
        keysetLast: [],
        offsetFirst: [],
        offsetLast: [],
        offsetEnd: [],
      };
      for (let cycle = 0; cycle < cycles; cycle++) {
        const order = cycle % 2 === 0 ? COMPARED : [...COMPARED].reverse();
        for (const name of order) {
          const answer = await connection.send("GET", result.paths[name]);
          const ids = idsOf(answer, name);
          const expected = firstId[name];
          if (ids.length !== pageSize || (expected !== undefined && ids[0] !== expected)) {
            throw new Error(`S9: ${name} (${result.paths[name]}) has ${ids.length} records or starts elsewhere`);
          }
          times[name].push(answer.ms);
        }
      }
      const p50 = (values: number[]) => percentile(values, 0.5).toFixed(1);
      log(
        `S9 ${round === 0 ? "warm-up" : `run ${round}`}: walk ${(walked.ms.reduce((a, b) => a + b, 0) / 1000).toFixed(2)} s (pages 1–${sample} ${p50(walked.ms.slice(0, sample))} ms, last ${sample} ${p50(walked.ms.slice(-sample))} ms); ${cycles} cycles p50: keyset page 1 ${p50(times.keysetFirst)} / page ${pages} ${p50(times.keysetLast)} ms, offset ${p50(times.offsetFirst)} / ${p50(times.offsetLast)} / end ${p50(times.offsetEnd)} ms`,
      );
      if (round === 0) continue;
      result.walks.push(walked.ms);
      for (const name of COMPARED) result.cycles[name].push(...times[name]);
      result.pageBytes = Math.max(result.pageBytes, walked.bytes);
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
    load: { kind: "paths", paths: [paging.paths.keysetLast], connections: 1 },
    perRequest: 1,
  };
}

export function rows(paging: Paging): Row[] {
  const { sample, pages, pageSize, cycles } = paging;
  const p50 = (values: number[]) => percentile(values, 0.5);
  const c = Object.fromEntries(COMPARED.map((name) => [name, p50(cycles[name])])) as Record<Compared, number>;
  const walkFirst = p50(paging.walks.flatMap((w) => w.slice(0, sample)));
  const walkLast = p50(paging.walks.flatMap((w) => w.slice(-sample)));
  const walkSeconds = median(paging.walks.map((w) => w.reduce((a, b) => a + b, 0) / 1000));
  const endPage = Math.floor(paging.stored / pageSize);
  const n = cycles.keysetFirst.length;
  const walked = fmt(pages * pageSize);
  const scenario = `S9 keyset paging: GET /sources?limit=${fmt(pageSize)}, then each Link (${fmt(paging.stored)} stored), one connection`;
  const offset = (page: number) => fmt((page - 1) * pageSize);
  return [
    {
      id: "S9.keyset",
      scenario,
      metric: `p50, page ${pages} (records ${offset(pages)}–${walked}) vs page 1, ${n} of each alternating`,
      value: c.keysetLast,
      unit: "ms",
      baseline: c.keysetFirst,
      ratio: c.keysetLast / c.keysetFirst,
      target: { on: "ratio", op: "<=", threshold: 1.2 },
      profile: "S9-late",
    },
    {
      id: "S9.walk",
      scenario,
      metric: `a walk of ${walked} records: p50 of its pages ${pages - sample + 1}–${pages} vs 1–${sample} (${paging.walks.length} walk${paging.walks.length === 1 ? "" : "s"})`,
      value: walkLast,
      unit: "ms",
      baseline: walkFirst,
      ratio: walkLast / walkFirst,
      note: `a walk takes ${walkSeconds.toFixed(2)} s of page latencies, largest page ${fmt(paging.pageBytes)} B`,
    },
    {
      id: "S9.offset",
      scenario: `S9 offset paging at the same depth: GET /sources?limit=${fmt(pageSize)}&offset=…`,
      metric: `p50, offset=${offset(pages)} vs offset=0, ${n} of each alternating`,
      value: c.offsetLast,
      unit: "ms",
      baseline: c.offsetFirst,
      ratio: c.offsetLast / c.offsetFirst,
    },
    {
      id: "S9.offset-end",
      scenario: "S9 offset paging at the end of the ledger (no target)",
      metric: `p50, offset=${offset(endPage)} vs offset=0`,
      value: c.offsetEnd,
      unit: "ms",
      baseline: c.offsetFirst,
      ratio: c.offsetEnd / c.offsetFirst,
    },
  ];
}
