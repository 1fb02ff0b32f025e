import { countPositions } from "../geo/parts.js";
import type { SourceGeometry } from "../geo/types.js";
import type { ListCursor } from "./list-query.js";

/**
 * The candidate geometry one page's exact tests may read (docs/api.md §13), in positions: two of
 * the largest sources, about what one gRPC answer carries, ~0.1 s of reading and testing on the
 * embedded store here (docs/benchmarks.md). An index narrows a search to the candidates whose box
 * meets the area, but a box can meet an area the geometry never reaches (sources inside a hole of
 * the area, an area winding between them), and each such candidate is read whole to find that
 * out. Without a bound, one page over an account of large sources read all of them: seconds on
 * the event loop.
 */
export const EXACT_TEST_POSITIONS = 200_000;

/** Where a page that stopped early resumes: after this candidate, in list order, `skip` matches of its offset still to skip. */
export interface ResumePoint extends ListCursor {
  skip: number;
}

/**
 * One page's exact tests so far (ListQuery.exactTests): each test spends the positions of the
 * geometry it reads, and a store that finds the allowance spent before its page is full stops
 * there, records where the next page resumes (`stopAt`), and returns the records it has.
 */
export class ExactTestAllowance {
  #left: number;
  #stoppedAt: ResumePoint | undefined;

  constructor(positions: number = EXACT_TEST_POSITIONS) {
    this.#left = positions;
  }

  /** Before an exact test of `geometry`: what reading it costs. */
  spendOn(geometry: SourceGeometry): void {
    this.#left -= countPositions(geometry);
  }

  get exhausted(): boolean {
    return this.#left <= 0;
  }

  /** The page stopped after the candidate at `cursor`, with `skip` matches of its offset still to skip. */
  stopAt(cursor: ListCursor, skip: number): void {
    this.#stoppedAt = { createdAt: cursor.createdAt, id: cursor.id, skip };
  }

  /** Where the next page starts when this one stopped early; undefined when it did not. */
  get stoppedAt(): ResumePoint | undefined {
    return this.#stoppedAt;
  }
}
