import type { Db, MongoClientOptions } from "mongodb";
import { newMongoClient } from "./client.js";
import { ensureCollection, toSetupError } from "./errors.js";
import { prepareProtectedAreaCollections } from "./protected-areas.js";
import {
  CONFLICT_PAIR_INDEXES,
  CONFLICT_PAIRS,
  DB_OPTIONS,
  GUARDS,
  SOURCE_BOX_INDEXES,
  SOURCE_BOXES,
  SOURCE_EVENT_INDEXES,
  SOURCE_EVENTS,
  SOURCE_INDEXES,
  SOURCES,
} from "./queries.js";

/** A collection and the names of the indexes its createIndexes left in place (created now or before). */
export interface PreparedCollection {
  collection: string;
  indexes: string[];
}

/**
 * Creates every collection and index the store needs (docs/mongodb.md "Indexes"); each step is a
 * no-op when done before. Only createIndexes and createCollection: no index is ever dropped. The
 * store runs it at setup, and `npm run cli -- mongodb indexes` ahead of a deploy.
 */
export async function prepareLedgerCollections(db: Db): Promise<PreparedCollection[]> {
  const prepared: PreparedCollection[] = [];
  for (const [collection, specs] of [
    [SOURCES, SOURCE_INDEXES],
    // Also creates the history collections (and source_boxes), which transactions then only insert into.
    [SOURCE_EVENTS, SOURCE_EVENT_INDEXES],
    [CONFLICT_PAIRS, CONFLICT_PAIR_INDEXES],
    [SOURCE_BOXES, SOURCE_BOX_INDEXES],
  ] as const) {
    prepared.push({ collection, indexes: await db.collection(collection).createIndexes(specs) });
  }
  prepared.push(...(await prepareProtectedAreaCollections(db)));
  // Guards are upserted inside transactions; the collection must exist before the first one.
  await ensureCollection(db, GUARDS);
  return prepared;
}

export interface BuildMongoIndexesOptions {
  uri: string;
  database: string;
  /** Merged over the defaults below (tests shorten the timeouts). */
  clientOptions?: MongoClientOptions;
}

/**
 * Builds the store's collections and indexes and waits for the builds to finish, however long
 * they take (no socket timeout, unlike the server's 30 s): for an operator to run before a deploy
 * that adds an index, so the service's own setup finds them in place. A URI that does not parse
 * is an InvalidMongoUriError; an unreachable server a StoreUnavailableError.
 */
export async function buildMongoIndexes(options: BuildMongoIndexesOptions): Promise<PreparedCollection[]> {
  const client = newMongoClient(options.uri, { socketTimeoutMS: 0, ...options.clientOptions });
  try {
    await client.connect();
    return await prepareLedgerCollections(client.db(options.database, DB_OPTIONS));
  } catch (error) {
    throw toSetupError(error);
  } finally {
    await client.close();
  }
}
