import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { decodeFailureAsInvalid } from "./decode-errors.js";

export interface ErrorLogger {
  error(details: object, message: string): void;
}

/** What a client learns of a failure that is not a deliberate ConnectError: nothing but this. */
export function internalError(): ConnectError {
  return new ConnectError("internal error", Code.Internal);
}

/**
 * The outermost interceptor: whatever escapes a handler that is not a deliberate ConnectError
 * (a bug, a driver error) is logged here and leaves as a bare `internal`, so no protocol ever
 * carries a stack trace or a driver message to a client.
 */
export function createErrorShield(logger: ErrorLogger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      // A streaming method reads its request inside the chain, so Connect's failure to decode it
      // (`internal`, "parse binary: …") arrives here: the caller's fault, answered as a unary's is.
      const decodeFailure =
        error instanceof ConnectError
          ? decodeFailureAsInvalid({ code: error.code, message: error.rawMessage })
          : undefined;
      if (decodeFailure !== undefined) throw new ConnectError(decodeFailure.message, decodeFailure.code);
      if (error instanceof ConnectError && error.code === Code.Unavailable) {
        logger.error(
          { err: error.cause, procedure: `${req.service.typeName}/${req.method.name}` },
          "dependency unavailable",
        );
        throw error;
      }
      if (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) throw error;
      logger.error(
        { err: error, procedure: `${req.service.typeName}/${req.method.name}` },
        "unexpected error in handler",
      );
      throw internalError();
    }
  };
}
