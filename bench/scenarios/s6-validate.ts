/** S6: checkGeometry of 100,000-position MultiPolygons, in this process (bench/validate.ts). */
import type { Row } from "../report.js";
import { measureValidation, VALIDATION_SHAPES, type ValidationResult } from "../validate.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";

/** Times every shape (`plan.validationRuns` runs each); meant to run while nothing else does. */
export function measure(plan: Plan): ValidationResult[] {
  const validation: ValidationResult[] = VALIDATION_SHAPES.map((shape) =>
    measureValidation(shape, plan.validationRuns),
  );
  for (const v of validation)
    log(`S6 checkGeometry ${v.shape}: median ${v.medianMs.toFixed(1)} ms (${v.issues} issues)`);
  return validation;
}

export function rows(validation: ValidationResult[]): Row[] {
  return validation.map((v, i) => ({
    id: `S6.${i}`,
    scenario: `S6 checkGeometry, MultiPolygon of ${v.shape} (${fmt(v.positions)} positions)`,
    metric: `median of ${v.runsMs.length}`,
    value: v.medianMs,
    unit: "ms",
    target: { on: "value", op: "<", threshold: 150 },
    profile: "S6",
    errors: v.issues,
  }));
}
