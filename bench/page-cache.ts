/**
 * Reads a ledger file (and its WAL) once, front to back, so that the OS keeps its pages in memory
 * before a server starts over it: a load then measures the service, not this machine's disk. A
 * ledger read in random order (S2's ids, S10's boxes) otherwise comes from the disk until each page
 * has been read once, and how much of it the OS still held from the last run decided the figures
 * (S2 2,600–5,800 req/s with half of its file in memory, 6,750 with all of it). A deployment whose
 * ledger does not fit in memory reads from its disk, and these figures are not its.
 */
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
