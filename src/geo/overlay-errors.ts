export interface OverlayAttempt {
  engine: string;
  error: unknown;
}

export type OverlayOperation = "intersection" | "union";

/** Every engine threw; `attempts` holds each engine's error, in the order they were tried. */
export class OverlayFailedError extends Error {
  override readonly name: string = "OverlayFailedError";

  constructor(
    readonly operation: OverlayOperation,
    readonly attempts: OverlayAttempt[],
    message?: string,
  ) {
    const reasons = attempts.map(
      ({ engine, error }) => `${engine}: ${error instanceof Error ? error.message : String(error)}`,
    );
    super(
      message ?? `polygon ${operation} failed in every overlay engine (${reasons.join("; ") || "no engines given"})`,
    );
  }
}

/**
 * No engine was tried: the inputs would hold the event loop for seconds (overlay-plan.ts). Callers
 * treat it as every engine failing, which each of them already survives.
 */
export class OverlayTooIntricateError extends OverlayFailedError {
  override readonly name: string = "OverlayTooIntricateError";

  constructor(operation: OverlayOperation, reason: string) {
    super(operation, [], `polygon ${operation} not attempted: ${reason}`);
  }
}
