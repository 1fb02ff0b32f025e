import { countPositions } from "../../geo/parts.js";
import type { ListQuery } from "../../model/list-query.js";
import type { NewSourceRecord, SourceRecord } from "../../model/records.js";
import {
  altIdClash,
  altIdsByAccount,
  CapacityExceededError,
  type SourceStore,
  StoreUnavailableError,
} from "../port.js";
import { byCreatedThenId, matcher, page } from "./query.js";
import type { Session } from "./session.js";
import { SessionRegistry } from "./sessions.js";

export interface SandboxStoreOptions {
  /** Idle time after which a session's sources are dropped. */
  ttlMs: number;
  /** Sources one session may hold. */
  maxPerSession?: number;
  /** Geometry positions one session may hold: bounds its memory whatever the sources' sizes. */
  maxPositionsPerSession?: number;
  /** Clock, injectable for tests. */
  now?: () => number;
  /** How often expired sessions are released; defaults to the TTL, at most a minute. */
  sweepIntervalMs?: number;
}

const DEFAULT_MAX_PER_SESSION = 10_000;
// 10,000 field-sized sources of 100 positions fit; 10,000 sources of 100,000 positions (tens of
// GB) do not.
const DEFAULT_MAX_POSITIONS_PER_SESSION = 2_000_000;
const MAX_SWEEP_INTERVAL_MS = 60_000;

function toStored({ bbox: _bbox, areaM2: _areaM2, ...record }: NewSourceRecord): SourceRecord {
  // A copy, so neither the caller's later edits nor a reader's change the stored source.
  return structuredClone(record);
}

function groupByAccount(records: readonly NewSourceRecord[]): Map<string, NewSourceRecord[]> {
  const groups = new Map<string, NewSourceRecord[]>();
  for (const record of records) {
    const group = groups.get(record.accountId);
    if (group === undefined) groups.set(record.accountId, [record]);
    else group.push(record);
  }
  return groups;
}

/** The sandbox's in-memory store: one session per account, dropped after the TTL. */
export class SandboxSourceStore implements SourceStore {
  private readonly sessions: SessionRegistry;
  private readonly maxPerSession: number;
  private readonly maxPositionsPerSession: number;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(options: SandboxStoreOptions) {
    if (!(options.ttlMs > 0)) throw new RangeError(`ttlMs must be positive, got ${options.ttlMs}`);
    const now = options.now ?? (() => Date.now());
    this.sessions = new SessionRegistry(options.ttlMs, now);
    this.maxPerSession = options.maxPerSession ?? DEFAULT_MAX_PER_SESSION;
    this.maxPositionsPerSession = options.maxPositionsPerSession ?? DEFAULT_MAX_POSITIONS_PER_SESSION;
    const interval = options.sweepIntervalMs ?? Math.min(options.ttlMs, MAX_SWEEP_INTERVAL_MS);
    this.sweepTimer = setInterval(() => this.sessions.sweep(), interval);
    // The sweep only frees memory; it must not keep the process alive on shutdown.
    this.sweepTimer.unref();
  }

  /** Sessions held in memory (an expired one counts until swept or touched), for tests and metrics. */
  sessionCount(): number {
    return this.sessions.size;
  }

  async insertMany(records: NewSourceRecord[]): Promise<SourceRecord[]> {
    this.assertOpen("insert");
    const groups = groupByAccount(records);
    // Every check before any write, so a rejected batch leaves every session as it was.
    for (const [accountId, group] of groups) this.assertInsertable(accountId, group);
    for (const [accountId, group] of groups) {
      const session = this.sessions.useOrCreate(accountId);
      for (const record of group) session.add(toStored(record));
    }
    return records.map(toStored);
  }

  async list(query: ListQuery): Promise<SourceRecord[]> {
    this.assertOpen("list");
    const matches = matcher(query);
    const found = this.sessionsFor(query.accountId).flatMap((s) => [...s.records.values()].filter(matches));
    return page(found.sort(byCreatedThenId), query).map((r) => structuredClone(r));
  }

  async get(id: string, accountId: string | null): Promise<SourceRecord | null> {
    this.assertOpen("get");
    const record = this.sessionHolding(id, accountId)?.records.get(id);
    return record === undefined ? null : structuredClone(record);
  }

  async deleteById(id: string, accountId: string | null): Promise<boolean> {
    this.assertOpen("delete");
    return this.sessionHolding(id, accountId)?.delete(id) ?? false;
  }

  async deleteByAltId(altId: string, accountId: string): Promise<boolean> {
    this.assertOpen("delete");
    return this.sessions.use(accountId)?.deleteByAltId(altId) ?? false;
  }

  async ping(): Promise<void> {
    this.assertOpen("ping");
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    this.sessions.clear();
  }

  private assertInsertable(accountId: string, group: readonly NewSourceRecord[]): void {
    const session = this.sessions.use(accountId);
    if ((session?.size ?? 0) + group.length > this.maxPerSession) {
      throw new CapacityExceededError(this.maxPerSession);
    }
    const positions = group.reduce((n, record) => n + countPositions(record.geometry), session?.positions ?? 0);
    if (positions > this.maxPositionsPerSession) {
      throw new CapacityExceededError(this.maxPositionsPerSession, "positions");
    }
    const batch = altIdsByAccount(group).get(accountId);
    if (batch === undefined) return;
    const clash = altIdClash(
      accountId,
      batch,
      batch.altIds.filter((altId) => session?.hasAltId(altId)),
    );
    if (clash) throw clash;
  }

  private sessionsFor(accountId: string | null): Session[] {
    if (accountId === null) return this.sessions.all();
    const session = this.sessions.use(accountId);
    return session === undefined ? [] : [session];
  }

  private sessionHolding(id: string, accountId: string | null): Session | undefined {
    return this.sessionsFor(accountId).find((s) => s.records.has(id));
  }

  /** The sweep timer lives exactly as long as the store is open. */
  private assertOpen(action: string): void {
    if (this.sweepTimer === undefined) throw new StoreUnavailableError(`sandbox ${action} failed: store is closed`);
  }
}

export function createSandboxStore(options: SandboxStoreOptions): SandboxSourceStore {
  return new SandboxSourceStore(options);
}
