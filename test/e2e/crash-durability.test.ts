/**
 * Crash durability (issue 14): the real service, as `npm start` runs it, is killed with SIGKILL
 * while several clients post batch creates; restarted on the same SQLite file, it must hold every
 * source of every acknowledged (201) batch, as sent, and no batch may be partial: a create is one
 * transaction (docs/api.md §1.2: WAL with synchronous=FULL, so a 201 means the data is on disk).
 *
 * Bounded: KILLS kill/restart rounds in one test. The kill moments come from a seeded PRNG
 * (CRASH_SEED overrides the fixed default) and every assertion message names the seed and each
 * round's delay, ack count and in-flight count, so a failure can be replayed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { PolygonGeometry } from "../../src/geo/types.js";
import { prng, ring } from "../support/geometry-fixtures.js";

const root = join(import.meta.dirname, "..", "..");

const KILLS = 3;
const WRITERS = 4;
const FEATURES_PER_BATCH = 50;
/** Batches acknowledged in a round before the kill timer starts. */
const MIN_ACKS_BEFORE_KILL = 3;
/** The kill comes 0 to this many ms after MIN_ACKS_BEFORE_KILL acknowledgements. */
const MAX_KILL_DELAY_MS = 400;
const SEED = Number(process.env.CRASH_SEED ?? 14);

const CLIENT = {
  client_id: "crash-co",
  client_secret: "local-dev-only-crash-co",
  account_id: "acct-crash-co",
  role: "user",
  client_name: "Crash Co (durability test)",
  scopes: ["read:sources", "write:sources"],
};
const AUDIENCE = "https://source-ledger.local";
const START = "2024-01-01T00:00:00Z";
const END = "2025-01-01T00:00:00Z";

interface Service {
  child: ChildProcess;
  base: string;
  exited: Promise<void>;
  /** The tail of its stdout and stderr, for failure messages. */
  output: () => string;
}

/** Starts `src/main.ts` as `npm start` does and waits for the log line naming the chosen port. */
function startService(env: Record<string, string>, children: ChildProcess[]): Promise<Service> {
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
async function tokenOf(service: Service): Promise<string> {
  const res = await fetch(`${service.base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_id: CLIENT.client_id,
      client_secret: CLIENT.client_secret,
      audience: AUDIENCE,
      grant_type: "client_credentials",
    }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return (JSON.parse(text) as { access_token: string }).access_token;
}

interface ListedSource {
  id: string;
  alt_id: string;
  account_id: string;
  geometry: unknown;
  start_at: string;
  end_at: string;
}

/** Every source of the account, paged by limit/offset until an empty page (docs/api.md §4.5). */
async function listAll(service: Service, token: string): Promise<ListedSource[]> {
  const all: ListedSource[] = [];
  for (let offset = 0; ; offset += 1000) {
    const res = await fetch(`${service.base}/sources?limit=1000&offset=${offset}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const text = await res.text();
    expect(res.status, text.slice(0, 500)).toBe(200);
    const page = JSON.parse(text) as ListedSource[];
    if (page.length === 0) return all;
    all.push(...page);
  }
}

/**
 * What a batch's sender knows: `acked` once a 201 arrived (then `ids` when its body was read);
 * `refused` for an answer that stores nothing (429 or 4xx); `unknown` when the connection died.
 */
interface Batch {
  name: string;
  round: number;
  geometries: Map<string, PolygonGeometry>;
  outcome: "pending" | "acked" | "refused" | "unknown";
  status?: number;
  ids?: string[];
}

/** A 0.001° square in a 0.01° grid cell of its own (near 150° W, 50° N): no two sources touch. */
let cell = 0;
function freshSquare(): PolygonGeometry {
  const c = cell++;
  const lon = -150 + (c % 1000) * 0.01;
  const lat = 50 + Math.floor(c / 1000) * 0.01;
  return { type: "Polygon", coordinates: [ring(lon, lat, lon + 0.001, lat + 0.001)] };
}

function newBatch(index: number, round: number): Batch {
  const name = `b${index}`;
  const geometries = new Map<string, PolygonGeometry>();
  for (let i = 0; i < FEATURES_PER_BATCH; i++) geometries.set(`${name}-f${i}`, freshSquare());
  return { name, round, geometries, outcome: "pending" };
}

function bodyOf(batch: Batch): string {
  return JSON.stringify({
    type: "FeatureCollection",
    features: [...batch.geometries].map(([altId, geometry]) => ({
      type: "Feature",
      id: altId,
      geometry,
      properties: { start_at: START, end_at: END },
    })),
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("crash durability: SIGKILL during batch creates (issue 14)", () => {
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

  it(`every acknowledged batch survives ${KILLS} kill -9s whole, and no batch is partial`, {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-crash-"));
    dirs.push(dir);
    const clientsFile = join(dir, "dev-clients.json");
    writeFileSync(clientsFile, JSON.stringify([CLIENT]));
    const env = {
      PORT: "0",
      HOST: "127.0.0.1",
      SQLITE_PATH: join(dir, "ledger.sqlite"),
      DEV_CLIENTS_FILE: clientsFile,
      LOG_LEVEL: "info",
    };

    const random = prng(SEED);
    const batches: Batch[] = [];
    const byName = new Map<string, Batch>();
    const rounds: string[] = [];
    /** Batches seen whole after a restart: durable from then on, acknowledged or not. */
    const seenWhole = new Set<string>();
    const context = () => `seed ${SEED}; rounds: ${rounds.join("; ")}`;
    const started = performance.now();

    let service = await startService(env, children);
    let token = await tokenOf(service);

    for (let round = 1; round <= KILLS; round++) {
      const delayMs = Math.floor(random() * MAX_KILL_DELAY_MS);
      let stopped = false;
      let acksThisRound = 0;
      let inFlight = 0;
      let onAck: () => void = () => {};
      const enoughAcks = new Promise<void>((resolve) => {
        onAck = () => {
          if (acksThisRound >= MIN_ACKS_BEFORE_KILL) resolve();
        };
      });
      const unexpected: string[] = [];

      const writer = async () => {
        while (!stopped) {
          const batch = newBatch(batches.length, round);
          batches.push(batch);
          byName.set(batch.name, batch);
          inFlight++;
          try {
            const res = await fetch(`${service.base}/sources`, {
              method: "POST",
              headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
              body: bodyOf(batch),
            });
            batch.status = res.status;
            if (res.status === 201) {
              // Acknowledged the moment the status arrives: the body may be cut short by the kill.
              batch.outcome = "acked";
              acksThisRound++;
              onAck();
              const records = (await res.json().catch((error: unknown) => {
                if (!stopped) unexpected.push(`${batch.name}: 201 body unreadable: ${String(error)}`);
                return null;
              })) as { id: string; alt_id: string }[] | null;
              if (records !== null) {
                const sentAltIds = [...batch.geometries.keys()];
                if (JSON.stringify(records.map((r) => r.alt_id)) !== JSON.stringify(sentAltIds)) {
                  unexpected.push(`${batch.name}: 201 lists other alt_ids than sent`);
                }
                batch.ids = records.map((r) => r.id);
              }
            } else {
              const text = await res.text().catch(() => "");
              batch.outcome = "refused";
              // A rate limit (429) stores nothing and only slows this writer; anything else is a bug.
              if (res.status === 429) await sleep(200);
              else unexpected.push(`${batch.name}: ${res.status} ${text.slice(0, 300)}`);
            }
          } catch (error) {
            // Only the kill may cut a request short; its batch may or may not have been committed.
            batch.outcome = "unknown";
            if (!stopped) unexpected.push(`${batch.name}: ${String(error)}`);
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
        acksThisRound,
        `round ${round}: too few 201s before the kill; ${unexpected.join("\n")}\n${service.output()}`,
      ).toBeGreaterThanOrEqual(MIN_ACKS_BEFORE_KILL);
      await sleep(delayMs);
      const inFlightAtKill = inFlight;
      const acksAtKill = acksThisRound;
      stopped = true;
      service.child.kill("SIGKILL");
      await service.exited;
      expect(service.child.signalCode, `round ${round}: the service ended before the kill\n${service.output()}`).toBe(
        "SIGKILL",
      );
      await Promise.all(writers);
      rounds.push(
        `#${round} kill ${delayMs} ms after ${MIN_ACKS_BEFORE_KILL} acks: ${acksAtKill} acked before the kill ` +
          `(${acksThisRound} incl. answers read after it), ${inFlightAtKill} in flight`,
      );
      expect(unexpected, `round ${round}: unexpected answers before the kill; ${context()}`).toEqual([]);

      // Restart on the same file, with a new port and a new token, and read everything back.
      service = await startService(env, children);
      token = await tokenOf(service);
      const listed = await listAll(service, token);

      const present = new Map<string, ListedSource[]>();
      const ids = new Set<string>();
      const altIds = new Set<string>();
      for (const source of listed) {
        const match = /^(b\d+)-f\d+$/.exec(source.alt_id);
        const batch = match ? byName.get(match[1]) : undefined;
        expect(batch, `a source that was never sent: ${JSON.stringify(source)}; ${context()}`).toBeDefined();
        expect(batch?.geometries.has(source.alt_id), `an alt_id never sent: ${source.alt_id}; ${context()}`).toBe(true);
        expect(ids.has(source.id), `id ${source.id} listed twice; ${context()}`).toBe(false);
        expect(altIds.has(source.alt_id), `alt_id ${source.alt_id} listed twice; ${context()}`).toBe(false);
        ids.add(source.id);
        altIds.add(source.alt_id);
        const name = match?.[1] ?? "";
        present.set(name, [...(present.get(name) ?? []), source]);
      }

      let whole = 0;
      for (const batch of batches) {
        const sources = present.get(batch.name) ?? [];
        const what = `batch ${batch.name} (round ${batch.round}, ${batch.outcome}${batch.status ? ` ${batch.status}` : ""})`;
        // No partial batch: all of it or none of it.
        expect(
          [0, FEATURES_PER_BATCH],
          `${what}: ${sources.length} of ${FEATURES_PER_BATCH} sources after restart #${round}; ${context()}`,
        ).toContain(sources.length);
        if (batch.outcome === "acked") {
          expect(sources.length, `${what} lost after restart #${round}; ${context()}`).toBe(FEATURES_PER_BATCH);
        }
        if (batch.outcome === "refused") {
          expect(sources.length, `${what} was refused yet stored; ${context()}`).toBe(0);
        }
        if (seenWhole.has(batch.name)) {
          expect(sources.length, `${what} was whole after an earlier restart, lost after #${round}; ${context()}`).toBe(
            FEATURES_PER_BATCH,
          );
        }
        if (sources.length === 0) continue;
        whole++;
        seenWhole.add(batch.name);
        for (const source of sources) {
          const at = `${source.alt_id} of ${what}; ${context()}`;
          expect(source.geometry, `geometry of ${at}`).toEqual(batch.geometries.get(source.alt_id));
          expect(source.account_id, `account of ${at}`).toBe(CLIENT.account_id);
          expect([source.start_at, source.end_at], `times of ${at}`).toEqual([
            "2024-01-01T00:00:00.000Z",
            "2025-01-01T00:00:00.000Z",
          ]);
        }
        if (batch.ids) {
          const listedIds = sources.map((s) => s.id).sort();
          expect(listedIds, `ids of ${what} differ from its 201's; ${context()}`).toEqual([...batch.ids].sort());
        }
      }
      expect(listed.length, `sources listed vs whole batches; ${context()}`).toBe(whole * FEATURES_PER_BATCH);
    }

    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const acked = batches.filter((b) => b.outcome === "acked").length;
    const unknown = batches.filter((b) => b.outcome === "unknown");
    const unknownWhole = unknown.filter((b) => seenWhole.has(b.name)).length;
    process.stdout.write(
      `crash durability: ${seconds} s, ${batches.length} batches sent, ${acked} acked, ${unknown.length} cut short ` +
        `by a kill (${unknownWhole} of them committed whole); ${context()}\n`,
    );
  });
});
