import { OverlayAllowance } from "./overlay-plan.js";
import type { SourceGeometry } from "./types.js";

/**
 * Overlay allowances (docs/api.md §8.5) for one purpose, keyed by the subject's geometry object,
 * which a record keeps however a store copies it: a store overlays a new source with each of its
 * candidates with the same subject, so those overlays are limited together, and `share` puts all
 * the sources of one create request under one allowance.
 */
export class OverlayAllowances {
  readonly #byGeometry = new WeakMap<SourceGeometry, OverlayAllowance>();

  /** One allowance for all of `geometries` (one create request's sources); other `limits` for tests. */
  share(geometries: readonly SourceGeometry[], limits?: ConstructorParameters<typeof OverlayAllowance>[0]): void {
    const allowance = new OverlayAllowance(limits);
    for (const geometry of geometries) this.#byGeometry.set(geometry, allowance);
  }

  /**
   * A fresh start for the allowances of `geometries`, each with its own limits and shared as
   * before: for a create run again after a rollback, which must not pay for the undone run's
   * overlays (spent twice, a request could be flagged for want of allowance the second time).
   */
  renew(geometries: readonly SourceGeometry[]): void {
    const renewed = new Map<OverlayAllowance, OverlayAllowance>();
    for (const geometry of geometries) {
      const spent = this.#byGeometry.get(geometry);
      if (spent === undefined) continue;
      let fresh = renewed.get(spent);
      if (fresh === undefined) {
        fresh = spent.renewed();
        renewed.set(spent, fresh);
      }
      this.#byGeometry.set(geometry, fresh);
    }
  }

  /** The allowance of a subject's overlays: its request's, or its own when none was shared. */
  of(geometry: SourceGeometry): OverlayAllowance {
    let allowance = this.#byGeometry.get(geometry);
    if (allowance === undefined) {
      allowance = new OverlayAllowance();
      this.#byGeometry.set(geometry, allowance);
    }
    return allowance;
  }
}

/**
 * The conflict checks' and the protected-area overlaps' allowances are apart, so that one
 * running out never decides the other: conflicts past theirs are flagged (an upper bound),
 * protected-area overlaps past theirs are sampled.
 */
export const conflictAllowances = new OverlayAllowances();
export const protectedAreaAllowances = new OverlayAllowances();

/**
 * One create request's sources share one allowance of each kind: a batch of intricate sources
 * must not multiply what one request may hold the event loop for.
 */
export function shareOverlayAllowances(geometries: readonly SourceGeometry[]): void {
  conflictAllowances.share(geometries);
  protectedAreaAllowances.share(geometries);
}
