import { create } from "@bufbuild/protobuf";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";

/**
 * When a refused caller may try again, in the forms every protocol's clients read: `retry-after`
 * metadata (gRPC trailers, Connect headers; REST copies it to its Retry-After header) and the
 * standard `google.rpc.RetryInfo` error detail that gRPC tooling decodes.
 */
export function retryHint(seconds: number) {
  return {
    metadata: { "retry-after": String(seconds) },
    details: [{ desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryDelay: { seconds: BigInt(seconds) } }) }],
  };
}
