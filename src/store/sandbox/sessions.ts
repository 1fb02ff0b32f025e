import { Session } from "./session.js";

/**
 * Sessions by account, each dropped once idle for longer than the TTL. Expiry is checked on every
 * access, so an expired session is never served, and by `sweep()`, so one nobody touches again
 * still releases its memory.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** The account's live session, its idle timer restarted; undefined when it has none. */
  use(accountId: string): Session | undefined {
    const now = this.now();
    const session = this.live(accountId, now);
    if (session !== undefined) session.lastUsedAt = now;
    return session;
  }

  /** The account's live session, created when missing; its idle timer restarted. */
  useOrCreate(accountId: string): Session {
    const existing = this.use(accountId);
    if (existing !== undefined) return existing;
    const created = new Session(this.now());
    this.sessions.set(accountId, created);
    return created;
  }

  /**
   * Every live session, WITHOUT restarting idle timers: an admin looking across accounts is not
   * the account's own activity, and would otherwise keep every sandbox alive forever.
   */
  all(): Session[] {
    this.sweep();
    return [...this.sessions.values()];
  }

  sweep(): void {
    const now = this.now();
    for (const [accountId, session] of this.sessions) {
      if (this.isExpired(session, now)) this.sessions.delete(accountId);
    }
  }

  clear(): void {
    this.sessions.clear();
  }

  private live(accountId: string, now: number): Session | undefined {
    const session = this.sessions.get(accountId);
    if (session === undefined || !this.isExpired(session, now)) return session;
    this.sessions.delete(accountId);
    return undefined;
  }

  private isExpired(session: Session, now: number): boolean {
    return now - session.lastUsedAt > this.ttlMs;
  }
}
