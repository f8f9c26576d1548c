import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { parseConfigText } from "../../../../functions/adapters/config/config-file.ts";
import {
  PREPARED_CONFIG_FILE,
  preparedConfigReader,
} from "../../../../functions/adapters/config/config-prepared.ts";
import {
  type ConfigSourceEvent,
  createConfigSource,
} from "../../../../functions/adapters/config/config-source.ts";
import { configSourceFromEnv } from "../../../../functions/adapters/environment.ts";
import { writeBundledConfig } from "../../../../infra/constructs/bundled-config.ts";
import {
  type S3Bucket,
  S3RVER_CREDENTIALS,
  s3rverObjectReader,
  startS3Bucket,
} from "../../../support/s3-bucket.ts";

/**
 * Attacks on the config prepared at build time: only an S3 object with the bundled document's
 * exact bytes may get it; any other object, however close (whitespace, a BOM, CRLF, a number
 * written otherwise, a duplicate key, a trailing NUL), is parsed and validated, and a later
 * change in S3 is too (a duplicate key, a trailing NUL: rejected, as the parse rejects them).
 * The prepared file here carries a marker the document never has, so a config that holds it
 * came from the prepared file.
 */

const BUCKET = "config-bucket";
const KEY = "config/dev.json";
const MARKER = "only in the prepared file";

const DEPLOYED = `${JSON.stringify(
  {
    config_refresh_seconds: 60,
    networks: {
      ethereum: {
        chain_id: 1,
        max_attempts: 2,
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
  // The Lambda's S3 reads take their credentials from the process environment.
  vi.stubEnv("AWS_ACCESS_KEY_ID", S3RVER_CREDENTIALS.accessKeyId);
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", S3RVER_CREDENTIALS.secretAccessKey);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await bucket?.close();
});

beforeEach(async () => {
  if (packageDir) await rm(packageDir, { recursive: true, force: true });
  packageDir = await mkdtemp(join(tmpdir(), "config-prepared-attacks-package-"));
  writeBundledConfig(DEPLOYED, KEY, packageDir);
  const path = join(packageDir, PREPARED_CONFIG_FILE);
  const prepared = JSON.parse(await readFile(path, "utf8")) as { config: object };
  prepared.config = { ...prepared.config, inner_errors: [MARKER] };
  await writeFile(path, JSON.stringify(prepared));
});

async function upload(body: string | Buffer): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: body }));
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

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("an S3 object that differs from the bundled document in any way", () => {
  it("control: the bundled bytes themselves get the prepared config", async () => {
    await upload(bytes(DEPLOYED));
    const loaded = await lambdaConfigSource().source.current();
    expect(loaded.config.inner_errors).toEqual([MARKER]);
  });

  it.each([
    ["one byte less (no final newline)", bytes(DEPLOYED.slice(0, -1))],
    ["a leading space", bytes(` ${DEPLOYED}`)],
    ["a byte-order mark", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes(DEPLOYED)])],
    ["CRLF line ends", bytes(DEPLOYED.replaceAll("\n", "\r\n"))],
    [
      "a number written otherwise (2.0)",
      bytes(DEPLOYED.replace('"max_attempts": 2', '"max_attempts": 2.0')),
    ],
    [
      "a number written otherwise (2e0)",
      bytes(DEPLOYED.replace('"max_attempts": 2', '"max_attempts": 2e0')),
    ],
    [
      "an escaped letter in a string",
      bytes(DEPLOYED.replace('"https://b.example"', '"https://b.ex\\u0061mple"')),
    ],
    [
      "members in another order",
      bytes(
        DEPLOYED.replace(
          /\{\n {2}"config_refresh_seconds": 60,\n {2}("networks".*)\}\n$/s,
          '{\n  $1,"config_refresh_seconds": 60}\n',
        ),
      ),
    ],
  ])("%s: parsed and validated, never the prepared config", async (_name, body) => {
    await upload(body);
    const loaded = await lambdaConfigSource().source.current();
    expect(loaded.source.kind).toBe("s3");
    expect(loaded.config.inner_errors).toEqual([]);
    const expected = parseConfigText(body.toString("utf8"));
    expect(expected.ok && loaded.config).toStrictEqual(expected.ok && expected.config);
  });

  it.each([
    ["a trailing NUL", Buffer.concat([bytes(DEPLOYED), Buffer.from([0])])],
    ["an invalid UTF-8 byte at the end", Buffer.concat([bytes(DEPLOYED), Buffer.from([0xff])])],
    ["the document cut short", bytes(DEPLOYED.slice(0, 40))],
    [
      "a duplicate key",
      bytes(DEPLOYED.replace('"max_attempts": 2', '"max_attempts": 3, "max_attempts": 2')),
    ],
  ])("%s: rejected as the parse rejects it; the bundled copy stands in", async (_name, body) => {
    await upload(body);
    const { source, events } = lambdaConfigSource();
    const loaded = await source.current();
    expect(events[0]?.type).toBe("config_rejected");
    expect(loaded.source.kind).toBe("bundled");
    expect(loaded.config.inner_errors).toEqual([]);
  });
});

describe("after a cold start on the prepared config", () => {
  it("each later S3 change is parsed and validated (a bad one rejected, the config kept); the bundled bytes back get the prepared config again", async () => {
    let now = 1_800_000_000_000;
    await upload(bytes(DEPLOYED));
    const events: ConfigSourceEvent[] = [];
    const source = createConfigSource({
      kind: "s3",
      bucket: BUCKET,
      key: KEY,
      s3: s3rverObjectReader(bucket.endpoint, BUCKET, KEY),
      bundled: JSON.parse(DEPLOYED),
      prepared: preparedConfigReader(join(packageDir, PREPARED_CONFIG_FILE)),
      clock: () => now,
    });
    source.subscribe((event) => events.push(event));
    expect((await source.current()).config.inner_errors).toEqual([MARKER]);

    await upload(bytes(DEPLOYED.replace('"max_attempts": 2', '"max_attempts": 0')));
    now += 61_000;
    expect((await source.current()).config.inner_errors).toEqual([MARKER]);
    expect(events.at(-1)?.type).toBe("config_rejected");

    await upload(bytes(DEPLOYED.replace('"max_attempts": 2', '"max_attempts": 4')));
    now += 61_000;
    const edited = await source.current();
    expect(edited.config.inner_errors).toEqual([]);
    expect(edited.config.networks.ethereum?.max_attempts).toBe(4);

    await upload(bytes(DEPLOYED));
    now += 61_000;
    expect((await source.current()).config.inner_errors).toEqual([MARKER]);
  });
});

describe("a hostile or corrupt prepared file", () => {
  async function preparedWith(contents: string): Promise<void> {
    await writeFile(join(packageDir, PREPARED_CONFIG_FILE), contents);
  }
  const digestOf = async () =>
    (
      JSON.parse(await readFile(join(packageDir, PREPARED_CONFIG_FILE), "utf8")) as {
        source_sha256: string;
      }
    ).source_sha256;

  it("a '__proto__' key in it pollutes no prototype", async () => {
    await upload(bytes(DEPLOYED));
    const file = JSON.parse(await readFile(join(packageDir, PREPARED_CONFIG_FILE), "utf8"));
    const text = JSON.stringify(file).replace(
      '"config":{',
      '"__proto__":{"polluted":1},"config":{"__proto__":{"polluted":2},',
    );
    await preparedWith(text);
    const loaded = await lambdaConfigSource().source.current();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(loaded.config)).toBe(Object.prototype);
  });

  it("a digest of the wrong case or with spaces matches nothing: the document is parsed", async () => {
    await upload(bytes(DEPLOYED));
    const digest = await digestOf();
    const config = parseConfigText(DEPLOYED);
    for (const wrong of [digest.toUpperCase(), ` ${digest}`, `${digest}\n`]) {
      await preparedWith(
        JSON.stringify({
          source_sha256: wrong,
          config: { ...(config.ok && config.config), inner_errors: [MARKER] },
        }),
      );
      const loaded = await lambdaConfigSource().source.current();
      expect(loaded.config.inner_errors).toEqual([]);
    }
  });

  it("a prepared file of 20 MB neither hangs nor crashes a load", async () => {
    await upload(bytes(DEPLOYED));
    const digest = await digestOf();
    await preparedWith(
      JSON.stringify({
        source_sha256: digest,
        padding: "x".repeat(20_000_000),
        config: { inner_errors: [MARKER], networks: {} },
      }),
    );
    const read = preparedConfigReader(join(packageDir, PREPARED_CONFIG_FILE));
    const started = performance.now();
    for (let i = 0; i < 3; i++) expect(read(DEPLOYED)?.inner_errors).toEqual([MARKER]);
    expect(read(`${DEPLOYED} `)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
