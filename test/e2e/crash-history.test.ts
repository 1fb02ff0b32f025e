/**
 * Crash consistency of the history (issue 10, "Bad input and faults"; docs/api.md §8.1 and §14):
 * the real service, as `npm start` runs it (SQLite file, the production conflict policy), is
 * killed with SIGKILL while several accounts create overlapping sources (single and batched, some
 * batches refused whole with a 409) and delete some, over REST. Restarted on the same file, the
 * ledger must agree with itself and with what the clients were told, read both through the API as
 * an admin (every page of `GET /sources?limit=1000`, `GET /sources/{id}/history` and
 * `/conflicts` of every source) and from the file opened read-only (`sources`, `conflict_pairs`,
 * `source_events`), which must show the same ledger:
 *
 * 1. every source's flag ⇔ it has at least one live pair;
 * 2. every pair has a `conflict_set` on both sides naming each other, and no `conflict_cleared`;
 * 3. every source has exactly one `created` event, at seq 1, and contiguous seqs;
 * 4. every deleted source is out of `sources` and of every pair, and its counterparts then got a
 *    `conflict_cleared` naming it;
 * 5. every create answered 201 is there whole (rows and events, the ids it answered), every
 *    delete answered 204 is done, a refused create left nothing, no create is partial, and the
 *    events seen after a restart are still there after the next one.
 *
 * Bounded: ROUNDS kill/restart rounds in one test. The kill moments and the load come from a seeded
 * PRNG (CRASH_HISTORY_SEED overrides the default); every failure message names the seed and each
 * round's figures, so a failure can be replayed (timing makes it approximate).
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { PolygonGeometry } from "../../src/geo/types.js";
import { prng, ring } from "../support/geometry-fixtures.js";
import {
  type DevClient,
  invariantViolations,
  type LedgerEvent,
  type LedgerView,
  readApi,
  readDatabase,
  type Service,
  startService,
  tokenOf,
  viewDifferences,
} from "./crash-history-support.js";

const ROUNDS = 5;
const WRITERS = 6;
/** Creates acknowledged in a round before the kill timer starts. */
const MIN_ACKS_BEFORE_KILL = 6;
/** The kill comes 0 to this many ms after MIN_ACKS_BEFORE_KILL acknowledgements. */
const MAX_KILL_DELAY_MS = 900;
const SEED = Number(process.env.CRASH_HISTORY_SEED ?? 10);

const ACCOUNTS = ["acct-crash-a", "acct-crash-b", "acct-crash-c"];
const USERS: DevClient[] = ACCOUNTS.map((account, i) => ({
  client_id: `crash-user-${i}`,
  client_secret: `local-dev-only-crash-user-${i}`,
  account_id: account,
  role: "user",
  client_name: `Crash user ${i} (history test)`,
  scopes: ["read:sources", "write:sources", "delete:sources"],
}));
const ADMIN: DevClient = {
  client_id: "crash-admin",
  client_secret: "local-dev-only-crash-admin",
  role: "admin",
  client_name: "Crash admin (history test)",
  scopes: ["read:sources", "write:sources", "delete:sources"],
};

/** Periods: the first and the last only touch (no overlap), the middle one overlaps both. */
const PERIODS: [string, string][] = [
  ["2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"],
  ["2024-07-01T00:00:00Z", "2025-07-01T00:00:00Z"],
  ["2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"],
];
const ATTRIBUTE_TYPES: string[][] = [[], ["CARBON_REMOVAL"], ["BIODIVERSITY"], ["CARBON_REMOVAL", "WATER_QUALITY"]];

interface Feature {
  altId: string;
  geometry: PolygonGeometry;
  period: [string, string];
  attributeType: string[];
}

interface CreateRequest {
  name: string;
  round: number;
  client: DevClient;
  accountId: string;
  shape: "feature" | "flat" | "collection";
  /** The features with fresh alt_ids (what a 201 stores). */
  features: Feature[];
  /** A live, never-deleted alt_id of the account sent last: the whole request must be a 409. */
  poison?: Feature;
  outcome: "pending" | "acked" | "refused" | "unknown";
  status?: number;
  records?: { id: string; alt_id: string; conflict: boolean; created_at: string; account_id: string }[];
}

interface Target {
  id: string;
  altId: string;
  accountId: string;
}

interface DeleteRequest {
  round: number;
  client: DevClient;
  target: Target;
  how: "id" | "alt_id";
  outcome: "pending" | "done" | "refused" | "unknown";
  status?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("crash consistency of the history: SIGKILL during conflicting creates and deletes (issue 10)", () => {
  const children: ChildProcess[] = [];
  const dirs: string[] = [];
  const killAll = () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  };
  afterEach(() => {
    killAll();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  afterAll(killAll);

  it(`flags, pairs and events agree after ${ROUNDS} kill -9s, and every acknowledged change is whole`, {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-crash-history-"));
    dirs.push(dir);
    const clientsFile = join(dir, "dev-clients.json");
    writeFileSync(clientsFile, JSON.stringify([...USERS, ADMIN]));
    const sqlitePath = join(dir, "ledger.sqlite");
    const env = {
      PORT: "0",
      HOST: "127.0.0.1",
      SQLITE_PATH: sqlitePath,
      DEV_CLIENTS_FILE: clientsFile,
      LOG_LEVEL: "info",
    };

    const random = prng(SEED);
    // The kill moments from a PRNG of their own: the load's draws interleave with the timing.
    const killRandom = prng(SEED + 0x9e3779b9);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    const creates: CreateRequest[] = [];
    const deletes: DeleteRequest[] = [];
    /** Every fresh alt_id sent, to its request. */
    const requestOfAltId = new Map<string, CreateRequest>();
    /** One never-deleted source per account, whose alt_id poisons some batches. */
    const pinned = new Map<string, Target>();
    /** Live sources no delete has targeted yet. */
    let deletable: Target[] = [];
    const targeted = new Set<string>();
    const rounds: string[] = [];
    const context = () => `seed ${SEED}; rounds: ${rounds.join("; ")}`;
    const started = performance.now();

    // Overlapping rectangles in a 0.12° square (near 20° E, 40° N): most creates find conflicts.
    const rectangle = (): PolygonGeometry => {
      const round4 = (x: number) => Math.round(x * 1e4) / 1e4;
      const lon = round4(20 + random() * 0.12);
      const lat = round4(40 + random() * 0.12);
      const w = round4(0.004 + random() * 0.016);
      const h = round4(0.004 + random() * 0.016);
      return { type: "Polygon", coordinates: [ring(lon, lat, round4(lon + w), round4(lat + h))] };
    };
    let altIds = 0;
    const feature = (round: number): Feature => ({
      altId: `r${round}-f${altIds++}`,
      geometry: rectangle(),
      period: pick(PERIODS),
      attributeType: pick(ATTRIBUTE_TYPES),
    });
    const featureJson = (f: Feature) => ({
      type: "Feature",
      id: f.altId,
      geometry: f.geometry,
      properties: { start_at: f.period[0], end_at: f.period[1], attribute_type: f.attributeType },
    });
    const bodyOf = (request: CreateRequest): string => {
      const all = request.poison ? [...request.features, request.poison] : request.features;
      if (request.shape === "feature") return JSON.stringify(featureJson(all[0]));
      if (request.shape === "flat") {
        const f = all[0];
        return JSON.stringify({
          alt_id: f.altId,
          geometry: f.geometry,
          start_at: f.period[0],
          end_at: f.period[1],
          attribute_type: f.attributeType,
        });
      }
      return JSON.stringify({ type: "FeatureCollection", features: all.map(featureJson) });
    };

    let service: Service = await startService(env, children);
    const tokens = new Map<string, string>();
    const refreshTokens = async () => {
      for (const client of [...USERS, ADMIN]) tokens.set(client.client_id, await tokenOf(service, client));
    };
    await refreshTokens();

    const send = async (request: CreateRequest, stopped: () => boolean, unexpected: string[]) => {
      const query = request.client === ADMIN ? `?account_id=${request.accountId}` : "";
      try {
        const res = await fetch(`${service.base}/sources${query}`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${tokens.get(request.client.client_id)}`,
            "content-type": "application/json",
          },
          body: bodyOf(request),
        });
        request.status = res.status;
        if (res.status === 201) {
          // Acknowledged the moment the status arrives: the body may be cut short by the kill.
          request.outcome = "acked";
          const records = (await res.json().catch(() => null)) as CreateRequest["records"] | null;
          if (records !== null) request.records = records;
          if (request.poison) unexpected.push(`${request.name}: 201 for a batch with a taken alt_id`);
        } else {
          const text = await res.text().catch(() => "");
          request.outcome = "refused";
          if (!(request.poison && res.status === 409)) {
            unexpected.push(`${request.name}: ${res.status} ${text.slice(0, 300)}`);
          }
        }
      } catch (error) {
        // Only the kill may cut a request short; it may or may not have been committed.
        request.outcome = "unknown";
        if (!stopped()) unexpected.push(`${request.name}: ${String(error)}`);
      }
    };

    const newCreate = (round: number, client: DevClient, accountId: string): CreateRequest => {
      const r = random();
      const shape = r < 0.4 ? "feature" : r < 0.55 ? "flat" : "collection";
      const count = shape === "collection" ? 2 + Math.floor(random() * 11) : 1;
      const features = Array.from({ length: count }, () => feature(round));
      // Within a batch, some features repeat another's geometry: a double claim in one request.
      if (count > 2 && random() < 0.3) features[count - 1].geometry = features[0].geometry;
      const request: CreateRequest = {
        name: `q${creates.length}`,
        round,
        client,
        accountId,
        shape,
        features,
        outcome: "pending",
      };
      const pin = pinned.get(accountId);
      if (shape === "collection" && pin !== undefined && random() < 0.12) {
        request.poison = { ...feature(round), altId: pin.altId };
      }
      creates.push(request);
      for (const f of features) requestOfAltId.set(f.altId, request);
      return request;
    };

    // One pinned source per account before the first round: never deleted, its alt_id poisons batches.
    for (const [i, accountId] of ACCOUNTS.entries()) {
      const request = newCreate(0, USERS[i], accountId);
      request.shape = "feature";
      request.features = request.features.slice(0, 1);
      request.poison = undefined;
      const unexpected: string[] = [];
      await send(request, () => false, unexpected);
      expect(unexpected, context()).toEqual([]);
      const record = request.records?.[0];
      expect(record, `the pinned create's answer; ${context()}`).toBeDefined();
      pinned.set(accountId, { id: record!.id, altId: record!.alt_id, accountId });
    }

    /** The events seen after the previous restart, by source: each must still be there. */
    let previousEvents = new Map<string, LedgerEvent[]>();
    const knownIds = new Set<string>([...pinned.values()].map((p) => p.id));

    for (let round = 1; round <= ROUNDS; round++) {
      const delayMs = Math.floor(killRandom() * MAX_KILL_DELAY_MS);
      let stopped = false;
      let acks = 0;
      let inFlight = 0;
      let onAck: () => void = () => {};
      const enoughAcks = new Promise<void>((resolve) => {
        onAck = () => {
          if (acks >= MIN_ACKS_BEFORE_KILL) resolve();
        };
      });
      const unexpected: string[] = [];

      const deleteOne = async (target: Target) => {
        const byAdmin = random() < 0.3;
        const client = byAdmin ? ADMIN : USERS[ACCOUNTS.indexOf(target.accountId)];
        const how = random() < 0.3 ? "alt_id" : "id";
        const request: DeleteRequest = { round, client, target, how, outcome: "pending" };
        deletes.push(request);
        const admin = byAdmin ? `account_id=${target.accountId}` : "";
        const url =
          how === "id"
            ? `${service.base}/sources/${target.id}${byAdmin && random() < 0.5 ? `?${admin}` : ""}`
            : `${service.base}/sources?alt_id=${target.altId}${byAdmin ? `&${admin}` : ""}`;
        try {
          const res = await fetch(url, {
            method: "DELETE",
            headers: { authorization: `Bearer ${tokens.get(client.client_id)}` },
          });
          request.status = res.status;
          const text = await res.text().catch(() => "");
          request.outcome = res.status === 204 ? "done" : "refused";
          if (res.status !== 204) unexpected.push(`delete of ${target.id}: ${res.status} ${text.slice(0, 300)}`);
        } catch (error) {
          request.outcome = "unknown";
          if (!stopped) unexpected.push(`delete of ${target.id}: ${String(error)}`);
        }
      };

      const writer = async () => {
        while (!stopped) {
          inFlight++;
          try {
            if (random() < 0.3 && deletable.length > 0) {
              const target = deletable.splice(Math.floor(random() * deletable.length), 1)[0];
              targeted.add(target.id);
              await deleteOne(target);
            } else {
              const byAdmin = random() < 0.2;
              const accountIndex = Math.floor(random() * ACCOUNTS.length);
              const request = newCreate(round, byAdmin ? ADMIN : USERS[accountIndex], ACCOUNTS[accountIndex]);
              await send(request, () => stopped, unexpected);
              if (request.outcome === "acked") {
                acks++;
                onAck();
                for (const r of request.records ?? []) {
                  knownIds.add(r.id);
                  deletable.push({ id: r.id, altId: r.alt_id, accountId: r.account_id });
                }
              }
            }
          } finally {
            inFlight--;
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, writer);

      const tooSlow = setTimeout(() => {
        stopped = true;
      }, 15_000);
      await Promise.race([enoughAcks, Promise.all(writers)]);
      clearTimeout(tooSlow);
      expect(
        acks,
        `round ${round}: too few 201s; ${unexpected.join("\n")}\n${service.output()}`,
      ).toBeGreaterThanOrEqual(MIN_ACKS_BEFORE_KILL);
      await sleep(delayMs);
      const inFlightAtKill = inFlight;
      const sentAtKill = creates.filter((c) => c.round === round).length;
      stopped = true;
      service.child.kill("SIGKILL");
      await service.exited;
      expect(service.child.signalCode, `round ${round}: the service ended before the kill\n${service.output()}`).toBe(
        "SIGKILL",
      );
      await Promise.all(writers);
      expect(unexpected, `round ${round}: unexpected answers before the kill; ${context()}`).toEqual([]);

      // Restart on the same file, read the ledger through the API and from the file.
      service = await startService(env, children);
      await refreshTokens();
      const file = readDatabase(sqlitePath);
      for (const id of file.view.events.keys()) knownIds.add(id);
      const api = await readApi(service, tokens.get(ADMIN.client_id)!, knownIds);
      const unknownCreates = creates.filter((c) => c.round === round && c.outcome === "unknown").length;
      const unknownDeletes = deletes.filter((d) => d.round === round && d.outcome === "unknown").length;
      rounds.push(
        `#${round} kill ${delayMs} ms after ${MIN_ACKS_BEFORE_KILL} acks: ${sentAtKill} creates sent, ` +
          `${acks} acked, ${inFlightAtKill} in flight (${unknownCreates} creates, ${unknownDeletes} deletes cut short); ` +
          `${file.view.live.size} live, ${file.view.events.size} histories`,
      );

      const violations = [
        ...file.extras.violations.map((v) => `file: ${v}`),
        ...invariantViolations(file.view).map((v) => `file: ${v}`),
        ...api.violations.map((v) => `api: ${v}`),
        ...invariantViolations(api.view).map((v) => `api: ${v}`),
        ...viewDifferences(api.view, file.view).map((v) => `api vs file: ${v}`),
        ...clientViolations(file.view, file.extras.subjects),
        ...durabilityViolations(previousEvents, file.view),
      ];
      expect(
        violations.slice(0, 40),
        `after restart #${round}: ${violations.length} violation(s); ${context()}`,
      ).toEqual([]);
      previousEvents = file.view.events;
      // Sources whose create's answer was lost may be deleted in later rounds too.
      deletable = [...file.view.live.values()]
        .filter((s) => !targeted.has(s.id) && pinned.get(s.accountId)?.id !== s.id)
        .map((s) => ({ id: s.id, altId: s.altId, accountId: s.accountId }));
    }

    /** (5) What the clients were told against the ledger in the file. */
    function clientViolations(view: LedgerView, subjects: Set<string>): string[] {
      const out: string[] = [];
      const createdByAltId = new Map<string, { id: string; event: LedgerEvent }[]>();
      for (const [id, history] of view.events) {
        const created = history.find((e) => e.type === "created");
        if (created?.altId === undefined) continue;
        const key = `${created.accountId}/${created.altId}`;
        createdByAltId.set(key, [...(createdByAltId.get(key) ?? []), { id, event: created }]);
        const pin = pinned.get(created.accountId ?? "");
        if (!requestOfAltId.has(created.altId) && !(pin?.altId === created.altId && pin.id === id)) {
          out.push(`(5) ${id}: a created event for an alt_id never sent (${key})`);
        }
      }
      const deletedBy = new Map<string, DeleteRequest>();
      for (const d of deletes) deletedBy.set(d.target.id, d);
      for (const request of creates) {
        const what = `create ${request.name} (round ${request.round}, ${request.shape}, ${request.features.length} source(s), ${request.outcome}${request.status ? ` ${request.status}` : ""})`;
        const found = request.features.map((f) => createdByAltId.get(`${request.accountId}/${f.altId}`) ?? []);
        const stored = found.filter((list) => list.length > 0).length;
        if (found.some((list) => list.length > 1)) out.push(`(5) ${what}: an alt_id created twice`);
        if (stored !== 0 && stored !== request.features.length) {
          out.push(`(5) ${what}: partial, ${stored} of ${request.features.length} created`);
        }
        if (request.outcome === "acked" && stored !== request.features.length) out.push(`(5) ${what}: lost`);
        if (request.outcome === "refused" && stored !== 0) out.push(`(5) ${what}: refused, yet stored`);
        if (stored === 0) continue;
        const ids = found.map((list) => list[0].id);
        const ats = new Set(found.map((list) => list[0].event.at));
        if (ats.size !== 1) out.push(`(5) ${what}: its created events have ${ats.size} times`);
        found.forEach(([{ id, event }], i) => {
          if (event.by !== request.client.client_name) out.push(`(5) ${what}: ${id} created by ${event.by}`);
          const history = view.events.get(id) ?? [];
          const deleted = history.find((e) => e.type === "deleted");
          const deleteRequest = deletedBy.get(id);
          if (deleted === undefined && !view.live.has(id)) out.push(`(5) ${what}: ${id} gone without a delete`);
          if (deleted !== undefined && (deleteRequest === undefined || deleteRequest.outcome === "refused")) {
            out.push(`(5) ${what}: ${id} has a deleted event, but no delete of it was sent`);
          }
          const record = request.records?.[i];
          if (record === undefined) return;
          if (record.id !== id || record.alt_id !== request.features[i].altId) {
            out.push(`(5) ${what}: answered ${record.id}/${record.alt_id}, stored ${id}/${request.features[i].altId}`);
          }
          if (Date.parse(record.created_at) !== event.at) {
            out.push(`(5) ${what}: answered created_at ${record.created_at}, created event at ${event.at}`);
          }
          // A source answered unflagged found no conflict: it is no pair's finding side.
          const live = view.live.get(id);
          if (!record.conflict && live !== undefined) {
            for (const other of view.conflicts.get(id)?.keys() ?? []) {
              if (subjects.has(`${id}|${other}`)) {
                out.push(`(5) ${what}: ${id} answered conflict=false, yet its create found the pair with ${other}`);
              }
            }
          }
          if (record.conflict && !history.some((e) => e.type === "conflict_set")) {
            out.push(`(5) ${what}: ${id} answered conflict=true without a conflict_set event`);
          }
        });
        if (request.records !== undefined && request.records.length !== ids.length) {
          out.push(`(5) ${what}: answered ${request.records.length} records`);
        }
      }
      for (const d of deletes) {
        const history = view.events.get(d.target.id) ?? [];
        const deleted = history.find((e) => e.type === "deleted");
        const what = `delete of ${d.target.id} by ${d.how} (round ${d.round}, ${d.outcome}${d.status ? ` ${d.status}` : ""})`;
        if (d.outcome === "done" && (deleted === undefined || view.live.has(d.target.id))) {
          out.push(
            `(5) ${what}: answered 204, yet the source is ${view.live.has(d.target.id) ? "live" : "without a deleted event"}`,
          );
        }
        if (deleted !== undefined && deleted.by !== d.client.client_name) {
          out.push(`(5) ${what}: deleted by ${deleted.by}`);
        }
      }
      for (const [account, pin] of pinned) {
        if (!view.live.has(pin.id)) out.push(`(5) the pinned source of ${account} is gone`);
      }
      return out;
    }

    /** Events are append-only: what a restart showed, every later restart shows, unchanged. */
    function durabilityViolations(before: Map<string, LedgerEvent[]>, view: LedgerView): string[] {
      const out: string[] = [];
      for (const [id, history] of before) {
        const now = view.events.get(id) ?? [];
        const prefix = JSON.stringify(now.slice(0, history.length));
        if (prefix !== JSON.stringify(history)) {
          out.push(`(5) ${id}: events seen after the previous restart changed: ${JSON.stringify(history)} → ${prefix}`);
        }
      }
      return out;
    }

    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const acked = creates.filter((c) => c.outcome === "acked");
    const refused = creates.filter((c) => c.outcome === "refused").length;
    const unknown = creates.filter((c) => c.outcome === "unknown").length;
    const sources = acked.reduce((n, c) => n + c.features.length, 0);
    const final = readDatabase(sqlitePath).view;
    let pairs = 0;
    for (const p of final.conflicts.values()) pairs += p.size;
    const cleared = [...final.events.values()].flat().filter((e) => e.type === "conflict_cleared").length;
    const stored = (c: CreateRequest) =>
      final.events.has(c.records?.[0]?.id ?? "") || storedAltIds.has(c.features[0].altId);
    const storedAltIds = new Set(
      [...final.events.values()].map((history) => history[0]?.altId).filter((a): a is string => a !== undefined),
    );
    const unknownStored = creates.filter((c) => c.outcome === "unknown" && stored(c)).length;
    const unknownDeletes = deletes.filter((d) => d.outcome === "unknown");
    const unknownDeleted = unknownDeletes.filter((d) =>
      final.events.get(d.target.id)?.some((e) => e.type === "deleted"),
    ).length;
    process.stdout.write(
      `crash history: ${seconds} s, ${creates.length} creates sent (${acked.length} acked with ${sources} sources, ` +
        `${refused} refused whole, ${unknown} cut short of which ${unknownStored} committed), ${deletes.length} deletes ` +
        `(${deletes.filter((d) => d.outcome === "done").length} done, ${unknownDeletes.length} cut short of which ` +
        `${unknownDeleted} committed); at the end ${final.live.size} live, ` +
        `${pairs / 2} live pairs, ${cleared} conflict_cleared events; ${context()}\n`,
    );
  });
});
