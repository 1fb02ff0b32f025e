import {
  type Db,
  MongoBulkWriteError,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
} from "mongodb";
import { StoreUnavailableError } from "../port.js";
import { ALT_ID_INDEX } from "./queries.js";

/** The message of the error a standalone server earns: transactions (and so the store) need a replica set. */
export const REPLICA_SET_REQUIRED =
  "MongoDB is a standalone server, but the store needs a replica set (or a sharded cluster) for transactions: " +
  "start mongod with --replSet <name> and run rs.initiate() once (a single-node replica set is enough)";

/** MONGODB_URI could not be parsed; raised by openMongoStore, turned into a configuration error by store/open.ts. */
export class InvalidMongoUriError extends Error {
  override name = "InvalidMongoUriError";
}

/**
 * Server error codes that mean "MongoDB cannot serve this right now" (elections, shutdowns,
 * timeouts, exhausted write-conflict retries, credentials or privileges an operator must fix)
 * rather than "this store asked for something wrong".
 */
export const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  13, // Unauthorized
  18, // AuthenticationFailed
  24, // LockTimeout
  50, // MaxTimeMSExpired
  64, // WriteConcernFailed
  89, // NetworkTimeout
  91, // ShutdownInProgress
  94, // NotYetInitialized (replica set not initiated)
  112, // WriteConflict (transaction retries exhausted)
  189, // PrimarySteppedDown
  251, // NoSuchTransaction
  262, // ExceededTimeLimit
  290, // TransactionExceededLifetimeLimitSeconds
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Code 20 IllegalOperation with this text is what a standalone server answers to a transaction. */
const STANDALONE_TRANSACTION = /only allowed on a replica set member or mongos/i;

/** Error labels the driver puts on failures that a later attempt may not see. */
const TRANSIENT_LABELS = [
  MongoErrorLabel.TransientTransactionError,
  MongoErrorLabel.UnknownTransactionCommitResult,
  MongoErrorLabel.RetryableWriteError,
];

function isReplicaSetRequiredError(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 20 && STANDALONE_TRANSACTION.test(error.message);
}

/** The driver could not reach a usable server (network, server selection, closed client, timeouts, elections). */
function isUnavailableError(error: unknown): boolean {
  if (!(error instanceof MongoError)) return false;
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoServerClosedError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoWriteConcernError
  ) {
    return true;
  }
  if (typeof error.code === "number" && UNAVAILABLE_CODES.has(error.code)) return true;
  return TRANSIENT_LABELS.some((label) => error.hasErrorLabel(label));
}

function duplicateKeyMessages(error: MongoServerError): string[] {
  const messages = [error.message];
  if (error instanceof MongoBulkWriteError) {
    const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    for (const writeError of writeErrors) messages.push(writeError.errmsg ?? "");
  }
  return messages;
}

/** A duplicate key on the unique (account_id, alt_id) index. */
export function isAltIdDuplicate(error: unknown): boolean {
  if (!(error instanceof MongoServerError) || error.code !== 11000) return false;
  const pattern: unknown = error.keyPattern;
  if (typeof pattern === "object" && pattern !== null && "alt_id" in pattern) return true;
  return duplicateKeyMessages(error).some((message) => message.includes(ALT_ID_INDEX));
}

export function isDuplicateKey(error: unknown): error is MongoServerError {
  return error instanceof MongoServerError && error.code === 11000;
}

/**
 * Unavailability becomes StoreUnavailableError, so nothing above the port depends on driver
 * classes; the driver's text goes into the message, which only reaches logs (the service answers
 * 503 `unavailable` with its own words). Anything else is a bug in this store and is rethrown
 * untouched so it surfaces as one.
 */
export function toStoreError(error: unknown, action: string): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (isReplicaSetRequiredError(error)) {
    return new StoreUnavailableError(`mongodb ${action} failed: ${REPLICA_SET_REQUIRED}`, { cause: error });
  }
  if (isUnavailableError(error)) {
    const { name, message } = error as MongoError;
    return new StoreUnavailableError(`mongodb ${action} failed: ${name}: ${message}`, { cause: error });
  }
  return error;
}

/**
 * Setup (connect, create indexes and collections): index conflicts (an index of the same name or
 * keys exists with other options) need an operator, and say so.
 */
export function toSetupError(error: unknown): unknown {
  if (error instanceof MongoServerError && (error.code === 85 || error.code === 86)) {
    return new StoreUnavailableError(
      `mongodb setup failed: ${error.codeName ?? error.code}: ${error.message}; ` +
        "an existing index differs from the one this version needs; drop it and restart",
      { cause: error },
    );
  }
  return toStoreError(error, "setup");
}

/** MongoDB's code for "the collection already exists". */
const NAMESPACE_EXISTS = 48;

/** Creates `name` unless it exists: collections written inside transactions must exist before the first one. */
export async function ensureCollection(db: Db, name: string): Promise<void> {
  try {
    await db.createCollection(name);
  } catch (error) {
    if (!(error instanceof MongoServerError && error.code === NAMESPACE_EXISTS)) throw error;
  }
}
