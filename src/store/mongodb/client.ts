import { MongoClient, type MongoClientOptions } from "mongodb";
import { InvalidMongoUriError } from "./errors.js";
import { clientOptions } from "./queries.js";

/** Replaces the URI (which may hold credentials) wherever a driver message repeats it. */
function redact(message: string, uri: string): string {
  return uri === "" ? message : message.split(uri).join("<MONGODB_URI>");
}

/**
 * A client with the store's options (queries.ts `clientOptions`, then `overrides`); it does not
 * connect yet. A URI that does not parse is an InvalidMongoUriError whose message never repeats it.
 */
export function newMongoClient(uri: string, overrides: MongoClientOptions = {}): MongoClient {
  try {
    return new MongoClient(uri, { ...clientOptions(uri), ...overrides });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new InvalidMongoUriError(`MONGODB_URI is not a valid MongoDB connection string: ${redact(reason, uri)}`);
  }
}
