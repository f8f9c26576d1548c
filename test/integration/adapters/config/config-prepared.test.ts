import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { parseConfigText } from "../../../../functions/adapters/config/config-file.ts";
import { PREPARED_CONFIG_FILE } from "../../../../functions/adapters/config/config-prepared.ts";
import type { ConfigSourceEvent } from "../../../../functions/adapters/config/config-source.ts";
import { configSourceFromEnv } from "../../../../functions/adapters/environment.ts";
import { writeBundledConfig } from "../../../../infra/constructs/bundled-config.ts";
import { type S3Bucket, S3RVER_CREDENTIALS, startS3Bucket } from "../../../support/s3-bucket.ts";

/**
 * A deployed function's cold start: the S3 object a deploy uploads has the bundled config's
 * exact bytes, so the config prepared at build time stands in for parsing it; any other text
 * is parsed and validated as always. Wired as the Lambdas wire it (`configSourceFromEnv`),
 * against s3rver and a package directory written by the build step.
 */

const BUCKET = "config-bucket";
const KEY = "config/dev.json";
/** A value the document never has: only the prepared file can hand it out. */
const MARKER_REFRESH_SECONDS = 4242;

const DEPLOYED = `${JSON.stringify(
  {
    config_refresh_seconds: 60,
    networks: {
      ethereum: {
        chain_id: 1,
        max_attempts: 2,
        quorum: { max_lag_seconds: 30 },
        providers: [{ url: "https://eth.example.com/${ETH_KEY}" }, { url: "https://b.example" }],
      },
    },
  },
  null,
  2,
)}\n`;

let bucket: S3Bucket;
let packageDir: string;
let client: S3Client;

beforeAll(async () => {
  bucket = await startS3Bucket(BUCKET);
  client = bucket.client;
  // The Lambda's S3 client takes its credentials from the process environment.
  vi.stubEnv("AWS_ACCESS_KEY_ID", S3RVER_CREDENTIALS.accessKeyId);
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", S3RVER_CREDENTIALS.secretAccessKey);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await bucket?.close();
});

beforeEach(async () => {
  if (packageDir) await rm(packageDir, { recursive: true, force: true });
  packageDir = await mkdtemp(join(tmpdir(), "config-prepared-package-"));
  writeBundledConfig(DEPLOYED, KEY, packageDir);
});

async function upload(text: string): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: text }));
}

/** Rewrites the prepared file's config, keeping the digest of the document it was made from. */
async function markPreparedConfig(): Promise<void> {
  const path = join(packageDir, PREPARED_CONFIG_FILE);
  const prepared = JSON.parse(await readFile(path, "utf8")) as { config: object };
  prepared.config = { ...prepared.config, config_refresh_seconds: MARKER_REFRESH_SECONDS };
  await writeFile(path, JSON.stringify(prepared));
}

function lambdaConfigSource() {
  const events: ConfigSourceEvent[] = [];
  const source = configSourceFromEnv({
    CONFIG_BUCKET: BUCKET,
    CONFIG_KEY: KEY,
    S3_ENDPOINT: bucket.endpoint,
    AWS_REGION: "us-east-1",
    BUNDLED_CONFIG_PATH: join(packageDir, "config.json"),
  });
  source.subscribe((event) => events.push(event));
  return { source, events };
}

function parsed(text: string) {
  const result = parseConfigText(text);
  if (!result.ok) throw new Error("the test's document is invalid");
  return result.config;
}

describe("the config prepared at build time", () => {
  it("stands in for the S3 object a deploy uploaded (the bundled bytes): no parse", async () => {
    await markPreparedConfig();
    await upload(DEPLOYED);

    const loaded = await lambdaConfigSource().source.current();

    expect(loaded.source.kind).toBe("s3");
    expect(loaded.config.config_refresh_seconds).toBe(MARKER_REFRESH_SECONDS);
  });

  it("is exactly what parsing the document produces, defaults included", async () => {
    await upload(DEPLOYED);

    const loaded = await lambdaConfigSource().source.current();

    expect(loaded.config).toStrictEqual(parsed(DEPLOYED));
  });

  it("is not used for an S3 object edited after the deploy: that one is parsed and validated", async () => {
    await markPreparedConfig();
    // The same config with one byte more: a different document all the same.
    await upload(`${DEPLOYED} `);

    const loaded = await lambdaConfigSource().source.current();

    expect(loaded.source.kind).toBe("s3");
    expect(loaded.config).toStrictEqual(parsed(DEPLOYED));
  });

  it("does not change how an invalid S3 object is rejected", async () => {
    await markPreparedConfig();
    const invalid = DEPLOYED.replace('"max_attempts": 2', '"max_attempts": 0');
    await upload(invalid);

    const { source, events } = lambdaConfigSource();
    const loaded = await source.current();

    const expected = parseConfigText(invalid);
    expect(expected.ok).toBe(false);
    expect(events[0]).toEqual({
      type: "config_rejected",
      location: `s3://${BUCKET}/${KEY}`,
      problems: expected.ok ? [] : expected.problems,
    });
    // The bundled fallback is parsed from config.json, as before.
    expect(loaded.source.kind).toBe("bundled");
    expect(loaded.config).toStrictEqual(parsed(DEPLOYED));
  });

  it("when missing or unreadable, leaves every document to be parsed", async () => {
    await upload(DEPLOYED);
    const digest = (
      JSON.parse(await readFile(join(packageDir, PREPARED_CONFIG_FILE), "utf8")) as {
        source_sha256: string;
      }
    ).source_sha256;
    for (const contents of [
      "not json",
      '{"config": {}}',
      "null",
      JSON.stringify({ source_sha256: digest }),
      JSON.stringify({ source_sha256: digest, config: 5 }),
    ]) {
      await writeFile(join(packageDir, PREPARED_CONFIG_FILE), contents);
      const loaded = await lambdaConfigSource().source.current();
      expect(loaded.config).toStrictEqual(parsed(DEPLOYED));
    }
    await rm(join(packageDir, PREPARED_CONFIG_FILE));
    const loaded = await lambdaConfigSource().source.current();
    expect(loaded.config).toStrictEqual(parsed(DEPLOYED));
  });
});
