import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createConfigSource } from "../../../../functions/adapters/config/config-source.ts";
import {
  createModelSource,
  type ModelInForce,
} from "../../../../functions/adapters/config/model-source.ts";
import { ssmSecretResolver } from "../../../../functions/adapters/config/secrets.ts";
import {
  createSecretsExtension,
  type SecretsExtension,
} from "../../../../functions/adapters/config/secrets-extension.ts";
import type { ConfigInput } from "../../../../functions/core/config/config-schema.ts";
import type { LogLevel, Telemetry } from "../../../../functions/core/ports.ts";
import {
  type SecretsExtensionStandIn,
  startSecretsExtension,
} from "../../../support/secrets-extension.ts";

/**
 * Secrets resolved per provider, read through a local server speaking the Parameters and
 * Secrets extension's API: one missing or unreadable secret leaves out only the providers that use it, and a
 * failed name is retried on the `config_refresh_seconds` cadence, never once per request.
 */

const PREFIX = "/rpc-gateway/test/";
const REFRESH_MS = 30_000;
const A_VALUE = "a-secret-value-0123456789";

let service: SecretsExtensionStandIn;
let extension: SecretsExtension;
let dir: string;

beforeAll(async () => {
  service = await startSecretsExtension();
  extension = createSecretsExtension({ origin: service.origin, token: () => service.token });
  dir = await mkdtemp(join(tmpdir(), "model-source-secrets-"));
});

afterAll(async () => {
  await extension.close();
  await service.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => service.reset());

afterEach(() => {
  service.fault = null;
});

const CONFIG: ConfigInput = {
  config_refresh_seconds: REFRESH_MS / 1000,
  networks: {
    ethereum: {
      chain_id: 1,
      providers: [
        { name: "with-a", url: "https://a.example/v2/${A_KEY}", priority: 3 },
        { name: "with-b", url: "https://b.example/v2/${B_KEY}", priority: 2 },
        { name: "public", url: "https://public.example/rpc" },
      ],
    },
    base: {
      chain_id: 8453,
      providers: [{ name: "base-b", url: "https://base.example/${B_KEY}" }],
    },
  },
};

interface Recorded extends Pick<Telemetry, "log" | "measure"> {
  readonly logs: Array<{ level: LogLevel; message: string; fields: Record<string, unknown> }>;
  readonly gauges: Array<{ name: string; value: number }>;
}

function recorder(): Recorded {
  const logs: Recorded["logs"] = [];
  const gauges: Recorded["gauges"] = [];
  return {
    logs,
    gauges,
    log: (level, message, fields = {}) => logs.push({ level, message, fields }),
    measure: (name, _dimensions, value) => gauges.push({ name, value }),
  };
}

let files = 0;

/** A model source over a config file, SSM, and a clock the test moves. */
async function setup(config: ConfigInput = CONFIG, fileRefreshSeconds?: number) {
  const path = join(dir, `config-${++files}.json`);
  await writeFile(path, JSON.stringify(config));
  let now = 1_800_000_000_000;
  const clock = () => now;
  const telemetry = recorder();
  const changes: ModelInForce[] = [];
  let nextChange: (() => void) | null = null;
  const models = createModelSource({
    configSource: createConfigSource({
      kind: "file",
      path,
      clock,
      ...(fileRefreshSeconds === undefined ? {} : { refreshSeconds: fileRefreshSeconds }),
    }),
    secrets: ssmSecretResolver(extension, PREFIX),
    telemetry,
    clock,
    onChange: (inForce) => {
      changes.push(inForce);
      nextChange?.();
    },
  });
  return {
    models,
    telemetry,
    changes,
    path,
    advance: (ms: number) => {
      now += ms;
    },
    /** Resolves at the next model change (a background retry that resolved something). */
    changed: () =>
      new Promise<void>((resolve) => {
        nextChange = resolve;
      }),
    names: (inForce: ModelInForce, network: string) =>
      inForce.model.networks.get(network)?.providers.map((provider) => provider.name),
    leftOut: (inForce: ModelInForce, network: string) =>
      inForce.model.networks.get(network)?.leftOut.map((provider) => provider.name),
  };
}

const ssmCalls = () =>
  service.calls.filter((call) => call.path === "/systemsmanager/parameters/get");
/** The parameters asked for, in order; names asked for together are sorted. */
const askedFor = () => ssmCalls().map((call) => call.query.name);

describe("secrets resolved per provider", () => {
  it("a provider whose secret is missing is left out with the reason, a log and a metric; every other provider and network serves", async () => {
    service.parameters.set(`${PREFIX}A_KEY`, A_VALUE);
    const s = await setup();

    const inForce = await s.models.current();

    expect(s.names(inForce, "ethereum")).toEqual(["with-a", "public"]);
    expect(inForce.model.networks.get("ethereum")?.providers[0]?.url).toBe(
      `https://a.example/v2/${A_VALUE}`,
    );
    expect(inForce.model.networks.get("ethereum")?.leftOut).toEqual([
      {
        name: "with-b",
        redactedUrl: "https://b.example/v2/***",
        priority: 2,
        backup: false,
        reason: "secret_unresolved",
        detail: `no value for placeholder \${B_KEY}: SSM parameter ${PREFIX}B_KEY does not exist or the function's role may not read it (the extension answered HTTP 400: an unexpected error occurred while executing request); create the SecureString parameter ${PREFIX}B_KEY`,
      },
    ]);
    expect(s.names(inForce, "base")).toEqual([]);
    expect(s.leftOut(inForce, "base")).toEqual(["base-b"]);

    const errors = s.telemetry.logs.filter((log) => log.level === "error");
    expect(errors.map((log) => [log.fields.network, log.fields.provider])).toEqual([
      ["ethereum", "with-b"],
      ["base", "base-b"],
    ]);
    expect(s.telemetry.gauges).toEqual([{ name: "providers_left_out", value: 2 }]);
    expect(JSON.stringify(s.telemetry.logs)).not.toContain(A_VALUE);
  });

  it("regression: a key written into a provider URL itself (an invictus config loaded unchanged) reached callers and the status when the provider echoed it in an error; now the parts the URL's redaction masks are scrubbed like secrets", async () => {
    const literalKey = "9aa3d95b3bc440fa88ea12eaa4456161";
    const s = await setup({
      networks: {
        ethereum: {
          chain_id: 1,
          providers: [
            { name: "infura", url: `https://mainnet.infura.io/v3/${literalKey}` },
            { name: "query", url: "https://q.example/rpc?format=json&apikey=QK-77f0e2c1d9a8" },
            { name: "basic", url: "https://node-user:pa55-w0rd-xyz@basic.example/" },
          ],
        },
      },
    });
    const inForce = await s.models.current();
    const echo = `project ${literalKey} over quota; key QK-77f0e2c1d9a8, password pa55-w0rd-xyz; format json for node-user`;
    const masked = "project *** over quota; key ***, password ***; format json for node-user";
    expect(inForce.scrub(echo)).toBe(masked);
    expect(inForce.scrubAnswer(echo)).toBe(masked);
  });

  it("regression: 50 requests while a secret was missing made one lookup (one read per name), not 50", async () => {
    service.parameters.set(`${PREFIX}A_KEY`, A_VALUE);
    const s = await setup();

    for (let request = 0; request < 50; request++) {
      s.advance(100);
      await s.models.current();
    }

    expect(askedFor().sort()).toEqual(["/rpc-gateway/test/A_KEY", "/rpc-gateway/test/B_KEY"]);
  });

  it("a failed name is tried again once per config_refresh_seconds, in the background, and its providers join when it appears", async () => {
    service.parameters.set(`${PREFIX}A_KEY`, A_VALUE);
    const s = await setup();
    await s.models.current();

    s.advance(REFRESH_MS - 1);
    await s.models.current();
    expect(ssmCalls()).toHaveLength(2);

    // Due, but still missing: one lookup of the failed name alone, and nothing changes.
    s.advance(1);
    await s.models.current();
    await vi.waitFor(() => expect(ssmCalls()).toHaveLength(3));
    await new Promise((resolve) => setImmediate(resolve));
    expect(askedFor().slice(2)).toEqual(["/rpc-gateway/test/B_KEY"]);
    expect(s.changes).toHaveLength(1);

    service.parameters.set(`${PREFIX}B_KEY`, "b-secret-value-9876543210");
    s.advance(REFRESH_MS);
    const changed = s.changed();
    const during = await s.models.current();
    // The model in force answers at once; the retry runs beside it.
    expect(s.leftOut(during, "ethereum")).toEqual(["with-b"]);
    await changed;

    const after = await s.models.current();
    expect(s.names(after, "ethereum")).toEqual(["with-a", "with-b", "public"]);
    expect(s.names(after, "base")).toEqual(["base-b"]);
    expect(s.leftOut(after, "ethereum")).toEqual([]);
    expect(askedFor()).toHaveLength(4);
    expect(after.scrub("https://b.example/v2/b-secret-value-9876543210")).toBe(
      "https://b.example/v2/***",
    );
  });

  it("the extension failing at cold start: providers with secrets are left out with the reason, the public one serves, and all join once it answers", async () => {
    service.parameters.set(`${PREFIX}A_KEY`, A_VALUE);
    service.parameters.set(`${PREFIX}B_KEY`, "b-secret-value-9876543210");
    service.fault = { status: 500, body: "internal error" };
    const s = await setup();

    const cold = await s.models.current();
    expect(s.names(cold, "ethereum")).toEqual(["public"]);
    expect(cold.model.networks.get("ethereum")?.leftOut[0]?.detail).toBe(
      `cannot read SSM parameter ${PREFIX}A_KEY for \${A_KEY}: the Parameters and Secrets extension at ${service.origin} answered HTTP 500: internal error`,
    );

    service.fault = null;
    s.advance(REFRESH_MS);
    const changed = s.changed();
    await s.models.current();
    await changed;
    expect(s.names(await s.models.current(), "ethereum")).toEqual(["with-a", "with-b", "public"]);
  });

  it("a value once found is kept: a new config object with the same names reads nothing", async () => {
    service.parameters.set(`${PREFIX}A_KEY`, A_VALUE);
    service.parameters.set(`${PREFIX}B_KEY`, "b-secret-value-9876543210");
    const s = await setup();
    await s.models.current();
    expect(ssmCalls()).toHaveLength(2);

    const edited: ConfigInput = JSON.parse(JSON.stringify(CONFIG));
    edited.networks.ethereum?.providers.reverse();
    await writeFile(s.path, JSON.stringify(edited));
    s.advance(REFRESH_MS);
    const next = await s.models.current();

    expect(s.names(next, "ethereum")).toEqual(["public", "with-b", "with-a"]);
    expect(ssmCalls()).toHaveLength(2);
  });

  it("a new config naming a secret that failed moments ago does not look it up again before it is due", async () => {
    const failing = { url: "https://a.example/${B_KEY}" };
    // The file is re-read every second, far more often than a failed secret may be retried.
    const s = await setup(
      {
        config_refresh_seconds: REFRESH_MS / 1000,
        networks: { ethereum: { chain_id: 1, providers: [failing] } },
      },
      1,
    );
    await s.models.current();
    await writeFile(
      s.path,
      JSON.stringify({
        config_refresh_seconds: REFRESH_MS / 1000,
        networks: {
          ethereum: { chain_id: 1, providers: [failing, { url: "https://p.example/rpc" }] },
        },
      }),
    );
    s.advance(1_000);
    const next = await s.models.current();
    expect(next.model.networks.get("ethereum")?.providers.map((p) => p.name)).toEqual(["p"]);
    expect(next.model.networks.get("ethereum")?.leftOut.map((p) => p.name)).toEqual(["a"]);
    expect(ssmCalls()).toHaveLength(1);

    s.advance(REFRESH_MS - 1_000);
    await s.models.current();
    await vi.waitFor(() =>
      expect(askedFor()).toEqual(["/rpc-gateway/test/B_KEY", "/rpc-gateway/test/B_KEY"]),
    );
  });
});
