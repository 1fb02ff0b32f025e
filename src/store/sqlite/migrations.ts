import type Database from "better-sqlite3";
import { StoreUnavailableError } from "../port.js";

export interface Migration {
  /** Strictly increasing, never reused: the version recorded once the migration has run. */
  version: number;
  name: string;
  sql: string;
}

export interface AppliedMigration {
  version: number;
  name: string;
  appliedAt: number;
}

const CREATE_LEDGER = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
  ) STRICT`;

function assertOrdered(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    const previous = migrations[i - 1];
    if (previous !== undefined && m.version <= previous.version) {
      throw new Error(`migration ${m.version} (${m.name}) is out of order after ${previous.version}`);
    }
  });
}

export function appliedMigrations(db: Database.Database): AppliedMigration[] {
  db.exec(CREATE_LEDGER);
  return db
    .prepare<[], AppliedMigration>(
      "SELECT version, name, applied_at AS appliedAt FROM schema_migrations ORDER BY version",
    )
    .all();
}

/**
 * Brings the schema up to date and returns the versions this call applied. Each migration runs in
 * its own IMMEDIATE transaction and re-checks the ledger inside it, so two processes opening the
 * same file at once cannot both apply one, and a failing migration leaves the earlier ones in place.
 */
export function runMigrations(
  db: Database.Database,
  migrations: readonly Migration[],
  now: () => number = Date.now,
): number[] {
  assertOrdered(migrations);
  const newestKnown = migrations.at(-1)?.version ?? 0;
  const newestApplied = appliedMigrations(db).at(-1)?.version ?? 0;
  if (newestApplied > newestKnown) {
    // A newer build changed the schema in ways this one cannot know; writing would risk the data.
    throw new StoreUnavailableError(
      `sqlite schema is at version ${newestApplied}, newer than this build's ${newestKnown}`,
    );
  }

  const isApplied = db.prepare<[number], { version: number }>(
    "SELECT version FROM schema_migrations WHERE version = ?",
  );
  const record = db.prepare<[number, string, number]>(
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
  );
  const applyOne = db.transaction((m: Migration): boolean => {
    if (isApplied.get(m.version) !== undefined) return false;
    db.exec(m.sql);
    record.run(m.version, m.name, now());
    return true;
  });

  const applied: number[] = [];
  for (const m of migrations) {
    if (applyOne.immediate(m)) applied.push(m.version);
  }
  return applied;
}
