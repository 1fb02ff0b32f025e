/**
 * Whether a Connect-served call answers in protobuf binary, from its request's Content-Type:
 * gRPC (`application/grpc`, `+proto`), gRPC-Web (`application/grpc-web`, `+proto`, `-text`) and
 * Connect (`application/proto`, `application/connect+proto`). JSON codecs (`+json`,
 * `application/json`) and in-process REST calls (no Content-Type header reaches them) answer false.
 *
 * Only binary answers may carry a pre-encoded geometry (see `toProtoSource`): protobuf-es writes
 * unknown fields to binary verbatim, but JSON serialisation drops them.
 */
const BINARY_CONTENT_TYPE =
  /^application\/(?:(?:grpc|grpc-web|grpc-web-text)(?:\+proto)?|proto|connect\+proto)\s*(?:;|$)/i;

export function answersInProtobufBinary(requestHeader: Headers): boolean {
  const contentType = requestHeader.get("content-type");
  return contentType !== null && BINARY_CONTENT_TYPE.test(contentType);
}
