import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type Conflict,
  type ConflictExplanation,
  ConflictSchema,
  type Counterpart,
  type SourceEvent,
  SourceEventSchema,
  SourceEventType,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { VisibleConflict, VisibleCounterpart, VisibleEvent } from "../ledger/visibility.js";
import type { ConflictMeasure, SourceEventType as EventType } from "../model/history.js";
import { attributeTypes } from "../model/vocabulary.js";
import { toProtoSource } from "./messages.js";

const EVENT_TYPES: Readonly<Record<EventType, SourceEventType>> = {
  created: SourceEventType.CREATED,
  conflict_set: SourceEventType.CONFLICT_SET,
  conflict_cleared: SourceEventType.CONFLICT_CLEARED,
  deleted: SourceEventType.DELETED,
};

function counterpartMessage(counterpart: VisibleCounterpart): Counterpart {
  return { $typeName: "sourceledger.v2.Counterpart", ...counterpart };
}

function explanationMessage(measure: ConflictMeasure): ConflictExplanation {
  return {
    $typeName: "sourceledger.v2.ConflictExplanation",
    overlapAreaM2: measure.overlapAreaM2,
    overlapFraction: measure.overlapFraction,
    counterpartOverlapFraction: measure.counterpartOverlapFraction,
    overlapPeriod: {
      $typeName: "sourceledger.v2.Period",
      startAt: timestampFromMs(measure.overlapPeriod.startAt),
      endAt: timestampFromMs(measure.overlapPeriod.endAt),
    },
    sharedAttributeTypes: measure.sharedAttributeTypes.map((name) => attributeTypes.valueOf(name) ?? 0),
    overlapAreaUpperBound: measure.overlapAreaUpperBound === true,
  };
}

/** An event as the API's SourceEvent message (docs/api.md §14). */
export function toProtoEvent(event: VisibleEvent): SourceEvent {
  return create(SourceEventSchema, {
    seq: event.seq,
    type: EVENT_TYPES[event.type],
    at: timestampFromMs(event.at),
    by: event.by ?? undefined,
    source: event.record ? toProtoSource(event.record) : undefined,
    counterpart: event.counterpart ? counterpartMessage(event.counterpart) : undefined,
    explanation: event.measure ? explanationMessage(event.measure) : undefined,
  });
}

/** A conflict as the API's Conflict message. */
export function toProtoConflict(conflict: VisibleConflict): Conflict {
  return create(ConflictSchema, {
    counterpart: counterpartMessage(conflict.counterpart),
    explanation: explanationMessage(conflict.measure),
    detectedAt: timestampFromMs(conflict.detectedAt),
  });
}
