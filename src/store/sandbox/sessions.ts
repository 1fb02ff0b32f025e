import { type ByteTotal, Session } from "./session.js";

/** What `evictionPlan` would drop to make room, or why it cannot. */
export type EvictionPlan = { accountIds: string[] } | { short: "sessions" | "bytes" };

/**
 * Sessions by account, least recently used first, each dropped once idle for longer than the TTL.
 * Expiry is checked on every access, so an expired session is never served, and by `sweep()`, so
 * one nobody touches again still releases its memory. The registry also keeps the byte total of
 * every session it holds (the sandbox's memory budget) and picks the sessions to evict when a
 * create needs room.
 */
export class SessionRegistry {
  /** Map order is use order: the first session is the least recently used one. */
  private readonly sessions = new Map<string, Session>();
  private readonly total: ByteTotal = { bytes: 0 };

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** The budget's estimate of everything the sessions hold (expired ones until they are dropped). */
  get bytes(): number {
    return this.total.bytes;
  }

  /** The account's live session, its idle timer restarted and moved to the most recently used end. */
  use(accountId: string): Session | undefined {
    const now = this.now();
    const session = this.live(accountId, now);
    if (session === undefined) return undefined;
    session.lastUsedAt = now;
    this.sessions.delete(accountId);
    this.sessions.set(accountId, session);
    return session;
  }

  /** The account's live session, created when missing; its idle timer restarted. */
  useOrCreate(accountId: string): Session {
    const existing = this.use(accountId);
    if (existing !== undefined) return existing;
    const created = new Session(this.now(), this.total);
    this.sessions.set(accountId, created);
    return created;
  }

  /** The account's live session without counting as its use (an admin's look across accounts). */
  peek(accountId: string): Session | undefined {
    return this.live(accountId, this.now());
  }

  /**
   * Every live session, WITHOUT restarting idle timers: an admin looking across accounts is not
   * the account's own activity, and would otherwise keep every sandbox alive forever.
   */
  all(): Session[] {
    this.sweep();
    return [...this.sessions.values()];
  }

  /** Every live session with its account, like `all`. */
  entries(): [string, Session][] {
    this.sweep();
    return [...this.sessions.entries()];
  }

  /**
   * The sessions to evict so that `bytes` more bytes and `sessions` more sessions fit: idle ones
   * only (no store call in flight, store.ts), least recently used first, never one of `keep` (the
   * accounts the create is for); an expired session is simply the least recently used. Nothing is
   * dropped here: when the idle sessions cannot free enough, the plan says which bound is short and
   * the caller refuses without having evicted anyone.
   */
  evictionPlan(bytes: number, sessions: number, keep: ReadonlySet<string>): EvictionPlan {
    const accountIds: string[] = [];
    let freedBytes = 0;
    for (const [accountId, session] of this.sessions) {
      if (freedBytes >= bytes && accountIds.length >= sessions) break;
      if (session.inFlight > 0 || keep.has(accountId)) continue;
      accountIds.push(accountId);
      freedBytes += session.bytes;
    }
    if (accountIds.length < sessions) return { short: "sessions" };
    if (freedBytes < bytes) return { short: "bytes" };
    return { accountIds };
  }

  /** Drops an account's session and everything in it. */
  drop(accountId: string): void {
    const session = this.sessions.get(accountId);
    if (session === undefined) return;
    this.sessions.delete(accountId);
    session.released();
  }

  sweep(): void {
    const now = this.now();
    for (const [accountId, session] of this.sessions) {
      if (this.isExpired(session, now)) this.drop(accountId);
    }
  }

  clear(): void {
    for (const accountId of [...this.sessions.keys()]) this.drop(accountId);
  }

  private live(accountId: string, now: number): Session | undefined {
    const session = this.sessions.get(accountId);
    if (session === undefined || !this.isExpired(session, now)) return session;
    this.drop(accountId);
    return undefined;
  }

  private isExpired(session: Session, now: number): boolean {
    return now - session.lastUsedAt > this.ttlMs;
  }
}
