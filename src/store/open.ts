import { ConfigError, type Config } from "../config.js";
import { conflictPolicy } from "../ledger/conflict.js";
import type { ProtectedAreaLayers } from "../protected-areas/layers.js";
import { unepOverlapPolicy } from "../protected-areas/overlap.js";
import { InvalidMongoUriError, openMongoProtectedAreaLayers, openMongoStore } from "./mongodb/index.js";
import type { SourceStore } from "./port.js";
import { openSqliteProtectedAreaLayers, openSqliteStore } from "./sqlite/index.js";

/** The production store the configuration names. */
export async function openProductionStore(config: Config): Promise<SourceStore> {
  if (config.store === "mongodb") return openMongoProductionStore(config);
  return openSqliteStore({ path: config.sqlitePath, conflictPolicy, protectedAreaPolicy: unepOverlapPolicy });
}

/**
 * The protected-area layers of the production store (the CLI's import and status): the embedded
 * store's file, or the MongoDB database the server uses. Unlike the server, the CLI fails at once
 * when MongoDB cannot be reached (StoreUnavailableError).
 */
export async function openProtectedAreaLayers(config: Config): Promise<ProtectedAreaLayers> {
  if (config.store === "mongodb") {
    if (config.mongodbUri === null) throw new ConfigError("MONGODB_URI is required when LEDGER_STORE=mongodb");
    try {
      return await openMongoProtectedAreaLayers({ uri: config.mongodbUri, database: config.mongodbDatabase });
    } catch (error) {
      if (error instanceof InvalidMongoUriError) throw new ConfigError(error.message);
      throw error;
    }
  }
  if (config.sqlitePath === ":memory:") {
    throw new ConfigError("SQLITE_PATH=:memory: is private to one process; point SQLITE_PATH at the server's store file");
  }
  return openSqliteProtectedAreaLayers(config.sqlitePath);
}

/**
 * MongoDB (a replica set or sharded cluster). An unreachable server does not stop the start:
 * `/readyz` answers 503 until MongoDB answers and the indexes exist.
 */
async function openMongoProductionStore(config: Config): Promise<SourceStore> {
  if (config.mongodbUri === null) throw new ConfigError("MONGODB_URI is required when LEDGER_STORE=mongodb");
  try {
    return await openMongoStore({
      uri: config.mongodbUri,
      database: config.mongodbDatabase,
      conflictPolicy,
      protectedAreaPolicy: unepOverlapPolicy,
    });
  } catch (error) {
    if (error instanceof InvalidMongoUriError) throw new ConfigError(error.message);
    throw error;
  }
}
