import { countPositions } from "../../geo/parts.js";
import type { SourceRecord } from "../../model/records.js";

/** One account's sandbox sources. Map order is insertion order, which is usually created order. */
export class Session {
  readonly records = new Map<string, SourceRecord>();
  private readonly idByAltId = new Map<string, string>();
  /** Geometry positions held: the sandbox's memory bound counts these, not only sources. */
  positions = 0;

  constructor(public lastUsedAt: number) {}

  get size(): number {
    return this.records.size;
  }

  hasAltId(altId: string): boolean {
    return this.idByAltId.has(altId);
  }

  add(record: SourceRecord): void {
    this.records.set(record.id, record);
    this.idByAltId.set(record.altId, record.id);
    this.positions += countPositions(record.geometry);
  }

  delete(id: string): boolean {
    const record = this.records.get(id);
    if (record === undefined) return false;
    this.records.delete(id);
    this.idByAltId.delete(record.altId);
    this.positions -= countPositions(record.geometry);
    return true;
  }

  deleteByAltId(altId: string): boolean {
    const id = this.idByAltId.get(altId);
    return id !== undefined && this.delete(id);
  }
}
