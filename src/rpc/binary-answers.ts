import type { Message } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import type { Interceptor } from "@connectrpc/connect";
import { type Source, SourceSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { encodeSourcesFieldData } from "./source-wire.js";

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

/**
 * The last step before an answer is serialised in protobuf binary (gRPC on either path, gRPC-Web,
 * Connect `+proto`): each Source of a Create, List, Search or Get answer is written to its finished
 * wire bytes here (source-wire.ts) and handed to protobuf-es as the unknown field it writes
 * verbatim, in place of the Source message it would encode reflectively, one field and one double
 * at a time. The answer decodes to the same message; only its own fields' order changes (a page's
 * `next_page_token` comes before its sources). JSON answers are left alone (JSON serialisation
 * drops unknown fields). Installed right inside the error shield, so the handler and every other
 * interceptor see ordinary messages; the in-process REST caller never runs it.
 */
export const preEncodedSourceAnswers: Interceptor = (next) => async (req) => {
  const res = await next(req);
  if (res.stream || !answersInProtobufBinary(req.header)) return res;
  const message = res.message as Message & Record<string, unknown>;
  for (const field of res.method.output.fields) {
    if (field.message?.typeName !== SourceSchema.typeName) continue;
    const value = message[field.localName];
    const sources = field.fieldKind === "list" ? (value as Source[]) : value === undefined ? [] : [value as Source];
    if (sources.length === 0) continue;
    const encoded = encodeSourcesFieldData(sources).map((data) => ({
      no: field.number,
      wireType: WireType.LengthDelimited,
      data,
    }));
    message[field.localName] = field.fieldKind === "list" ? [] : undefined;
    message.$unknown = [...(message.$unknown ?? []), ...encoded];
  }
  return res;
};
