import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { answerEncodingsListed, COMPRESS_MIN_BYTES, RPC_COMPRESSIONS } from "../../src/rpc/compression.js";

/** A page-like payload: a random walk of 7-decimal doubles, as stored coordinates are. */
function coordinates(count: number, seed: number): Uint8Array {
  const values = new Float64Array(count);
  let state = seed;
  let value = -93;
  for (let i = 0; i < count; i++) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    value += Math.round((state / 2 ** 31 - 0.5) * 2e4) / 1e7;
    values[i] = value;
  }
  return new Uint8Array(values.buffer);
}

const [gzip, brotli] = RPC_COMPRESSIONS;

describe("RPC answer compression", () => {
  it("offers gzip then br; the threshold below which nothing is compressed is 64 KiB", () => {
    expect(RPC_COMPRESSIONS.map((c) => c.name)).toEqual(["gzip", "br"]);
    expect(COMPRESS_MIN_BYTES).toBe(65_536);
  });

  it("gzip at level 1 and br at quality 4: the bytes zlib makes at those settings, read back exactly", async () => {
    const page = coordinates(40_000, 7);
    const gzipped = await gzip.compress(page);
    expect(Buffer.from(gzipped)).toEqual(gzipSync(page, { level: 1 }));
    expect(new Uint8Array(gunzipSync(gzipped))).toEqual(page);
    const brotlied = await brotli.compress(page);
    expect(Buffer.from(brotlied)).toEqual(
      brotliCompressSync(page, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }),
    );
    expect(new Uint8Array(brotliDecompressSync(brotlied))).toEqual(page);
    expect(gzipped.buffer).toBeInstanceOf(ArrayBuffer);
    expect(brotlied.buffer).toBeInstanceOf(ArrayBuffer);
  });

  it("requests decompress as connect-node does: the size limit after decompression and bad data", async () => {
    const page = coordinates(20_000, 3);
    expect(Buffer.from(await gzip.decompress(gzipSync(page), page.length))).toEqual(Buffer.from(page));
    const tooLarge = await gzip.decompress(gzipSync(page), page.length - 1).catch((e: unknown) => e);
    expect(tooLarge).toBeInstanceOf(ConnectError);
    expect((tooLarge as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((tooLarge as ConnectError).rawMessage).toBe(
      `message is larger than configured readMaxBytes ${page.length - 1} after decompression`,
    );
    // Truncated data is zlib's Z_BUF_ERROR, which connect-node answers as internal: a 4xx here.
    for (const [compression, whole] of [
      [gzip, gzipSync(page)],
      [brotli, brotliCompressSync(page)],
    ] as const) {
      const truncated = await compression.decompress(whole.subarray(0, 40), 1 << 20).catch((e: unknown) => e);
      expect(truncated).toBeInstanceOf(ConnectError);
      expect((truncated as ConnectError).code).toBe(Code.InvalidArgument);
      expect((truncated as ConnectError).rawMessage).toBe(`the request message is not valid ${compression.name} data`);
    }
    // Not the data's fault (a limit zlib refuses): stays connect-node's internal error.
    const refused = await gzip.decompress(gzipSync(page), 2 ** 60).catch((e: unknown) => e);
    expect((refused as ConnectError).code).toBe(Code.Internal);
    expect((refused as ConnectError).rawMessage).toBe("decompression failed");
    const corrupt = await gzip.decompress(new Uint8Array([1, 2, 3, 4, 5]), 1024).catch((e: unknown) => e);
    expect((corrupt as ConnectError).code).toBe(Code.InvalidArgument);
    expect((corrupt as ConnectError).rawMessage).toBe("the request message is not valid gzip data");
    expect((await brotli.decompress(new Uint8Array(0), 10)).length).toBe(0);
  });
});

describe("which client list an answer's encoding is chosen from", () => {
  it("over gRPC the request's own encoding, if the client lists it or lists nothing; over Connect and gRPC-Web the client's list", () => {
    for (const grpc of ["application/grpc", "application/grpc+proto", "application/grpc+json; charset=utf-8"]) {
      // An uncompressed request: nothing, whatever the list (the answer follows the request).
      expect(answerEncodingsListed(grpc, "identity,deflate,gzip", null)).toBeNull();
      expect(answerEncodingsListed(grpc, "gzip", "identity")).toBeNull();
      // A compressed one: its encoding, unless the client's list leaves it out.
      expect(answerEncodingsListed(grpc, null, "gzip")).toBe("gzip");
      expect(answerEncodingsListed(grpc, "identity, deflate,gzip", "gzip")).toBe("gzip");
      expect(answerEncodingsListed(grpc, "br", "gzip")).toBe("identity");
    }
    expect(answerEncodingsListed("application/grpc-web+proto", "gzip", null)).toBe("gzip");
    expect(answerEncodingsListed("application/grpc-web-text", "br, gzip", "gzip")).toBe("br, gzip");
    expect(answerEncodingsListed("application/proto", "gzip", null)).toBe("gzip");
    expect(answerEncodingsListed("application/json", null, null)).toBeNull();
  });
});
