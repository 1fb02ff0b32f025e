import type { Message } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import type { Interceptor } from "@connectrpc/connect";
import { type Source, SourceSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { encodeGeometryFieldData } from "./geometry-wire.js";

/**
 * Whether a Connect-served call answers in protobuf binary, from its request's Content-Type:
 * gRPC (`application/grpc`, `+proto`), gRPC-Web (`application/grpc-web`, `+proto`, `-text`) and
 * Connect (`application/proto`, `application/connect+proto`). JSON codecs (`+json`,
 * `application/json`) and in-process REST calls (no Content-Type header reaches them) answer false.
 *
 * Only binary answers may carry a pre-encoded geometry: protobuf-es writes unknown fields to
 * binary verbatim, but JSON serialisation drops them.
 */
const BINARY_CONTENT_TYPE =
  /^application\/(?:(?:grpc|grpc-web|grpc-web-text)(?:\+proto)?|proto|connect\+proto)\s*(?:;|$)/i;

export function answersInProtobufBinary(requestHeader: Headers): boolean {
  const contentType = requestHeader.get("content-type");
  return contentType !== null && BINARY_CONTENT_TYPE.test(contentType);
}

/** `Source.geometry`'s field number (proto/sourceledger/v2/source_ledger.proto). */
const GEOMETRY_FIELD = SourceSchema.field.geometry.number;

/** The sources an answer carries: the `sources` of Create/List, the `source` of Get. */
function sourcesOf(message: Message): Source[] {
  const answer = message as { sources?: unknown; source?: unknown };
  if (Array.isArray(answer.sources)) return answer.sources as Source[];
  const one = answer.source as Source | undefined;
  return one?.$typeName === SourceSchema.typeName ? [one] : [];
}

/**
 * The last step before Connect serialises an answer in protobuf binary (gRPC, gRPC-Web, Connect
 * `+proto`): each source's geometry is written to its finished wire bytes here, at once, and
 * handed to protobuf-es as the unknown field it writes verbatim, instead of a Geometry message it
 * would encode one double at a time. JSON answers are left alone (JSON serialisation drops unknown
 * fields). Installed right inside the error shield on the Connect routes only, so the handler and
 * every other interceptor see ordinary messages; the in-process REST caller never runs it.
 */
export const binaryGeometryAnswers: Interceptor = (next) => async (req) => {
  const res = await next(req);
  if (res.stream || !answersInProtobufBinary(req.header)) return res;
  for (const source of sourcesOf(res.message)) {
    if (source.geometry === undefined) continue;
    const data = encodeGeometryFieldData(source.geometry);
    source.geometry = undefined;
    source.$unknown = [...(source.$unknown ?? []), { no: GEOMETRY_FIELD, wireType: WireType.LengthDelimited, data }];
  }
  return res;
};
