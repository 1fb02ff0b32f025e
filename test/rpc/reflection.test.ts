/**
 * The reflection answers (src/rpc/reflection.ts, docs/api.md §9.9) without a network: which files
 * a request gets, each dependency once per stream, and NOT_FOUND error responses.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import {
  ServerReflectionRequestSchema as RequestV1Schema,
  ServerReflection as ServerReflectionV1,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflectionRequestSchema as RequestV1alphaSchema,
  ServerReflection as ServerReflectionV1alpha,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { SandboxSourceLedgerService, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import {
  createReflection,
  createReflectionServices,
  type ReflectionAnswer,
  type ReflectionQuestion,
} from "../../src/rpc/reflection.js";

const SERVICES = [SourceLedgerService, SandboxSourceLedgerService, Health, ServerReflectionV1, ServerReflectionV1alpha];
const LEDGER_FILE = "sourceledger/v2/source_ledger.proto";
const TIMESTAMP_FILE = "google/protobuf/timestamp.proto";

const reflection = createReflection(SERVICES, [file_google_rpc_error_details]);

/** The names of the files an answer carries, in order (it must be a file_descriptor_response). */
function fileNames(answer: ReflectionAnswer): string[] {
  if (answer.case !== "fileDescriptorResponse") throw new Error(`expected files, got ${JSON.stringify(answer)}`);
  return answer.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);
}

const symbol = (value: string): ReflectionQuestion => ({ case: "fileContainingSymbol", value });

describe("reflection answers", () => {
  it("list_services names both ledgers, health and both reflections", () => {
    expect(reflection.answer({ case: "listServices", value: "" }, new Set())).toEqual({
      case: "listServicesResponse",
      value: {
        service: [
          { name: "sourceledger.v2.SourceLedgerService" },
          { name: "sourceledger.v2.SandboxSourceLedgerService" },
          { name: "grpc.health.v1.Health" },
          { name: "grpc.reflection.v1.ServerReflection" },
          { name: "grpc.reflection.v1alpha.ServerReflection" },
        ],
      },
    });
  });

  it("file_containing_symbol finds services, methods, messages, enums, nested types and fields", () => {
    for (const [name, file] of [
      ["sourceledger.v2.SourceLedgerService", LEDGER_FILE],
      ["sourceledger.v2.SandboxSourceLedgerService.GetSource", LEDGER_FILE],
      ["sourceledger.v2.Source", LEDGER_FILE],
      ["sourceledger.v2.SourceType", LEDGER_FILE],
      ["sourceledger.v2.Source.geometry", LEDGER_FILE],
      ["grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"],
      ["grpc.health.v1.Health.Watch", "grpc/health/v1/health.proto"],
      ["grpc.reflection.v1alpha.ServerReflectionRequest", "grpc/reflection/v1alpha/reflection.proto"],
      ["google.protobuf.Timestamp", TIMESTAMP_FILE],
      ["google.rpc.BadRequest", "google/rpc/error_details.proto"],
    ]) {
      expect(fileNames(reflection.answer(symbol(name), new Set()))[0], name).toBe(file);
    }
  });

  it("a file comes with its transitive dependencies, each sent once per stream", () => {
    const sent = new Set<string>();
    expect(fileNames(reflection.answer(symbol("sourceledger.v2.SourceLedgerService"), sent))).toEqual([
      LEDGER_FILE,
      TIMESTAMP_FILE,
    ]);
    // The same file again: itself (it was asked for), not its dependency.
    expect(fileNames(reflection.answer(symbol("sourceledger.v2.Source"), sent))).toEqual([LEDGER_FILE]);
    expect(fileNames(reflection.answer({ case: "fileByFilename", value: TIMESTAMP_FILE }, sent))).toEqual([
      TIMESTAMP_FILE,
    ]);
    // error_details.proto imports duration.proto, not sent yet in this stream.
    expect(fileNames(reflection.answer(symbol("google.rpc.RetryInfo"), sent))).toEqual([
      "google/rpc/error_details.proto",
      "google/protobuf/duration.proto",
    ]);
    // Another stream starts afresh.
    expect(fileNames(reflection.answer(symbol("sourceledger.v2.Source"), new Set()))).toEqual([
      LEDGER_FILE,
      TIMESTAMP_FILE,
    ]);
  });

  it("the files are the FileDescriptorProtos the server was generated from", () => {
    const [ledger] = (() => {
      const answer = reflection.answer({ case: "fileByFilename", value: LEDGER_FILE }, new Set());
      if (answer.case !== "fileDescriptorResponse") throw new Error("expected files");
      return answer.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
    })();
    expect(ledger.package).toBe("sourceledger.v2");
    expect(ledger.dependency).toEqual([TIMESTAMP_FILE]);
    expect(ledger.service.map((service) => service.name)).toEqual([
      "SourceLedgerService",
      "SandboxSourceLedgerService",
    ]);
    const getSource = ledger.service[0].method.find((method) => method.name === "GetSource");
    expect(getSource?.inputType).toBe(".sourceledger.v2.GetSourceRequest");
  });

  it("an unknown symbol, file, extension or type → error_response NOT_FOUND (5) with a message", () => {
    for (const question of [
      symbol("sourceledger.v2.Nope"),
      symbol("sourceledger.v2.SourceLedgerService.Nope"),
      symbol("Nope"),
      { case: "fileByFilename", value: "nope.proto" },
      { case: "fileContainingExtension", value: { containingType: "sourceledger.v2.Source", extensionNumber: 100 } },
      { case: "fileContainingExtension", value: { containingType: "nope.Nope", extensionNumber: 1 } },
      { case: "allExtensionNumbersOfType", value: "nope.Nope" },
    ] satisfies ReflectionQuestion[]) {
      const answer = reflection.answer(question, new Set());
      expect(answer.case, JSON.stringify(question)).toBe("errorResponse");
      if (answer.case === "errorResponse") {
        expect(answer.value.errorCode).toBe(5);
        expect(answer.value.errorMessage).toMatch(/not found: /);
      }
    }
  });

  it("all_extension_numbers_of_type of a known message: none (the API declares no extensions)", () => {
    expect(
      reflection.answer({ case: "allExtensionNumbersOfType", value: "sourceledger.v2.Source" }, new Set()),
    ).toEqual({
      case: "allExtensionNumbersResponse",
      value: { baseTypeName: "sourceledger.v2.Source", extensionNumber: [] },
    });
  });

  it("a request that asks nothing → INVALID_ARGUMENT (3)", () => {
    const answer = reflection.answer({ case: undefined }, new Set());
    expect(answer.case === "errorResponse" && answer.value.errorCode).toBe(3);
  });
});

describe("reflection services (v1 and v1alpha)", () => {
  const services = createReflectionServices(reflection);

  // Reflection reads nothing of the handler context.
  const context = {} as HandlerContext;

  async function* from<T>(items: T[]): AsyncIterable<T> {
    yield* items;
  }

  it("v1: one answer per request, in order, echoing host and request; files once per stream", async () => {
    const requests = [
      create(RequestV1Schema, {
        host: "h",
        messageRequest: { case: "fileContainingSymbol", value: "sourceledger.v2.Source" },
      }),
      create(RequestV1Schema, {
        messageRequest: { case: "fileContainingSymbol", value: "sourceledger.v2.SourceType" },
      }),
      create(RequestV1Schema, { messageRequest: { case: "fileContainingSymbol", value: "nope.Nope" } }),
    ];
    const answers = [];
    for await (const answer of services.v1.serverReflectionInfo(from(requests), context)) answers.push(answer);
    expect(answers.map((answer) => answer.$typeName)).toEqual(
      Array(3).fill("grpc.reflection.v1.ServerReflectionResponse"),
    );
    expect(answers[0].validHost).toBe("h");
    expect(answers[0].originalRequest).toEqual(requests[0]);
    expect(fileNames(answers[0].messageResponse as ReflectionAnswer)).toEqual([LEDGER_FILE, TIMESTAMP_FILE]);
    expect(fileNames(answers[1].messageResponse as ReflectionAnswer)).toEqual([LEDGER_FILE]);
    expect(answers[2].messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
  });

  it("v1alpha: the same answers under its own package", async () => {
    const requests = [create(RequestV1alphaSchema, { messageRequest: { case: "listServices", value: "*" } })];
    const answers = [];
    for await (const answer of services.v1alpha.serverReflectionInfo(from(requests), context)) answers.push(answer);
    expect(answers).toHaveLength(1);
    expect(answers[0].$typeName).toBe("grpc.reflection.v1alpha.ServerReflectionResponse");
    expect(answers[0].messageResponse?.case).toBe("listServicesResponse");
  });
});
