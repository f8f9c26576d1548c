import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { parseConfig } from "../../../functions/core/config/network-model.ts";

/**
 * Bounds the runtime silently depends on, checked with the schema: `config:check` and the
 * synth refuse a config beyond them, and a running gateway rejects such an object and keeps
 * the last good config.
 */

const network = (overrides: Record<string, unknown> = {}) => ({
  chain_id: 1,
  providers: [{ url: "https://a.example/rpc" }],
  ...overrides,
});

function problems(config: Record<string, unknown>): Array<[string, string]> {
  const result = parseConfig({ networks: { eth: network() }, ...config });
  return result.ok ? [] : result.problems.map((problem) => [problem.path, problem.message]);
}

describe("config bounds", () => {
  it.each<{ name: string; config: Record<string, unknown>; path: string; message: string }>([
    {
      name: "request_deadline_ms over API Gateway's 29 s",
      config: { request_deadline_ms: 29_000 },
      path: "request_deadline_ms",
      message:
        "request_deadline_ms 29000 is over 28000: API Gateway cuts a request at 29 s, and the proxy needs 1 s to answer",
    },
    {
      name: "request_deadline_ms over the limit inside a network",
      config: { networks: { eth: network({ request_deadline_ms: 30_000 }) } },
      path: "networks.eth.request_deadline_ms",
      message:
        "request_deadline_ms 30000 in network eth is over 28000: API Gateway cuts a request at 29 s, and the proxy needs 1 s to answer",
    },
    {
      name: "an attempt longer than its request",
      config: { request_timeout_ms: 20_000, request_deadline_ms: 15_000 },
      path: "request_timeout_ms",
      message:
        "request_timeout_ms 20000 is over request_deadline_ms 15000: an attempt cannot outlast its request",
    },
    {
      name: "a monitor interval under a second",
      config: { check_interval_seconds: 0.5 },
      path: "check_interval_seconds",
      message: "check_interval_seconds must be at least 1",
    },
    {
      name: "a config refresh under a second",
      config: { config_refresh_seconds: 0.1 },
      path: "config_refresh_seconds",
      message: "config_refresh_seconds must be at least 1",
    },
    {
      name: "quorum check and probe timeouts that do not fit the monitor's run",
      config: { quorum: { check_timeout_ms: 40_000 }, probe: { timeout_ms: 20_000 } },
      path: "quorum.check_timeout_ms",
      message:
        "quorum.check_timeout_ms 40000 + probe.timeout_ms 20000 leave no room for a monitor tick: together with 1 s of storage they must fit the monitor's 58 s run",
    },
    {
      name: "an answer larger than Lambda can return",
      config: { max_response_bytes: 7_000_000 },
      path: "max_response_bytes",
      message: "max_response_bytes 7000000 is over 6000000: Lambda cannot return more than 6 MB",
    },
    {
      name: "a body larger than Lambda's request payload can carry",
      config: { max_body_bytes: 5_000_000 },
      path: "max_body_bytes",
      message:
        "max_body_bytes 5000000 is over 4500000: a larger body does not fit Lambda's 6 MB request payload",
    },
    {
      name: "a call budget under one call's attempts",
      config: { max_attempts: 5, max_upstream_calls: 4 },
      path: "max_upstream_calls",
      message:
        "max_upstream_calls 4 is under max_attempts 5: a single call could not use its attempts",
    },
    {
      name: "a failing-often window longer than request stats are kept",
      config: { quorum: { failing_often: { window_seconds: 7_200 } } },
      path: "quorum.failing_often.window_seconds",
      message:
        "quorum.failing_often.window_seconds 7200 is over 3600: request stats are kept one hour",
    },
    {
      name: "max_ahead_blocks under what an honest provider can lead by in max_lag_seconds",
      config: {
        networks: { eth: network({ block_time_seconds: 0.25, quorum: { max_ahead_blocks: 200 } }) },
      },
      path: "networks.eth.quorum.max_ahead_blocks",
      message:
        "quorum.max_ahead_blocks 200 in network eth is under the 240 blocks a chain of 0.25 s blocks makes in quorum.max_lag_seconds 60: an honest provider that far ahead would be left out of the quorum as ahead",
    },
  ])("$name is reported at its path", ({ config, path, message }) => {
    expect(problems(config)).toEqual([[path, message]]);
  });

  it("two API keys with one name are refused (the name keys the usage counter)", () => {
    const key = (name: string) => ({ name, sha256: "a".repeat(64), requests_per_minute: 60 });
    expect(problems({ api_keys: [key("indexer"), key("wallet"), key("indexer")] })).toEqual([
      [
        "api_keys[2].name",
        'duplicate API key name "indexer" (also api_keys[0]): names key the usage counters and logs, so they must be unique',
      ],
    ]);
  });

  it("a top-level value over a bound is reported once, not once per network", () => {
    expect(
      problems({
        request_deadline_ms: 29_000,
        networks: { eth: network(), base: network(), op: network() },
      }),
    ).toHaveLength(1);
  });

  it("the defaults and values at the bounds are valid", () => {
    expect(problems({})).toEqual([]);
    expect(
      problems({
        request_deadline_ms: 28_000,
        request_timeout_ms: 28_000,
        check_interval_seconds: 1,
        config_refresh_seconds: 1,
        max_response_bytes: 6_000_000,
        max_body_bytes: 4_500_000,
        max_attempts: 5,
        max_upstream_calls: 5,
        quorum: { check_timeout_ms: 30_000, failing_often: { window_seconds: 3_600 } },
        probe: { timeout_ms: 27_000 },
      }),
    ).toEqual([]);
  });
});

describe("npm run config:check", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "config-bounds-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("prints each bound with its file and path, and exits 1", async () => {
    const file = join(dir, "prod.json");
    const config: ConfigInput = {
      request_deadline_ms: 29_500,
      networks: { eth: { chain_id: 1, providers: [{ url: "https://a.example/rpc" }] } },
    };
    await writeFile(file, JSON.stringify(config));
    const run = promisify(execFile)("npx", ["tsx", "scripts/config-check.ts", file], {
      cwd: join(import.meta.dirname, "../../.."),
    });
    const failure = (await run.then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    )) as { code: number; stderr: string };
    expect(failure.code).toBe(1);
    expect(failure.stderr).toContain(
      `${file}: request_deadline_ms: request_deadline_ms 29500 is over 28000`,
    );
  });
});
