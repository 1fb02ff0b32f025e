/**
 * A seeded property test of docs/api.md §8 and §14 on the embedded store with the production
 * conflict policy: hundreds of random creates (single and batched, several accounts, overlapping
 * rectangles and squares, random periods and attribute types) and deletes (by id and by alt_id, by
 * the owner and by an admin, some deleting nothing, some batches rejected), against a brute-force
 * model kept here. The model's pairs are every two live sources that conflict (§8.1), its measures
 * are computed independently (test/contract/measures.ts: the rectangle of the inner edges and
 * R²·Δλ·(sin φ₂ − sin φ₁), no overlay engine), its events follow §14.
 *
 * After every step: each live source's flag (get, by its account and by an admin, and an admin's
 * list), its conflicts (counterparts, measures to 1e-6 relative, detection times, oldest first) and
 * every source's history (seq 1..n, types, times, actors, records, counterparts, measures) match the
 * model; and, from the store's own answers and its file, the invariant "flag ⇔ at least one live
 * pair; every pair has conflict_set events on both sides (and no later conflict_cleared)". Every
 * few steps, `as_of` lists and gets at random past instants (event times, a millisecond before
 * one, anywhere between) match the model's ledger then.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import type { ConflictMeasure, Counterpart, SourceEvent, SourceEventType } from "../../src/model/history.js";
import type { NewSourceRecord, SourceRecord } from "../../src/model/records.js";
import { AltIdTakenError } from "../../src/store/port.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { listQuery, makeRecord, stored } from "../contract/fixtures.js";
import { type Claim, decide, measureDifferences, type Rect, rectGeometry } from "../contract/measures.js";
import { prng } from "../support/geometry-fixtures.js";

const SEED = 20261126;
/** Creates and deletes (each source of a batch counts once), not counting refused ones. */
const OPERATIONS = 600;
const RELATIVE = 1e-6;

const ACCOUNTS = ["acct_a", "acct_b", "acct_c", "acct_d"];
const ATTRIBUTE_TYPES = ["CARBON_REMOVAL", "BIODIVERSITY", "CI_SCORE", "WATER_QUALITY"];
const ADMIN = "admin-console";
const clientOf = (accountId: string) => `client-${accountId}`;

/** The window near 44° N the sources are drawn in, and the grid some of them snap to. */
const X0 = 20;
const Y0 = 44;
const SPAN = 0.6;
const STEP = 0.005;

interface ExpectedEvent {
  type: SourceEventType;
  at: number;
  by: string;
  record?: SourceRecord;
  counterpart?: Counterpart;
  measure?: ConflictMeasure;
}

interface ModelSource {
  record: NewSourceRecord;
  claim: Claim;
  live: boolean;
  deletedAt?: number;
  events: ExpectedEvent[];
}

interface ModelPair {
  /** The source whose create found the pair, and the stored one it found. */
  finder: string;
  found: string;
  detectedAt: number;
  /** When one side was deleted. */
  clearedAt?: number;
}

const pairKey = (x: string, y: string) => (x < y ? `${x}|${y}` : `${y}|${x}`);
const counterpartOf = (r: NewSourceRecord): Counterpart => ({ id: r.id, altId: r.altId, accountId: r.accountId });

/** The brute-force ledger: sources (live and deleted), their events, and the live pairs. */
class Model {
  readonly sources = new Map<string, ModelSource>();
  readonly pairs = new Map<string, ModelPair>();
  /** Every pair there ever was, for the ledger as it stood at an instant. */
  readonly everyPair: ModelPair[] = [];

  live(): ModelSource[] {
    return [...this.sources.values()].filter((s) => s.live);
  }

  /** §8.1 on the model's claims; throws on a pair near the threshold (the generator avoids those). */
  measure(of: ModelSource, other: ModelSource): ConflictMeasure | null {
    const decision = decide(of.claim, other.claim);
    if (decision.measure === null && decision.ambiguous) throw new Error("ambiguous pair reached the model");
    return decision.measure;
  }

  /** Whether `claim` is within rounding of the 1% threshold against any live source or `also`. */
  ambiguous(claim: Claim, also: readonly Claim[]): boolean {
    return [...this.live().map((s) => s.claim), ...also].some((other) => {
      const decision = decide(claim, other);
      return decision.measure === null && decision.ambiguous;
    });
  }

  pairsOf(id: string): ModelPair[] {
    return [...this.pairs.values()].filter((p) => p.finder === id || p.found === id);
  }

  flag(id: string): boolean {
    return this.pairsOf(id).length > 0;
  }

  /** A create request's sources, in order: each finds the live sources (earlier members included). */
  create(records: readonly NewSourceRecord[], claims: readonly Claim[]): void {
    records.forEach((record, i) => {
      const source: ModelSource = { record, claim: claims[i], live: true, events: [] };
      const found = this.live()
        .map((other) => ({ other, measure: this.measure(source, other) }))
        .filter((x) => x.measure !== null);
      const change = { at: record.createdAt, by: record.createdBy };
      source.events.push({
        type: "created",
        ...change,
        record: { ...stored(record), conflict: found.length > 0 },
      });
      for (const { other, measure } of found) {
        const pair = { finder: record.id, found: other.record.id, detectedAt: record.createdAt };
        this.pairs.set(pairKey(record.id, other.record.id), pair);
        this.everyPair.push(pair);
        source.events.push({
          type: "conflict_set",
          ...change,
          counterpart: counterpartOf(other.record),
          measure: measure as ConflictMeasure,
        });
        other.events.push({
          type: "conflict_set",
          ...change,
          counterpart: counterpartOf(record),
          measure: this.measure(other, source) as ConflictMeasure,
        });
      }
      this.sources.set(record.id, source);
    });
  }

  /**
   * The ledger as it stood at `asOf` (docs/api.md §14): the sources created by then and not
   * deleted by then, in list order, each as created with its flag as it was then.
   */
  asOf(asOf: number, accountId: string | null): SourceRecord[] {
    const flagged = new Set<string>();
    for (const pair of this.everyPair) {
      if (pair.detectedAt <= asOf && !(pair.clearedAt !== undefined && pair.clearedAt <= asOf)) {
        flagged.add(pair.finder);
        flagged.add(pair.found);
      }
    }
    return [...this.sources.values()]
      .filter(({ record, deletedAt }) => record.createdAt <= asOf && !(deletedAt !== undefined && deletedAt <= asOf))
      .filter(({ record }) => accountId === null || record.accountId === accountId)
      .map(({ record }) => ({ ...stored(record), conflict: flagged.has(record.id) }))
      .sort((x, y) => x.createdAt - y.createdAt || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  }

  /** Every time an event happened. */
  eventTimes(): number[] {
    return [...new Set([...this.sources.values()].flatMap((s) => s.events.map((e) => e.at)))];
  }

  delete(id: string, change: { at: number; by: string }): void {
    const source = this.sources.get(id) as ModelSource;
    source.live = false;
    source.deletedAt = change.at;
    source.events.push({ type: "deleted", ...change });
    for (const pair of this.pairsOf(id)) {
      const otherId = pair.finder === id ? pair.found : pair.finder;
      pair.clearedAt = change.at;
      this.pairs.delete(pairKey(pair.finder, pair.found));
      (this.sources.get(otherId) as ModelSource).events.push({
        type: "conflict_cleared",
        ...change,
        counterpart: counterpartOf(source.record),
      });
    }
  }
}

/**
 * The events of a create's own run of conflict_set (one per counterpart it found, all at its
 * created time) may come in any order; every other event has its own place. Sorts each such run by
 * counterpart id.
 */
function canonical<T extends { type: string; at: number; counterpart?: Counterpart }>(events: readonly T[]): T[] {
  const out: T[] = [];
  let run: T[] = [];
  const flush = () => {
    run.sort((x, y) => ((x.counterpart?.id ?? "") < (y.counterpart?.id ?? "") ? -1 : 1));
    out.push(...run);
    run = [];
  };
  for (const event of events) {
    if (event.type === "conflict_set" && run.length > 0 && run[0].at === event.at) run.push(event);
    else {
      flush();
      if (event.type === "conflict_set") run.push(event);
      else out.push(event);
    }
  }
  flush();
  return out;
}

function historyDifferences(id: string, actual: SourceEvent[] | null, source: ModelSource): string[] {
  if (actual === null) return [`${id}: history null`];
  const wrong: string[] = [];
  const seqs = actual.map((e) => e.seq);
  if (seqs.some((seq, i) => seq !== i + 1)) wrong.push(`${id}: seq ${seqs}`);
  if (actual.length !== source.events.length) {
    wrong.push(
      `${id}: ${actual.length} events [${actual.map((e) => e.type)}], model ${source.events.length} [${source.events.map((e) => e.type)}]`,
    );
    return wrong;
  }
  const got = canonical(actual);
  const want = canonical(source.events);
  got.forEach((event, i) => {
    const expected = want[i];
    const where = `${id} event ${event.seq} (${event.type})`;
    if (event.sourceId !== id || event.accountId !== source.record.accountId) wrong.push(`${where}: wrong source`);
    if (event.type !== expected.type || event.at !== expected.at || event.by !== expected.by) {
      wrong.push(
        `${where}: ${event.type}@${event.at} by ${event.by}, model ${expected.type}@${expected.at} by ${expected.by}`,
      );
      return;
    }
    if (!isDeepStrictEqual(event.counterpart, expected.counterpart)) {
      wrong.push(
        `${where}: counterpart ${JSON.stringify(event.counterpart)} ≠ ${JSON.stringify(expected.counterpart)}`,
      );
    }
    if (expected.measure === undefined) {
      if (event.measure !== undefined) wrong.push(`${where}: unexpected measure`);
    } else {
      for (const d of measureDifferences(event.measure, expected.measure, RELATIVE)) wrong.push(`${where}: ${d}`);
    }
    if (expected.record === undefined) {
      if (event.record !== undefined) wrong.push(`${where}: unexpected record`);
    } else if (!isDeepStrictEqual(event.record, expected.record)) {
      wrong.push(`${where}: record ${JSON.stringify(event.record)} ≠ ${JSON.stringify(expected.record)}`);
    }
  });
  return wrong;
}

/** The generator of random, well-separated-from-the-threshold requests. */
function generator(seed: number, model: Model) {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  let clock = Date.UTC(2024, 5, 1);
  let serial = 0;

  const continuous = (): Rect => {
    const w = 0.01 + random() * 0.06;
    const h = 0.01 + random() * 0.06;
    const minX = X0 + random() * (SPAN - w);
    const minY = Y0 + random() * (SPAN - h);
    return { minX, minY, maxX: minX + w, maxY: minY + h };
  };
  // On the grid, edges coincide exactly: touching and identical sources happen.
  const snapped = (): Rect => {
    const cells = Math.round(SPAN / STEP);
    const w = 2 + Math.floor(random() * 12);
    const h = random() < 0.5 ? w : 2 + Math.floor(random() * 12);
    const i = Math.floor(random() * (cells - w));
    const j = Math.floor(random() * (cells - h));
    return { minX: X0 + i * STEP, minY: Y0 + j * STEP, maxX: X0 + (i + w) * STEP, maxY: Y0 + (j + h) * STEP };
  };
  // Beside a live one, overlapping by a share of its width around the 1% rule (0 = touching).
  const beside = (other: Rect): Rect => {
    const width = other.maxX - other.minX;
    const minX = other.maxX - pick([0, 0.003, 0.009, 0.011, 0.03, 0.5]) * width;
    return { minX, minY: other.minY, maxX: minX + width * (0.5 + random()), maxY: other.maxY };
  };
  const inside = (other: Rect): Rect => {
    const w = (other.maxX - other.minX) * (0.2 + 0.6 * random());
    const h = (other.maxY - other.minY) * (0.2 + 0.6 * random());
    const minX = other.minX + random() * (other.maxX - other.minX - w);
    const minY = other.minY + random() * (other.maxY - other.minY - h);
    return { minX, minY, maxX: minX + w, maxY: minY + h };
  };

  const rect = (): Rect => {
    const live = model.live();
    const kind = random();
    if (live.length > 0 && kind < 0.15) return beside(pick(live).claim.rect);
    if (live.length > 0 && kind < 0.22) return { ...pick(live).claim.rect };
    if (live.length > 0 && kind < 0.3) return inside(pick(live).claim.rect);
    return kind < 0.6 ? snapped() : continuous();
  };

  const period = (): { startAt: number; endAt: number } => {
    const year = 2020 + Math.floor(random() * 5);
    const startAt = random() < 0.8 ? Date.UTC(year, 0, 1) : Date.UTC(year, Math.floor(random() * 12), 1);
    const endAt = Date.UTC(year + 1 + Math.floor(random() * 3), 0, 1) + (random() < 0.1 ? 1 : 0);
    return { startAt, endAt };
  };

  const attributeTypes = (): string[] => (random() < 0.3 ? [] : ATTRIBUTE_TYPES.filter(() => random() < 0.4));

  /** A new record of `accountId` and its claim, kept off the threshold against `batch` and the ledger. */
  const source = (
    accountId: string,
    batch: readonly Claim[],
    altId?: string,
  ): { record: NewSourceRecord; claim: Claim } => {
    for (;;) {
      const r = rect();
      const { startAt, endAt } = period();
      const attributeType = attributeTypes();
      const claim: Claim = { rect: r, startAt, endAt, attributeType };
      if (model.ambiguous(claim, batch)) continue;
      clock += 1_000;
      serial += 1;
      const record = makeRecord({
        id: `src_hm_${String(serial).padStart(5, "0")}`,
        accountId,
        altId: altId ?? `field-${serial}`,
        geometry: rectGeometry(r),
        startAt,
        endAt,
        attributeType,
        createdAt: clock,
        createdBy: random() < 0.1 ? ADMIN : clientOf(accountId),
      });
      return { record, claim };
    }
  };

  return {
    random,
    pick,
    source,
    /** The time of a delete: after everything so far. */
    tick: () => {
      clock += 1_000;
      return clock;
    },
    /** The latest time handed out. */
    now: () => clock,
  };
}

describe("history and conflict pairs against a brute-force model (seeded)", () => {
  let dir: string;
  let path: string;
  let store: SqliteSourceStore;
  let raw: ReturnType<typeof openConnection>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "source-ledger-history-model-"));
    path = join(dir, "ledger.sqlite");
    store = openSqliteStore({ path, conflictPolicy });
    raw = openConnection({ path, busyTimeoutMs: 1_000 });
  });

  afterAll(async () => {
    raw?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Everything the store says, held to the model and to the invariant; the differences found. */
  async function check(model: Model, refused: readonly string[]): Promise<string[]> {
    const wrong: string[] = [];
    const listed = new Map((await store.list(listQuery(null, { limit: 1000 }))).map((r) => [r.id, r]));
    const live = model.live();
    if (listed.size !== live.length) wrong.push(`admin list has ${listed.size} sources, model ${live.length}`);

    for (const [id, source] of model.sources) {
      const { accountId } = source.record;
      wrong.push(...historyDifferences(id, await store.history(id, accountId), source));
      if (!source.live) {
        if ((await store.get(id, null)) !== null) wrong.push(`${id}: deleted, yet get finds it`);
        if ((await store.conflictsOf(id, accountId)) !== null) wrong.push(`${id}: deleted, yet conflictsOf answers`);
        continue;
      }
      const flag = model.flag(id);
      const own = await store.get(id, accountId);
      if (own?.conflict !== flag) wrong.push(`${id}: flag ${own?.conflict}, model ${flag}`);
      if (listed.get(id)?.conflict !== flag)
        wrong.push(`${id}: listed flag ${listed.get(id)?.conflict}, model ${flag}`);

      const conflicts = await store.conflictsOf(id, accountId);
      if (conflicts === null) {
        wrong.push(`${id}: live, yet conflictsOf is null`);
        continue;
      }
      const expected = new Map(
        model.pairsOf(id).map((pair) => {
          const otherId = pair.finder === id ? pair.found : pair.finder;
          return [otherId, { pair, other: model.sources.get(otherId) as ModelSource }];
        }),
      );
      if (conflicts.length !== expected.size) {
        wrong.push(
          `${id}: ${conflicts.length} conflicts [${conflicts.map((c) => c.counterpart.id)}], model [${[...expected.keys()]}]`,
        );
      }
      conflicts.forEach((conflict, i) => {
        const want = expected.get(conflict.counterpart.id);
        if (want === undefined) {
          wrong.push(`${id}: conflict with ${conflict.counterpart.id} not in the model`);
          return;
        }
        if (!isDeepStrictEqual(conflict.counterpart, counterpartOf(want.other.record))) {
          wrong.push(`${id}: counterpart ${JSON.stringify(conflict.counterpart)}`);
        }
        if (conflict.detectedAt !== want.pair.detectedAt) {
          wrong.push(
            `${id}: pair with ${conflict.counterpart.id} detected ${conflict.detectedAt}, model ${want.pair.detectedAt}`,
          );
        }
        if (i > 0 && conflicts[i - 1].detectedAt > conflict.detectedAt) wrong.push(`${id}: conflicts not oldest first`);
        const measure = model.measure(source, want.other) as ConflictMeasure;
        for (const d of measureDifferences(conflict.measure, measure, RELATIVE)) {
          wrong.push(`${id} with ${conflict.counterpart.id}: ${d}`);
        }
      });
    }
    for (const id of refused) {
      if ((await store.history(id, null)) !== null) wrong.push(`${id}: a refused create left history`);
    }
    wrong.push(...(await invariantViolations()));
    return wrong;
  }

  /**
   * The invariant from the store's own answers, whatever the model says: flag ⇔ at least one live
   * pair; a pair is seen from both sides; each side's history has a conflict_set naming the other
   * with no conflict_cleared naming it after. And in the file: one row per pair, none with itself.
   */
  async function invariantViolations(): Promise<string[]> {
    const wrong: string[] = [];
    const live = await store.list(listQuery(null, { limit: 1000 }));
    const histories = new Map<string, SourceEvent[]>();
    const historyOf = async (id: string) => {
      let events = histories.get(id);
      if (events === undefined) {
        events = (await store.history(id, null)) ?? [];
        histories.set(id, events);
      }
      return events;
    };
    /** The last conflict event of `id` naming `other` is a conflict_set. */
    const setOn = async (id: string, other: string) => {
      const naming = (await historyOf(id)).filter((e) => e.counterpart?.id === other);
      return naming.at(-1)?.type === "conflict_set";
    };
    let sides = 0;
    for (const record of live) {
      const conflicts = (await store.conflictsOf(record.id, null)) ?? [];
      sides += conflicts.length;
      if (record.conflict !== conflicts.length > 0) {
        wrong.push(`invariant: ${record.id} flag ${record.conflict} with ${conflicts.length} pairs`);
      }
      for (const { counterpart } of conflicts) {
        const back = (await store.conflictsOf(counterpart.id, null)) ?? [];
        if (!back.some((c) => c.counterpart.id === record.id)) {
          wrong.push(`invariant: ${record.id}–${counterpart.id} not seen from ${counterpart.id}`);
        }
        if (!(await setOn(record.id, counterpart.id)) || !(await setOn(counterpart.id, record.id))) {
          wrong.push(`invariant: ${record.id}–${counterpart.id} lacks conflict_set on a side`);
        }
      }
    }
    const rows = raw.prepare("SELECT a_seq, b_seq FROM conflict_pairs").all() as { a_seq: number; b_seq: number }[];
    if (rows.length * 2 !== sides) wrong.push(`invariant: ${rows.length} pair rows, ${sides} pair sides`);
    const unordered = new Set(rows.map((r) => pairKey(String(r.a_seq), String(r.b_seq))));
    if (unordered.size !== rows.length) wrong.push("invariant: a pair stored twice");
    if (rows.some((r) => r.a_seq === r.b_seq)) wrong.push("invariant: a source paired with itself");
    return wrong;
  }

  /** `as_of` lists (an admin's, an account's) and gets at `instants` against the model's ledger then. */
  async function asOfDifferences(model: Model, instants: readonly number[], random: () => number): Promise<string[]> {
    const wrong: string[] = [];
    for (const asOf of instants) {
      for (const accountId of [null, ACCOUNTS[Math.floor(random() * ACCOUNTS.length)]]) {
        const got = await store.list(listQuery(accountId, { limit: 1000, asOf }));
        const want = model.asOf(asOf, accountId);
        const where = `as_of ${asOf} (${accountId ?? "admin"})`;
        if (got.map((r) => r.id).join() !== want.map((r) => r.id).join()) {
          wrong.push(`${where}: [${got.map((r) => r.id)}], model [${want.map((r) => r.id)}]`);
          continue;
        }
        got.forEach((record, i) => {
          if (!isDeepStrictEqual(record, want[i])) {
            wrong.push(`${where}: ${record.id} ${JSON.stringify(record)} ≠ ${JSON.stringify(want[i])}`);
          }
        });
      }
      const then = new Map(model.asOf(asOf, null).map((r) => [r.id, r]));
      const sources = [...model.sources.values()];
      for (let k = 0; k < 5 && sources.length > 0; k++) {
        const { record } = sources[Math.floor(random() * sources.length)];
        const want = then.get(record.id) ?? null;
        const got = await store.getAsOf(record.id, record.accountId, asOf);
        if (!isDeepStrictEqual(got, want)) {
          wrong.push(`getAsOf ${record.id} at ${asOf}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
        }
        const other = ACCOUNTS.find((a) => a !== record.accountId) as string;
        if ((await store.getAsOf(record.id, other, asOf)) !== null) wrong.push(`getAsOf ${record.id} in ${other}`);
      }
    }
    return wrong;
  }

  it(`${OPERATIONS} random creates and deletes: flags, conflicts, histories and the invariant after every step`, async () => {
    const model = new Model();
    const gen = generator(SEED, model);
    const { random, pick } = gen;
    const refused: string[] = [];
    const stats = {
      steps: 0,
      creates: 0,
      batches: 0,
      deletes: 0,
      noops: 0,
      rejected: 0,
      maxLive: 0,
      maxPairs: 0,
      asOfChecks: 0,
    };
    const counts = { conflict_set: 0, conflict_cleared: 0, flagsCleared: 0, crossAccount: 0, untyped: 0 };
    let operations = 0;

    while (operations < OPERATIONS) {
      stats.steps += 1;
      const live = model.live();
      const roll = random();
      let label: string;
      if (live.length === 0 || roll < 0.45) {
        // A create request: usually one source, sometimes a batch (members may conflict).
        const accountId = pick(ACCOUNTS);
        const size = random() < 0.7 ? 1 : 2 + Math.floor(random() * 4);
        const made: { record: NewSourceRecord; claim: Claim }[] = [];
        for (let i = 0; i < size; i++) {
          // Now and then an alt_id of a deleted source of the account, free again.
          const deleted = [...model.sources.values()].filter((s) => !s.live && s.record.accountId === accountId);
          const reuse = deleted.length > 0 && random() < 0.1 ? pick(deleted).record.altId : undefined;
          const free =
            reuse !== undefined &&
            !model.live().some((s) => s.record.accountId === accountId && s.record.altId === reuse) &&
            !made.some((m) => m.record.altId === reuse);
          made.push(
            gen.source(
              accountId,
              made.map((m) => m.claim),
              free ? reuse : undefined,
            ),
          );
        }
        const records = made.map((m) => m.record);
        const returned = await store.insertMany(records);
        model.create(
          records,
          made.map((m) => m.claim),
        );
        expect(returned.map((r) => r.id)).toEqual(records.map((r) => r.id));
        for (const [i, record] of records.entries()) {
          expect(returned[i], `step ${stats.steps}: returned record`).toStrictEqual({
            ...stored(record),
            conflict: model.flag(record.id),
          });
        }
        stats.creates += records.length;
        stats.batches += records.length > 1 ? 1 : 0;
        operations += records.length;
        label = `create ${records.map((r) => r.id)} (${records[0].accountId})`;
      } else if (roll < 0.92) {
        // A delete: by id or by alt_id, by the owner or an admin.
        const victim = pick(live).record;
        const byAdmin = random() < 0.3;
        const change = { at: gen.tick(), by: byAdmin ? ADMIN : clientOf(victim.accountId) };
        const flagged = new Map(
          model.pairsOf(victim.id).map((p) => [p.finder === victim.id ? p.found : p.finder, true]),
        );
        const deleted =
          random() < 0.5
            ? await store.deleteById(victim.id, byAdmin ? null : victim.accountId, change)
            : await store.deleteByAltId(victim.altId, victim.accountId, change);
        expect(deleted, `step ${stats.steps}: delete ${victim.id}`).toBe(true);
        model.delete(victim.id, change);
        for (const id of flagged.keys()) if (!model.flag(id)) counts.flagsCleared += 1;
        stats.deletes += 1;
        operations += 1;
        label = `delete ${victim.id} by ${change.by}`;
      } else if (roll < 0.96) {
        // A delete that deletes nothing: another account's source, or one already deleted.
        const victim = pick(live).record;
        const other = ACCOUNTS.find((a) => a !== victim.accountId) as string;
        const gone = [...model.sources.values()].find((s) => !s.live)?.record;
        const change = { at: gen.tick(), by: clientOf(other) };
        expect(await store.deleteById(victim.id, other, change)).toBe(false);
        expect(await store.deleteByAltId(victim.altId, other, change)).toBe(false);
        if (gone) expect(await store.deleteById(gone.id, null, change)).toBe(false);
        stats.noops += 1;
        label = `delete of ${victim.id} by ${other} (nothing)`;
      } else {
        // A batch refused for an alt_id its account already uses: nothing of it is stored.
        const victim = pick(live).record;
        const fresh = gen.source(victim.accountId, []);
        const clash = gen.source(victim.accountId, [fresh.claim], victim.altId);
        await expect(store.insertMany([fresh.record, clash.record])).rejects.toBeInstanceOf(AltIdTakenError);
        refused.push(fresh.record.id, clash.record.id);
        stats.rejected += 1;
        label = `refused batch reusing ${victim.altId}`;
      }

      stats.maxLive = Math.max(stats.maxLive, model.live().length);
      stats.maxPairs = Math.max(stats.maxPairs, model.pairs.size);
      const wrong = await check(model, refused);
      if (stats.steps % 5 === 0) {
        const times = model.eventTimes();
        const first = Math.min(...times);
        const instants = [0, 1, 2].map(() => {
          const exact = times[Math.floor(random() * times.length)];
          const kind = random();
          return kind < 0.4 ? exact : kind < 0.7 ? exact - 1 : first + Math.floor(random() * (gen.now() - first));
        });
        wrong.push(...(await asOfDifferences(model, instants, random)));
        stats.asOfChecks += instants.length;
      }
      // As text, so a failure shows what differs (the first 20 differences).
      expect(wrong.slice(0, 20).join("\n"), `step ${stats.steps}: ${label}`).toBe("");
    }

    for (const source of model.sources.values()) {
      for (const event of source.events) {
        if (event.type === "conflict_set") {
          counts.conflict_set += 1;
          if (event.counterpart?.accountId !== source.record.accountId) counts.crossAccount += 1;
          if (event.measure?.sharedAttributeTypes.length === 0) counts.untyped += 1;
        }
        if (event.type === "conflict_cleared") counts.conflict_cleared += 1;
      }
    }
    console.info(`history model: ${JSON.stringify(stats)} ${JSON.stringify(counts)}`);
    // The run must really exercise what it checks.
    expect(stats.creates + stats.deletes).toBeGreaterThanOrEqual(500);
    expect(stats.deletes).toBeGreaterThan(150);
    expect(stats.batches).toBeGreaterThan(20);
    expect(counts.conflict_set).toBeGreaterThan(300);
    expect(counts.conflict_cleared).toBeGreaterThan(100);
    expect(counts.flagsCleared).toBeGreaterThan(30);
    expect(counts.crossAccount).toBeGreaterThan(100);
    expect(counts.untyped).toBeGreaterThan(50);
    const flagged = model.live().filter((s) => model.flag(s.record.id)).length;
    expect(flagged).toBeGreaterThan(model.live().length * 0.2);
    expect(flagged).toBeLessThan(model.live().length * 0.9);
  }, 300_000);
});
