/**
 * A small fake of the `mongodb` driver's surface the store uses, shared by the MongoDB unit tests
 * (no server can run here): collections answer from handlers keyed "sources.find", "db.command", …
 * or with a harmless default, and record every call. Each test file supplies the sessions
 * (`startSession`): a scripted withTransaction, or the driver's own ClientSession.
 */
import { createServer } from "node:net";
import { type MongoClient, MongoServerError } from "mongodb";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { MongoSourceStore, type MongoSourceStoreOptions } from "../../src/store/mongodb/index.js";

export type Handler = (...args: unknown[]) => unknown;

export interface Call {
  target: string;
  method: string;
  args: unknown[];
}

export abstract class FakeMongo {
  readonly calls: Call[] = [];
  readonly handlers = new Map<string, Handler>();
  /**
   * Whether the history fill's markers read as set (a ledger filled already): those reads are then
   * answered here and not recorded, so the other tests see only their own calls.
   */
  filled = true;

  /** The session `client.startSession()` hands out. */
  protected abstract startSession(): unknown;

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

  protected answer(target: string, method: string, args: unknown[], fallback: unknown): Promise<unknown> {
    const marker = (args[0] as { _id?: unknown } | undefined)?._id;
    if (this.filled && target === "settings" && method === "findOne" && String(marker).startsWith("history_")) {
      return Promise.resolve(args[0]);
    }
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
      updateOne: call("updateOne", { acknowledged: true }),
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
    startSession: () => this.startSession(),
    close: () => this.answer("client", "close", [], undefined),
  };

  /** A store over this fake; `policy` adds the conflict policy. */
  store(options: { policy?: boolean } & Omit<MongoSourceStoreOptions, "conflictPolicy"> = {}): MongoSourceStore {
    const { policy, ...rest } = options;
    return new MongoSourceStore(this.client as unknown as MongoClient, "ledger", {
      ...(policy ? { conflictPolicy } : {}),
      ...rest,
    });
  }
}

/** What the driver makes of a server reply with `ok: 0` (MongoServerError copies every field). */
export function serverError(
  code: number,
  codeName: string,
  errmsg: string,
  extra: Record<string, unknown> = {},
): MongoServerError {
  return new MongoServerError({ ok: 0, errmsg, code, codeName, ...extra });
}

/** The promise's rejection; fails the test when it resolves. */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

/** A local port nobody listens on (bound, then released). */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}
