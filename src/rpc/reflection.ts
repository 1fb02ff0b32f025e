import { create, createFileRegistry, type DescFile, type DescService, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflectionResponseSchema as ResponseV1Schema,
  type ServerReflection as ServerReflectionV1,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflectionResponseSchema as ResponseV1alphaSchema,
  type ServerReflection as ServerReflectionV1alpha,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** What a reflection request asks (the `message_request` oneof; v1 and v1alpha alike). */
export type ReflectionQuestion =
  | { case: "fileByFilename"; value: string }
  | { case: "fileContainingSymbol"; value: string }
  | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  | { case: "allExtensionNumbersOfType"; value: string }
  | { case: "listServices"; value: string }
  | { case: undefined; value?: undefined };

/** The answer (the `message_response` oneof; v1 and v1alpha alike). */
export type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

export interface Reflection {
  /**
   * Answers one request of a stream. `sent` holds the files this stream has sent already: a file
   * asked for is always sent, each of its transitive dependencies only once per stream.
   */
  answer(question: ReflectionQuestion, sent: Set<string>): ReflectionAnswer;
}

const notFound = (errorMessage: string): ReflectionAnswer => ({
  case: "errorResponse",
  value: { errorCode: Code.NotFound, errorMessage },
});

/**
 * gRPC server reflection over the files that define `services` (and `extraFiles`, e.g. the
 * error-detail types), with their transitive imports: the descriptors protobuf-es generated, so
 * what a client learns is exactly what the server serves.
 */
export function createReflection(services: readonly DescService[], extraFiles: readonly DescFile[] = []): Reflection {
  const files = [...new Set([...services.map((service) => service.file), ...extraFiles])];
  const registry = createFileRegistry(
    ...files.map((file) =>
      createFileRegistry(file.proto, (name) => file.dependencies.find((dep) => dep.proto.name === name)),
    ),
  );
  const serviceNames = services.map((service) => ({ name: service.typeName }));
  const encoded = new Map<string, Uint8Array>();
  const bytesOf = (file: DescFile): Uint8Array => {
    let bytes = encoded.get(file.proto.name);
    if (bytes === undefined) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      encoded.set(file.proto.name, bytes);
    }
    return bytes;
  };

  /** The file, then its imports breadth-first, leaving out those this stream has sent already. */
  const withDependencies = (file: DescFile, sent: Set<string>): ReflectionAnswer => {
    const fileDescriptorProto: Uint8Array[] = [];
    const queue = [file];
    const visited = new Set<string>();
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const name = next.proto.name;
      if (visited.has(name)) continue;
      visited.add(name);
      if (next === file || !sent.has(name)) {
        sent.add(name);
        fileDescriptorProto.push(bytesOf(next));
      }
      queue.push(...next.dependencies);
    }
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto } };
  };

  /** The file declaring a type, a service, a method (`pkg.Service.Method`) or a field (`pkg.Message.field`). */
  const fileOfSymbol = (symbol: string): DescFile | undefined => {
    const type = registry.get(symbol);
    if (type !== undefined) return type.file;
    const dot = symbol.lastIndexOf(".");
    if (dot < 0) return undefined;
    const [parent, member] = [symbol.slice(0, dot), symbol.slice(dot + 1)];
    const service = registry.getService(parent);
    if (service?.methods.some((method) => method.name === member)) return service.file;
    const message = registry.getMessage(parent);
    if (message?.fields.some((field) => field.name === member)) return message.file;
    return undefined;
  };

  return {
    answer(question, sent) {
      switch (question.case) {
        case "listServices":
          return { case: "listServicesResponse", value: { service: serviceNames } };
        case "fileByFilename": {
          const file = registry.getFile(question.value);
          return file ? withDependencies(file, sent) : notFound(`file not found: ${question.value}`);
        }
        case "fileContainingSymbol": {
          const file = fileOfSymbol(question.value);
          return file ? withDependencies(file, sent) : notFound(`symbol not found: ${question.value}`);
        }
        case "fileContainingExtension": {
          const { containingType, extensionNumber } = question.value;
          const extendee = registry.getMessage(containingType);
          const extension = extendee && registry.getExtensionFor(extendee, extensionNumber);
          return extension
            ? withDependencies(extension.file, sent)
            : notFound(`extension not found: ${containingType} ${extensionNumber}`);
        }
        case "allExtensionNumbersOfType": {
          const extendee = registry.getMessage(question.value);
          if (extendee === undefined) return notFound(`type not found: ${question.value}`);
          const extensionNumber = [...registry].flatMap((type) =>
            type.kind === "extension" && type.extendee.typeName === extendee.typeName ? [type.number] : [],
          );
          return { case: "allExtensionNumbersResponse", value: { baseTypeName: extendee.typeName, extensionNumber } };
        }
        default:
          return {
            case: "errorResponse",
            value: { errorCode: Code.InvalidArgument, errorMessage: "the request asks nothing (no message_request)" },
          };
      }
    },
  };
}

/**
 * `grpc.reflection.v1` and `grpc.reflection.v1alpha` (the same messages under two package names):
 * one answer per request, in order, until the client closes its side. No token needed (§9.9).
 */
export function createReflectionServices(reflection: Reflection): {
  v1: ServiceImpl<typeof ServerReflectionV1>;
  v1alpha: ServiceImpl<typeof ServerReflectionV1alpha>;
} {
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) {
          yield create(ResponseV1Schema, {
            validHost: request.host,
            originalRequest: request,
            messageResponse: reflection.answer(request.messageRequest, sent),
          });
        }
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) {
          yield create(ResponseV1alphaSchema, {
            validHost: request.host,
            originalRequest: request,
            messageResponse: reflection.answer(request.messageRequest, sent),
          });
        }
      },
    },
  };
}
