/**
 * Keeps the ledger files the servers serve in the OS page cache while a run reads them, so that a
 * load measures the service, not this machine's disk.
 *
 * This machine (a Firecracker VM) runs DAMON's reclaim (`kdamond`, /sys/kernel/mm/damon): page
 * cache that no process maps and nobody has read for about a minute is paged out, at up to
 * 128 MB/s, whatever memory is free. A ledger read in random order (S2's ids, S10's boxes, S4's
 * overlapped cells) then comes from the disk until each page has been read again, and how long a
 * server had been idle decided the figures: S2 read 2,600–5,800 req/s with half of its file in
 * memory, 6,750 with all of it. The scheme leaves mapped pages alone, so a helper process maps
 * every file (and its WAL) as it is at the start and touches each page once, and holds the mappings
 * until released: what a create appends later is not held, but is recent. Without python3, or
 * when the helper fails, the files are read once instead (the run's first loads are measured warm,
 * later ones may not be). A deployment whose ledger does not fit in memory reads from its disk,
 * and these figures are not its.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readSync } from "node:fs";

const CHUNK_BYTES = 8 * 2 ** 20;

/** A ledger file and, when present, its WAL. */
const withWal = (path: string) => [path, `${path}-wal`].filter((file) => existsSync(file));

/** Reads `path` and, when present, `path-wal` to their ends; answers the bytes read. */
export function readIntoPageCache(path: string): number {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let total = 0;
  for (const file of withWal(path)) {
    const fd = openSync(file, "r");
    try {
      for (let read = readSync(fd, buffer); read > 0; read = readSync(fd, buffer)) total += read;
    } finally {
      closeSync(fd);
    }
  }
  return total;
}

export interface PageCacheHold {
  /** Whether a process maps the files (true) or they were only read once (false). */
  mapped: boolean;
  /** Why they are not mapped, when they are not. */
  reason?: string;
  /** The bytes mapped (or read). */
  bytes: number;
  /** The helper's process id, while it maps them. */
  pid?: number;
  /** Ends the hold (the helper unmaps and exits when its stdin closes). */
  release(): void;
}

/**
 * Maps each file (an empty one is skipped: it cannot be mapped), reads one byte of every page, prints the
 * bytes held, then waits for stdin to close. Python's mmap, because Node has none.
 */
const HOLDER = `
import mmap, sys
held, total = [], 0
for path in sys.argv[1:]:
    f = open(path, "rb")
    size = f.seek(0, 2)
    if size == 0:
        continue
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    touched = 0
    for i in range(0, size, mmap.PAGESIZE):
        touched += m[i]
    held.append((f, m))
    total += size
print(total, flush=True)
sys.stdin.read()
`;

/**
 * Holds `paths` (and their WALs) in the page cache until released (see the module's comment).
 * `python`: the interpreter (tests name one that fails).
 */
export async function holdInPageCache(paths: readonly string[], python = "python3"): Promise<PageCacheHold> {
  const ledgers = [...new Set(paths)].filter((path) => existsSync(path));
  const files = ledgers.flatMap(withWal);
  const helper = spawn(python, ["-c", HOLDER, ...files], { stdio: ["pipe", "pipe", "pipe"] });
  let released = false;
  let stderr = "";
  helper.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const outcome = await new Promise<{ bytes: number } | { failed: string }>((resolve) => {
    let out = "";
    helper.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve({ bytes: Number(out.trim()) });
    });
    helper.once("error", (error) => resolve({ failed: `${python} did not start (${error.message})` }));
    // 'close' rather than 'exit': its stderr has been read by then.
    helper.once("close", (code, signal) =>
      resolve({ failed: `${python} ended (${howEnded(code, signal)}) ${stderr.trim()}`.trim() }),
    );
  });
  if ("failed" in outcome || !Number.isFinite(outcome.bytes)) {
    helper.kill();
    const reason = "failed" in outcome ? outcome.failed : "the helper printed no byte count";
    return readOnce(ledgers, reason);
  }
  // A helper gone before its release (killed, out of memory) no longer holds anything: say so.
  helper.once("close", (code, signal) => {
    if (!released) {
      process.stderr.write(
        `page cache holder ended early (${howEnded(code, signal)}): later loads may read from disk\n`,
      );
    }
  });
  return {
    mapped: true,
    bytes: outcome.bytes,
    pid: helper.pid,
    release: () => {
      released = true;
      helper.stdin.end();
    },
  };
}

const howEnded = (code: number | null, signal: NodeJS.Signals | null) => signal ?? `exit ${code}`;

function readOnce(ledgers: readonly string[], reason: string): PageCacheHold {
  const bytes = ledgers.reduce((sum, file) => sum + readIntoPageCache(file), 0);
  return { mapped: false, reason, bytes, release: () => {} };
}
