import { ConfigError, type Config } from "../config.js";
import { conflictPolicy } from "../ledger/conflict.js";
import type { SourceStore } from "./port.js";
import { openSqliteStore } from "./sqlite/index.js";

/** The production store the configuration names. */
export async function openProductionStore(config: Config): Promise<SourceStore> {
  if (config.store === "mongodb") {
    // Tracked by the MongoDB store issue; refusing to start beats silently using another store.
    throw new ConfigError("LEDGER_STORE=mongodb is not available in this version; use LEDGER_STORE=sqlite");
  }
  return openSqliteStore({ path: config.sqlitePath, conflictPolicy });
}
