/**
 * Experiment, not part of `npm run bench`: what each step of one list page of 100 sources costs in
 * process, no HTTP (the figures in docs/benchmarks.md, issue 13, "in process"): the store's read
 * with and without the geometry wire bytes, REST's rendering, and the protobuf answer's steps
 * (Source messages, the page-size cap, the Source encoder, protobuf-es' toBinary), with the stored
 * bytes and with the text scanned instead. Best of 7 rounds, each the mean of `rounds` pages.
 *
 *   node --import tsx bench/experiments/list-page-costs.ts <ledger.sqlite> [rounds]
 *
 * Opening the ledger migrates it: give it a copy of a bench ledger, not the cached file.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { ListSourcesResponseSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { geoJsonWire } from "../../src/geo/geojson-wire.js";
import { renderRecordsJson } from "../../src/http/rest-render.js";
import type { ListQuery } from "../../src/model/list-query.js";
import type { SourceRecord } from "../../src/model/records.js";
import { toProtoSource } from "../../src/rpc/messages.js";
import { cappedPage } from "../../src/rpc/page-size.js";
import { encodeSourcesFieldData } from "../../src/rpc/source-wire.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { BENCH_ACCOUNT } from "../seed.js";

const [path, roundsArg] = process.argv.slice(2);
if (!path) {
  process.stderr.write("usage: node --import tsx bench/experiments/list-page-costs.ts <ledger.sqlite> [rounds]\n");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 100);
const store = openSqliteStore({ path });
const query: ListQuery = { accountId: BENCH_ACCOUNT, limit: 101, offset: 0 };

async function time(name: string, step: () => unknown): Promise<void> {
  for (let i = 0; i < 50; i++) await step();
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 7; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) await step();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / rounds / 1e6);
  }
  process.stdout.write(`${name.padEnd(58)} ${best.toFixed(3)} ms\n`);
}

/** The answer's bytes as the rpc adapter makes them: Sources, the cap, the encoder, toBinary. */
function answer(records: SourceRecord[]): Uint8Array {
  const page = { records, nextPageToken: null, tokenAfter: () => "" };
  const { sources } = cappedPage(page, toProtoSource);
  const message = create(ListSourcesResponseSchema) as unknown as Record<string, unknown>;
  message.$unknown = encodeSourcesFieldData(sources).map((data) => ({ no: 1, wireType: 2, data }));
  return toBinary(ListSourcesResponseSchema, message as never);
}

const withText = (await store.list(query)).slice(0, 100);
const withWire = (await store.list({ ...query, geometryWire: true })).slice(0, 100);
if (withWire.some((record) => record.geometryWire === undefined)) throw new Error("a record came without its bytes");

await time("store read, 100 records", () => store.list(query));
await time("store read, 100 records with their wire bytes", () => store.list({ ...query, geometryWire: true }));
await time("REST: the JSON array", () => renderRecordsJson(withText));
await time("gRPC: Source messages", () => withText.map(toProtoSource));
await time("gRPC: scanning the 100 GeoJSON texts alone", () =>
  withText.map((record) => geoJsonWire(record.geometryJson as string)),
);
await time("gRPC: the answer, texts scanned", () => answer(withText));
await time("gRPC: the answer, stored wire bytes copied", () => answer(withWire));
process.stdout.write(`bytes: JSON ${renderRecordsJson(withText).length}, protobuf ${answer(withWire).length}\n`);
await store.close();
