/**
 * Keeps the ledger files the servers serve in the OS page cache for a whole run, so that a load
 * measures the service, not this machine's disk.
 *
 * This machine (a Firecracker VM) runs DAMON's reclaim (`kdamond`, /sys/kernel/mm/damon): page
 * cache that no process maps and nobody has read for about a minute is paged out, at up to
 * 128 MB/s, whatever memory is free. A ledger read in random order (S2's ids, S10's boxes, S4's
 * overlapped cells) then comes from the disk until each page has been read again, and how long a
 * server had been idle decided the figures: S2 read 2,600–5,800 req/s with half of its file in
 * memory, 6,750 with all of it. The scheme leaves mapped pages alone, so a helper process maps
 * every file and touches each page once, and holds the mappings until released. Without python3 the
 * files are read once instead (the run's first loads are measured warm, later ones may not be).
 * A deployment whose ledger does not fit in memory reads from its disk, and these figures are not
 * its.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readSync } from "node:fs";

const CHUNK_BYTES = 8 * 2 ** 20;

/** Reads `path` and, when present, `path-wal` to their ends; answers the bytes read. */
export function readIntoPageCache(path: string): number {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let total = 0;
  for (const file of [path, `${path}-wal`]) {
    if (!existsSync(file)) continue;
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
  /** Whether a process maps the files (true) or they were only read once (false: no python3). */
  mapped: boolean;
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

/** Holds `paths` in the page cache until released (see the module's comment). */
export async function holdInPageCache(paths: readonly string[]): Promise<PageCacheHold> {
  const files = [...new Set(paths)].filter((path) => existsSync(path));
  let child: ChildProcess;
  try {
    child = spawn("python3", ["-c", HOLDER, ...files], { stdio: ["pipe", "pipe", "pipe"] });
  } catch {
    return readOnce(files);
  }
  const helper = child;
  const bytes = await new Promise<number | null>((resolve) => {
    let out = "";
    let err = "";
    helper.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve(Number(out.trim()));
    });
    helper.stderr?.on("data", (chunk: Buffer) => {
      err = (err + chunk.toString()).slice(-2000);
    });
    helper.once("error", () => resolve(null));
    helper.once("exit", (code) => {
      if (err !== "") process.stderr.write(`page cache holder exited with ${code}: ${err}\n`);
      resolve(null);
    });
  });
  if (bytes === null || !Number.isFinite(bytes)) return readOnce(files);
  return {
    mapped: true,
    bytes,
    pid: helper.pid,
    release: () => {
      helper.stdin?.end();
    },
  };
}

function readOnce(files: readonly string[]): PageCacheHold {
  const bytes = files.reduce((sum, file) => sum + readIntoPageCache(file), 0);
  return { mapped: false, bytes, release: () => {} };
}
