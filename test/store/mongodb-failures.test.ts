/**
 * The MongoDB store's failure handling, without a MongoDB server:
 * - a minimal hand-written fake of the driver surface the store uses (MongoClient → Db →
 *   Collection, ClientSession.withTransaction), for injecting failures a real server cannot be
 *   made to produce on demand here (lost connections, server selection timeouts, duplicate keys,
 *   write conflicts, a standalone server) and for checking that the store hands the driver the
 *   pinned values of queries.ts (filters, options, transaction options);
 * - the real driver against a port where nothing listens, through the whole service: start,
 *   `/readyz` 503, and 503 `unavailable` answers that carry no driver message.
 * The fake lives in this test only; the product never fakes MongoDB.
 */
import { createServer } from "node:net";
import {
  type MongoClient,
  MongoError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type TopologyDescription,
} from "mongodb";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { runCli } from "../../src/protected-areas/cli.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { toDocument } from "../../src/store/mongodb/documents.js";
import { REPLICA_SET_REQUIRED } from "../../src/store/mongodb/errors.js";
import { guardCellsOf } from "../../src/store/mongodb/guards.js";
import { InvalidMongoUriError, MongoSourceStore, openMongoStore } from "../../src/store/mongodb/index.js";
import {
  CANDIDATE_OPTIONS,
  conflictCandidatesFilter,
  DB_OPTIONS,
  DELETE_OPTIONS,
  deleteByAltIdFilter,
  deleteByIdFilter,
  GEOMETRY_CHUNK_INDEXES,
  GET_OPTIONS,
  getFilter,
  guardWrites,
  listFilter,
  listOptions,
  otherCandidatesFilter,
  PROTECTED_AREA_INDEXES,
  SOURCE_INDEXES,
  setConflictUpdate,
  TAKEN_ALT_IDS_OPTIONS,
  TRANSACTION_OPTIONS,
  takenAltIdsFilter,
} from "../../src/store/mongodb/queries.js";
import { openProductionStore } from "../../src/store/open.js";
import { AltIdTakenError, StoreUnavailableError } from "../../src/store/port.js";
import { listQuery, makeRecord, square } from "../contract/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

// --- the fake driver ---

interface Call {
  target: string;
  method: string;
  args: unknown[];
}

type Handler = (...args: unknown[]) => unknown;

/**
 * Records every call as `target.method(args)` and answers from `handlers` (keyed
 * "sources.find", "db.command", …), or with a harmless default. A handler may throw to inject a
 * failure. withTransaction behaves like the driver's: it runs the callback again while the error
 * carries the TransientTransactionError label, and rethrows anything else.
 */
class FakeDriver {
  readonly calls: Call[] = [];
  readonly handlers = new Map<string, Handler>();
  readonly transactions: unknown[] = [];
  readonly session = {
    withTransaction: async (fn: (session: unknown) => Promise<unknown>, options: unknown) => {
      this.transactions.push(options);
      for (let attempt = 1; ; attempt++) {
        this.calls.push({ target: "session", method: "startTransaction", args: [attempt] });
        try {
          return await fn(this.session);
        } catch (error) {
          if (error instanceof MongoError && error.hasErrorLabel("TransientTransactionError") && attempt < 50) continue;
          throw error;
        }
      }
    },
    endSession: async () => {
      this.calls.push({ target: "session", method: "endSession", args: [] });
    },
  };

  private answer(target: string, method: string, args: unknown[], fallback: unknown): Promise<unknown> {
    this.calls.push({ target, method, args });
    const handler = this.handlers.get(`${target}.${method}`);
    try {
      return Promise.resolve(handler ? handler(...args) : fallback);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private collection(name: string) {
    const call =
      (method: string, fallback: unknown) =>
      (...args: unknown[]) =>
        this.answer(name, method, args, fallback);
    return {
      createIndexes: call("createIndexes", []),
      dropIndex: call("dropIndex", {}),
      replaceOne: call("replaceOne", { acknowledged: true, matchedCount: 1, modifiedCount: 1 }),
      deleteMany: call("deleteMany", { deletedCount: 0 }),
      find: (...args: unknown[]) => ({ toArray: () => this.answer(name, "find", args, []) }),
      findOne: call("findOne", null),
      insertMany: call("insertMany", { acknowledged: true }),
      updateMany: call("updateMany", { acknowledged: true }),
      bulkWrite: call("bulkWrite", { acknowledged: true }),
      findOneAndDelete: call("findOneAndDelete", null),
      deleteOne: call("deleteOne", { deletedCount: 0 }),
    };
  }

  readonly client = {
    db: (name: string, options: unknown) => {
      this.calls.push({ target: "client", method: "db", args: [name, options] });
      return {
        collection: (collection: string) => this.collection(collection),
        command: (...args: unknown[]) =>
          this.answer("db", "command", args, { setName: "rs0", isWritablePrimary: true, ok: 1 }),
        createCollection: (...args: unknown[]) => this.answer("db", "createCollection", args, {}),
      };
    },
    connect: () => this.answer("client", "connect", [], undefined),
    startSession: () => this.session,
    close: () => this.answer("client", "close", [], undefined),
  };

  on(key: string, handler: Handler): this {
    this.handlers.set(key, handler);
    return this;
  }

  /** Fails the first `times` calls of `key` with `error`, then answers with `then` (or the default). */
  failTimes(key: string, times: number, error: () => Error, then?: Handler): this {
    let left = times;
    return this.on(key, (...args) => {
      if (left > 0) {
        left -= 1;
        throw error();
      }
      return then ? then(...args) : key.endsWith(".find") ? [] : { acknowledged: true };
    });
  }

  callsTo(target: string, method: string): unknown[][] {
    return this.calls.filter((c) => c.target === target && c.method === method).map((c) => c.args);
  }

  store(options: { policy?: boolean; transactionBudgetMs?: number } = {}): MongoSourceStore {
    return new MongoSourceStore(this.client as unknown as MongoClient, "ledger", {
      ...(options.policy ? { conflictPolicy } : {}),
      ...(options.transactionBudgetMs === undefined ? {} : { transactionBudgetMs: options.transactionBudgetMs }),
    });
  }
}

const networkError = () => new MongoNetworkError("connection 4 to 10.0.0.5:27017 closed");
const selectionError = () =>
  new MongoServerSelectionError("Server selection timed out after 5000 ms", {
    error: null,
  } as unknown as TopologyDescription);
function serverError(
  code: number,
  codeName: string,
  message: string,
  extra: Record<string, unknown> = {},
): MongoServerError {
  return new MongoServerError({ message, errmsg: message, code, codeName, ...extra });
}
function altIdDuplicate(accountId: string, altId: string): MongoServerError {
  return serverError(
    11000,
    "DuplicateKey",
    `E11000 duplicate key error collection: ledger.sources index: account_alt_id_unique dup key: { account_id: "${accountId}", alt_id: "${altId}" }`,
    { keyPattern: { account_id: 1, alt_id: 1 }, keyValue: { account_id: accountId, alt_id: altId } },
  );
}
function writeConflict(): MongoServerError {
  const error = serverError(
    112,
    "WriteConflict",
    "WriteConflict error: this operation conflicted with another operation. Please retry your operation or multi-document transaction.",
  );
  error.addErrorLabel("TransientTransactionError");
  return error;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

// --- the store hands the driver the pinned values ---

describe("what the store sends (fake driver)", () => {
  it("opens the database with the pinned concerns and creates every index, once", async () => {
    const fake = new FakeDriver();
    const store = fake.store();
    await store.ping();
    await store.ping();
    expect(fake.callsTo("client", "db")).toEqual([["ledger", DB_OPTIONS]]);
    expect(fake.callsTo("sources", "createIndexes")).toEqual([[SOURCE_INDEXES]]);
    expect(fake.callsTo("protected_areas", "createIndexes")).toEqual([[PROTECTED_AREA_INDEXES]]);
    // Setup takes no index away: DDL would take locks that abort concurrent transactions.
    expect(fake.callsTo("protected_areas", "dropIndex")).toEqual([]);
    expect(fake.callsTo("protected_area_geometry_chunks", "createIndexes")).toEqual([[GEOMETRY_CHUNK_INDEXES]]);
    expect(fake.callsTo("db", "createCollection")).toEqual([["protected_area_layers"], ["conflict_guards"]]);
    expect(fake.callsTo("db", "command")).toEqual([[{ hello: 1 }], [{ hello: 1 }]]);
  });

  it("tolerates the guard and layer collections existing already", async () => {
    const fake = new FakeDriver().on("db.createCollection", () => {
      throw serverError(48, "NamespaceExists", "Collection ledger.conflict_guards already exists.");
    });
    await expect(fake.store().ping()).resolves.toBeUndefined();
  });

  it("lists and gets with the pinned filter and options", async () => {
    const fake = new FakeDriver();
    const store = fake.store();
    const query = listQuery("acct_a", { methodology: "M", attributeTypes: ["CI_SCORE"], limit: 5, offset: 10 });
    await store.list(query);
    await store.get("src_1", null);
    expect(fake.callsTo("sources", "find")).toEqual([[listFilter(query), listOptions(query)]]);
    expect(fake.callsTo("sources", "findOne")).toEqual([[getFilter("src_1", null), GET_OPTIONS]]);
  });

  it("creates a batch in one transaction with the pinned options: guards, candidates, flags, insert", async () => {
    const stored = makeRecord({ accountId: "acct_b", geometry: square(10, 10, 1) });
    const fake = new FakeDriver().on("sources.find", () => [{ ...toDocument(stored), conflict: false }]);
    const store = fake.store({ policy: true });
    const record = makeRecord({ geometry: square(10.5, 10, 1) });

    const [returned] = await store.insertMany([record]);

    expect(returned.conflict).toBe(true);
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    const inTransaction = fake.calls.filter(
      (c) => c.target !== "client" && !["createIndexes", "createCollection", "dropIndex"].includes(c.method),
    );
    expect(inTransaction.map((c) => `${c.target}.${c.method}`)).toEqual([
      "session.startTransaction",
      "conflict_guards.bulkWrite",
      "sources.find",
      "sources.updateMany",
      "sources.insertMany",
      "session.endSession",
    ]);
    const session = fake.session;
    expect(fake.callsTo("conflict_guards", "bulkWrite")).toEqual([
      [guardWrites(guardCellsOf([record.bbox])), { ordered: true, session }],
    ]);
    expect(fake.callsTo("sources", "find")).toEqual([
      [conflictCandidatesFilter([record.bbox]), { ...CANDIDATE_OPTIONS, session }],
    ]);
    const flag = setConflictUpdate([stored.id], true);
    expect(fake.callsTo("sources", "updateMany")).toEqual([[flag.filter, flag.update, { session }]]);
    expect(fake.callsTo("sources", "insertMany")).toEqual([
      [[toDocument({ ...record, conflict: true })], { session, ordered: true }],
    ]);
  });

  it("asks for the candidates of a large batch in chunks of 100 boxes", async () => {
    const fake = new FakeDriver();
    const records = Array.from({ length: 250 }, (_, i) => makeRecord({ geometry: square(-170 + i, 0, 0.5) }));
    await fake.store({ policy: true }).insertMany(records);
    const finds = fake.callsTo("sources", "find");
    expect(finds.map(([filter]) => filter)).toEqual([
      conflictCandidatesFilter(records.slice(0, 100).map((r) => r.bbox)),
      conflictCandidatesFilter(records.slice(100, 200).map((r) => r.bbox)),
      conflictCandidatesFilter(records.slice(200).map((r) => r.bbox)),
    ]);
  });

  it("deletes in a transaction that re-evaluates flagged neighbours and guards their cells", async () => {
    const removed = makeRecord({ geometry: square(0, 0, 1), conflict: true });
    const neighbour = makeRecord({ geometry: square(0.5, 0, 1), conflict: true });
    const fake = new FakeDriver()
      .on("sources.findOneAndDelete", () => toDocument(removed))
      .on("sources.find", (filter) =>
        JSON.stringify(filter) === JSON.stringify(conflictCandidatesFilter([removed.bbox]))
          ? [toDocument(neighbour)]
          : [],
      );
    const store = fake.store({ policy: true });

    expect(await store.deleteById(removed.id, "acct_a")).toBe(true);

    const session = fake.session;
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    expect(fake.callsTo("sources", "findOneAndDelete")).toEqual([
      [deleteByIdFilter(removed.id, "acct_a"), { ...DELETE_OPTIONS, session }],
    ]);
    expect(fake.callsTo("sources", "find")).toEqual([
      [conflictCandidatesFilter([removed.bbox]), { ...CANDIDATE_OPTIONS, session }],
      [otherCandidatesFilter(neighbour.bbox, neighbour.id), { ...CANDIDATE_OPTIONS, session }],
    ]);
    expect(fake.callsTo("conflict_guards", "bulkWrite")).toEqual([
      [guardWrites(guardCellsOf([removed.bbox, neighbour.bbox])), { ordered: true, session }],
    ]);
    const clear = setConflictUpdate([neighbour.id], false);
    expect(fake.callsTo("sources", "updateMany")).toEqual([[clear.filter, clear.update, { session }]]);
  });

  it("keeps a neighbour flagged by another flagged source around the deleted one, without another query", async () => {
    const removed = makeRecord({ geometry: square(0, 0, 1), conflict: true });
    const first = makeRecord({ geometry: square(0.25, 0, 1), conflict: true });
    const second = makeRecord({ geometry: square(0.5, 0, 1), conflict: true });
    const fake = new FakeDriver()
      .on("sources.findOneAndDelete", () => toDocument(removed))
      .on("sources.find", () => [toDocument(first), toDocument(second)]);

    expect(await fake.store({ policy: true }).deleteByAltId(removed.altId, "acct_a")).toBe(true);

    expect(fake.callsTo("sources", "findOneAndDelete")[0][0]).toEqual(deleteByAltIdFilter(removed.altId, "acct_a"));
    expect(fake.callsTo("sources", "find")).toHaveLength(1);
    expect(fake.callsTo("sources", "updateMany")).toEqual([]);
    expect(fake.callsTo("conflict_guards", "bulkWrite")[0][0]).toEqual(
      guardWrites(guardCellsOf([removed.bbox, first.bbox, second.bbox])),
    );
  });

  it("deletes by alt_id with the pinned filter; without a policy, a plain majority delete", async () => {
    const fake = new FakeDriver().on("sources.deleteOne", () => ({ deletedCount: 1 }));
    expect(await fake.store().deleteByAltId("field-7", "acct_a")).toBe(true);
    expect(fake.callsTo("sources", "deleteOne")).toEqual([[deleteByAltIdFilter("field-7", "acct_a")]]);
    expect(fake.transactions).toEqual([]);
  });

  it("creates without a policy in a transaction too (all or nothing), keeping the flags given", async () => {
    const fake = new FakeDriver();
    const records = [makeRecord({ conflict: true }), makeRecord()];
    const returned = await fake.store().insertMany(records);
    expect(returned.map((r) => r.conflict)).toEqual([true, false]);
    expect(fake.transactions).toEqual([TRANSACTION_OPTIONS]);
    expect(fake.callsTo("sources", "insertMany")).toEqual([
      [records.map(toDocument), { session: fake.session, ordered: true }],
    ]);
  });
});

// --- failure injection ---

describe("failures (fake driver)", () => {
  it("a lost connection is StoreUnavailableError, and the next call works once the server is back", async () => {
    const fake = new FakeDriver().failTimes("sources.find", 1, networkError);
    const store = fake.store();

    const error = await failure(store.list(listQuery("acct_a")));

    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/^mongodb list failed: MongoNetworkError: connection 4/);
    expect((error as Error).cause).toBeInstanceOf(MongoNetworkError);
    await expect(store.list(listQuery("acct_a"))).resolves.toEqual([]);
    expect(fake.callsTo("client", "db")).toHaveLength(1); // the same client: the driver reconnects
  });

  it.each([
    ["server selection timeout", selectionError],
    ["not writable primary", () => serverError(10107, "NotWritablePrimary", "not primary")],
    ["primary stepped down", () => serverError(11602, "InterruptedDueToReplStateChange", "operation was interrupted")],
    [
      "shutdown in progress",
      () => serverError(91, "ShutdownInProgress", "The server is in quiesce mode and will shut down"),
    ],
    ["authentication failed", () => serverError(18, "AuthenticationFailed", "Authentication failed.")],
  ])("%s is StoreUnavailableError", async (_label, error) => {
    const fake = new FakeDriver().failTimes("sources.findOne", 1, error, () => null);
    await expect(fake.store().get("src_1", "acct_a")).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("a network error inside a create's transaction is StoreUnavailableError", async () => {
    const fake = new FakeDriver().failTimes("sources.insertMany", 1, networkError);
    await expect(fake.store().insertMany([makeRecord()])).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("a first connection that fails is made again on the next call (no dead client is kept)", async () => {
    const fake = new FakeDriver().failTimes("client.connect", 2, selectionError, () => undefined);
    const store = fake.store();
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).resolves.toBeUndefined();
    await expect(store.ping()).resolves.toBeUndefined();
    expect(fake.callsTo("client", "connect")).toHaveLength(3);
  });

  it("a topology closed behind the store's back is connected again on the next call", async () => {
    const fake = new FakeDriver().failTimes(
      "sources.findOne",
      1,
      () => new MongoTopologyClosedError(),
      () => null,
    );
    const store = fake.store();
    await expect(store.get("src_1", null)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.get("src_1", null)).resolves.toBeNull();
    expect(fake.callsTo("client", "connect")).toHaveLength(2);
  });

  it("index setup failing at start leaves ping failing until MongoDB answers, then setup runs once", async () => {
    const fake = new FakeDriver().failTimes("sources.createIndexes", 2, selectionError);
    const store = fake.store();

    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).resolves.toBeUndefined();
    await expect(store.list(listQuery(null))).resolves.toEqual([]);
    expect(fake.callsTo("sources", "createIndexes")).toHaveLength(3);
  });

  it("an index of the same name with other options needs an operator: unavailable, with the reason", async () => {
    const fake = new FakeDriver().on("sources.createIndexes", () => {
      throw serverError(85, "IndexOptionsConflict", "An existing index has the same name as the requested index");
    });
    const error = await failure(fake.store().ping());
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain("IndexOptionsConflict");
  });

  it("a duplicate key on alt_id is AltIdTakenError naming every taken alt_id, in request order", async () => {
    const fake = new FakeDriver()
      .on("sources.insertMany", () => {
        throw altIdDuplicate("acct_a", "taken-2");
      })
      .on("sources.find", (filter) =>
        JSON.stringify(filter).includes('"$in"') ? [{ alt_id: "taken-1" }, { alt_id: "taken-2" }] : [],
      );
    const batch = ["fresh-1", "taken-2", "fresh-2", "taken-1"].map((altId) => makeRecord({ altId }));

    const error = await failure(fake.store().insertMany(batch));

    expect(error).toBeInstanceOf(AltIdTakenError);
    expect((error as AltIdTakenError).accountId).toBe("acct_a");
    expect((error as AltIdTakenError).altIds).toEqual(["taken-2", "taken-1"]);
    expect(fake.callsTo("sources", "find")).toEqual([
      [takenAltIdsFilter("acct_a", ["fresh-1", "taken-2", "fresh-2", "taken-1"]), TAKEN_ALT_IDS_OPTIONS],
    ]);
  });

  it("also finds duplicates reported through a bulk-write error's write errors", async () => {
    const bulk = serverError(
      11000,
      "DuplicateKey",
      "E11000 duplicate key error collection: ledger.sources index: account_alt_id_unique dup key: { ... }",
    );
    const fake = new FakeDriver()
      .on("sources.insertMany", () => {
        throw bulk;
      })
      .on("sources.find", () => [{ alt_id: "b" }]);
    const error = await failure(fake.store().insertMany([makeRecord({ altId: "a" }), makeRecord({ altId: "b" })]));
    expect((error as AltIdTakenError).altIds).toEqual(["b"]);
  });

  it("reports repeats inside the batch together with stored ones, before touching the transaction", async () => {
    const fake = new FakeDriver().on("sources.find", () => [{ alt_id: "stored" }]);
    const batch: NewSourceRecord[] = ["twice", "stored", "once", "twice"].map((altId) => makeRecord({ altId }));
    const error = await failure(fake.store().insertMany(batch));
    expect((error as AltIdTakenError).altIds).toEqual(["twice", "stored"]);
    expect(fake.transactions).toEqual([]);
  });

  it("ping on a standalone server fails with the replica-set message; a replica set or mongos passes", async () => {
    const standalone = new FakeDriver().on("db.command", () => ({
      isWritablePrimary: true,
      maxWireVersion: 21,
      ok: 1,
    }));
    const error = await failure(standalone.store().ping());
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toBe(`mongodb ping failed: ${REPLICA_SET_REQUIRED}`);
    expect(REPLICA_SET_REQUIRED).toMatch(/replica set/);

    const mongos = new FakeDriver().on("db.command", () => ({ msg: "isdbgrid", isWritablePrimary: true, ok: 1 }));
    await expect(mongos.store().ping()).resolves.toBeUndefined();
    const member = new FakeDriver().on("db.command", () => ({ setName: "rs0", isWritablePrimary: true, ok: 1 }));
    await expect(member.store().ping()).resolves.toBeUndefined();
  });

  it("a transaction refused by a standalone server is unavailable with the replica-set message", async () => {
    const fake = new FakeDriver().failTimes("sources.insertMany", 1, () =>
      serverError(20, "IllegalOperation", "Transaction numbers are only allowed on a replica set member or mongos"),
    );
    const error = await failure(fake.store().insertMany([makeRecord()]));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain(REPLICA_SET_REQUIRED);
  });

  it("a write conflict on a guard runs the transaction again", async () => {
    const fake = new FakeDriver().failTimes("conflict_guards.bulkWrite", 2, writeConflict);
    const [record] = await fake.store({ policy: true }).insertMany([makeRecord()]);
    expect(record).toBeDefined();
    expect(fake.callsTo("session", "startTransaction")).toHaveLength(3);
  });

  it("two transactions inserting the same new guard: the duplicate key is retried like a write conflict", async () => {
    const fake = new FakeDriver().failTimes("conflict_guards.bulkWrite", 1, () =>
      serverError(
        11000,
        "DuplicateKey",
        'E11000 duplicate key error collection: ledger.conflict_guards index: _id_ dup key: { _id: "g1:180:90" }',
      ),
    );
    await expect(fake.store({ policy: true }).insertMany([makeRecord()])).resolves.toHaveLength(1);
    expect(fake.callsTo("session", "startTransaction")).toHaveLength(2);
  });

  it("transient failures past the budget end the call as unavailable instead of retrying for minutes", async () => {
    const fake = new FakeDriver().failTimes("conflict_guards.bulkWrite", 100, writeConflict);
    const error = await failure(fake.store({ policy: true, transactionBudgetMs: 0 }).insertMany([makeRecord()]));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain("transaction still failing");
    expect(fake.callsTo("session", "startTransaction")).toHaveLength(1);
    expect(fake.callsTo("session", "endSession")).toHaveLength(1);
  });

  it("an error that is not about availability surfaces as itself (a bug, answered 500)", async () => {
    const badValue = serverError(2, "BadValue", "unknown operator: $geoIntersect");
    const fake = new FakeDriver().failTimes("sources.find", 1, () => badValue);
    await expect(fake.store().list(listQuery(null))).rejects.toBe(badValue);
  });

  it("after close every call is unavailable and the driver is not touched again", async () => {
    const fake = new FakeDriver();
    const store = fake.store();
    await store.close();
    await store.close();
    const before = fake.calls.length;
    for (const call of [
      () => store.ping(),
      () => store.list(listQuery(null)),
      () => store.get("src_x", null),
      () => store.insertMany([makeRecord()]),
      () => store.deleteById("src_x", null),
      () => store.deleteByAltId("x", "acct_a"),
    ]) {
      await expect(call()).rejects.toBeInstanceOf(StoreUnavailableError);
    }
    expect(fake.calls.length).toBe(before);
    expect(fake.callsTo("client", "close")).toHaveLength(1);
  });
});

// --- the real driver, nothing listening ---

/** A local port nobody listens on (bound, then released). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}

describe("the real driver with no server (unreachable MongoDB)", () => {
  let server: TestServer | undefined;
  let store: MongoSourceStore | undefined;

  afterEach(async () => {
    await server?.close();
    await store?.close();
    server = undefined;
    store = undefined;
  });

  it("opens anyway; ping, reads and writes are StoreUnavailableError", async () => {
    const port = await deadPort();
    store = await openMongoStore({
      uri: `mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300`,
      database: "ledger",
      conflictPolicy,
    });
    // Every call tries the server again (a fresh selection each time, never "Topology is closed").
    for (const call of [
      () => store?.ping(),
      () => store?.list(listQuery(null)),
      () => store?.insertMany([makeRecord()]),
    ]) {
      const error = await failure(Promise.resolve(call()));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).cause).toBeInstanceOf(MongoServerSelectionError);
    }
  });

  it("the protected-area CLI on LEDGER_STORE=mongodb fails at once, exit 2, when MongoDB cannot be reached", async () => {
    const port = await deadPort();
    let stdout = "";
    let stderr = "";
    const code = await runCli(["protected-areas", "status"], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { LEDGER_STORE: "mongodb", MONGODB_URI: `mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300` },
    });
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toMatch(/^error: the store is unavailable: mongodb /);
  });

  it("refuses a URI that does not parse, without repeating its credentials", async () => {
    const uri = "mongodb://ledger:hunter2@";
    const error = await failure(openMongoStore({ uri, database: "ledger" }));
    expect(error).toBeInstanceOf(InvalidMongoUriError);
    expect((error as Error).message).not.toContain("hunter2");
    const config = loadConfig({ LEDGER_STORE: "mongodb", MONGODB_URI: "postgres://ledger:hunter2@db/x" });
    const viaConfig = await failure(
      openProductionStore(config, { conflictPolicy, protectedAreaPolicy: unepOverlapPolicy }),
    );
    expect((viaConfig as Error).name).toBe("ConfigError");
    expect((viaConfig as Error).message).not.toContain("hunter2");
  });

  it("the service starts on LEDGER_STORE=mongodb, /readyz is 503 and calls answer 503 unavailable without driver text", async () => {
    const port = await deadPort();
    server = await startTestServer({
      LEDGER_STORE: "mongodb",
      MONGODB_URI: `mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300&connectTimeoutMS=300`,
    });
    const ready = await server.request("GET", "/readyz");
    expect(ready.status).toBe(503);
    const token = await server.userToken("acct-mongo");
    const listed = await server.request("GET", "/sources", { token });
    expect(listed.status).toBe(503);
    const body = await listed.text();
    expect(JSON.parse(body)).toMatchObject({ status: 503, code: "unavailable" });
    for (const leak of ["Mongo", "127.0.0.1", String(port), "Server selection"]) expect(body).not.toContain(leak);
  });
});
