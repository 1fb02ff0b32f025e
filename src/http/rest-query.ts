import type { Violation } from "../ledger/violation.js";
import type { Vocabulary } from "../ledger/vocabulary.js";
import { MALFORMED_QUERY, type ParsedQuery } from "./querystring.js";

type RawQuery = Record<string, string | string[] | undefined>;

/**
 * Strict reading of a REST query string: unknown names, repeats of single-valued names and
 * malformed values are violations pointing at `/query/<name>` (contract §4: → 422).
 */
export class QueryReader {
  readonly violations: Violation[] = [];

  constructor(
    private readonly query: RawQuery,
    allowed: readonly string[],
  ) {
    for (const name of (query as ParsedQuery)[MALFORMED_QUERY] ?? []) {
      this.fail(name, `${name} has a malformed percent-encoding`);
    }
    for (const name of Object.keys(query)) {
      if (!allowed.includes(name)) {
        this.fail(
          name,
          `unknown query parameter "${name}"; allowed here: ${allowed.length ? allowed.join(", ") : "none"}`,
        );
      }
    }
  }

  private fail(name: string, detail: string): void {
    this.violations.push({ field: name, pointer: `/query/${name}`, detail });
  }

  private all(name: string): string[] {
    const value = this.query[name];
    return value === undefined ? [] : Array.isArray(value) ? value : [value];
  }

  text(name: string): string | undefined {
    const values = this.all(name);
    if (values.length > 1) this.fail(name, `${name} must be given at most once`);
    return values[0];
  }

  integer(name: string): number | undefined {
    const text = this.text(name);
    if (text === undefined) return undefined;
    if (!/^-?\d{1,10}$/.test(text) || Math.abs(Number(text)) > 2 ** 31 - 1) {
      this.fail(name, `${name} must be an integer, got "${text}"`);
      return undefined;
    }
    return Number(text);
  }

  enumValue(name: string, vocabulary: Vocabulary): number {
    const text = this.text(name);
    if (text === undefined) return 0;
    const value = vocabulary.valueOf(text);
    if (value === undefined) this.fail(name, `${name} must be one of ${vocabulary.names.join(", ")}, got "${text}"`);
    return value ?? 0;
  }

  enumValues(name: string, vocabulary: Vocabulary): number[] {
    const values: number[] = [];
    for (const text of this.all(name)) {
      const value = vocabulary.valueOf(text);
      if (value === undefined) this.fail(name, `${name} must be one of ${vocabulary.names.join(", ")}, got "${text}"`);
      else values.push(value);
    }
    return values;
  }
}
