import {
  type BulkWriteResult,
  type Db,
  MongoAPIError,
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
  64, // WriteConcernTimeout (WriteConcernFailed before MongoDB 5.0)
  79, // UnknownReplWriteConcern (a write-concern tag the replica set does not have now)
  89, // NetworkTimeout
  91, // ShutdownInProgress
  94, // NotYetInitialized (replica set not initiated)
  100, // UnsatisfiableWriteConcern (too few data-bearing members up for "majority")
  112, // WriteConflict (transaction retries exhausted)
  133, // FailedToSatisfyReadPreference (no primary reachable from mongos)
  134, // ReadConcernMajorityNotAvailableYet (a member that just started or became primary)
  189, // PrimarySteppedDown
  251, // NoSuchTransaction
  262, // ExceededTimeLimit
  276, // IndexBuildAborted (setup: a build aborted by a step-down; the next setup builds again)
  285, // IndexBuildAlreadyInProgress (setup: another process is building; the next setup joins)
  290, // TransactionExceededLifetimeLimitSeconds
  388, // TransactionTooLargeForCache (the cache is under pressure; a later attempt may fit)
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Code 20 IllegalOperation with this text is what a standalone server answers to a transaction. */
const STANDALONE_TRANSACTION = /only allowed on a replica set member or mongos/i;

/**
 * Error labels the driver (or the server) puts on failures that a later attempt may not see. An
 * overloaded server shedding load (Atlas' load shedding, MongoDB 8.2's ingress rate limiters)
 * answers with SystemOverloadedError, mostly with RetryableError: the driver retries those a few
 * times with backoff, and what is still refused then is an outage, not a bug (whatever its code:
 * 462, 463 and more to come).
 */
const TRANSIENT_LABELS = [
  MongoErrorLabel.TransientTransactionError,
  MongoErrorLabel.UnknownTransactionCommitResult,
  MongoErrorLabel.RetryableWriteError,
  MongoErrorLabel.SystemOverloadedError,
  MongoErrorLabel.RetryableError,
];

function isReplicaSetRequiredError(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 20 && STANDALONE_TRANSACTION.test(error.message);
}

/**
 * The syscalls of Node's resolver: a `mongodb+srv://` URI is resolved by the driver with
 * `dns.promises.resolve(…, "SRV" | "TXT")` on every connect, and a failure there is Node's plain
 * `Error` (`querySrv ENOTFOUND _mongodb._tcp.cluster0.example.net`, with `code` and `syscall`),
 * not a MongoError; getaddrinfo (EAI_AGAIN) is the system resolver's.
 */
const DNS_SYSCALLS: ReadonlySet<string> = new Set(["querySrv", "queryTxt", "getaddrinfo"]);

/**
 * A DNS failure while connecting (ENOTFOUND, ESERVFAIL, ETIMEOUT, ECONNREFUSED, EAI_AGAIN, …):
 * the deployment's name cannot be resolved now, which for the service is an outage like an
 * unreachable server (a name that never resolves says so in the log, as a refused connection does).
 */
export function isDnsError(error: unknown): error is Error & { code: string; syscall: string } {
  if (!(error instanceof Error) || error instanceof MongoError) return false;
  const { code, syscall } = error as { code?: unknown; syscall?: unknown };
  return typeof code === "string" && typeof syscall === "string" && DNS_SYSCALLS.has(syscall);
}

/**
 * The driver's own error when a `mongodb+srv://` name resolves to an empty SRV record set
 * (connection_string.js `resolveSRVRecord`): the name exists but lists no hosts now, as while a
 * cluster's DNS is being (re)published. An outage like a name that does not resolve.
 */
const EMPTY_SRV_ANSWER = "No addresses found at host";

function isEmptySrvAnswer(error: unknown): boolean {
  return error instanceof MongoAPIError && error.message === EMPTY_SRV_ANSWER;
}

/** A bulk write's write errors as a list (the driver exposes one error alone, or an array). */
function writeErrorsOf(error: MongoBulkWriteError) {
  return Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
}

/**
 * What a MongoBulkWriteError (every insertMany and bulkWrite) stands for. The driver rebuilds
 * failures of a bulk write as one: a driver error (network, selection, …) keeps its labels but
 * loses its class, and is still its `errorResponse`; a write-concern error becomes
 * `{message, code}` without its labels (error.js, bulk/common.js). So a bulk error without write
 * errors whose result holds a write-concern error is a write-concern failure, and one built from a
 * driver error is that error.
 */
function bulkCause(error: MongoBulkWriteError): "write concern" | MongoError | null {
  if (writeErrorsOf(error).length > 0) return null;
  // BulkWriteResult and WriteConcernError are types only in the driver's exports, not classes to test against.
  if (error.err !== undefined) return "write concern";
  const result: Partial<Pick<BulkWriteResult, "getWriteConcernError">> | undefined = error.result;
  if (typeof result?.getWriteConcernError === "function" && result.getWriteConcernError() !== undefined) {
    return "write concern";
  }
  const original: unknown = error.errorResponse;
  return original instanceof MongoError && original !== error ? original : null;
}

/** The driver could not reach a usable server (network, server selection, closed client, timeouts, elections). */
function isUnavailableError(error: unknown): boolean {
  if (isDnsError(error) || isEmptySrvAnswer(error)) return true;
  if (!(error instanceof MongoError)) return false;
  if (error instanceof MongoBulkWriteError) {
    const cause = bulkCause(error);
    if (cause === "write concern") return true;
    if (cause !== null && isUnavailableError(cause)) return true;
  }
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
    const writeErrors = writeErrorsOf(error);
    for (const writeError of writeErrors) messages.push(writeError.errmsg ?? "");
  }
  return messages;
}

/** A duplicate key on the unique (account_id, alt_id) index. */
export function isAltIdDuplicate(error: unknown): error is MongoServerError {
  if (!(error instanceof MongoServerError) || error.code !== 11000) return false;
  const pattern: unknown = error.keyPattern;
  if (typeof pattern === "object" && pattern !== null && "alt_id" in pattern) return true;
  return duplicateKeyMessages(error).some((message) => message.includes(ALT_ID_INDEX));
}

/** One (account_id, alt_id) a duplicate-key error names. */
export interface DuplicateAltId {
  accountId: string;
  altId: string;
}

function altIdKey(doc: unknown): DuplicateAltId | null {
  if (typeof doc !== "object" || doc === null) return null;
  const { account_id: accountId, alt_id: altId } = doc as { account_id?: unknown; alt_id?: unknown };
  return typeof accountId === "string" && typeof altId === "string" ? { accountId, altId } : null;
}

/**
 * The (account_id, alt_id) keys an alt_id duplicate-key error names, as the driver exposes them:
 * `keyValue` of a single write's error, or the document of each write error of an insertMany
 * (a MongoBulkWriteError keeps `op`, the document that failed, and drops the server's keyValue).
 */
export function duplicateAltIds(error: unknown): DuplicateAltId[] {
  if (!isAltIdDuplicate(error)) return [];
  const keys: DuplicateAltId[] = [];
  const fromValue = altIdKey(error.keyValue);
  if (fromValue !== null) keys.push(fromValue);
  if (error instanceof MongoBulkWriteError) {
    const writeErrors = writeErrorsOf(error);
    for (const writeError of writeErrors) {
      if (writeError.code !== 11000) continue;
      const key = altIdKey(writeError.getOperation());
      if (key !== null) keys.push(key);
    }
  }
  return keys;
}

/**
 * The store stopped withTransaction's retries of a commit whose outcome is unknown, at the
 * transaction budget (withTransaction alone retries them for 120 s). A MongoError without labels,
 * so withTransaction passes it on as it is; `cause` is the commit's last failure.
 */
export class CommitRetriesStopped extends MongoError {
  constructor(last: MongoError, budgetMs: number) {
    super(`${last.name}: ${last.message} (the commit not tried again past the ${budgetMs} ms budget)`, {
      cause: last,
    });
  }

  override get name(): string {
    return "CommitRetriesStopped";
  }
}

/**
 * A failure of a transaction's commit after which the commit may or may not have applied:
 * MaxTimeMSExpired (which withTransaction does not retry), UnknownTransactionCommitResult (thrown
 * when its retries ran out), a network error, a write-concern error, the store's own
 * CommitRetriesStopped. Whatever carries TransientTransactionError was aborted for certain
 * (withTransaction runs those again).
 */
export function isCommitOutcomeUnknown(error: unknown): boolean {
  if (error instanceof CommitRetriesStopped) return true;
  // UnknownTransactionCommitResult is among the labels isUnavailableError reads.
  if (!(error instanceof MongoError) || error.hasErrorLabel(MongoErrorLabel.TransientTransactionError)) return false;
  return isUnavailableError(error);
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
    const { name, message } = error as Error;
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
