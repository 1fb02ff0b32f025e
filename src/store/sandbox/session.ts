import RBush from "rbush";
import type { BoundingBox } from "../../geo/types.js";
import type { Change, SourceEvent } from "../../model/history.js";
import type { EventPage } from "../port.js";
import { packedPositions } from "./packed-geometry.js";
import { type StoredSource, toRecord } from "./stored-source.js";

/**
 * What the memory budget counts for one event of a session's history: the event object and its
 * slot. A deleted source's events stay until the session goes, so a create-and-delete loop still
 * fills the budget instead of growing without bound.
 */
export const EVENT_BYTES = 96;

/**
 * What it counts for a source's history entry, which outlives the source: its id string as the
 * map's key, the map's slot and the events' array. With EVENT_BYTES twice, 512 bytes for a
 * created-and-deleted source, where a loop of 50,000 of them grew the live heap by 433 bytes each
 * (measured in the process, after full collections; 192 were counted before, so such a loop could
 * hold 2.3 times the budget).
 */
const HISTORY_ENTRY_BYTES = 320;

/** What a created source's history adds, beyond the source: its entry and its `created` event. */
export const CREATED_HISTORY_BYTES = HISTORY_ENTRY_BYTES + EVENT_BYTES;

/**
 * An event of the sandbox's history (docs/api.md §14): the sandbox has no conflicts, so only
 * `created` and `deleted`. `source` is the created record while the source lives; a deleted
 * source's record is let go with it (the sandbox's memory is its budget), its events remain.
 */
interface SandboxEvent {
  type: "created" | "deleted";
  at: number;
  by: string;
  source: StoredSource | null;
}

/** A source's entry in its session's spatial index: its bounding box, and the source. */
export interface IndexedSource extends BoundingBox {
  readonly source: StoredSource;
}

/** The bytes every session of one store holds together, kept up to date by each session. */
export interface ByteTotal {
  bytes: number;
}

/**
 * What the memory budget counts for a session itself, whatever it holds: the Session object, its
 * two Maps' initial tables, the registry's entry and the account id (a key of up to 256 characters).
 */
export const SESSION_OVERHEAD_BYTES = 2048;

/** One account's sandbox sources. Map order is insertion order, which is usually created order. */
export class Session {
  readonly sources = new Map<string, StoredSource>();
  private readonly idByAltId = new Map<string, string>();
  /** The sources' boxes, so a spatial list reads the few near its area, not the whole session. */
  private readonly index = new RBush<IndexedSource>();
  private readonly entries = new Map<string, IndexedSource>();
  /** Every source's events, deleted sources' too, until the session goes. */
  private readonly events = new Map<string, SandboxEvent[]>();
  /** Geometry positions held: the per-session bound counts these, not only sources. */
  positions = 0;
  /** The budget's estimate of what this session holds (stored-source.ts), its own overhead included. */
  bytes = SESSION_OVERHEAD_BYTES;
  /**
   * Store calls for this session whose answers are still on their way out (store.ts `hold`): while
   * above zero the session is not idle, and is never evicted to make room for another.
   */
  inFlight = 0;

  constructor(
    public lastUsedAt: number,
    private readonly total: ByteTotal,
  ) {
    total.bytes += this.bytes;
  }

  get size(): number {
    return this.sources.size;
  }

  hasAltId(altId: string): boolean {
    return this.idByAltId.has(altId);
  }

  /** The sources whose bounding box meets `envelope` (edges included), each with its box. */
  near(envelope: BoundingBox): readonly IndexedSource[] {
    return this.index.search(envelope);
  }

  add(source: StoredSource, box: BoundingBox): void {
    this.sources.set(source.id, source);
    this.idByAltId.set(source.altId, source.id);
    const entry = { minX: box.minX, minY: box.minY, maxX: box.maxX, maxY: box.maxY, source };
    this.index.insert(entry);
    this.entries.set(source.id, entry);
    this.events.set(source.id, [{ type: "created", at: source.createdAt, by: source.createdBy, source }]);
    this.count(CREATED_HISTORY_BYTES);
    this.positions += packedPositions(source.packed);
    this.bytes += source.bytes;
    this.total.bytes += source.bytes;
  }

  delete(id: string, change: Change): boolean {
    const source = this.sources.get(id);
    if (source === undefined) return false;
    const events = this.events.get(id) ?? [];
    for (const event of events) event.source = null;
    // A new array of exactly its events: `push` would grow the one it has to 17 slots, kept for
    // as long as the session.
    this.events.set(id, [...events, { type: "deleted", at: change.at, by: change.by, source: null }]);
    this.count(EVENT_BYTES);
    this.sources.delete(id);
    this.idByAltId.delete(source.altId);
    const entry = this.entries.get(id);
    if (entry !== undefined) this.index.remove(entry);
    this.entries.delete(id);
    this.positions -= packedPositions(source.packed);
    this.bytes -= source.bytes;
    this.total.bytes -= source.bytes;
    return true;
  }

  deleteByAltId(altId: string, change: Change): boolean {
    const id = this.idByAltId.get(altId);
    return id !== undefined && this.delete(id, change);
  }

  /** A source's events (a page of them), also after it was deleted; null when the session never held it. */
  eventsOf(id: string, accountId: string, page?: EventPage): SourceEvent[] | null {
    const events = this.events.get(id);
    if (events === undefined) return null;
    const first = page?.afterSeq ?? 0;
    const shown = page === undefined ? events : events.slice(first, first + page.limit);
    return shown.map((event, i) => ({
      sourceId: id,
      accountId,
      seq: first + i + 1,
      type: event.type,
      at: event.at,
      by: event.by,
      ...(event.source === null ? {} : { record: toRecord(event.source) }),
    }));
  }

  hasEventsOf(id: string): boolean {
    return this.events.has(id);
  }

  private count(bytes: number): void {
    this.bytes += bytes;
    this.total.bytes += bytes;
  }

  /** Called once the registry has let go of the session: its bytes leave the total. */
  released(): void {
    this.total.bytes -= this.bytes;
  }
}
