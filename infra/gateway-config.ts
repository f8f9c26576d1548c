import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { configSchema } from "../functions/core/config/config-schema.ts";
import { secretNamesOf } from "../functions/core/config/placeholders.ts";
import { SetupError } from "./environments.ts";

/** The repository root (infra/ lives directly under it). */
export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** What the stack needs to know, at synth time, of an environment's config-as-code file. */
export interface GatewayConfigFile {
  /** Path relative to the project root, also the S3 object key: `config/<env>.json`. */
  readonly key: string;
  /** The file's bytes as text, uploaded unchanged. */
  readonly text: string;
  /** Network names, in file order (per-network alarms and dashboard rows). */
  readonly networks: readonly string[];
  /** Distinct `${NAME}` secret placeholders, sorted (the SSM parameters to create). */
  readonly secretNames: readonly string[];
  /** Browser origins the HTTP API's CORS configuration allows (`cors_origins`). */
  readonly corsOrigins: readonly string[];
}

/**
 * Reads and validates `config/<env>.json` with the runtime's own schema, so a deploy never
 * ships a config the Lambdas would reject (the bundled fallback must be valid).
 */
export function readGatewayConfig(env: string, root: string = PROJECT_ROOT): GatewayConfigFile {
  const key = `config/${env}.json`;
  const path = join(root, key);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new SetupError(
      `cannot read ${key} (the config of environment "${env}"): ${String(error)}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SetupError(`${key} is not valid JSON: ${String(error)}`);
  }
  const parsed = configSchema.safeParse(json);
  if (!parsed.success) {
    throw new SetupError(`${key} is not a valid gateway config:\n${z.prettifyError(parsed.error)}`);
  }
  const networks = Object.keys(parsed.data.networks);
  return {
    key,
    text,
    networks,
    secretNames: secretNamesOf(parsed.data),
    corsOrigins: parsed.data.cors_origins,
  };
}
