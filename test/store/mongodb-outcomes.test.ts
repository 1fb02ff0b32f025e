/**
 * The MongoDB store's answers to failures whose outcome the driver leaves open (issue 15, points
 * 1–4), without a MongoDB server. Every error is built the way the `mongodb` driver builds it
 * (its lib/error.js, lib/bulk/common.js, lib/sessions.js, lib/connection_string.js) or is the
 * real thing (Node's resolver failing against a dead DNS server, the driver's own
 * `ClientSession.withTransaction` around an injected commit):
 * - DNS failures of a `mongodb+srv://` URI are an outage: 503, recovery, exit code 2;
 * - the unavailable codes and write-concern errors an insertMany rebuilds as MongoBulkWriteError;
 * - an alt_id clash is found on the primary (read concern "local") with a bounded backoff, and
 *   is a 409 naming what is known or a retryable 503, never the raw duplicate key (500);
 * - a commit whose outcome is unknown is decided by reading the request's own ids: 201 or 503.
 * The small fake of the driver's surface lives in this test only; the product never fakes MongoDB.
 */

import dns from "node:dns";
import { createRequire } from "node:module";
import net, { type AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import {
  type BulkWriteResult,
  MongoAPIError,
  MongoBulkWriteError,
  MongoClient,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoWriteConcernError,
  ReadConcern,
  type WriteConcernError,
  type WriteError,
} from "mongodb";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { OverlayAllowance } from "../../src/geo/overlap.js";
import { conflictAllowances } from "../../src/geo/overlay-allowances.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { runCli } from "../../src/protected-areas/cli.js";
import { toDocument } from "../../src/store/mongodb/documents.js";
import { duplicateAltIds, isDnsError, toStoreError, UNAVAILABLE_CODES } from "../../src/store/mongodb/errors.js";
import { MongoProtectedAreaLayers, type MongoSourceStore, openMongoStore } from "../../src/store/mongodb/index.js";
import {
  APPLIED_IDS_OPTIONS,
  CLASHING_ALT_IDS_OPTIONS,
  COMMITTED_IDS_OPTIONS,
  SOURCE_INDEXES,
  sourcesByIdFilter,
  TAKEN_ALT_IDS_OPTIONS,
  takenAltIdsFilter,
} from "../../src/store/mongodb/queries.js";
import { prepareLedgerCollections } from "../../src/store/mongodb/setup.js";
import { AltIdTakenError, StoreUnavailableError } from "../../src/store/port.js";
import { change, listQuery, makeRecord } from "../contract/fixtures.js";
import { flat, unique } from "../e2e/rest-support.js";
import { deadPort, FakeMongo, failure, serverError } from "../support/mongo-fake.js";
import { startTestServer, type TestServer } from "../support/server.js";

// --- the driver's error shapes ---

/**
 * The driver's own bulk-write classes: its index exports them as types only, so they come from
 * the module the driver itself uses (lib/bulk/common.js), the same instances its errors carry.
 */
const bulk = createRequire(import.meta.url)("mongodb/lib/bulk/common.js") as {
  BulkWriteResult: new (raw: unknown, ordered: boolean) => BulkWriteResult;
  WriteConcernError: new (error: { code: number; errmsg: string; codeName?: string }) => WriteConcernError;
  WriteError: new (error: { index: number; code: number; errmsg: string; errInfo: unknown; op: unknown }) => WriteError;
  MongoBulkWriteError: typeof MongoBulkWriteError;
};

/** A bulk write's result as bulk/common.js accumulates it (BulkWriteResult's constructor is internal). */
function bulkResult(parts: { writeErrors?: WriteError[]; writeConcernErrors?: WriteConcernError[] }): BulkWriteResult {
  const raw = {
    ok: 1,
    writeErrors: parts.writeErrors ?? [],
    writeConcernErrors: parts.writeConcernErrors ?? [],
    insertedIds: [],
    nInserted: 0,
    nUpserted: 0,
    nMatched: 0,
    nModified: 0,
    nRemoved: 0,
    upserted: [],
  };
  return new bulk.BulkWriteResult(raw, true);
}

/**
 * An insertMany whose reply carried a writeConcernError: the driver throws MongoWriteConcernError,
 * and bulk/common.js rebuilds it as `new MongoBulkWriteError({message, code}, result)`; the labels
 * of the original are lost.
 */
function bulkWriteConcernError(code: number, codeName: string, errmsg: string): MongoBulkWriteError {
  const thrown = new MongoWriteConcernError({ ok: 1, n: 1, writeConcernError: { code, codeName, errmsg } });
  thrown.addErrorLabel(MongoErrorLabel.RetryableWriteError);
  const result = bulkResult({ writeConcernErrors: [new bulk.WriteConcernError(thrown.result.writeConcernError)] });
  return new MongoBulkWriteError({ message: errmsg, code }, result);
}

/** The other write-concern path (handleWriteError): the bulk error wraps the WriteConcernError itself. */
function bulkWriteConcernErrorKept(code: number, errmsg: string): MongoBulkWriteError {
  const concern = new bulk.WriteConcernError({ code, errmsg });
  return new MongoBulkWriteError(concern, bulkResult({ writeConcernErrors: [concern] }));
}

/** A driver error (here a lost connection in a transaction) rebuilt as a bulk error: class lost, labels kept. */
function bulkDriverError(): MongoBulkWriteError {
  const network = new MongoNetworkError("connection 7 to 10.0.0.5:27017 closed");
  network.addErrorLabel(MongoErrorLabel.RetryableWriteError);
  return new MongoBulkWriteError(network, bulkResult({}));
}

/** An ordered insertMany that hit the unique (account_id, alt_id) index: handleWriteError's shape. */
function bulkAltIdDuplicate(doc: { _id: string; account_id: string; alt_id: string }, index = 0): MongoBulkWriteError {
  const errmsg =
    "E11000 duplicate key error collection: ledger.sources index: account_alt_id_unique dup key: " +
    `{ account_id: "${doc.account_id}", alt_id: "${doc.alt_id}" }`;
  const writeError = new bulk.WriteError({ index, code: 11000, errmsg, errInfo: {}, op: doc });
  return new MongoBulkWriteError(
    { message: errmsg, code: 11000, writeErrors: [writeError] },
    bulkResult({ writeErrors: [writeError] }),
  );
}

/** Node's resolver error (lib/internal/errors.js dnsException): a plain Error with code, syscall, hostname. */
function dnsError(code: string, syscall = "querySrv", hostname = "_mongodb._tcp.cluster0.ledger.example.net"): Error {
  return Object.assign(new Error(`${syscall} ${code} ${hostname}`), { errno: undefined, code, syscall, hostname });
}

// --- a small fake of the driver's surface, with the driver's own withTransaction ---

/**
 * The shared fake (test/support/mongo-fake.ts) whose sessions are the driver's own ClientSession
 * of a client that never connects, so withTransaction's retry rules are the driver's; only
 * commitTransaction is replaced, to inject the commit's failures (`commitFailures`, one per commit
 * attempt, then success).
 */
class Fake extends FakeMongo {
  readonly commitFailures: (() => Error)[] = [];
  commits = 0;
  attempts = 0;
  private readonly real = new MongoClient("mongodb://127.0.0.1:1");

  protected startSession(): unknown {
    const session = this.real.startSession();
    const commit = session.commitTransaction.bind(session);
    const start = session.startTransaction.bind(session);
    session.startTransaction = (options) => {
      this.attempts += 1;
      start(options);
    };
    session.commitTransaction = async () => {
      await commit(); // nothing was sent in this session: the driver only changes its state
      this.commits += 1;
      const fail = this.commitFailures.shift();
      if (fail) throw fail();
    };
    return session;
  }

  async close(): Promise<void> {
    await this.real.close();
  }
}

let fakes: Fake[] = [];
function fake(): Fake {
  const made = new Fake();
  fakes.push(made);
  return made;
}
afterEach(async () => {
  for (const made of fakes) await made.close();
  fakes = [];
  vi.restoreAllMocks();
});

// --- 1. DNS failures of mongodb+srv:// ---

describe("a DNS failure (mongodb+srv://) is an outage like any other", () => {
  it("Node's own resolver error (querySrv ECONNREFUSED against a dead DNS server) is StoreUnavailableError", async () => {
    const resolver = new dns.promises.Resolver({ timeout: 500, tries: 1 });
    resolver.setServers([`127.0.0.1:${await deadPort()}`]);
    const real = await failure(resolver.resolve("_mongodb._tcp.cluster0.ledger.example.net", "SRV"));
    expect(isDnsError(real)).toBe(true);
    expect(real).not.toBeInstanceOf(MongoError);
    const mapped = toStoreError(real, "setup");
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect((mapped as Error).message).toMatch(/^mongodb setup failed: Error: querySrv ECONNREFUSED _mongodb\._tcp\./);
    expect((mapped as Error).cause).toBe(real);
  });

  it.each([
    ["ENOTFOUND", "querySrv"],
    ["ESERVFAIL", "querySrv"],
    ["ETIMEOUT", "querySrv"],
    ["ECONNREFUSED", "queryTxt"],
    ["EREFUSED", "queryTxt"],
    ["EAI_AGAIN", "getaddrinfo"],
  ])("%s from %s is StoreUnavailableError; a plain Error without a resolver syscall is not", (code, syscall) => {
    expect(toStoreError(dnsError(code, syscall), "list")).toBeInstanceOf(StoreUnavailableError);
    const bug = Object.assign(new Error("boom"), { code });
    expect(toStoreError(bug, "list")).toBe(bug);
  });

  it("an SRV name answering no records (the driver's own MongoAPIError) is StoreUnavailableError; other API errors are not", async () => {
    const resolve = vi.spyOn(dns.promises, "resolve").mockImplementation(async () => []);
    const client = new MongoClient("mongodb+srv://cluster0.ledger.example.net/", { serverSelectionTimeoutMS: 200 });
    const real = await failure(client.connect());
    expect(resolve).toHaveBeenCalledWith("_mongodb._tcp.cluster0.ledger.example.net", "SRV");
    expect(real).toBeInstanceOf(MongoAPIError);
    expect((real as Error).message).toBe("No addresses found at host");
    const mapped = toStoreError(real, "setup");
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect((mapped as Error).cause).toBe(real);
    const misuse = new MongoAPIError('Option "srvHost" must not be empty');
    expect(toStoreError(misuse, "setup")).toBe(misuse);
  });

  it("a failing SRV lookup at connect makes calls 503, and the store recovers once DNS answers", async () => {
    let failures = 2;
    const driver = fake().on("client.connect", () => {
      if (failures-- > 0) throw dnsError("ENOTFOUND");
    });
    const store = driver.store();
    for (let i = 0; i < 2; i++) {
      const error = await failure(store.list(listQuery("acct_a")));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toContain("querySrv ENOTFOUND");
    }
    await expect(store.ping()).resolves.toBeUndefined();
    expect(driver.callsTo("client", "connect")).toHaveLength(3);
  });

  describe("the real driver, with the process's DNS pointed at a dead server", () => {
    let saved: string[];
    let server: TestServer | undefined;
    let store: MongoSourceStore | undefined;
    const uri = "mongodb+srv://ledger:secret@cluster0.ledger.example.net/?serverSelectionTimeoutMS=300";

    beforeEach(async () => {
      saved = dns.getServers();
      dns.setServers([`127.0.0.1:${await deadPort()}`]);
    });
    afterEach(async () => {
      await server?.close();
      await store?.close();
      server = undefined;
      store = undefined;
      dns.setServers(saved);
    });

    it("openMongoStore does not reject: it returns the store, and every call is StoreUnavailableError", async () => {
      store = await openMongoStore({ uri, database: "ledger", conflictPolicy });
      for (const call of [() => store?.ping(), () => store?.insertMany([makeRecord()])]) {
        const error = await failure(Promise.resolve(call()));
        expect(error).toBeInstanceOf(StoreUnavailableError);
        const cause = (error as Error).cause as NodeJS.ErrnoException;
        expect([cause.syscall, cause.code]).toEqual(["querySrv", "ECONNREFUSED"]);
        expect((error as Error).message).not.toContain("secret");
      }
    });

    it("the service starts; /readyz and calls answer 503 unavailable, without the driver's text", async () => {
      server = await startTestServer({ LEDGER_STORE: "mongodb", MONGODB_URI: uri });
      expect((await server.request("GET", "/readyz")).status).toBe(503);
      const token = await server.userToken("acct-dns");
      for (const res of [
        await server.request("GET", "/sources", { token }),
        await server.request("POST", "/sources", { token, json: flat(unique("dns")) }),
      ]) {
        expect(res.status).toBe(503);
        const body = await res.text();
        expect(JSON.parse(body)).toMatchObject({ status: 503, code: "unavailable" });
        for (const leak of ["querySrv", "ECONNREFUSED", "example.net"]) expect(body).not.toContain(leak);
      }
    });

    it("the CLI exits 2 with 'the store is unavailable', as for an unreachable server", async () => {
      let stderr = "";
      const code = await runCli(["protected-areas", "status"], {
        stdout: { write: () => true },
        stderr: { write: (text: string) => (stderr += text) },
        env: { LEDGER_STORE: "mongodb", MONGODB_URI: uri },
      });
      expect(code).toBe(2);
      expect(stderr).toMatch(/^error: the store is unavailable: mongodb setup failed: Error: querySrv ECONNREFUSED /);
    });
  });
});

// --- 4. unavailable codes, and write-concern errors rebuilt by insertMany ---

describe("the unavailable codes and bulk write-concern errors answer 503", () => {
  it.each([
    [134, "ReadConcernMajorityNotAvailableYet", "Read concern majority reads are currently not possible."],
    [133, "FailedToSatisfyReadPreference", 'Could not find host matching read preference { mode: "primary" }'],
    [100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes"],
    [79, "UnknownReplWriteConcern", "unrecognized getLastError mode: dc2"],
    [388, "TransactionTooLargeForCache", "Transaction exceeded cache limit"],
    [285, "IndexBuildAlreadyInProgress", "Index build already in progress"],
  ])("%i %s is StoreUnavailableError", async (code, codeName, errmsg) => {
    expect(UNAVAILABLE_CODES.has(code)).toBe(true);
    const driver = fake().on("sources.findOne", () => {
      throw serverError(code, codeName, errmsg);
    });
    const error = await failure(driver.store().get("src_1", "acct_a"));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain(errmsg);
  });

  it("a server shedding load (its reply labelled SystemOverloadedError, whatever the code) is StoreUnavailableError", async () => {
    // The reply Atlas documents for a rejected operation (docs/atlas/overload-errors).
    const overloaded = () =>
      serverError(463, "IngressOperationRateLimitExceeded", "Request rejected: ingress operation rate limit exceeded", {
        errorLabels: ["SystemOverloadedError", "RetryableError", "NoWritesPerformed"],
      });
    expect(UNAVAILABLE_CODES.has(463)).toBe(false);
    expect(overloaded().errorLabels).toEqual(["SystemOverloadedError", "RetryableError", "NoWritesPerformed"]);
    const driver = fake().on("sources.findOne", () => {
      throw overloaded();
    });
    const error = await failure(driver.store().get("src_1", "acct_a"));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain("ingress operation rate limit exceeded");
    // Only SystemOverloadedError (no RetryableError), as the server labels some overload codes.
    const shed = serverError(512, "WriteConflictRetryLimitExceeded", "too many write conflicts", {
      errorLabels: ["SystemOverloadedError"],
    });
    expect(toStoreError(shed, "insert")).toBeInstanceOf(StoreUnavailableError);
    // RetryableError alone, as the server labels an idempotent operation it refused.
    const refused = serverError(462, "IngressRequestRateLimitExceeded", "request rate limit exceeded", {
      errorLabels: ["RetryableError"],
    });
    expect(toStoreError(refused, "list")).toBeInstanceOf(StoreUnavailableError);
    // The same code without the label is not (an unknown code is a bug until it says otherwise).
    const unlabelled = serverError(463, "IngressOperationRateLimitExceeded", "rejected");
    expect(toStoreError(unlabelled, "insert")).toBe(unlabelled);
  });

  it("an insertMany write-concern error rebuilt as MongoBulkWriteError (labels lost) is StoreUnavailableError", () => {
    const rebuilt = bulkWriteConcernError(100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes");
    expect(rebuilt.errorLabels).toEqual([]);
    expect(rebuilt.result.getWriteConcernError()?.code).toBe(100);
    expect(toStoreError(rebuilt, "protected-area import")).toBeInstanceOf(StoreUnavailableError);
    // A code outside the list too: a write-concern failure is an outage whatever its code.
    const odd = bulkWriteConcernError(9999, "SomethingNew", "waiting for replication failed");
    expect(toStoreError(odd, "insert")).toBeInstanceOf(StoreUnavailableError);
    const kept = bulkWriteConcernErrorKept(64, "waiting for replication timed out");
    expect(kept.code).toBeUndefined();
    expect(toStoreError(kept, "insert")).toBeInstanceOf(StoreUnavailableError);
  });

  it("a driver error rebuilt as MongoBulkWriteError is what it wraps: a lost connection is 503", () => {
    const rebuilt = bulkDriverError();
    expect(rebuilt).not.toBeInstanceOf(MongoNetworkError);
    expect(toStoreError(rebuilt, "insert")).toBeInstanceOf(StoreUnavailableError);
  });

  it("a create whose insertMany fails that way answers 503 through the store", async () => {
    const driver = fake().on("sources.insertMany", () => {
      throw bulkWriteConcernError(91, "ShutdownInProgress", "The server is in quiesce mode and will shut down");
    });
    await expect(driver.store().insertMany([makeRecord()])).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("a bulk error with write errors is not an outage: a bad document stays itself (a bug, 500)", () => {
    const doc = toDocument(makeRecord());
    const writeError = new bulk.WriteError({ index: 0, code: 2, errmsg: "unknown operator", errInfo: {}, op: doc });
    const bad = new MongoBulkWriteError(
      { message: "unknown operator", code: 2, writeErrors: [writeError] },
      bulkResult({ writeErrors: [writeError] }),
    );
    expect(toStoreError(bad, "insert")).toBe(bad);
  });
});

// --- 2. alt_id clashes under replication lag ---

describe("an alt_id clash is 409 naming the alt_ids, or a retryable 503; never the raw duplicate key", () => {
  const isLocal = (options: unknown) =>
    (options as { readConcern?: ReadConcern }).readConcern?.level === "local" &&
    (options as { readPreference?: unknown }).readPreference === "primary";

  it("finds a clashing write that is not majority-committed yet by reading the primary's own data", async () => {
    const batch = ["fresh-1", "lagging", "fresh-2"].map((altId) => makeRecord({ altId }));
    const driver = fake()
      .on("sources.insertMany", () => {
        throw bulkAltIdDuplicate({ _id: batch[1].id, account_id: "acct_a", alt_id: "lagging" }, 1);
      })
      // Majority reads do not see the other create yet; the primary does.
      .on("sources.find", (_filter, options) => (isLocal(options) ? [{ alt_id: "lagging" }] : []));

    const error = await failure(driver.store().insertMany(batch));

    expect(error).toBeInstanceOf(AltIdTakenError);
    expect((error as AltIdTakenError).altIds).toEqual(["lagging"]);
    expect(driver.callsTo("sources", "find")).toEqual([
      [takenAltIdsFilter("acct_a", ["fresh-1", "lagging", "fresh-2"]), CLASHING_ALT_IDS_OPTIONS],
    ]);
    expect(CLASHING_ALT_IDS_OPTIONS).toEqual({
      projection: { _id: 0, alt_id: 1 },
      readConcern: new ReadConcern("local"),
      readPreference: "primary",
    });
    expect(TAKEN_ALT_IDS_OPTIONS).not.toHaveProperty("readConcern");
  });

  it("reads the duplicate key from the error: keyValue of a single write, the failed document of a bulk write", () => {
    const single = serverError(11000, "DuplicateKey", "E11000 duplicate key error … index: account_alt_id_unique", {
      keyPattern: { account_id: 1, alt_id: 1 },
      keyValue: { account_id: "acct_b", alt_id: "north-40" },
    });
    expect(duplicateAltIds(single)).toEqual([{ accountId: "acct_b", altId: "north-40" }]);
    const bulk = bulkAltIdDuplicate({ _id: "src_x", account_id: "acct_a", alt_id: "south-7" });
    expect(duplicateAltIds(bulk)).toEqual([{ accountId: "acct_a", altId: "south-7" }]);
    const guard = serverError(11000, "DuplicateKey", 'E11000 … index: _id_ dup key: { _id: "g1:1:1" }');
    expect(duplicateAltIds(guard)).toEqual([]);
  });

  it("a clash whose source is gone at every lookup: three attempts with a backoff, then 409 naming the error's key", async () => {
    const batch = ["a", "b"].map((altId) => makeRecord({ altId }));
    const driver = fake().on("sources.insertMany", () => {
      throw bulkAltIdDuplicate({ _id: batch[1].id, account_id: "acct_a", alt_id: "b" }, 1);
    });
    const started = Date.now();

    const error = await failure(driver.store().insertMany(batch));

    expect(error).toBeInstanceOf(AltIdTakenError);
    expect((error as AltIdTakenError).accountId).toBe("acct_a");
    expect((error as AltIdTakenError).altIds).toEqual(["b"]);
    expect(driver.callsTo("sources", "insertMany")).toHaveLength(3);
    expect(driver.callsTo("sources", "find")).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140); // 50 + 100 ms between the attempts
  });

  it("a clash nothing identifies (no key in the error, none found) is a retryable 503, not the raw error", async () => {
    const driver = fake().on("sources.insertMany", () => {
      throw serverError(
        11000,
        "DuplicateKey",
        "E11000 duplicate key error collection: ledger.sources index: account_alt_id_unique",
      );
    });
    const error = await failure(driver.store().insertMany([makeRecord({ altId: "x" })]));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain("could not be identified after 3 attempts");
    expect((error as Error).cause).toBeInstanceOf(MongoServerError);
  });

  it("a clash whose source was deleted before the lookup: the batch is tried again and stored", async () => {
    let clashes = 1;
    const batch = [makeRecord({ altId: "reused" })];
    const driver = fake().on("sources.insertMany", () => {
      if (clashes-- > 0) throw bulkAltIdDuplicate({ _id: batch[0].id, account_id: "acct_a", alt_id: "reused" });
      return { acknowledged: true };
    });
    await expect(driver.store().insertMany(batch)).resolves.toHaveLength(1);
    expect(driver.callsTo("sources", "insertMany")).toHaveLength(2);
  });
});

// --- 3. a commit whose outcome is unknown ---

/** MaxTimeMSExpired on commitTransaction: the server's reply, labelled by the driver's commitTransaction. */
function commitMaxTime(): MongoServerError {
  const error = serverError(50, "MaxTimeMSExpired", "operation exceeded time limit");
  error.addErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult);
  return error;
}

/** A commit aborted for certain: a write conflict, labelled TransientTransactionError. */
function commitWriteConflict(): MongoServerError {
  const error = serverError(112, "WriteConflict", "WriteConflict error");
  error.addErrorLabel(MongoErrorLabel.TransientTransactionError);
  return error;
}

/** A network error on both commit attempts: RetryableWriteError, then UnknownTransactionCommitResult. */
function commitNetwork(): MongoNetworkError {
  const error = new MongoNetworkError("connection 9 to 10.0.0.5:27017 closed");
  error.addErrorLabel(MongoErrorLabel.RetryableWriteError);
  error.addErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult);
  return error;
}

describe("a commit whose outcome is unknown is decided by reading the request's own ids", () => {
  /** The stored state a check finds: majority-committed ids, and ids applied on the primary. */
  function storedState(driver: Fake, state: { majority: () => boolean; local: () => boolean }): Fake {
    return driver.on("sources.find", (filter, options) => {
      const ids = ((filter as { _id: { $in: string[] } })._id?.$in ?? []).map((_id) => ({ _id }));
      if (options === COMMITTED_IDS_OPTIONS) return state.majority() ? ids.slice(0, 1) : [];
      if (options === APPLIED_IDS_OPTIONS) return state.local() ? ids.slice(0, 1) : [];
      return [];
    });
  }

  it("MaxTimeMSExpired on commit (not retried by withTransaction) with the sources stored: the create stands", async () => {
    const driver = storedState(fake(), { majority: () => true, local: () => true });
    driver.commitFailures.push(commitMaxTime);
    const batch = [makeRecord(), makeRecord()];

    const created = await driver.store({ policy: true }).insertMany(batch);

    expect(created.map((r) => r.id)).toEqual(batch.map((r) => r.id));
    expect(driver.commits).toBe(1);
    expect(driver.callsTo("sources", "find").slice(-1)).toEqual([
      [sourcesByIdFilter(batch.map((r) => r.id)), COMMITTED_IDS_OPTIONS],
    ]);
    expect(COMMITTED_IDS_OPTIONS).toEqual({ projection: { _id: 1 }, limit: 1, readPreference: "primary" });
  });

  it("MaxTimeMSExpired on commit with nothing stored, not even on the primary: 503, the create is not stored", async () => {
    const driver = storedState(fake(), { majority: () => false, local: () => false });
    driver.commitFailures.push(commitMaxTime);

    const error = await failure(driver.store().insertMany([makeRecord()]));

    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(
      /^mongodb insert commit outcome unknown: MongoServerError: operation exceeded time limit; the create did not apply$/,
    );
    expect((error as Error).cause).toBeInstanceOf(MongoServerError);
  });

  it("applied on the primary, majority-committed a little later: read again with a backoff, then 201", async () => {
    let checks = 0;
    const driver = storedState(fake(), { majority: () => checks++ >= 2, local: () => true });
    driver.commitFailures.push(commitMaxTime);
    await expect(driver.store().insertMany([makeRecord()])).resolves.toHaveLength(1);
    expect(checks).toBe(3);
  });

  it("applied on the primary but never majority-committed in the bounded wait: 503", async () => {
    const driver = storedState(fake(), { majority: () => false, local: () => true });
    driver.commitFailures.push(commitMaxTime);
    const error = await failure(driver.store().insertMany([makeRecord()]));
    expect((error as Error).message).toContain(
      "the create is applied on the primary but not majority-committed after 4 reads",
    );
    expect(driver.callsTo("sources", "find").filter(([, o]) => o === COMMITTED_IDS_OPTIONS)).toHaveLength(4);
  });

  it("UnknownTransactionCommitResult after withTransaction's 120 s of commit retries: decided by reading", async () => {
    // The driver's clock (performance.now) jumps a minute per failed commit.
    let offset = 0;
    const now = performance.now.bind(performance);
    vi.spyOn(performance, "now").mockImplementation(() => now() + offset);
    const driver = storedState(fake(), { majority: () => true, local: () => true });
    for (let i = 0; i < 5; i++) {
      driver.commitFailures.push(() => {
        offset += 60_000;
        return commitNetwork();
      });
    }
    await expect(driver.store().insertMany([makeRecord()])).resolves.toHaveLength(1);
    expect(driver.commits).toBe(2); // at 0 s and 60 s; at 120 s the driver's deadline has passed
    expect(driver.attempts).toBe(1); // the commit is retried, never the transaction
  });

  /** Date.now, the store's clock for its budget (not the driver's), jumping `ms` at each failed commit. */
  function failedCommitsTake(ms: number): (fail: () => Error) => () => Error {
    let offset = 0;
    const now = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => now() + offset);
    return (fail) => () => {
      offset += ms;
      return fail();
    };
  }

  it("a commit whose outcome stays unknown is not tried again past the 10 s budget: decided by reading then", async () => {
    const slow = failedCommitsTake(6_000);
    const driver = storedState(fake(), { majority: () => true, local: () => true });
    for (let i = 0; i < 10; i++) driver.commitFailures.push(slow(commitNetwork));
    await expect(driver.store().insertMany([makeRecord()])).resolves.toHaveLength(1);
    expect(driver.commits).toBe(2); // at 0 s and 6 s; at 12 s the budget has passed (the driver's 120 s have not)
    expect(driver.attempts).toBe(1);
  });

  it("... and when the reads find nothing stored: 503, naming the commit's last failure and the budget", async () => {
    const slow = failedCommitsTake(6_000);
    const driver = storedState(fake(), { majority: () => false, local: () => false });
    for (let i = 0; i < 10; i++) driver.commitFailures.push(slow(commitNetwork));
    const error = await failure(driver.store().insertMany([makeRecord()]));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(
      /^mongodb insert commit outcome unknown: CommitRetriesStopped: MongoNetworkError: connection 9 to 10\.0\.0\.5:27017 closed \(the commit not tried again past the 10000 ms budget\)/,
    );
    expect(((error as Error).cause as Error).cause).toBeInstanceOf(MongoNetworkError);
    expect(driver.commits).toBe(2);
  });

  it("an attempt after a commit aborted for certain sends its own first commit, even past the budget: 201, no reads", async () => {
    const slow = failedCommitsTake(4_000);
    // Commit 1 at 0 s: outcome unknown (tried again); commit 2 at 4 s: aborted for certain; the
    // third attempt starts at 8 s, its work takes until 12 s, and its commit, past the budget,
    // is still sent (the earlier attempt's unknown outcome is not this one's).
    const driver = fake();
    driver.commitFailures.push(slow(commitNetwork), slow(commitWriteConflict));
    let inserts = 0;
    driver.on("sources.insertMany", () => {
      if (++inserts === 2) slow(() => new Error("unused"))();
      return { acknowledged: true };
    });
    await expect(driver.store().insertMany([makeRecord()])).resolves.toHaveLength(1);
    expect(driver.commits).toBe(3);
    expect(driver.attempts).toBe(2);
    expect(driver.callsTo("sources", "find")).toEqual([]);
  });

  it("commits aborted for certain again and again: no attempt starts past the budget, 503 with nothing stored", async () => {
    const slow = failedCommitsTake(6_000);
    const driver = fake();
    for (let i = 0; i < 10; i++) driver.commitFailures.push(slow(commitWriteConflict));
    const error = await failure(driver.store().insertMany([makeRecord()]));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toBe("mongodb insert transaction still failing after 10000 ms");
    expect(driver.commits).toBe(2); // at 0 s and 6 s
    expect(driver.attempts).toBe(3); // the third is refused before its work runs
    expect(driver.callsTo("sources", "find")).toEqual([]);
  });

  it("a commit aborted for certain (TransientTransactionError) runs the transaction again; no read is needed", async () => {
    const driver = fake();
    driver.commitFailures.push(commitWriteConflict);
    await expect(driver.store().insertMany([makeRecord()])).resolves.toHaveLength(1);
    expect(driver.attempts).toBe(2);
    expect(driver.callsTo("sources", "find")).toEqual([]);
  });

  it("each attempt of a create's transaction measures its overlays under an allowance of its own", async () => {
    const driver = fake();
    const record = makeRecord();
    const seen: OverlayAllowance[] = [];
    driver.on("sources.insertMany", () => {
      seen.push(conflictAllowances.of(record.geometry));
      return { acknowledged: true };
    });
    driver.commitFailures.push(commitWriteConflict);
    await expect(driver.store({ policy: true }).insertMany([record])).resolves.toHaveLength(1);
    expect(driver.attempts).toBe(2);
    expect(seen).toHaveLength(2);
    expect(seen[1]).not.toBe(seen[0]);
  });

  it("the reads themselves failing leaves the outcome unknown: 503", async () => {
    const driver = fake().on("sources.find", () => {
      throw new MongoNetworkError("connection 11 closed");
    });
    driver.commitFailures.push(commitMaxTime);
    await expect(driver.store().insertMany([makeRecord()])).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("a delete whose commit outcome is unknown: gone on a majority stands (true); still there on the primary is 503", async () => {
    const removed = {
      _id: "src_gone",
      account_id: "acct_a",
      alt_id: "gone",
      event_seq: 1,
      bbox: { min_x: 0, min_y: 0, max_x: 1, max_y: 1 },
    };
    const gone = fake()
      .on("sources.findOneAndDelete", () => removed)
      .on("sources.find", () => []);
    gone.commitFailures.push(commitMaxTime);
    await expect(gone.store({ policy: true }).deleteById("src_gone", "acct_a", change())).resolves.toBe(true);
    expect(gone.callsTo("sources", "find")).toEqual([[sourcesByIdFilter(["src_gone"]), COMMITTED_IDS_OPTIONS]]);

    const kept = fake()
      .on("sources.findOneAndDelete", () => removed)
      .on("sources.find", () => [{ _id: "src_gone" }]);
    kept.commitFailures.push(commitMaxTime);
    const error = await failure(kept.store({ policy: true }).deleteByAltId("gone", "acct_a", change()));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/^mongodb delete commit outcome unknown: .*; the delete did not apply$/);

    // Nothing found: nothing was written, and the answer is "not found" whatever the commit did.
    const none = fake();
    none.commitFailures.push(commitMaxTime);
    await expect(none.store().deleteById("src_x", null, change())).resolves.toBe(false);
    expect(none.callsTo("sources", "find")).toEqual([]);
  });

  it("a read-only transaction (a source's conflicts) keeps what it read: its commit wrote nothing", async () => {
    const driver = fake()
      .on("sources.findOne", () => ({ _id: "src_1" }))
      .on("conflict_pairs.find", () => []);
    driver.commitFailures.push(commitMaxTime);
    await expect(driver.store({ policy: true }).conflictsOf("src_1", "acct_a")).resolves.toEqual([]);
    expect(driver.callsTo("sources", "find")).toEqual([]);
  });

  describe("through the service", () => {
    let server: TestServer | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    async function post(state: { majority: boolean; local: boolean }): Promise<Response> {
      const driver = storedState(fake(), { majority: () => state.majority, local: () => state.local });
      driver.commitFailures.push(commitMaxTime);
      server = await startTestServer({}, { store: async () => driver.store({ policy: true }) });
      const token = await server.userToken("acct-commit");
      return server.request("POST", "/sources", { token, json: flat(unique("commit")) });
    }

    it("answers 201 with the record when the commit applied", async () => {
      const res = await post({ majority: true, local: true });
      expect(res.status).toBe(201);
      const body = (await res.json()) as { alt_id: string; id: string }[];
      expect(body).toHaveLength(1);
      expect(body[0].alt_id).toMatch(/^commit-/);
      expect(body[0].id).toMatch(/^src_/);
    });

    it("answers 503 unavailable when it did not", async () => {
      const res = await post({ majority: false, local: false });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ status: 503, code: "unavailable" });
    });
  });
});

// --- 5 and 6. setup: no DDL beyond createIndexes and createCollection; index builds in progress ---

describe("setup creates what is missing, drops nothing, and tolerates an index build in progress", () => {
  // `db` is the client handing out a database handle (the fake records it), not a command sent.
  const DDL_FREE = new Set(["db", "createIndexes", "createCollection", "find", "findOne", "command", "connect"]);

  it("the store's setup and the CLI's (protected-area layers) only create indexes and collections", async () => {
    const driver = fake();
    await driver.store().ready();
    const layers = new MongoProtectedAreaLayers(driver.client as unknown as MongoClient, "ledger");
    await layers.ready();
    const methods = new Set(driver.calls.map((c) => c.method));
    expect([...methods].filter((m) => !DDL_FREE.has(m))).toEqual([]);
    expect(driver.callsTo("db", "createCollection")).toEqual([
      ["protected_area_layers"],
      ["conflict_guards"],
      ["protected_area_layers"],
    ]);
  });

  it("prepareLedgerCollections names what each createIndexes left in place", async () => {
    const driver = fake().on("sources.createIndexes", (specs) => (specs as { name: string }[]).map((i) => i.name));
    const db = (driver.client as unknown as MongoClient).db("ledger");
    const prepared = await prepareLedgerCollections(db);
    expect(prepared.map((p) => p.collection)).toEqual([
      "sources",
      "source_events",
      "conflict_pairs",
      "source_boxes",
      "protected_areas",
      "protected_area_geometry_chunks",
    ]);
    expect(prepared[0].indexes).toEqual(SOURCE_INDEXES.map((i) => i.name));
  });

  it("a setup waiting on an index build: calls and ping answer 503 after setupWaitMs, one setup goes on, then calls are served", async () => {
    let finishBuild = () => {};
    const build = new Promise<string[]>((resolve) => {
      finishBuild = () => resolve(SOURCE_INDEXES.map((i) => String(i.name)));
    });
    const driver = fake().on("sources.createIndexes", () => build);
    const store = driver.store({ setupWaitMs: 30 });

    for (const call of [() => store.ping(), () => store.get("src_1", "acct_a")]) {
      const started = Date.now();
      const error = await failure(call());
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(
        /^mongodb setup still running after 30 ms \(an index build in progress\?\)/,
      );
      expect(Date.now() - started).toBeLessThan(1_000);
    }
    expect(driver.callsTo("sources", "createIndexes")).toHaveLength(1); // joined, not started again

    finishBuild();
    await expect(store.ping()).resolves.toBeUndefined();
    await expect(store.get("src_1", "acct_a")).resolves.toBeNull();
    expect(driver.callsTo("sources", "createIndexes")).toHaveLength(1);
  });

  it("a setup that fails after callers stopped waiting: the next wait names that failure (a bug included)", async () => {
    const driver = fake().on("client.connect", async () => {
      await delay(150);
      throw new TypeError("Cannot read properties of undefined (reading 'hosts')");
    });
    const store = driver.store({ setupWaitMs: 50 });
    const first = await failure(store.ping());
    expect((first as Error).message).toMatch(/it goes on, and calls are served once it is done$/);
    await delay(200); // the first setup has failed meanwhile, with nobody waiting for it
    const second = await failure(store.ping());
    expect(second).toBeInstanceOf(StoreUnavailableError);
    expect((second as Error).message).toMatch(
      /; the setup before it failed: TypeError: Cannot read properties of undefined \(reading 'hosts'\)$/,
    );
    expect((second as Error).cause).toBeInstanceOf(TypeError);
    expect(driver.callsTo("client", "connect")).toHaveLength(2);
  });

  it("the service's start waits for setup at most setupWaitMs too: a server that never answers does not hold it", async () => {
    // Accepts connections and never answers: the driver waits out its 5 s server selection.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    let opened: MongoSourceStore | undefined;
    try {
      const started = Date.now();
      opened = await openMongoStore({
        uri: `mongodb://127.0.0.1:${port}/?directConnection=true`,
        database: "ledger",
        setupWaitMs: 100,
      });
      expect(Date.now() - started).toBeLessThan(2_000);
      const error = await failure(opened.ping());
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(/^mongodb setup still running after 100 ms/);
      expect(sockets.length).toBeGreaterThan(0);
    } finally {
      await opened?.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it.each([
    [
      "IndexBuildAlreadyInProgress",
      () => serverError(285, "IndexBuildAlreadyInProgress", "Index build already in progress"),
    ],
    ["IndexBuildAborted", () => serverError(276, "IndexBuildAborted", "Index build aborted due to step down")],
    [
      "the socket timeout while createIndexes waits",
      () => new MongoNetworkTimeoutError("connection 3 to 10.0.0.5:27017 timed out"),
    ],
  ])("%s at setup: 503, and the next call runs setup again", async (_label, error) => {
    let failures = 1;
    const driver = fake().on("sources.createIndexes", () => {
      if (failures-- > 0) throw error();
      return [];
    });
    const store = driver.store();
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).resolves.toBeUndefined();
    expect(driver.callsTo("sources", "createIndexes")).toHaveLength(2);
  });

  describe("npm run cli -- mongodb indexes", () => {
    async function cli(argv: string[], env: Record<string, string>) {
      let stdout = "";
      let stderr = "";
      const code = await runCli(argv, {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text) },
        env,
      });
      return { code, stdout, stderr };
    }

    it("with MongoDB unreachable: exit 2, the store is unavailable", async () => {
      const uri = `mongodb://127.0.0.1:${await deadPort()}/?serverSelectionTimeoutMS=300`;
      const { code, stdout, stderr } = await cli(["mongodb", "indexes"], { LEDGER_STORE: "mongodb", MONGODB_URI: uri });
      expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
      expect(stderr).toMatch(/^error: the store is unavailable: mongodb setup failed: MongoServerSelectionError/);
    });

    it("without LEDGER_STORE=mongodb, or without a command: exit 1", async () => {
      const sqlite = await cli(["mongodb", "indexes"], { LEDGER_STORE: "sqlite" });
      expect(sqlite.code).toBe(1);
      expect(sqlite.stderr).toContain("mongodb indexes needs LEDGER_STORE=mongodb");
      const bare = await cli(["mongodb"], { LEDGER_STORE: "mongodb", MONGODB_URI: "mongodb://127.0.0.1:1/" });
      expect(bare).toMatchObject({ code: 1, stdout: "" });
      expect(bare.stderr).toContain("mongodb needs a command: indexes");
      const help = await cli(["--help"], {});
      expect(help.stdout).toContain("mongodb indexes");
    });
  });
});
