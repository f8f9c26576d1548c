import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { PREPARED_CONFIG_FILE, preparedConfigReader } from "./config/config-prepared.ts";
import { type ConfigSource, createConfigSource } from "./config/config-source.ts";
import { createS3ObjectReader } from "./config/s3-object.ts";
import { createDynamoClient, DynamoStateStore } from "./store/state-store.ts";

/**
 * Builds the adapters a Lambda needs from its environment, so both handlers stay thin:
 * - `CONFIG_BUCKET` + `CONFIG_KEY` (+ `CONFIG_BUCKET_DOMAIN` in AWS, `S3_ENDPOINT` locally): the
 *   S3 config object, with `BUNDLED_CONFIG_PATH` as the cold-start fallback and the config
 *   prepared from it at build time beside it; or `CONFIG_FILE` for a local file.
 * - `TABLE_NAME` (+ `DYNAMODB_ENDPOINT` locally): the state table.
 */
type Env = Readonly<Record<string, string | undefined>>;

function required(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`environment variable ${name} is required`);
  return value;
}

export function configSourceFromEnv(env: Env): ConfigSource {
  if (env.CONFIG_FILE) return createConfigSource({ kind: "file", path: env.CONFIG_FILE });
  const bundledPath = env.BUNDLED_CONFIG_PATH ?? new URL("./config.json", import.meta.url).pathname;
  let bundled: unknown;
  try {
    bundled = JSON.parse(readFileSync(bundledPath, "utf8"));
  } catch {
    bundled = undefined;
  }
  const bucket = required(env, "CONFIG_BUCKET");
  const key = required(env, "CONFIG_KEY");
  return createConfigSource({
    kind: "s3",
    bucket,
    key,
    s3: createS3ObjectReader({
      bucket,
      key,
      region: env.AWS_REGION ?? "us-east-1",
      ...(env.CONFIG_BUCKET_DOMAIN ? { domain: env.CONFIG_BUCKET_DOMAIN } : {}),
      ...(env.S3_ENDPOINT ? { endpoint: env.S3_ENDPOINT } : {}),
    }),
    bundled,
    prepared: preparedConfigReader(join(dirname(bundledPath), PREPARED_CONFIG_FILE)),
  });
}

export function stateStoreFromEnv(env: Env): DynamoStateStore {
  return new DynamoStateStore({
    client: createDynamoClient({ endpoint: env.DYNAMODB_ENDPOINT, region: env.AWS_REGION }),
    tableName: required(env, "TABLE_NAME"),
  });
}
