import type { VisibleConflict, VisibleCounterpart, VisibleEvent } from "../ledger/visibility.js";
import type { ConflictMeasure } from "../model/history.js";
import { renderRecordJson } from "./rest-render.js";
import { formatRfc3339 } from "./rfc3339.js";

/** A counterpart with the API's keys, only those the caller may see (docs/api.md §14). */
function counterpartJson(counterpart: VisibleCounterpart): Record<string, string> {
  const json: Record<string, string> = {};
  if (counterpart.id !== undefined) json.id = counterpart.id;
  if (counterpart.altId !== undefined) json.alt_id = counterpart.altId;
  if (counterpart.accountId !== undefined) json.account_id = counterpart.accountId;
  if (counterpart.ref !== undefined) json.ref = counterpart.ref;
  return json;
}

function explanationJson(measure: ConflictMeasure) {
  return {
    overlap_area_m2: measure.overlapAreaM2,
    // Only on a pair no overlay could measure (docs/api.md §14), as protobuf's JSON omits false.
    ...(measure.overlapAreaUpperBound === true ? { overlap_area_upper_bound: true } : {}),
    overlap_fraction: measure.overlapFraction,
    counterpart_overlap_fraction: measure.counterpartOverlapFraction,
    overlap_period: {
      start_at: formatRfc3339(measure.overlapPeriod.startAt),
      end_at: formatRfc3339(measure.overlapPeriod.endAt),
    },
    shared_attribute_types: measure.sharedAttributeTypes,
  };
}

/**
 * `GET /sources/{id}/history`: `[{"seq","type","at","by", …}]`, oldest first. A `created` event
 * carries the `record` as stored then; conflict events the `counterpart`, and `conflict_set` the
 * explanation's members as `GET /sources/{id}/conflicts` has them.
 */
export function renderEventsJson(events: readonly VisibleEvent[]): string {
  const parts = events.map((event) => {
    const head = {
      seq: event.seq,
      type: event.type,
      at: formatRfc3339(event.at),
      by: event.by,
      ...(event.counterpart ? { counterpart: counterpartJson(event.counterpart) } : {}),
      ...(event.measure ? explanationJson(event.measure) : {}),
    };
    const json = JSON.stringify(head);
    // The record is spliced in as its own renderer writes it (its geometry text as stored).
    return event.record ? `${json.slice(0, -1)},"record":${renderRecordJson(event.record)}}` : json;
  });
  return `[${parts.join(",")}]`;
}

/** `GET /sources/{id}/conflicts`: the live conflicts, each explained. */
export function renderConflictsJson(conflicts: readonly VisibleConflict[]): string {
  return JSON.stringify(
    conflicts.map((conflict) => ({
      counterpart: counterpartJson(conflict.counterpart),
      ...explanationJson(conflict.measure),
      detected_at: formatRfc3339(conflict.detectedAt),
    })),
  );
}
