/**
 * Helpers of test/e2e/crash-history.test.ts (issue 10, "Bad input and faults"): the real service as
 * a child process, and the ledger's history read twice, through the public REST API as an admin and
 * straight from the SQLite file (read-only), into one normalised shape that the invariants of
 * docs/api.md §8.1 and §14 are checked on.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { nextLink } from "./paging-support.js";

const root = join(import.meta.dirname, "..", "..");

export interface DevClient {
  client_id: string;
  client_secret: string;
  account_id?: string;
  role: string;
  client_name: string;
  scopes: string[];
}

export const AUDIENCE = "https://source-ledger.local";

export interface Service {
  child: ChildProcess;
  base: string;
  exited: Promise<void>;
  /** The tail of its stdout and stderr, for failure messages. */
  output: () => string;
}

/** Starts `src/main.ts` as `npm start` does and waits for the log line naming the chosen port. */
export function startService(env: Record<string, string>, children: ChildProcess[]): Promise<Service> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let text = "";
  const append = (chunk: Buffer) => {
    text += chunk.toString();
    if (text.length > 64_000) text = text.slice(-32_000);
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line after 20 s:\n${text}`)), 20_000);
    const check = () => {
      const match = /listening on http:\/\/[^:]+:(\d+) \(HTTP\/1\.1 and h2c\)/.exec(text);
      if (!match) return;
      clearTimeout(timer);
      child.stdout?.off("data", check);
      resolve({ child, base: `http://127.0.0.1:${match[1]}`, exited, output: () => text.slice(-4_000) });
    };
    child.stdout?.on("data", check);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code ?? signal}) before listening:\n${text}`));
    });
  });
}

/** A token from the development identity provider (docs/api.md §3.2); its key is new per start. */
export async function tokenOf(service: Service, client: DevClient): Promise<string> {
  const res = await fetch(`${service.base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_id: client.client_id,
      client_secret: client.client_secret,
      audience: AUDIENCE,
      grant_type: "client_credentials",
    }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`token for ${client.client_id}: ${res.status} ${text.slice(0, 300)}`);
  return (JSON.parse(text) as { access_token: string }).access_token;
}

/** Runs `work` over `items`, at most `limit` at a time. */
export async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++];
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

// ---- the normalised ledger --------------------------------------------------------------------------

export type EventType = "created" | "conflict_set" | "conflict_cleared" | "deleted";

/** An event as both readers normalise it (times in epoch ms, the counterpart by id). */
export interface LedgerEvent {
  seq: number;
  type: EventType;
  at: number;
  by: string | null;
  /** conflict_set, conflict_cleared. */
  counterpart?: string;
  /** conflict_set: the measure from this side. */
  area?: number;
  fraction?: number;
  otherFraction?: number;
  /** created: what the record says. */
  altId?: string;
  accountId?: string;
}

export interface LiveSource {
  id: string;
  accountId: string;
  altId: string;
  conflict: boolean;
  createdAt: number;
  createdBy: string;
}

export interface LivePair {
  detectedAt: number;
  area: number;
  fraction: number;
  otherFraction: number;
  /** The seq of this side's conflict_set event as the pair stores it (the file's view only). */
  event?: number;
}

export interface LedgerView {
  /** The `sources` table / the admin's list. */
  live: Map<string, LiveSource>;
  /** For each live source, its live conflicts by counterpart id (both directions). */
  conflicts: Map<string, Map<string, LivePair>>;
  /** Every source's history, live or deleted, in seq order. */
  events: Map<string, LedgerEvent[]>;
}

// ---- read from the SQLite file ------------------------------------------------------------------------

interface EventRow {
  source_id: string;
  seq: number;
  account_id: string;
  type: EventType;
  at: number;
  by: string;
  data: string | null;
}

interface Measure {
  overlapAreaM2: number;
  overlapFraction: number;
  counterpartOverlapFraction: number;
}

/** What only the file shows: each pair's stored side (`a`, the source whose create found it). */
export interface DatabaseExtras {
  /** `${a id}|${b id}` of every conflict_pairs row. */
  subjects: Set<string>;
  violations: string[];
}

/** The ledger as the file holds it, read in one read transaction of a read-only connection. */
export function readDatabase(path: string): { view: LedgerView; extras: DatabaseExtras } {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.transaction(() => {
      const violations: string[] = [];
      const live = new Map<string, LiveSource>();
      const seqToId = new Map<number, string>();
      for (const row of db
        .prepare("SELECT seq, id, account_id, alt_id, conflict, created_at, created_by FROM sources")
        .all() as {
        seq: number;
        id: string;
        account_id: string;
        alt_id: string;
        conflict: number;
        created_at: number;
        created_by: string;
      }[]) {
        seqToId.set(row.seq, row.id);
        live.set(row.id, {
          id: row.id,
          accountId: row.account_id,
          altId: row.alt_id,
          conflict: row.conflict === 1,
          createdAt: row.created_at,
          createdBy: row.created_by,
        });
      }
      const conflicts = new Map<string, Map<string, LivePair>>();
      for (const id of live.keys()) conflicts.set(id, new Map());
      const subjects = new Set<string>();
      for (const row of db
        .prepare("SELECT a_seq, b_seq, measure, detected_at, a_event, b_event FROM conflict_pairs")
        .all() as {
        a_seq: number;
        b_seq: number;
        measure: string;
        detected_at: number;
        a_event: number;
        b_event: number;
      }[]) {
        const a = seqToId.get(row.a_seq);
        const b = seqToId.get(row.b_seq);
        if (a === undefined || b === undefined) {
          violations.push(`conflict_pairs (${row.a_seq}, ${row.b_seq}) names a seq not in sources`);
          continue;
        }
        // The source whose create found the pair was stored after the other one.
        if (row.a_seq <= row.b_seq) violations.push(`conflict_pairs (${row.a_seq}, ${row.b_seq}): a_seq <= b_seq`);
        if (subjects.has(`${b}|${a}`) || subjects.has(`${a}|${b}`)) violations.push(`pair ${a}/${b} stored twice`);
        subjects.add(`${a}|${b}`);
        const m = JSON.parse(row.measure) as Measure;
        conflicts.get(a)?.set(b, {
          detectedAt: row.detected_at,
          area: m.overlapAreaM2,
          fraction: m.overlapFraction,
          otherFraction: m.counterpartOverlapFraction,
          event: row.a_event,
        });
        conflicts.get(b)?.set(a, {
          detectedAt: row.detected_at,
          area: m.overlapAreaM2,
          fraction: m.counterpartOverlapFraction,
          otherFraction: m.overlapFraction,
          event: row.b_event,
        });
      }
      const events = new Map<string, LedgerEvent[]>();
      const accountOfEvents = new Map<string, string>();
      for (const row of db
        .prepare("SELECT source_id, seq, account_id, type, at, by, data FROM source_events ORDER BY source_id, seq")
        .all() as EventRow[]) {
        const data = row.data === null ? {} : (JSON.parse(row.data) as Record<string, any>);
        const event: LedgerEvent = { seq: row.seq, type: row.type, at: row.at, by: row.by };
        if (data.counterpart) event.counterpart = data.counterpart.id;
        if (data.measure) {
          event.area = data.measure.overlapAreaM2;
          event.fraction = data.measure.overlapFraction;
          event.otherFraction = data.measure.counterpartOverlapFraction;
        }
        // A created event holds the flag as created; the record is the live row, or the deleted
        // event's (src/store/sqlite/history.ts).
        if (row.type === "created") {
          const source = live.get(row.source_id);
          event.altId = data.record?.alt_id ?? source?.altId;
          event.accountId = data.record?.account_id ?? source?.accountId;
        }
        if (row.type === "deleted" && data.record) {
          const created = events.get(row.source_id)?.[0];
          if (created && created.altId === undefined) {
            created.altId = data.record.alt_id;
            created.accountId = data.record.account_id;
          }
        }
        const previous = accountOfEvents.get(row.source_id);
        if (previous !== undefined && previous !== row.account_id) {
          violations.push(`events of ${row.source_id} name two accounts: ${previous}, ${row.account_id}`);
        }
        accountOfEvents.set(row.source_id, row.account_id);
        const list = events.get(row.source_id) ?? [];
        list.push(event);
        events.set(row.source_id, list);
      }
      for (const [id, account] of accountOfEvents) {
        const source = live.get(id);
        if (source && source.accountId !== account) {
          violations.push(`events of ${id} are in account ${account}, the row in ${source.accountId}`);
        }
      }
      return { view: { live, conflicts, events }, extras: { subjects, violations } };
    })();
  } finally {
    db.close();
  }
}

// ---- read through the REST API as an admin --------------------------------------------------------------

interface ApiRecord {
  id: string;
  alt_id: string;
  account_id: string;
  conflict: boolean;
  created_at: string;
  created_by: string;
}

interface ApiEvent {
  seq: number;
  type: EventType;
  at: string;
  by: string | null;
  counterpart?: { id?: string; alt_id?: string; account_id?: string; ref?: string };
  overlap_area_m2?: number;
  overlap_fraction?: number;
  counterpart_overlap_fraction?: number;
  record?: ApiRecord;
}

interface ApiConflict {
  counterpart: { id?: string; alt_id?: string; account_id?: string; ref?: string };
  overlap_area_m2: number;
  overlap_fraction: number;
  counterpart_overlap_fraction: number;
  detected_at: string;
}

async function getJson<T>(url: string, token: string): Promise<{ status: number; body: T | null; res: Response }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, body: res.status === 200 ? (JSON.parse(text) as T) : null, res };
}

/**
 * The ledger as an admin sees it: every page of `GET /sources?limit=1000` (following `Link`), and
 * `GET /sources/{id}/history` for every id in `ids` and listed, `GET /sources/{id}/conflicts` for
 * every listed one, and `GET /sources/{id}` for every id with a history but not listed (a `404`).
 */
export async function readApi(
  service: Service,
  adminToken: string,
  ids: Iterable<string>,
): Promise<{ view: LedgerView; violations: string[]; calls: number }> {
  const violations: string[] = [];
  let calls = 0;
  const live = new Map<string, LiveSource>();
  const altIdOf = new Map<string, string>();
  for (let path: string | null = "/sources?limit=1000"; path !== null; ) {
    const { status, body, res }: { status: number; body: ApiRecord[] | null; res: Response } = await getJson<
      ApiRecord[]
    >(`${service.base}${path}`, adminToken);
    calls++;
    if (status !== 200 || body === null) throw new Error(`GET ${path}: ${status}`);
    for (const r of body) {
      if (live.has(r.id)) violations.push(`GET /sources lists ${r.id} twice`);
      live.set(r.id, {
        id: r.id,
        accountId: r.account_id,
        altId: r.alt_id,
        conflict: r.conflict,
        createdAt: Date.parse(r.created_at),
        createdBy: r.created_by,
      });
      altIdOf.set(r.id, r.alt_id);
    }
    path = nextLink(res);
  }

  const conflicts = new Map<string, Map<string, LivePair>>();
  const events = new Map<string, LedgerEvent[]>();
  const all = [...new Set([...ids, ...live.keys()])].sort();
  await eachLimited(all, 16, async (id) => {
    // One page holds it all: this test's sources have far fewer than 1,000 events or conflicts.
    const history = await getJson<ApiEvent[]>(`${service.base}/sources/${id}/history?limit=1000`, adminToken);
    calls++;
    if (history.status === 404) {
      if (live.has(id)) violations.push(`${id} is listed, yet its history is 404`);
    } else if (history.status !== 200 || history.body === null) {
      violations.push(`GET /sources/${id}/history: ${history.status}`);
    } else if (nextLink(history.res) !== null) {
      violations.push(`GET /sources/${id}/history: more than one page of 1,000 (this check reads one)`);
    } else {
      events.set(
        id,
        history.body.map((e) => {
          const event: LedgerEvent = { seq: e.seq, type: e.type, at: Date.parse(e.at), by: e.by };
          if (e.counterpart) {
            if (e.counterpart.id === undefined || e.counterpart.account_id === undefined) {
              violations.push(`${id} event ${e.seq}: an admin sees the counterpart ${JSON.stringify(e.counterpart)}`);
            }
            event.counterpart = e.counterpart.id;
          }
          if (e.overlap_area_m2 !== undefined) {
            event.area = e.overlap_area_m2;
            event.fraction = e.overlap_fraction;
            event.otherFraction = e.counterpart_overlap_fraction;
          }
          if (e.type === "created") {
            event.altId = e.record?.alt_id;
            event.accountId = e.record?.account_id;
          }
          return event;
        }),
      );
    }
    if (live.has(id)) {
      const found = await getJson<ApiConflict[]>(`${service.base}/sources/${id}/conflicts?limit=1000`, adminToken);
      calls++;
      if (found.status !== 200 || found.body === null) {
        violations.push(`GET /sources/${id}/conflicts of a listed source: ${found.status}`);
        return;
      }
      if (nextLink(found.res) !== null) violations.push(`GET /sources/${id}/conflicts: more than one page of 1,000`);
      const pairs = new Map<string, LivePair>();
      for (const c of found.body) {
        const other = c.counterpart.id ?? `(no id: ${JSON.stringify(c.counterpart)})`;
        if (pairs.has(other)) violations.push(`${id}'s conflicts name ${other} twice`);
        pairs.set(other, {
          detectedAt: Date.parse(c.detected_at),
          area: c.overlap_area_m2,
          fraction: c.overlap_fraction,
          otherFraction: c.counterpart_overlap_fraction,
        });
        if (c.counterpart.alt_id !== undefined && altIdOf.has(other) && altIdOf.get(other) !== c.counterpart.alt_id) {
          violations.push(`${id}'s conflict names ${other} with alt_id ${c.counterpart.alt_id}`);
        }
      }
      // Listed in the order the source's history recorded them (docs/api.md §14).
      const recorded = (events.get(id) ?? [])
        .filter((e) => e.type === "conflict_set" && e.counterpart !== undefined && pairs.has(e.counterpart))
        .map((e) => e.counterpart);
      if (JSON.stringify(recorded) !== JSON.stringify([...pairs.keys()])) {
        violations.push(`${id}'s conflicts are not in its conflict_set events' order`);
      }
      conflicts.set(id, pairs);
    } else if (events.has(id)) {
      // Not listed but with a history: a deleted source; GET and /conflicts are 404 for it.
      for (const suffix of ["", "/conflicts"]) {
        const res = await fetch(`${service.base}/sources/${id}${suffix}`, {
          headers: { authorization: `Bearer ${adminToken}` },
        });
        await res.arrayBuffer();
        calls++;
        if (res.status !== 404) violations.push(`GET /sources/${id}${suffix} of an unlisted source: ${res.status}`);
      }
    }
  });
  return { view: { live, conflicts, events }, violations, calls };
}

// ---- the invariants ------------------------------------------------------------------------------------

const same = (x: number | undefined, y: number | undefined) => x === y;

/**
 * docs/api.md §8.1 and §14 on one view of the ledger:
 * (1) a live source's flag ⇔ it has at least one live pair;
 * (2) every live pair joins two live sources, seen from both sides with one detection time and
 *     mirrored measures, and each side has one `conflict_set` naming the other (same time, actor
 *     and measure as the pair) and no `conflict_cleared` for it;
 * (3) every history starts with its one `created` at seq 1, seqs contiguous, a `deleted` only last;
 *     a live source's `created` matches its row;
 * (4) a source with a `deleted` event is not live and in no pair, and each counterpart it still had
 *     then got a `conflict_cleared` naming it, at its deletion's time and by its deleter;
 *     every `conflict_cleared` names a source deleted then, after a `conflict_set` naming it;
 * and every `conflict_set` is mirrored on the other side, once per counterpart.
 */
export function invariantViolations(view: LedgerView): string[] {
  const out: string[] = [];
  const { live, conflicts, events } = view;
  const deletedEvent = (id: string) => events.get(id)?.find((e) => e.type === "deleted");

  for (const [id, source] of live) {
    const pairs = conflicts.get(id) ?? new Map();
    // (1)
    if (source.conflict !== pairs.size > 0) {
      out.push(`(1) ${id}: conflict=${source.conflict} with ${pairs.size} live pair(s)`);
    }
    const history = events.get(id);
    if (history === undefined || history.length === 0) {
      out.push(`(3) live ${id} has no history`);
      continue;
    }
    const created = history[0];
    if (
      created.type !== "created" ||
      created.altId !== source.altId ||
      created.accountId !== source.accountId ||
      created.at !== source.createdAt ||
      created.by !== source.createdBy
    ) {
      out.push(`(3) live ${id}: its created event ${JSON.stringify(created)} differs from ${JSON.stringify(source)}`);
    }
    if (deletedEvent(id)) out.push(`(4) ${id} has a deleted event yet is live`);
    // (2)
    for (const [other, pair] of pairs) {
      if (!live.has(other)) out.push(`(2) ${id}'s pair names ${other}, which is not live`);
      const mirror = conflicts.get(other)?.get(id);
      if (
        mirror === undefined ||
        mirror.detectedAt !== pair.detectedAt ||
        !same(mirror.area, pair.area) ||
        !same(mirror.fraction, pair.otherFraction) ||
        !same(mirror.otherFraction, pair.fraction)
      ) {
        out.push(`(2) pair ${id}/${other} is not mirrored: ${JSON.stringify(pair)} vs ${JSON.stringify(mirror)}`);
      }
      const sets = history.filter((e) => e.type === "conflict_set" && e.counterpart === other);
      if (sets.length !== 1) {
        out.push(`(2) live pair ${id}/${other}: ${sets.length} conflict_set events on ${id} naming ${other}`);
      } else {
        const set = sets[0];
        if (
          (pair.event !== undefined && pair.event !== set.seq) ||
          set.at !== pair.detectedAt ||
          !same(set.area, pair.area) ||
          !same(set.fraction, pair.fraction) ||
          !same(set.otherFraction, pair.otherFraction)
        ) {
          out.push(`(2) pair ${id}/${other} ${JSON.stringify(pair)} vs its conflict_set ${JSON.stringify(set)}`);
        }
      }
      if (history.some((e) => e.type === "conflict_cleared" && e.counterpart === other)) {
        out.push(`(2) live pair ${id}/${other}, yet ${id} has a conflict_cleared naming ${other}`);
      }
    }
    // The flag as the events tell it (as_of's rule): open sets = live pairs.
    const open =
      history.filter((e) => e.type === "conflict_set").length -
      history.filter((e) => e.type === "conflict_cleared").length;
    if (open !== pairs.size) out.push(`(2) ${id}: ${open} conflict_set not cleared, ${pairs.size} live pair(s)`);
  }

  for (const [id, pairs] of conflicts) {
    if (!live.has(id) && pairs.size > 0) out.push(`(4) ${id} is not live yet has ${pairs.size} pair(s)`);
  }

  for (const [id, history] of events) {
    // (3)
    history.forEach((e, i) => {
      if (e.seq !== i + 1) out.push(`(3) ${id}: event #${i + 1} has seq ${e.seq}`);
    });
    if (history[0]?.type !== "created") out.push(`(3) ${id}: first event is ${history[0]?.type}`);
    const createdCount = history.filter((e) => e.type === "created").length;
    if (createdCount !== 1) out.push(`(3) ${id}: ${createdCount} created events`);
    const deletes = history.filter((e) => e.type === "deleted");
    if (deletes.length > 1) out.push(`(3) ${id}: ${deletes.length} deleted events`);
    if (deletes.length === 1 && history[history.length - 1].type !== "deleted") {
      out.push(`(3) ${id}: events after its deleted event`);
    }
    if (deletes.length === 0 && !live.has(id)) out.push(`(4) ${id} is gone without a deleted event`);
    const deleted = deletes[0];

    const setNames = new Map<string, LedgerEvent>();
    const clearNames = new Map<string, LedgerEvent>();
    for (const e of history) {
      if (e.type === "conflict_set") {
        const other = e.counterpart ?? "";
        if (setNames.has(other)) out.push(`(2) ${id}: two conflict_set events naming ${other}`);
        if (other === id) out.push(`(2) ${id}: a conflict_set naming itself`);
        setNames.set(other, e);
        // Mirrored on the other side: same time, actor, measure seen from there.
        const mirror = events.get(other)?.filter((m) => m.type === "conflict_set" && m.counterpart === id) ?? [];
        if (
          mirror.length !== 1 ||
          mirror[0].at !== e.at ||
          mirror[0].by !== e.by ||
          !same(mirror[0].area, e.area) ||
          !same(mirror[0].fraction, e.otherFraction) ||
          !same(mirror[0].otherFraction, e.fraction)
        ) {
          out.push(`(2) ${id}'s conflict_set ${JSON.stringify(e)} has on ${other}: ${JSON.stringify(mirror)}`);
        }
      }
      if (e.type === "conflict_cleared") {
        const other = e.counterpart ?? "";
        if (clearNames.has(other)) out.push(`(4) ${id}: two conflict_cleared events naming ${other}`);
        if (!setNames.has(other)) out.push(`(4) ${id}: conflict_cleared naming ${other} without a conflict_set before`);
        clearNames.set(other, e);
        const theirs = deletedEvent(other);
        if (theirs === undefined || theirs.at !== e.at || theirs.by !== e.by) {
          out.push(
            `(4) ${id}: conflict_cleared ${JSON.stringify(e)} but ${other}'s deleted is ${JSON.stringify(theirs)}`,
          );
        }
      }
    }
    // (4) Every counterpart still paired when this source went got a conflict_cleared naming it.
    if (deleted !== undefined) {
      if (live.has(id)) out.push(`(4) deleted ${id} is still in sources`);
      for (const [other] of setNames) {
        if (clearNames.has(other)) continue;
        const cleared = events.get(other)?.filter((e) => e.type === "conflict_cleared" && e.counterpart === id) ?? [];
        if (cleared.length !== 1 || cleared[0].at !== deleted.at || cleared[0].by !== deleted.by) {
          out.push(
            `(4) ${id} deleted ${JSON.stringify(deleted)} while paired with ${other}, whose conflict_cleared naming it: ${JSON.stringify(cleared)}`,
          );
        }
      }
    } else if (live.has(id)) {
      // Both sides live and never cleared: the pair must still be there.
      for (const [other] of setNames) {
        if (clearNames.has(other)) continue;
        if (live.has(other) && !conflicts.get(id)?.has(other)) {
          out.push(`(2) ${id} and ${other} are live with conflict_set events naming each other but no pair`);
        }
      }
    }
  }
  return out;
}

/** Where two views differ (the API's and the file's should be the same ledger). */
export function viewDifferences(api: LedgerView, file: LedgerView): string[] {
  const out: string[] = [];
  const keys = (m: Map<string, unknown>) => [...m.keys()].sort();
  const a = JSON.stringify(keys(api.live));
  if (a !== JSON.stringify(keys(file.live))) out.push("the admin's list and the sources table hold other ids");
  for (const [id, source] of file.live) {
    if (JSON.stringify(api.live.get(id)) !== JSON.stringify(source)) {
      out.push(`${id}: listed ${JSON.stringify(api.live.get(id))}, stored ${JSON.stringify(source)}`);
    }
    // The stored event seq is the file's alone (the API shows it as the order, checked on reading).
    const pairs = (m: Map<string, LivePair> | undefined) =>
      JSON.stringify(
        [...(m ?? new Map<string, LivePair>()).entries()]
          .map(([other, { event: _event, ...pair }]) => [other, pair])
          .sort(([x], [y]) => ((x as string) < (y as string) ? -1 : 1)),
      );
    if (pairs(api.conflicts.get(id)) !== pairs(file.conflicts.get(id))) {
      out.push(`${id}: /conflicts ${pairs(api.conflicts.get(id))}, conflict_pairs ${pairs(file.conflicts.get(id))}`);
    }
  }
  if (JSON.stringify(keys(api.events)) !== JSON.stringify(keys(file.events))) {
    out.push(`histories of ${api.events.size} ids through the API, of ${file.events.size} in source_events`);
  }
  for (const [id, history] of file.events) {
    const seen = JSON.stringify(api.events.get(id));
    if (seen !== JSON.stringify(history)) out.push(`${id}: /history ${seen}, source_events ${JSON.stringify(history)}`);
  }
  return out;
}
