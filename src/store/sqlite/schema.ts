import type { Migration } from "./migrations.js";

/** Applied in order, each once; never edit a released migration, add a new one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "sources, attribute types, bounding boxes",
    sql: `
      -- An explicit INTEGER PRIMARY KEY, because VACUUM may renumber an implicit rowid and the
      -- R*Tree and attribute rows are keyed by it.
      CREATE TABLE sources (
        seq                    INTEGER PRIMARY KEY,
        id                     TEXT    NOT NULL UNIQUE,
        account_id             TEXT    NOT NULL,
        alt_id                 TEXT    NOT NULL,
        methodology            TEXT,
        tags                   TEXT    NOT NULL,
        steward_id             TEXT,
        project_id             TEXT,
        outcome_reporting_year INTEGER,
        source_type            TEXT,
        attribute_type         TEXT    NOT NULL,
        geometry_source        TEXT,
        geometry               TEXT    NOT NULL,
        start_at               INTEGER NOT NULL,
        end_at                 INTEGER NOT NULL,
        created_by             TEXT    NOT NULL,
        updated_by             TEXT    NOT NULL,
        created_at             INTEGER NOT NULL,
        updated_at             INTEGER NOT NULL,
        -- Geodesic m², kept so a conflict check does not re-measure every candidate.
        area_m2                REAL    NOT NULL,
        conflict               INTEGER NOT NULL CHECK (conflict IN (0, 1)),
        unep_overlap           TEXT
      ) STRICT;

      -- Deletes are hard deletes, so every row is live and deleting frees the alt_id.
      CREATE UNIQUE INDEX sources_account_alt_id ON sources (account_id, alt_id);
      CREATE INDEX sources_alt_id ON sources (alt_id, created_at, id);
      CREATE INDEX sources_account_created ON sources (account_id, created_at, id);
      CREATE INDEX sources_created ON sources (created_at, id);
      -- Every list filter, for one account and across accounts (admins), ends in the list order:
      -- a page is read in order and stops at LIMIT instead of sorting every match.
      CREATE INDEX sources_account_methodology ON sources (account_id, methodology, created_at, id);
      CREATE INDEX sources_methodology ON sources (methodology, created_at, id);
      CREATE INDEX sources_account_steward_id ON sources (account_id, steward_id, created_at, id);
      CREATE INDEX sources_steward_id ON sources (steward_id, created_at, id);
      CREATE INDEX sources_account_project_id ON sources (account_id, project_id, created_at, id);
      CREATE INDEX sources_project_id ON sources (project_id, created_at, id);
      CREATE INDEX sources_account_outcome_reporting_year
        ON sources (account_id, outcome_reporting_year, created_at, id);
      CREATE INDEX sources_outcome_reporting_year ON sources (outcome_reporting_year, created_at, id);
      CREATE INDEX sources_account_source_type ON sources (account_id, source_type, created_at, id);
      CREATE INDEX sources_source_type ON sources (source_type, created_at, id);
      CREATE INDEX sources_account_geometry_source ON sources (account_id, geometry_source, created_at, id);
      CREATE INDEX sources_geometry_source ON sources (geometry_source, created_at, id);

      -- attribute_type is also kept as JSON on the row; this copy lets the ANY filter use an index.
      CREATE TABLE source_attribute_types (
        source_seq     INTEGER NOT NULL REFERENCES sources (seq) ON DELETE CASCADE,
        attribute_type TEXT    NOT NULL,
        PRIMARY KEY (source_seq, attribute_type)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX source_attribute_types_by_type
        ON source_attribute_types (attribute_type, source_seq);

      CREATE VIRTUAL TABLE source_bbox USING rtree (seq, min_x, max_x, min_y, max_y);

      -- A virtual table cannot take a foreign key; the trigger keeps every delete path atomic with it.
      CREATE TRIGGER sources_delete_bbox AFTER DELETE ON sources
      BEGIN
        DELETE FROM source_bbox WHERE seq = old.seq;
      END;
    `,
  },
  {
    version: 2,
    name: "protected-area layers with their own R*Tree",
    sql: `
      -- One row per import. A layer goes loading -> active -> retired; only the active one serves
      -- unep_overlap (docs/api.md §8), so an import is invisible until it is complete.
      -- AUTOINCREMENT: a layer id is never reused, so a reader's cache keyed by it cannot go stale.
      CREATE TABLE protected_area_layers (
        id             INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset        TEXT    NOT NULL,
        state          TEXT    NOT NULL CHECK (state IN ('loading', 'active', 'retired')),
        source_file    TEXT    NOT NULL,
        started_at     INTEGER NOT NULL,
        -- Last batch written by the importing process; a loading layer without news is abandoned.
        heartbeat_at   INTEGER NOT NULL,
        imported_at    INTEGER,
        feature_count  INTEGER NOT NULL DEFAULT 0,
        rejected_count INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE UNIQUE INDEX protected_area_layers_one_active ON protected_area_layers (state) WHERE state = 'active';
      CREATE INDEX protected_area_layers_state ON protected_area_layers (state, id);

      CREATE TABLE protected_areas (
        seq           INTEGER PRIMARY KEY,
        layer_id      INTEGER NOT NULL REFERENCES protected_area_layers (id),
        wdpa_id       TEXT    NOT NULL,
        name          TEXT    NOT NULL,
        designation   TEXT    NOT NULL,
        iucn_category TEXT    NOT NULL,
        -- Geodesic m2 of the geometry.
        area_m2       REAL    NOT NULL,
        -- GeoJSON text, altitudes dropped.
        geometry      TEXT    NOT NULL
      ) STRICT;
      CREATE INDEX protected_areas_layer ON protected_areas (layer_id, seq);

      -- layer_id rides along as an auxiliary column so a search filters by layer before any join.
      CREATE VIRTUAL TABLE protected_area_bbox USING rtree (seq, min_x, max_x, min_y, max_y, +layer_id INTEGER);

      CREATE TRIGGER protected_areas_delete_bbox AFTER DELETE ON protected_areas
      BEGIN
        DELETE FROM protected_area_bbox WHERE seq = old.seq;
      END;
    `,
  },
  {
    version: 3,
    name: "conflict list filter indexes, ledger settings",
    sql: `
      -- The conflict filter (docs/api.md §13) like every equality filter: then the list order.
      CREATE INDEX sources_account_conflict ON sources (account_id, conflict, created_at, id);
      CREATE INDEX sources_conflict ON sources (conflict, created_at, id);

      -- Values the ledger keeps for itself: its secret (page tokens are keyed by it, so they
      -- survive a restart and hold for every process on this file).
      CREATE TABLE ledger_settings (
        name  TEXT PRIMARY KEY,
        value BLOB NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 4,
    name: "source events and conflict pairs",
    sql: `
      -- Every change to a source, in order (docs/api.md §14). Kept after the source is deleted:
      -- its history outlives it. Append-only: the triggers below refuse any update or delete.
      -- A rowid table, so every event is appended at the end of the file: keyed by (source_id, seq),
      -- a counterpart's conflict_set went into a random leaf of rows carrying records (5x slower).
      CREATE TABLE source_events (
        event_seq  INTEGER PRIMARY KEY,
        source_id  TEXT    NOT NULL,
        seq        INTEGER NOT NULL,
        account_id TEXT    NOT NULL,
        type       TEXT    NOT NULL
          CHECK (type IN ('created', 'conflict_set', 'conflict_cleared', 'deleted')),
        at         INTEGER NOT NULL,
        by         TEXT    NOT NULL,
        -- created: the record as stored; conflict_*: the counterpart (and the measure on set);
        -- deleted: the geometry the row held.
        data       TEXT
      ) STRICT;
      CREATE UNIQUE INDEX source_events_by_source ON source_events (source_id, seq);

      -- The ledger as it stood at an instant (as_of): created events in list order, per account
      -- and across accounts (admins), and whether a source was deleted by then. Partial, so the
      -- conflict events, most of the log, maintain none of them.
      CREATE INDEX source_events_account_created ON source_events (account_id, at, source_id)
        WHERE type = 'created';
      CREATE INDEX source_events_created ON source_events (at, source_id) WHERE type = 'created';
      CREATE INDEX source_events_deleted ON source_events (source_id, at) WHERE type = 'deleted';

      CREATE TRIGGER source_events_no_update BEFORE UPDATE ON source_events
      BEGIN
        SELECT RAISE(ABORT, 'source_events is append-only');
      END;
      CREATE TRIGGER source_events_no_delete BEFORE DELETE ON source_events
      BEGIN
        SELECT RAISE(ABORT, 'source_events is append-only');
      END;

      -- One row per live conflict, the measure from a's side; a pair goes with either source.
      CREATE TABLE conflict_pairs (
        a_seq       INTEGER NOT NULL REFERENCES sources (seq) ON DELETE CASCADE,
        b_seq       INTEGER NOT NULL REFERENCES sources (seq) ON DELETE CASCADE,
        measure     TEXT    NOT NULL,
        detected_at INTEGER NOT NULL,
        PRIMARY KEY (a_seq, b_seq)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX conflict_pairs_by_b ON conflict_pairs (b_seq, a_seq);
    `,
  },
  {
    version: 5,
    name: "change clock",
    sql: `
      -- The instant of the last change committed (history.ts, lastChangeAt): every write transaction
      -- stamps its change no earlier, so events' times follow the order of their commits and
      -- as_of never shows a state that never was (docs/api.md §14). One row.
      CREATE TABLE change_clock (
        id      INTEGER PRIMARY KEY CHECK (id = 1),
        last_at INTEGER NOT NULL
      ) STRICT;
      INSERT INTO change_clock (id, last_at)
      VALUES (1, max(coalesce((SELECT max(at) FROM source_events), 0),
                     coalesce((SELECT max(created_at) FROM sources), 0)));
    `,
  },
  {
    version: 6,
    name: "conflict pairs paged along each side's history",
    sql: `
      -- Each pair keeps the seq of the conflict_set event that recorded it on either side: a
      -- source's conflicts are listed in that order (detection order: times follow commits) and a
      -- page is one range of each side's index, whatever the source's number of pairs (docs/api.md
      -- §14). Existing pairs take theirs from the events (every live pair has one on each side).
      -- Processes of an earlier version must be stopped first: their pair inserts lack the seqs.
      CREATE TABLE conflict_pairs_paged (
        a_seq       INTEGER NOT NULL REFERENCES sources (seq) ON DELETE CASCADE,
        b_seq       INTEGER NOT NULL REFERENCES sources (seq) ON DELETE CASCADE,
        measure     TEXT    NOT NULL,
        detected_at INTEGER NOT NULL,
        a_event     INTEGER NOT NULL,
        b_event     INTEGER NOT NULL,
        PRIMARY KEY (a_seq, b_seq)
      ) STRICT, WITHOUT ROWID;
      -- One pass over the conflict_set events (each names its counterpart), not a search of a
      -- source's events per pair. A pair without its event on a side (which no version writes)
      -- fails the NOT NULL: the migration stops rather than list a conflict out of order.
      WITH recorded AS MATERIALIZED (
        SELECT source_id, json_extract(data, '$.counterpart.id') AS counterpart, max(seq) AS seq
          FROM source_events WHERE type = 'conflict_set' GROUP BY source_id, counterpart
      )
      INSERT INTO conflict_pairs_paged (a_seq, b_seq, measure, detected_at, a_event, b_event)
      SELECT p.a_seq, p.b_seq, p.measure, p.detected_at, ra.seq, rb.seq
        FROM conflict_pairs p
        JOIN sources a ON a.seq = p.a_seq
        JOIN sources b ON b.seq = p.b_seq
        LEFT JOIN recorded ra ON ra.source_id = a.id AND ra.counterpart = b.id
        LEFT JOIN recorded rb ON rb.source_id = b.id AND rb.counterpart = a.id;
      DROP TABLE conflict_pairs;
      ALTER TABLE conflict_pairs_paged RENAME TO conflict_pairs;
      CREATE UNIQUE INDEX conflict_pairs_a_event ON conflict_pairs (a_seq, a_event);
      CREATE UNIQUE INDEX conflict_pairs_b_event ON conflict_pairs (b_seq, b_event);
    `,
  },
  {
    version: 7,
    name: "geometry wire bytes kept beside the text",
    sql: `
      -- Each source's sourceledger.v2.Geometry protobuf bytes, made from its GeoJSON text: a binary
      -- gRPC or Connect answer copies them instead of scanning the text on every read
      -- (geometry-wire.ts). Filled in after the migrations, in batches that each record how far
      -- they got (fillGeometryWire), not here in one transaction holding the write lock through a
      -- whole ledger. A table of its own, read only by protobuf answers: as a column, a bench
      -- source's row would no longer fit a page.
      CREATE TABLE source_geometry_wire (
        seq  INTEGER PRIMARY KEY REFERENCES sources (seq) ON DELETE CASCADE,
        wire BLOB    NOT NULL
      ) STRICT;
      -- No code path changes a stored geometry; should anything (an operator's hand) do so, the
      -- bytes of the old text go, and its answers encode the new text.
      CREATE TRIGGER source_geometry_wire_stale AFTER UPDATE OF geometry ON sources BEGIN
        DELETE FROM source_geometry_wire WHERE seq = NEW.seq;
      END;
    `,
  },
  {
    version: 8,
    name: "the box of every source ever created",
    sql: `
      -- The ledger's spatial index of the past (docs/api.md §14): each created event's source box,
      -- by the event's key, so an as_of list within an area reads the sources whose box meets it
      -- as a live one reads source_bbox, instead of testing every source of the account. Written
      -- with the created event; like the log, kept when the source is deleted. Processes of an
      -- earlier version must be stopped first: their creates would add no box.
      CREATE VIRTUAL TABLE source_event_bbox USING rtree (event_seq, min_x, max_x, min_y, max_y);
      -- Live sources: the box source_bbox holds.
      INSERT INTO source_event_bbox (event_seq, min_x, max_x, min_y, max_y)
      SELECT e.event_seq, b.min_x, b.max_x, b.min_y, b.max_y
        FROM source_events e JOIN sources s ON s.id = e.source_id JOIN source_bbox b ON b.seq = s.seq
       WHERE e.type = 'created';
      -- Deleted sources get theirs from the geometry their events kept, after the migrations, in
      -- batches that record how far they got (fillDeletedEventBoxes): parsing large geometries here,
      -- in one transaction, would hold the write lock through them all.
    `,
  },
];
