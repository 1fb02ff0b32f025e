import { create, type DescMethodUnary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type Interceptor,
  type UnaryResponse,
} from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  GetSourceRequestSchema,
  GetSourceResponseSchema,
  ListSourcesRequestSchema,
  SandboxSourceLedgerService,
  SourceLedgerService,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { createInProcessCaller, readsOverSeveralTurns } from "../../src/rpc/invoke.js";

const seenKey = createContextKey<string[]>([], { description: "seen" });
const methods = SourceLedgerService.method;

function recording(name: string, log: string[]): Interceptor {
  return (next) => async (req) => {
    log.push(`${name} in ${req.method.name}`);
    const res = await next(req);
    log.push(`${name} out`);
    return res;
  };
}

const call = () => ({
  headers: new Headers({ authorization: "Bearer abc" }),
  url: "/sources/src_1",
  requestMethod: "GET",
});

describe("in-process caller", () => {
  it("runs the interceptors outermost-first around the implementation and hands it the request's context", async () => {
    const log: string[] = [];
    let context: HandlerContext | undefined;
    const caller = createInProcessCaller(
      SourceLedgerService,
      {
        async getSource(req, ctx) {
          log.push(`impl ${req.id}`);
          context = ctx;
          ctx.values.get(seenKey).push("impl");
          return { source: { id: req.id, altId: "field-7" } };
        },
      },
      [recording("outer", log), recording("inner", log)],
    );
    const values = createContextValues();
    values.set(seenKey, []);
    const output = await caller(methods.getSource, create(GetSourceRequestSchema, { id: "src_1" }), {
      ...call(),
      values,
    });

    expect(log).toEqual(["outer in GetSource", "inner in GetSource", "impl src_1", "inner out", "outer out"]);
    // A partial answer comes back as a full message, as Connect's own invoker makes it.
    expect(output.$typeName).toBe(GetSourceResponseSchema.typeName);
    expect(output.source?.id).toBe("src_1");
    expect(output.source?.altId).toBe("field-7");
    expect(output.source?.tags).toEqual([]);
    expect(values.get(seenKey)).toEqual(["impl"]);
    expect(context?.requestHeader.get("authorization")).toBe("Bearer abc");
    expect(context?.requestMethod).toBe("GET");
    expect(context?.url).toBe("/sources/src_1");
    expect(context?.method.name).toBe("GetSource");
    expect(context?.service.typeName).toBe(SourceLedgerService.typeName);
    expect(context?.protocolName).toBe("rest");
    expect(context?.signal.aborted).toBe(false);
    expect(context?.timeoutMs()).toBeUndefined();
  });

  it("lets an interceptor refuse the call before the implementation runs, with its own error", async () => {
    let ran = false;
    const refuse: Interceptor = () => async () => {
      throw new ConnectError("token lacks scope read:sources", Code.PermissionDenied);
    };
    const caller = createInProcessCaller(
      SourceLedgerService,
      {
        async listSources() {
          ran = true;
          return { sources: [] };
        },
      },
      [refuse],
    );
    const failure = await caller(methods.listSources, create(ListSourcesRequestSchema), call()).catch(
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(ConnectError);
    expect((failure as ConnectError).code).toBe(Code.PermissionDenied);
    expect((failure as ConnectError).rawMessage).toBe("token lacks scope read:sources");
    expect(ran).toBe(false);
  });

  it("gives an interceptor that swaps the context values the swapped ones, and each call its own", async () => {
    const key = createContextKey<string>("unset", { description: "principal" });
    const setPrincipal: Interceptor = (next) => async (req) => {
      req.contextValues.set(key, req.header.get("authorization") ?? "none");
      return next(req);
    };
    const caller = createInProcessCaller(
      SourceLedgerService,
      { getSource: async (req, ctx) => ({ source: { id: `${req.id}:${ctx.values.get(key)}` } }) },
      [setPrincipal],
    );
    const [a, b] = await Promise.all([
      caller(methods.getSource, create(GetSourceRequestSchema, { id: "a" }), {
        ...call(),
        headers: new Headers({ authorization: "one" }),
      }),
      caller(methods.getSource, create(GetSourceRequestSchema, { id: "b" }), {
        ...call(),
        headers: new Headers({ authorization: "two" }),
      }),
    ]);
    expect(a.source?.id).toBe("a:one");
    expect(b.source?.id).toBe("b:two");
  });

  it("hands the interceptors an answer whose header and trailer are the context's, read through accessors shared by every call", async () => {
    const answers: UnaryResponse[] = [];
    const capture: Interceptor = (next) => async (req) => {
      const res = await next(req);
      answers.push(res as UnaryResponse);
      return res;
    };
    const caller = createInProcessCaller(
      SourceLedgerService,
      {
        async getSource(req, ctx) {
          if (req.id === "with-metadata") {
            ctx.responseHeader.set("x-note", "header");
            ctx.responseTrailer.set("x-note", "trailer");
          }
          return { source: { id: req.id } };
        },
      },
      [capture],
    );
    await caller(methods.getSource, create(GetSourceRequestSchema, { id: "with-metadata" }), call());
    await caller(methods.getSource, create(GetSourceRequestSchema, { id: "plain" }), call());

    const [withMetadata, plain] = answers;
    expect(withMetadata.stream).toBe(false);
    expect(withMetadata.service.typeName).toBe(SourceLedgerService.typeName);
    expect(withMetadata.method.name).toBe("GetSource");
    expect((withMetadata.message as { source?: { id: string } }).source?.id).toBe("with-metadata");
    expect(withMetadata.header.get("x-note")).toBe("header");
    expect(withMetadata.trailer.get("x-note")).toBe("trailer");
    expect([...plain.header.keys()]).toEqual([]);
    expect([...plain.trailer.keys()]).toEqual([]);
    // No getter made per call: an answer built as an object literal with `get header() {…}` kept
    // every call's objects through each scavenge (docs/benchmarks.md).
    for (const name of ["header", "trailer"]) {
      expect(Object.getOwnPropertyDescriptor(withMetadata, name)).toBeUndefined();
      const shared = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(withMetadata), name)?.get;
      expect(shared).toBeTypeOf("function");
      expect(Object.getOwnPropertyDescriptor(Object.getPrototypeOf(plain), name)?.get).toBe(shared);
    }
  });

  it("answers a method the implementation lacks with Connect's unimplemented error", async () => {
    const caller = createInProcessCaller(SourceLedgerService, {}, []);
    const failure = await caller(methods.getSource, create(GetSourceRequestSchema, { id: "x" }), call()).catch(
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(ConnectError);
    expect((failure as ConnectError).code).toBe(Code.Unimplemented);
  });

  it("gives a signal of its own only to the calls whose page may read over several turns", () => {
    for (const service of [SourceLedgerService, SandboxSourceLedgerService]) {
      const own = service.methods
        .filter((m) => m.methodKind === "unary" && readsOverSeveralTurns(m as DescMethodUnary))
        .map((m) => m.name);
      expect(own).toEqual(["ListSources", "SearchSources"]);
    }
  });
});
