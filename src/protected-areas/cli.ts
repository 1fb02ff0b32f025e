import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../config.js";
import { buildProductionIndexes, openProtectedAreaLayers } from "../store/open.js";
import { StoreUnavailableError } from "../store/port.js";
import { type LayerInfo, LayerSupersededError } from "../store/protected-area-layers.js";
import { ImportAbortedError, InputError } from "./errors.js";
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_MAX_REASONS,
  formatRejection,
  type ImportOptions,
  type ImportProgress,
  importProtectedAreas,
  NoValidFeaturesError,
  type RejectedFeature,
} from "./import.js";

export const EXIT_OK = 0;
export const EXIT_USAGE = 1;
export const EXIT_FAILURE = 2;
export const EXIT_INTERRUPTED = 130;

export const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  protected-areas import FILE --dataset NAME
      Load a GeoJSON FeatureCollection of protected areas with WDPA-style properties
      (WDPAID, NAME, DESIG_ENG, IUCN_CAT) as the layer unep_overlap is computed from.
      The file is streamed, so it may be of any size. Features without a WDPAID, without a
      valid Polygon or MultiPolygon geometry, are rejected and counted; the import goes on.
      The new layer replaces the loaded one only once the whole file has been read: until
      then, and if the import fails, the server keeps using the previous layer.
        --dataset NAME     dataset name reported as unep_overlap.dataset (required)
        --max-reasons N    how many rejected features to describe (default ${DEFAULT_MAX_REASONS}; all are counted)
        --batch-size N     protected areas written per transaction (default ${DEFAULT_BATCH_SIZE})
        --force            take over from another import that still looks alive
                           (one that was killed without cleaning up)
  protected-areas status
      Show the loaded layer (dataset, features, rejected features, import time) and any
      import in progress.
  mongodb indexes
      With LEDGER_STORE=mongodb: create the store's collections and indexes and wait until
      every index build has finished, however long it takes. Run it before deploying a
      version that adds an index, so the servers' start finds them in place (they only wait
      30 s for a build and answer 503 meanwhile). Idempotent; it never drops an index.

Options:
  -h, --help           show this help

Environment:
  LEDGER_STORE         sqlite (default) or mongodb, as for the server
  SQLITE_PATH          the store file the server uses (default data/ledger.sqlite)
  MONGODB_URI          with LEDGER_STORE=mongodb: the server's MongoDB (a replica set)
  MONGODB_DATABASE     with LEDGER_STORE=mongodb (default source_ledger)

Exit codes: 0 done; 1 usage or input error (bad arguments, missing file, not a
FeatureCollection, no valid feature, another import running); 2 store unavailable or
unexpected failure; 130 interrupted (the loaded layer is unchanged).
`;

interface Output {
  write(text: string): unknown;
}

export interface CliContext {
  stdout: Output;
  stderr: Output;
  /** The environment to configure from; the process's own (through loadConfig) when absent. */
  env?: NodeJS.ProcessEnv;
  /** Aborts an import (SIGINT/SIGTERM in the real process). */
  signal?: AbortSignal;
  /** Overrides of the import's tuning (tests). */
  importOptions?: Partial<
    Pick<ImportOptions, "progressIntervalMs" | "progressEveryFeatures" | "batchPositions" | "now">
  >;
}

class UsageError extends InputError {
  override name = "UsageError";
}

const count = (n: number): string => n.toLocaleString("en-US");
const time = (ms: number): string => new Date(ms).toISOString();

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function formatProgress(p: ImportProgress): string {
  return (
    `protected-areas import: ${count(p.read)} features read ` +
    `(${count(p.accepted)} loaded, ${count(p.rejected)} rejected) ` +
    `in ${seconds(p.elapsedMs)}, ${count(Math.round(p.featuresPerSecond))} features/s\n`
  );
}

function positiveInteger(raw: string | undefined, name: string, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new UsageError(`--${name} must be an integer of at least ${min}, got "${raw}"`);
  return Number(raw);
}

function writeReasons(out: Output, reasons: RejectedFeature[], rejected: number): void {
  if (rejected === 0) return;
  const shown =
    reasons.length < rejected ? `first ${count(reasons.length)} of ${count(rejected)}` : `${count(rejected)}`;
  out.write(`Rejected features (${shown}):\n`);
  for (const r of reasons) out.write(`  ${formatRejection(r)}\n`);
}

function describeLayer(layer: LayerInfo): string {
  return (
    `  dataset:      ${layer.dataset}\n` +
    `  features:     ${count(layer.featureCount)}\n` +
    `  rejected:     ${count(layer.rejectedCount)}\n` +
    `  imported at:  ${layer.importedAt === null ? "(loading)" : time(layer.importedAt)}\n` +
    `  source file:  ${layer.sourceFile}\n`
  );
}

async function importCommand(positionals: string[], values: ParsedValues, context: CliContext): Promise<number> {
  if (positionals.length === 0) throw new UsageError("protected-areas import needs the GeoJSON file to read");
  if (positionals.length > 1)
    throw new UsageError(`protected-areas import takes one file, got ${positionals.length}: ${positionals.join(" ")}`);
  if (values.dataset === undefined)
    throw new UsageError('protected-areas import needs --dataset NAME (for example --dataset "WDPA Jan 2025")');
  const maxReasons = positiveInteger(values["max-reasons"], "max-reasons", DEFAULT_MAX_REASONS, 0);
  const batchSize = positiveInteger(values["batch-size"], "batch-size", DEFAULT_BATCH_SIZE, 1);
  const file = positionals[0];
  const layers = await openProtectedAreaLayers(loadConfig(context.env));
  try {
    const summary = await importProtectedAreas({
      file,
      dataset: values.dataset,
      layers,
      batchSize,
      maxReasons,
      force: values.force ?? false,
      signal: context.signal,
      onProgress: (p) => context.stderr.write(formatProgress(p)),
      ...context.importOptions,
    });
    writeReasons(context.stderr, summary.reasons, summary.rejected);
    context.stdout.write(
      `Imported protected-area layer "${summary.dataset}" from ${file}\n` +
        `  features read:  ${count(summary.read)}\n` +
        `  loaded:         ${count(summary.accepted)}\n` +
        `  rejected:       ${count(summary.rejected)}\n` +
        `  time:           ${seconds(summary.elapsedMs)} ` +
        `(${count(Math.round(summary.featuresPerSecond))} features/s)\n` +
        `  active since:   ${summary.layer.importedAt === null ? "-" : time(summary.layer.importedAt)}\n`,
    );
    if (summary.garbageError !== null) {
      context.stderr.write(
        `warning: the replaced layer could not be cleared yet (${summary.garbageError}); the next import clears it\n`,
      );
    }
    return EXIT_OK;
  } catch (error) {
    if (error instanceof NoValidFeaturesError) writeReasons(context.stderr, error.reasons, error.progress.rejected);
    throw error;
  } finally {
    await layers.close();
  }
}

async function statusCommand(positionals: string[], context: CliContext): Promise<number> {
  if (positionals.length > 0)
    throw new UsageError(`protected-areas status takes no arguments, got: ${positionals.join(" ")}`);
  const layers = await openProtectedAreaLayers(loadConfig(context.env));
  try {
    const { active, importing } = await layers.status();
    if (active === null) {
      context.stdout.write(
        "No protected-area layer is loaded: unep_overlap is null on every create.\n" +
          "Load one with: npm run cli -- protected-areas import FILE --dataset NAME\n",
      );
    } else {
      context.stdout.write(`Protected-area layer loaded:\n${describeLayer(active)}`);
    }
    for (const layer of importing) {
      context.stdout.write(
        `Import in progress: "${layer.dataset}" from ${layer.sourceFile}, ${count(layer.featureCount)} areas so far, ` +
          `started ${time(layer.startedAt)}, last batch ${time(layer.heartbeatAt)}\n`,
      );
    }
    return EXIT_OK;
  } finally {
    await layers.close();
  }
}

async function indexesCommand(positionals: string[], context: CliContext): Promise<number> {
  if (positionals.length > 0) throw new UsageError(`mongodb indexes takes no arguments, got: ${positionals.join(" ")}`);
  const started = Date.now();
  const prepared = await buildProductionIndexes(loadConfig(context.env));
  for (const { collection, indexes } of prepared) {
    context.stdout.write(`${collection}: ${count(indexes.length)} indexes in place (${indexes.join(", ")})\n`);
  }
  context.stdout.write(`Every index is built (${seconds(Date.now() - started)}).\n`);
  return EXIT_OK;
}

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  dataset: { type: "string" },
  "max-reasons": { type: "string" },
  "batch-size": { type: "string" },
  force: { type: "boolean" },
} as const;

type ParsedValues = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

function parse(argv: string[]): { values: ParsedValues; positionals: string[] } {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/**
 * The command line, as a function: arguments in, exit code out, text written to `stdout` and
 * `stderr`. Errors the user can fix are one line without a stack trace.
 */
export async function runCli(argv: string[], context: CliContext): Promise<number> {
  try {
    const { values, positionals } = parse(argv);
    const [group, command, ...rest] = positionals;
    if (values.help || group === "help" || (group === undefined && argv.length === 0)) {
      context.stdout.write(USAGE);
      return values.help || group === "help" ? EXIT_OK : EXIT_USAGE;
    }
    if (group === "mongodb" && command === "indexes") return await indexesCommand(rest, context);
    if (group === "mongodb") {
      throw new UsageError(
        command === undefined
          ? "mongodb needs a command: indexes"
          : `unknown mongodb command "${command}"; expected indexes`,
      );
    }
    if (group !== "protected-areas") throw new UsageError(`unknown command "${group ?? ""}"; see --help`);
    if (command === "import") return await importCommand(rest, values, context);
    if (command === "status") return await statusCommand(rest, context);
    throw new UsageError(
      command === undefined
        ? "protected-areas needs a command: import or status"
        : `unknown protected-areas command "${command}"; expected import or status`,
    );
  } catch (error) {
    if (error instanceof ImportAbortedError) {
      context.stderr.write("interrupted: the import was abandoned and the loaded layer is unchanged\n");
      return EXIT_INTERRUPTED;
    }
    if (error instanceof UsageError) {
      context.stderr.write(`error: ${error.message}\nRun "npm run cli -- --help" for usage.\n`);
      return EXIT_USAGE;
    }
    if (error instanceof InputError || error instanceof ConfigError) {
      context.stderr.write(`error: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof LayerSupersededError) {
      context.stderr.write(`error: ${error.message} (--force); this import was abandoned\n`);
      return EXIT_FAILURE;
    }
    if (error instanceof StoreUnavailableError) {
      context.stderr.write(`error: the store is unavailable: ${error.message}\n`);
      return EXIT_FAILURE;
    }
    context.stderr.write(
      `unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return EXIT_FAILURE;
  }
}
