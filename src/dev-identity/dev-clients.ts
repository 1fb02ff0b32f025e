import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { ADMIN_ROLE } from "../auth/claims.js";
import type { Scope } from "../auth/scopes.js";
import { ALL_SCOPES, isScope } from "../auth/scopes.js";

/** A client the development identity provider issues tokens to. */
export interface DevClient {
  clientId: string;
  clientSecret: string;
  /** null only for admins, who may act without an account of their own. */
  accountId: string | null;
  role: string;
  /** Becomes created_by/updated_by; without it the service falls back to the client id. */
  clientName: string | null;
  scopes: readonly Scope[];
}

/**
 * DEV_CLIENTS_FILE cannot be used. The composition reports it as a configuration error rather
 * than a crash. The message never quotes file content, which holds secrets.
 */
export class DevClientsFileError extends Error {
  override name = "DevClientsFileError";
}

const FIELDS = new Set(["client_id", "client_secret", "account_id", "role", "client_name", "scopes"]);

export async function loadDevClients(path: string): Promise<DevClient[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = error instanceof Error && "code" in error ? ` (${String(error.code)})` : "";
    throw new DevClientsFileError(`DEV_CLIENTS_FILE ${path}: cannot be read${code}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which may be a secret.
    throw new DevClientsFileError(`DEV_CLIENTS_FILE ${path}: not valid JSON`);
  }
  return parseDevClients(json, `DEV_CLIENTS_FILE ${path}`);
}

/** Validates the whole file up front, so a typo fails start instead of a later token request. */
function parseDevClients(json: unknown, source: string): DevClient[] {
  if (!Array.isArray(json) || json.length === 0) {
    throw new DevClientsFileError(`${source}: expected a non-empty JSON array of clients`);
  }
  const seen = new Set<string>();
  return json.map((item: unknown, index) => {
    const client = parseClient(item, (message) => new DevClientsFileError(`${source}: [${index}] ${message}`));
    if (seen.has(client.clientId)) {
      throw new DevClientsFileError(`${source}: [${index}] duplicate client_id "${client.clientId}"`);
    }
    seen.add(client.clientId);
    return client;
  });
}

function parseClient(item: unknown, fail: (message: string) => Error): DevClient {
  if (typeof item !== "object" || item === null || Array.isArray(item)) throw fail("must be an object");
  const record: Record<string, unknown> = { ...item };
  const unknown = Object.keys(record).filter((key) => !FIELDS.has(key));
  if (unknown.length > 0) {
    throw fail(`unknown field(s) ${unknown.join(", ")}; allowed: ${[...FIELDS].join(", ")}`);
  }
  const optional = (field: string): string | null => {
    const value = record[field];
    if (value === undefined || value === null) return null;
    if (typeof value !== "string" || value.trim() === "") throw fail(`${field} must be a non-empty string`);
    return value;
  };
  const required = (field: string): string => {
    const value = optional(field);
    if (value === null) throw fail(`${field} is required`);
    return value;
  };
  const clientId = required("client_id");
  const clientSecret = required("client_secret");
  const role = required("role");
  const accountId = role === ADMIN_ROLE ? optional("account_id") : required("account_id");
  const clientName = optional("client_name");
  return { clientId, clientSecret, accountId, role, clientName, scopes: parseScopes(record.scopes, fail) };
}

function parseScopes(value: unknown, fail: (message: string) => Error): Scope[] {
  if (!Array.isArray(value)) throw fail(`scopes must be an array of ${ALL_SCOPES.join(", ")}`);
  const scopes: Scope[] = [];
  for (const scope of value) {
    if (typeof scope !== "string" || !isScope(scope)) {
      throw fail(`scopes: unknown scope ${JSON.stringify(scope)}; allowed: ${ALL_SCOPES.join(", ")}`);
    }
    if (scopes.includes(scope)) throw fail(`scopes: ${scope} listed twice`);
    scopes.push(scope);
  }
  return scopes;
}

/** The client used when no DEV_CLIENTS_FILE is given; its secret is fresh on every start. */
export function createDemoClient(): DevClient {
  return {
    clientId: "demo-client",
    clientSecret: randomBytes(32).toString("base64url"),
    accountId: "demo-account",
    role: "user",
    clientName: "Demo Client",
    scopes: [...ALL_SCOPES],
  };
}
