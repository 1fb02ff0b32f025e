import { type Config, ConfigError } from "../config.js";
import type { ConflictPolicy, ProtectedAreaPolicy } from "../model/spatial.js";
import {
  buildMongoIndexes,
  InvalidMongoUriError,
  openMongoProtectedAreaLayers,
  openMongoStore,
  type PreparedCollection,
} from "./mongodb/index.js";
import type { SourceStore } from "./port.js";
import type { ProtectedAreaLayers } from "./protected-area-layers.js";
import type { GroupCommitObservers } from "./sqlite/group-commit.js";
import { openSqliteProtectedAreaLayers, openSqliteStore } from "./sqlite/index.js";

/** The spatial analysis a production store applies (docs/api.md §8); the app composes it. */
export interface SpatialAnalysis {
  conflictPolicy: ConflictPolicy;
  protectedAreaPolicy: ProtectedAreaPolicy;
}

/** What a production store reports, for /metrics; each store reports what it has. */
export interface StoreObservers {
  /** The embedded store's group commits of creates (requests and sources per transaction, second runs). */
  groupCommit?: GroupCommitObservers;
}

/** The production store the configuration names. */
export async function openProductionStore(
  config: Config,
  analysis: SpatialAnalysis,
  observers: StoreObservers = {},
): Promise<SourceStore> {
  if (config.store === "mongodb") {
    // An unreachable server does not stop the start: /readyz answers 503 until MongoDB answers.
    return withMongo(config, (uri) => openMongoStore({ uri, database: config.mongodbDatabase, ...analysis }));
  }
  return openSqliteStore({ path: config.sqlitePath, ...analysis, groupCommit: observers.groupCommit });
}

/**
 * The protected-area layers of the production store (the CLI's import and status): the embedded
 * store's file, or the MongoDB database the server uses. Unlike the server, the CLI fails at once
 * when MongoDB cannot be reached (StoreUnavailableError).
 */
export async function openProtectedAreaLayers(config: Config): Promise<ProtectedAreaLayers> {
  if (config.store === "mongodb") {
    return withMongo(config, (uri) => openMongoProtectedAreaLayers({ uri, database: config.mongodbDatabase }));
  }
  if (config.sqlitePath === ":memory:") {
    throw new ConfigError(
      "SQLITE_PATH=:memory: is private to one process; point SQLITE_PATH at the server's store file",
    );
  }
  return openSqliteProtectedAreaLayers(config.sqlitePath);
}

/**
 * Builds the MongoDB store's collections and indexes and waits for them however long it takes
 * (the CLI's `mongodb indexes`, run ahead of a deploy; docs/mongodb.md "Deploy-time index
 * builds"). The embedded store creates its own at open, in moments: nothing to build ahead.
 */
export async function buildProductionIndexes(config: Config): Promise<PreparedCollection[]> {
  if (config.store !== "mongodb") {
    throw new ConfigError("mongodb indexes needs LEDGER_STORE=mongodb (the embedded store creates its own at open)");
  }
  return withMongo(config, (uri) => buildMongoIndexes({ uri, database: config.mongodbDatabase }));
}

/** Runs `open` with the configured URI; a URI the driver cannot parse is a configuration error. */
async function withMongo<T>(config: Config, open: (uri: string) => Promise<T>): Promise<T> {
  if (config.mongodbUri === null) throw new ConfigError("MONGODB_URI is required when LEDGER_STORE=mongodb");
  try {
    return await open(config.mongodbUri);
  } catch (error) {
    if (error instanceof InvalidMongoUriError) throw new ConfigError(error.message);
    throw error;
  }
}
