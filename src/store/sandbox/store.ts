import { randomBytes } from "node:crypto";
import { setImmediate } from "node:timers";
import { SANDBOX_DEFAULTS } from "../../config.js";
import type { Change, SourceConflict, SourceEvent } from "../../model/history.js";
import { AS_OF_PRODUCTION_ONLY, type ListQuery } from "../../model/list-query.js";
import type { NewSourceRecord, SourceRecord } from "../../model/records.js";
import { collectPage, cursorOfRecord } from "../page-collector.js";
import {
  altIdClash,
  altIdsByAccount,
  CapacityExceededError,
  changeAfter,
  type EventPage,
  lastCreatedAt,
  recordedAfter,
  type SourceStore,
  StoreUnavailableError,
} from "../port.js";
import { byCreatedThenId, matcher } from "../record-filter.js";
import { spatialFilterOf } from "../spatial-filter.js";
import { packedPositions, unpackGeometry } from "./packed-geometry.js";
import { CREATED_HISTORY_BYTES, SESSION_OVERHEAD_BYTES, type Session } from "./session.js";
import { SessionRegistry } from "./sessions.js";
import { type StoredSource, toRecord, toStoredSource } from "./stored-source.js";

export interface SandboxStoreOptions {
  /** Idle time after which a session's sources are dropped. */
  ttlMs: number;
  /** Sources one session may hold. */
  maxPerSession?: number;
  /** Geometry positions one session may hold: bounds its memory whatever the sources' sizes. */
  maxPositionsPerSession?: number;
  /**
   * The memory budget of all sessions together, in bytes, as the store estimates what it holds
   * (stored-source.ts): past it, idle sessions are evicted, least recently used first.
   */
  maxBytes?: number;
  /** Sessions held at once, whoever opened them; past it, idle sessions are evicted likewise. */
  maxSessions?: number;
  /** Clock, injectable for tests. */
  now?: () => number;
  /** How often expired sessions are released; defaults to the TTL, at most a minute. */
  sweepIntervalMs?: number;
}

/** The ledger refuses as_of in the sandbox before any store call; reaching the store with one is a bug. */
const NO_PAST = `as_of reached the sandbox store: ${AS_OF_PRODUCTION_ONLY}`;

const DEFAULT_MAX_PER_SESSION = 10_000;
// 10,000 field-sized sources of 100 positions fit; 10,000 sources of 100,000 positions (tens of
// GB) do not.
const DEFAULT_MAX_POSITIONS_PER_SESSION = 2_000_000;
export const DEFAULT_MAX_BYTES = SANDBOX_DEFAULTS.maxMb * 1024 * 1024;
export const DEFAULT_MAX_SESSIONS = SANDBOX_DEFAULTS.maxSessions;
const MAX_SWEEP_INTERVAL_MS = 60_000;
/**
 * The Retry-After of a create refused because every session holding the budget is busy: a session
 * is in flight for one turn of the event loop (see `hold`), so room is usually free again at once;
 * one second is the smallest value the header can say.
 */
export const RETRY_AFTER_S = 1;

/** What storing `sources` adds to a session: each source and its history (session.ts). */
const bytesOf = (sources: readonly StoredSource[]): number =>
  sources.reduce((n, source) => n + source.bytes + CREATED_HISTORY_BYTES, 0);

function groupByAccount<T extends { accountId: string }>(items: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(item.accountId);
    if (group === undefined) groups.set(item.accountId, [item]);
    else group.push(item);
  }
  return groups;
}

/**
 * The sandbox's in-memory store: one session per account, dropped after the TTL, all of them
 * within one memory budget and one session count. Geometry is held packed (packed-geometry.ts).
 *
 * In flight and idle: every store call holds the sessions it reads or writes until the event loop's
 * next turn (`setImmediate`), by when the call's answer has been built and handed to the transport;
 * a session with no call held is idle. Only idle sessions are evicted to make room, least recently
 * used first; when they cannot free enough, the create is refused with a retry hint.
 */
export class SandboxSourceStore implements SourceStore {
  private readonly sessions: SessionRegistry;
  private readonly maxPerSession: number;
  private readonly maxPositionsPerSession: number;
  private readonly maxBytes: number;
  private readonly maxSessions: number;
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Sessions held by this turn's store calls, released together at the next turn. */
  private readonly held: Session[] = [];
  private evictions = 0;
  /**
   * The instant of the last change: no change is recorded before it (a request that came in
   * earlier takes it), as in every store (docs/api.md §14), so times follow the order of changes.
   */
  private lastChangeAt = Number.NEGATIVE_INFINITY;
  /** Like the sandbox's data, it lives as long as the process. */
  private readonly secret = new Uint8Array(randomBytes(32));

  constructor(options: SandboxStoreOptions) {
    if (!(options.ttlMs > 0)) throw new RangeError(`ttlMs must be positive, got ${options.ttlMs}`);
    const now = options.now ?? (() => Date.now());
    this.sessions = new SessionRegistry(options.ttlMs, now);
    this.maxPerSession = options.maxPerSession ?? DEFAULT_MAX_PER_SESSION;
    this.maxPositionsPerSession = options.maxPositionsPerSession ?? DEFAULT_MAX_POSITIONS_PER_SESSION;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
    if (!(this.maxBytes > 0)) throw new RangeError(`maxBytes must be positive, got ${this.maxBytes}`);
    if (!(this.maxSessions >= 1)) throw new RangeError(`maxSessions must be at least 1, got ${this.maxSessions}`);
    const interval = options.sweepIntervalMs ?? Math.min(options.ttlMs, MAX_SWEEP_INTERVAL_MS);
    this.sweepTimer = setInterval(() => this.sessions.sweep(), interval);
    // The sweep only frees memory; it must not keep the process alive on shutdown.
    this.sweepTimer.unref();
  }

  /** Sessions in memory (an expired one counts until swept or touched), for tests and metrics. */
  sessionCount(): number {
    return this.sessions.size;
  }

  /** Sessions evicted so far to make room (not those dropped after their TTL), for metrics. */
  evictionCount(): number {
    return this.evictions;
  }

  /** The budget's estimate of the bytes all sessions hold, for tests and metrics. */
  bytesUsed(): number {
    return this.sessions.bytes;
  }

  async insertMany(requested: NewSourceRecord[]): Promise<SourceRecord[]> {
    this.assertOpen("insert");
    const records = recordedAfter(requested, this.lastChangeAt);
    const stored = records.map(toStoredSource);
    const byAccount = groupByAccount(stored);
    // Every check before any write, so a rejected batch leaves every session as it was.
    for (const [accountId, group] of groupByAccount(records)) {
      this.assertInsertable(accountId, group, byAccount.get(accountId) ?? []);
    }
    this.makeRoom(byAccount);
    const boxes = new Map(records.map((record) => [record.id, record.bbox]));
    for (const [accountId, group] of byAccount) {
      const session = this.sessions.useOrCreate(accountId);
      for (const source of group) session.add(source, boxes.get(source.id) as NewSourceRecord["bbox"]);
      this.hold(session);
    }
    this.lastChangeAt = lastCreatedAt(records, this.lastChangeAt);
    return stored.map(toRecord);
  }

  async list(query: ListQuery): Promise<SourceRecord[]> {
    this.assertOpen("list");
    if (query.asOf !== undefined) throw new Error(NO_PAST);
    const spatial = spatialFilterOf(query);
    const matches = matcher(query);
    const found: StoredSource[] = [];
    // Sources whose box lies within every area: matches without their geometry unpacked or tested.
    const covered = new Set<StoredSource>();
    for (const session of this.sessionsFor(query.accountId)) {
      if (spatial === null) {
        for (const source of session.sources.values()) if (matches(source)) found.push(source);
        continue;
      }
      for (const entry of session.near(spatial.envelope)) {
        if (!matches(entry.source)) continue;
        found.push(entry.source);
        if (spatial.covers(entry)) covered.add(entry.source);
      }
    }
    found.sort(byCreatedThenId);
    // The exact geometry is unpacked and tested only until the page is full.
    const exact = (source: StoredSource) =>
      spatial === null || covered.has(source) || spatial.matches(unpackGeometry(source.packed));
    const shown = collectPage(
      found,
      (source) => (exact(source) ? source : null),
      query,
      () => 0,
      cursorOfRecord,
    );
    // Across accounts (an admin), only the sessions the answer comes from are read.
    if (query.accountId === null) this.holdAccountsOf(shown);
    return shown.map(toRecord);
  }

  async ledgerSecret(): Promise<Uint8Array> {
    this.assertOpen("secret");
    // A copy: a caller that writes into it must not change the key of later calls.
    return new Uint8Array(this.secret);
  }

  /** The ledger refuses as_of in the sandbox (docs/api.md §14): reaching here is a wiring bug. */
  async getAsOf(): Promise<SourceRecord | null> {
    throw new Error(NO_PAST);
  }

  async get(id: string, accountId: string | null): Promise<SourceRecord | null> {
    this.assertOpen("get");
    const source = this.sessionHolding(id, accountId)?.sources.get(id);
    return source === undefined ? null : toRecord(source);
  }

  async deleteById(id: string, accountId: string | null, change: Change): Promise<boolean> {
    this.assertOpen("delete");
    return this.recordDelete(change, (recorded) => this.sessionHolding(id, accountId)?.delete(id, recorded) ?? false);
  }

  async deleteByAltId(altId: string, accountId: string, change: Change): Promise<boolean> {
    this.assertOpen("delete");
    return this.recordDelete(
      change,
      (recorded) => this.sessionsFor(accountId)[0]?.deleteByAltId(altId, recorded) ?? false,
    );
  }

  /** A delete recorded no earlier than the last change; when it deleted something, it is the last change. */
  private recordDelete(change: Change, remove: (recorded: Change) => boolean): boolean {
    const recorded = changeAfter(change, this.lastChangeAt);
    const deleted = remove(recorded);
    if (deleted) this.lastChangeAt = recorded.at;
    return deleted;
  }

  async history(id: string, accountId: string | null, page?: EventPage): Promise<SourceEvent[] | null> {
    this.assertOpen("history");
    for (const [owner, session] of this.sessionsWithAccounts(accountId)) {
      const events = session.eventsOf(id, owner, page);
      if (events !== null) return events;
    }
    return null;
  }

  /** The sandbox finds no conflicts (docs/api.md §7): a live source's list is always empty. */
  async conflictsOf(id: string, accountId: string | null): Promise<SourceConflict[] | null> {
    this.assertOpen("conflicts");
    return this.sessionHolding(id, accountId) === undefined ? null : [];
  }

  async ping(): Promise<void> {
    this.assertOpen("ping");
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    this.sessions.clear();
  }

  /**
   * The bounds of the account's own session (sources, positions, and the whole budget's bytes),
   * then its alt_ids: retrying cannot lift any of these, and none evicts anything.
   */
  private assertInsertable(
    accountId: string,
    records: readonly NewSourceRecord[],
    group: readonly StoredSource[],
  ): void {
    const session = this.sessions.use(accountId);
    if ((session?.size ?? 0) + group.length > this.maxPerSession) {
      throw new CapacityExceededError(this.maxPerSession);
    }
    const positions = group.reduce((n, source) => n + packedPositions(source.packed), session?.positions ?? 0);
    if (positions > this.maxPositionsPerSession) {
      throw new CapacityExceededError(this.maxPositionsPerSession, "positions");
    }
    if ((session?.bytes ?? SESSION_OVERHEAD_BYTES) + bytesOf(group) > this.maxBytes) {
      throw new CapacityExceededError(this.maxBytes, "bytes");
    }
    const batch = altIdsByAccount(records).get(accountId);
    if (batch === undefined) return;
    const clash = altIdClash(
      accountId,
      batch,
      batch.altIds.filter((altId) => session?.hasAltId(altId)),
    );
    if (clash) throw clash;
  }

  /**
   * Checked last, once the batch is known to be storable otherwise (a create refused for another
   * reason evicts nobody): idle sessions are evicted until the batch fits the budget and the
   * session count, or, when the idle ones cannot free enough, nothing is evicted and the create
   * is refused with a retry hint.
   */
  private makeRoom(byAccount: ReadonlyMap<string, readonly StoredSource[]>): void {
    let bytes = 0;
    let opened = 0;
    for (const [accountId, group] of byAccount) {
      const isNew = this.sessions.peek(accountId) === undefined;
      bytes += bytesOf(group) + (isNew ? SESSION_OVERHEAD_BYTES : 0);
      if (isNew) opened += 1;
    }
    const overBytes = this.sessions.bytes + bytes - this.maxBytes;
    const overSessions = this.sessions.size + opened - this.maxSessions;
    if (overBytes <= 0 && overSessions <= 0) return;
    const plan = this.sessions.evictionPlan(overBytes, overSessions, new Set(byAccount.keys()));
    if ("short" in plan) {
      const limit = plan.short === "sessions" ? this.maxSessions : this.maxBytes;
      throw new CapacityExceededError(limit, plan.short, RETRY_AFTER_S);
    }
    for (const accountId of plan.accountIds) this.sessions.drop(accountId);
    this.evictions += plan.accountIds.length;
  }

  /**
   * Marks `session` in flight until the next turn of the event loop: the answer of the call that
   * read or wrote it is built and handed to the transport within this turn (the adapters render
   * synchronously once the store's promise settles), so the session is not evicted under it.
   */
  private hold(session: Session): void {
    session.inFlight += 1;
    this.held.push(session);
    if (this.held.length === 1) setImmediate(this.release);
  }

  private readonly release = (): void => {
    for (const session of this.held) session.inFlight -= 1;
    this.held.length = 0;
  };

  /** Holds the sessions the sources of an admin's answer come from. */
  private holdAccountsOf(sources: readonly StoredSource[]): void {
    for (const accountId of new Set(sources.map((source) => source.accountId))) {
      const session = this.sessions.peek(accountId);
      if (session !== undefined) this.hold(session);
    }
  }

  /**
   * The account's session (used: its idle timer restarts, and it is held in flight), or for an
   * admin (null) every live session, neither used nor held: the caller holds the ones it reads.
   */
  private sessionsFor(accountId: string | null): Session[] {
    if (accountId === null) return this.sessions.all();
    const session = this.sessions.use(accountId);
    if (session === undefined) return [];
    this.hold(session);
    return [session];
  }

  /** The sessions of the scope with their accounts, like sessionsFor. */
  private sessionsWithAccounts(accountId: string | null): [string, Session][] {
    if (accountId !== null) return this.sessionsFor(accountId).map((session) => [accountId, session]);
    return this.sessions.entries();
  }

  /** The session holding `id` within the scope, held in flight. */
  private sessionHolding(id: string, accountId: string | null): Session | undefined {
    const holding = this.sessionsFor(accountId).find((s) => s.sources.has(id));
    if (holding !== undefined && accountId === null) this.hold(holding);
    return holding;
  }

  /** The sweep timer lives exactly as long as the store is open. */
  private assertOpen(action: string): void {
    if (this.sweepTimer === undefined) throw new StoreUnavailableError(`sandbox ${action} failed: store is closed`);
  }
}

export function createSandboxStore(options: SandboxStoreOptions): SandboxSourceStore {
  return new SandboxSourceStore(options);
}
