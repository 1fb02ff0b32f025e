import Database from "better-sqlite3";
import { StoreUnavailableError } from "../port.js";

/**
 * Primary result codes that mean "the database cannot serve right now" rather than "this code
 * asked for something wrong". Extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT, …) share
 * their primary code's prefix.
 */
const UNAVAILABLE_CODES = [
  "SQLITE_BUSY",
  "SQLITE_LOCKED",
  "SQLITE_IOERR",
  "SQLITE_FULL",
  "SQLITE_CANTOPEN",
  "SQLITE_READONLY",
  "SQLITE_CORRUPT",
  "SQLITE_NOTADB",
  "SQLITE_PROTOCOL",
  "SQLITE_NOMEM",
  "SQLITE_PERM",
  "SQLITE_AUTH",
  "SQLITE_INTERRUPT",
];

function isUnavailableCode(code: string): boolean {
  return UNAVAILABLE_CODES.some((c) => code === c || code.startsWith(`${c}_`));
}

/**
 * Unavailability becomes StoreUnavailableError, so callers above the port never depend on driver
 * classes; the driver's text stays in the message because that only reaches logs. Anything else is
 * a bug in this store (bad SQL, a broken invariant) and is rethrown untouched so it surfaces as one.
 */
export function toStoreError(error: unknown, action: string): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (error instanceof Database.SqliteError && isUnavailableCode(error.code)) {
    return new StoreUnavailableError(`sqlite ${action} failed: ${error.code}: ${error.message}`, {
      cause: error,
    });
  }
  return error;
}
