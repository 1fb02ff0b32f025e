import { countPositions } from "../geo/parts.js";
import type { SourceGeometry } from "../geo/types.js";
import type { ListCursor } from "./list-query.js";

/**
 * The candidate geometry one read of a spatial list may test (docs/api.md §13), in positions: two of
 * the largest sources, about what one gRPC answer carries, ~0.1 s of reading and testing on the
 * embedded store here (docs/benchmarks.md). An index narrows a search to the candidates whose box
 * meets the area, but a box can meet an area the geometry never reaches (sources inside a hole of
 * the area, an area winding between them), and each such candidate is read whole to find that
 * out. Without a bound, one page over an account of large sources read all of them in one turn
 * of the event loop: seconds.
 */
export const EXACT_TEST_POSITIONS = 200_000;

/**
 * What a test costs besides its positions, in positions: reading the candidate's row or document,
 * building its record and preparing its geometry take ~10 µs whatever its size, as much as ~25
 * positions (docs/benchmarks.md). Without it, an area over tens of thousands of tiny sources it
 * misses tested 50,000 of them in one read (~0.6 s).
 */
export const POSITIONS_PER_TEST = 32;

/**
 * How many reads one page makes at most while it finds no record (docs/api.md §13): ~1 s, 2,000,000
 * positions tested. Past it the page is answered empty, with a token that goes on from there, so
 * one request cannot make the service read a whole account of large sources that all miss.
 */
export const READ_ON_TURNS = 10;

/** Where a read that stopped early goes on: after this candidate, in list order, `skip` matches of its offset still to skip. */
export interface ResumePoint extends ListCursor {
  skip: number;
}

/** Where the read that goes on from `point` starts: after its candidate, skipping its matches still to skip. */
export function resumingAt(point: ResumePoint): { after: ListCursor; offset: number } {
  return { after: { createdAt: point.createdAt, id: point.id }, offset: point.skip };
}

/**
 * One read's exact tests so far (ListQuery.exactTests): each test spends the positions of the
 * geometry it reads, and a store that finds the allowance spent with its page not full and another
 * candidate to read stops, records where reading goes on (`stopAt`), and returns the records it has.
 */
export class ExactTestAllowance {
  #left: number;
  #stoppedAt: ResumePoint | undefined;

  constructor(positions: number = EXACT_TEST_POSITIONS) {
    this.#left = positions;
  }

  /** Before an exact test of `geometry`: what reading and testing it costs. */
  spendOn(geometry: SourceGeometry): void {
    this.#left -= countPositions(geometry) + POSITIONS_PER_TEST;
  }

  /**
   * Each candidate an `as_of` list reads, tested or not: its created event, its record built, its
   * plain filters checked in code (the events have no index per filter). Without it, an `as_of`
   * list whose filter matches nothing read a whole account in one turn (~1.8 s for 87,500 sources,
   * docs/benchmarks.md).
   */
  spendOnRead(): void {
    this.#left -= POSITIONS_PER_TEST;
  }

  /**
   * The created events an `as_of` query may pass over without returning them (its window: sources
   * deleted by the instant, boxes missing the area), one position each: SQLite spends ~0.5–0.9 µs
   * on one (more when its box is looked up), about what a position tested costs. Without it, an
   * `as_of` list over an account whose sources were mostly deleted by then read them all in one
   * turn (~0.4 µs each, docs/benchmarks.md).
   */
  spendOnPassedOver(events: number): void {
    this.#left -= events;
  }

  get exhausted(): boolean {
    return this.#left <= 0;
  }

  /**
   * Whether a read stops before its next candidate, which is there to read: once the allowance is
   * spent, if a candidate was tested (a listing the allowance ends with is not stopped, and a read
   * always tests its first). Then it records where reading goes on: after `tested`, with `skip`
   * matches of the offset still to skip. The one stop rule of every store's page.
   */
  stopsBefore<C>(tested: C | null, cursorOf: (candidate: C) => ListCursor, skip: number): boolean {
    if (tested === null || !this.exhausted) return false;
    const cursor = cursorOf(tested);
    this.#stoppedAt = { createdAt: cursor.createdAt, id: cursor.id, skip };
    return true;
  }

  /** Where reading goes on when this read stopped early; undefined when it did not. */
  get stoppedAt(): ResumePoint | undefined {
    return this.#stoppedAt;
  }
}
