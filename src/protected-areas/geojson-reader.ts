import { createReadStream } from "node:fs";
import { none } from "stream-chain/defs.js";
import Assembler from "stream-json/core/assembler.js";
import { jsonParser, type Token } from "stream-json/core/parser.js";
import { ImportAbortedError, NotFeatureCollectionError } from "./errors.js";

/** One element of the collection's `features` array, in file order. */
export interface FeatureItem {
  /** Position in the `features` array, from 0. */
  index: number;
  /** The element as parsed: normally a Feature object, but anything the file holds. */
  value: unknown;
}

const START = new Set<Token["name"]>(["startObject", "startArray"]);
const END = new Set<Token["name"]>(["endObject", "endArray"]);

/**
 * Turns the token stream of a GeoJSON FeatureCollection into its features, one at a time, without
 * ever holding more than the feature being assembled: members other than `type` and `features`
 * (`crs`, `bbox`, `name`, …) are skipped token by token, never built.
 *
 * Checks, as the tokens arrive, that the top-level value is an object, that its `type` is
 * "FeatureCollection" and that `features` is an array; at the end, that both were present.
 * Members may come in any order (a writer may put `type` after `features`), so a file whose
 * `type` comes last is only rejected at its end, after its features were read.
 */
class FeatureCollectionTokens {
  private depth = 0;
  private key: string | null = null;
  /** Open containers of a member value being skipped. */
  private skipping = 0;
  private inFeatures = false;
  private sawFeatures = false;
  private type: string | undefined;
  private assembler: Assembler | null = null;
  private next = 0;

  push(token: Token, out: FeatureItem[]): void {
    if (this.assembler !== null) {
      this.assembler.consume(token);
      if (this.assembler.done) {
        out.push({ index: this.next++, value: this.assembler.current });
        this.assembler = null;
      }
      return;
    }
    if (this.skipping > 0) {
      if (START.has(token.name)) this.skipping++;
      else if (END.has(token.name)) this.skipping--;
      return;
    }
    if (this.depth === 0) {
      if (token.name !== "startObject") {
        throw new NotFeatureCollectionError(
          "the file's top-level JSON value is not an object; expected a GeoJSON FeatureCollection",
        );
      }
      this.depth = 1;
      return;
    }
    if (this.inFeatures) {
      this.featureToken(token, out);
      return;
    }
    // Directly inside the top-level object.
    if (token.name === "keyValue") {
      this.key = token.value;
      return;
    }
    if (token.name === "endObject") {
      this.depth = 0;
      return;
    }
    const key = this.key;
    this.key = null;
    if (key === "type") {
      if (token.name !== "stringValue" || token.value !== "FeatureCollection") {
        const found = token.name === "stringValue" ? `"${token.value}"` : "not a string";
        throw new NotFeatureCollectionError(`the file is not a GeoJSON FeatureCollection: its "type" is ${found}`);
      }
      const type = token.value;
      this.type = type;
      return;
    }
    if (key === "features") {
      if (token.name !== "startArray") {
        throw new NotFeatureCollectionError('the FeatureCollection\'s "features" member is not an array');
      }
      this.inFeatures = true;
      this.sawFeatures = true;
      return;
    }
    if (START.has(token.name)) this.skipping = 1;
  }

  private featureToken(token: Token, out: FeatureItem[]): void {
    switch (token.name) {
      case "endArray":
        this.inFeatures = false;
        return;
      case "startObject":
      case "startArray":
        this.assembler = new Assembler();
        this.assembler.consume(token);
        return;
      case "stringValue":
        out.push({ index: this.next++, value: token.value });
        return;
      case "numberValue":
        out.push({ index: this.next++, value: Number(token.value) });
        return;
      case "nullValue":
      case "trueValue":
      case "falseValue":
        out.push({ index: this.next++, value: token.value });
        return;
      default:
        return;
    }
  }

  finish(): void {
    if (this.type === undefined) {
      throw new NotFeatureCollectionError(
        'the file is not a GeoJSON FeatureCollection: it has no "type": "FeatureCollection" member',
      );
    }
    if (!this.sawFeatures) {
      throw new NotFeatureCollectionError('the FeatureCollection has no "features" array');
    }
  }
}

function parseFailure(error: unknown, offset: number): NotFeatureCollectionError {
  const reason = error instanceof Error ? error.message : String(error);
  return new NotFeatureCollectionError(
    `the file is not valid JSON (${reason.replace(/^Parser /, "parser ")}, in the text from character ${offset} on)`,
  );
}

export interface ReadOptions {
  signal?: AbortSignal;
  /** Bytes read from the file at a time; the default 64 KiB is Node's. */
  highWaterMark?: number;
}

/**
 * Streams the features of the GeoJSON FeatureCollection in `path`. The file is read a chunk at a
 * time and the next chunk is read only after the consumer has taken every feature the previous
 * one completed, so memory stays bounded by one chunk plus one feature however large the file.
 * Throws NotFeatureCollectionError (an InputError) for anything that is not a FeatureCollection.
 */
export async function* readFeatureCollection(path: string, options: ReadOptions = {}): AsyncGenerator<FeatureItem> {
  const parse = jsonParser({ packValues: true, streamValues: false });
  const collection = new FeatureCollectionTokens();
  const stream = createReadStream(path, { encoding: "utf8", highWaterMark: options.highWaterMark ?? 64 * 1024 });
  const features: FeatureItem[] = [];
  let offset = 0;
  let first = true;
  // A flushable stage is flushed by calling it with `none`, which its declared type leaves out.
  const parseOrFlush = parse as (chunk: string | typeof none) => ReturnType<typeof parse>;
  const feed = (chunk: string | typeof none): void => {
    let result: ReturnType<typeof parse>;
    try {
      result = parseOrFlush(chunk);
    } catch (error) {
      if (chunk === none) throw new NotFeatureCollectionError("the file ends before its JSON is complete (truncated?)");
      throw parseFailure(error, offset);
    }
    if (result === none) return;
    for (const token of result.values) collection.push(token, features);
  };
  try {
    for await (const raw of stream) {
      if (options.signal?.aborted) throw new ImportAbortedError("import interrupted");
      let chunk = raw as string;
      // The tokenizer takes strings only and treats a byte-order mark as an error.
      if (first && chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
      first = false;
      feed(chunk);
      offset += chunk.length;
      for (const feature of features) yield feature;
      features.length = 0;
    }
    if (first) throw new NotFeatureCollectionError("the file is empty; expected a GeoJSON FeatureCollection");
    feed(none);
    for (const feature of features) yield feature;
    features.length = 0;
    collection.finish();
  } finally {
    stream.destroy();
  }
}
