import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ConfigSourceEvent,
  createConfigSource,
} from "../../../../functions/adapters/config/config-source.ts";
import { s3rverObjectReader } from "../../../support/s3-bucket.ts";

const BUCKET = "gateway-config";
const KEY = "config.json";
const REFRESH_MS = 30_000;

/** A valid config whose single provider's host tells the versions apart. */
function configDocument(label: string): object {
  return {
    config_refresh_seconds: REFRESH_MS / 1000,
    networks: { ethereum: { chain_id: 1, providers: [{ url: `https://${label}.example.com` }] } },
  };
}

function providerHost(loaded: { config: { networks: Record<string, unknown> } }): string {
  const ethereum = loaded.config.networks.ethereum as { providers: Array<{ url: string }> };
  return new URL(ethereum.providers[0]?.url ?? "").hostname;
}

/** A running s3rver that records the status of every GET of the config object. */
interface S3 {
  readonly server: S3rver;
  readonly port: number;
  readonly configGets: number[];
}

async function startS3(directory: string, port = 0): Promise<S3> {
  const server = new S3rver({
    port,
    address: "127.0.0.1",
    silent: true,
    directory,
    configureBuckets: [{ name: BUCKET }],
  });
  const address = await server.run();
  const configGets: number[] = [];
  server.httpServer.on("request", (request, response) => {
    if (request.method === "GET" && request.url?.startsWith(`/${BUCKET}/${KEY}`)) {
      response.on("finish", () => configGets.push(response.statusCode));
    }
  });
  return { server, port: address.port, configGets };
}

function s3ClientFor(port: number): S3Client {
  return new S3Client({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
  });
}

/** A port with nothing listening on it (yet). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

let directory: string;
let running: S3[];
let clients: S3Client[];
let now: number;
let events: ConfigSourceEvent[];
const clock = (): number => now;
const onEvent = (event: ConfigSourceEvent): void => {
  events.push(event);
};

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "config-source-"));
  running = [];
  clients = [];
  now = Date.UTC(2026, 0, 1);
  events = [];
});

afterEach(async () => {
  for (const client of clients) client.destroy();
  await Promise.all(running.map((s3) => s3.server.close()));
  await rm(directory, { recursive: true, force: true });
});

async function s3Up(port = 0): Promise<S3> {
  const s3 = await startS3(directory, port);
  running.push(s3);
  return s3;
}

async function s3Down(s3: S3): Promise<void> {
  running.splice(running.indexOf(s3), 1);
  await s3.server.close();
}

function client(port: number): S3Client {
  const created = s3ClientFor(port);
  clients.push(created);
  return created;
}

/** Uploads a document (an object is written as JSON, a string as is); returns its ETag. */
async function put(port: number, body: object | string): Promise<string> {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const answer = await client(port).send(
    new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: text }),
  );
  return answer.ETag ?? "";
}

function s3Source(port: number, bundled: unknown = configDocument("bundled")) {
  const source = createConfigSource({
    kind: "s3",
    bucket: BUCKET,
    key: KEY,
    s3: s3rverObjectReader(`http://127.0.0.1:${port}`, BUCKET, KEY),
    bundled,
    clock,
  });
  source.subscribe(onEvent);
  return source;
}

describe("S3 config source", () => {
  it("loads the object at first use and reports the source once", async () => {
    const s3 = await s3Up();
    const etag = await put(s3.port, configDocument("first"));

    const loaded = await s3Source(s3.port).current();

    expect(providerHost(loaded)).toBe("first.example.com");
    expect(loaded.source).toEqual({ kind: "s3", etag, loaded_at: "2026-01-01T00:00:00.000Z" });
    expect(events).toEqual([{ type: "config_changed", source: loaded.source }]);
    expect(s3.configGets).toEqual([200]);
  });

  it("asks S3 nothing before the refresh interval, then gets a 304 for an unchanged object", async () => {
    const s3 = await s3Up();
    await put(s3.port, configDocument("first"));
    const source = s3Source(s3.port);
    const first = await source.current();

    now += REFRESH_MS - 1;
    expect(await source.current()).toBe(first);
    expect(s3.configGets).toEqual([200]);

    now += 1;
    expect(await source.current()).toBe(first);
    expect(s3.configGets).toEqual([200, 304]);
    expect(events).toHaveLength(1);
  });

  it("picks up a changed object after the refresh interval, not before", async () => {
    const s3 = await s3Up();
    await put(s3.port, configDocument("first"));
    const source = s3Source(s3.port);
    await source.current();
    const etag = await put(s3.port, configDocument("second"));

    now += REFRESH_MS - 1;
    expect(providerHost(await source.current())).toBe("first.example.com");

    now += 1;
    const changed = await source.current();
    expect(providerHost(changed)).toBe("second.example.com");
    expect(changed.source).toEqual({ kind: "s3", etag, loaded_at: new Date(now).toISOString() });
    expect(events.map((event) => event.type)).toEqual(["config_changed", "config_changed"]);
    expect(s3.configGets).toEqual([200, 200]);
  });

  it("keeps the last good config when the object turns invalid, and reports it once", async () => {
    const s3 = await s3Up();
    await put(s3.port, configDocument("good"));
    const source = s3Source(s3.port);
    const good = await source.current();

    await put(s3.port, '{ "networks": {\n  "ethereum": { "chain_id": 1 }\n');
    now += REFRESH_MS;
    expect(await source.current()).toBe(good);
    expect(events.at(-1)).toMatchObject({
      type: "config_rejected",
      location: `s3://${BUCKET}/${KEY}`,
      problems: [{ path: "(root)", message: expect.stringMatching(/^invalid JSON at line 3/) }],
    });

    // The rejected version is not fetched again: a 304 and no second report.
    now += REFRESH_MS;
    expect(await source.current()).toBe(good);
    expect(s3.configGets).toEqual([200, 200, 304]);
    expect(events.filter((event) => event.type === "config_rejected")).toHaveLength(1);

    const invalid = configDocument("bad") as { networks: { ethereum: { providers: object[] } } };
    invalid.networks.ethereum.providers = [{ url: "https://bad.example.com", tiebreak_weight: 0 }];
    await put(s3.port, invalid);
    now += REFRESH_MS;
    expect(await source.current()).toBe(good);
    expect(events.at(-1)).toEqual({
      type: "config_rejected",
      location: `s3://${BUCKET}/${KEY}`,
      problems: [
        {
          path: "networks.ethereum.providers[0].tiebreak_weight",
          message: "tiebreak_weight must be greater than 0",
        },
      ],
    });
  });

  it("keeps the last good config while S3 is down, and never throws", async () => {
    const s3 = await s3Up();
    await put(s3.port, configDocument("good"));
    const source = s3Source(s3.port);
    const good = await source.current();
    await s3Down(s3);

    now += REFRESH_MS;
    expect(await source.current()).toBe(good);
    expect(events.at(-1)).toMatchObject({
      type: "config_source_error",
      location: `s3://${BUCKET}/${KEY}`,
      error: expect.any(String),
    });

    // A failed check also waits the interval, so a down S3 is not asked on every request.
    const errors = events.length;
    now += 1000;
    expect(await source.current()).toBe(good);
    expect(events).toHaveLength(errors);
  });

  it("falls back to the bundled copy at cold start while S3 is down, then switches to S3", async () => {
    const port = await freePort();
    const source = s3Source(port);

    const cold = await source.current();
    expect(providerHost(cold)).toBe("bundled.example.com");
    expect(cold.source).toEqual({ kind: "bundled", loaded_at: "2026-01-01T00:00:00.000Z" });
    expect(events.map((event) => event.type)).toEqual(["config_source_error", "config_changed"]);

    const s3 = await s3Up(port);
    const etag = await put(s3.port, configDocument("recovered"));
    now += REFRESH_MS - 1;
    expect(await source.current()).toBe(cold);

    now += 1;
    const recovered = await source.current();
    expect(providerHost(recovered)).toBe("recovered.example.com");
    expect(recovered.source).toMatchObject({ kind: "s3", etag });
    expect(events.at(-1)).toEqual({ type: "config_changed", source: recovered.source });
  });

  it("uses the bundled copy at cold start when the S3 object is invalid", async () => {
    const s3 = await s3Up();
    await put(s3.port, "not json");

    const loaded = await s3Source(s3.port).current();

    expect(loaded.source.kind).toBe("bundled");
    expect(events.map((event) => event.type)).toEqual(["config_rejected", "config_changed"]);
  });

  it("throws a clear error at cold start with neither S3 nor a valid bundled copy", async () => {
    const port = await freePort();
    const source = s3Source(port, { networks: {} });

    await expect(source.current()).rejects.toThrow(
      /no usable config: s3:\/\/gateway-config\/config.json: .*\nand the bundled copy is invalid:\nbundled: networks: configure at least one network/,
    );
  });

  it("shares one in-flight request among concurrent callers", async () => {
    const s3 = await s3Up();
    await put(s3.port, configDocument("first"));
    const source = s3Source(s3.port);

    const cold = await Promise.all([source.current(), source.current(), source.current()]);
    expect(new Set(cold).size).toBe(1);
    expect(s3.configGets).toEqual([200]);

    await put(s3.port, configDocument("second"));
    now += REFRESH_MS;
    const refreshed = await Promise.all([source.current(), source.current(), source.current()]);
    expect(refreshed.map(providerHost)).toEqual(Array(3).fill("second.example.com"));
    expect(s3.configGets).toEqual([200, 200]);
  });
});

describe("file config source", () => {
  it("loads the file and applies a valid edit after the interval, keeping the last good on a bad one", async () => {
    const path = join(directory, "local.json");
    await writeFile(path, JSON.stringify(configDocument("first")));
    const source = createConfigSource({ kind: "file", path, clock });
    source.subscribe(onEvent);

    const first = await source.current();
    expect(first.source).toEqual({ kind: "file", loaded_at: "2026-01-01T00:00:00.000Z" });

    await writeFile(path, JSON.stringify(configDocument("second")));
    now += REFRESH_MS;
    expect(providerHost(await source.current())).toBe("second.example.com");

    await writeFile(path, "{");
    now += REFRESH_MS;
    expect(providerHost(await source.current())).toBe("second.example.com");
    expect(events.map((event) => event.type)).toEqual([
      "config_changed",
      "config_changed",
      "config_rejected",
    ]);
  });

  it("throws at start when the file is missing", async () => {
    const path = join(directory, "missing.json");
    const source = createConfigSource({ kind: "file", path, clock });

    await expect(source.current()).rejects.toThrow(/no usable config: .*missing\.json: .*ENOENT/);
  });
});
