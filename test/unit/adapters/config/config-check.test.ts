import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ConfigFileReport,
  checkConfigFile,
  loadConfigFile,
} from "../../../../functions/adapters/config/config-file.ts";
import { DEFAULT_METHODS_DENY } from "../../../../functions/core/config/config-schema.ts";

let directory: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "config-check-"));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

function validConfig(): {
  networks: Record<string, { chain_id: number; providers: Array<Record<string, unknown>> }>;
  [key: string]: unknown;
} {
  return {
    networks: {
      ethereum: {
        chain_id: 1,
        providers: [
          { url: "https://eth.llamarpc.com" },
          { url: `https://eth-mainnet.g.alchemy.com/v2/\${ALCHEMY_KEY}`, backup: true },
        ],
      },
    },
  };
}

let fileCount = 0;
async function check(content: string | object, envSecrets?: Record<string, string>) {
  const file = join(directory, `config-${fileCount++}.json`);
  await writeFile(file, typeof content === "string" ? content : JSON.stringify(content, null, 2));
  return checkConfigFile(file, envSecrets ? { envSecrets } : {});
}

function pathsAndMessages(report: ConfigFileReport): Array<[string, string]> {
  return report.problems.map((problem) => [problem.path, problem.message]);
}

describe("checkConfigFile", () => {
  it("summarises a good file", async () => {
    const report = await check(validConfig());
    expect(report.problems).toEqual([]);
    expect(report.summary).toEqual({ networks: 1, providers: 2 });
  });

  it("locates invalid JSON by line and column, with a hint", async () => {
    const report = await check('{\n  "networks": {\n    "ethereum": { "chain_id": 1, }\n  }\n}');
    expect(report.problems).toEqual([
      {
        path: "(root)",
        message: "invalid JSON at line 3, column 34: Expected double-quoted property name",
        hint: expect.stringContaining("comma"),
      },
    ]);
    expect(report.summary).toBeUndefined();
  });

  it("locates an unexpected token, which V8 reports without a position", async () => {
    const report = await check('{\n  "networks": tx\n}');
    expect(report.problems[0]?.message).toBe(
      "invalid JSON at line 2, column 16: Unexpected token 'x'",
    );
  });

  it("locates a truncated file at its end", async () => {
    const report = await check('{\n  "networks": {');
    expect(report.problems[0]?.message).toMatch(/^invalid JSON at line 2, column 16: /);
  });

  it("names an unknown key by its path", async () => {
    const config = validConfig();
    const provider = config.networks.ethereum?.providers[0] ?? {};
    provider.priorty = 2;
    expect(pathsAndMessages(await check(config))).toEqual([
      [
        "networks.ethereum.providers[0]",
        'unknown key(s) "priorty": check the spelling against docs/config-reference.md',
      ],
    ]);
  });

  it("regression: a key written twice in one object (a merge that kept both edits) was accepted, the first silently dropped; now each repeat is named by its path", async () => {
    const report = await check(`{
  "networks": {
    "ethereum": { "chain_id": 1, "providers": [{ "url": "https://a.example" }] },
    "ethereum": {
      "chain_id": 1,
      "max_attempts": 3,
      "providers": [{ "url": "https://b.example", "priority": 1, "\\u0070riority": 2 }],
      "max_attempts": 1
    }
  }
}`);
    expect(pathsAndMessages(report)).toEqual([
      [
        "networks",
        'key "ethereum" appears more than once in this object (JSON keeps only the last): keep one',
      ],
      [
        "networks.ethereum.providers[0]",
        'key "priority" appears more than once in this object (JSON keeps only the last): keep one',
      ],
      [
        "networks.ethereum",
        'key "max_attempts" appears more than once in this object (JSON keeps only the last): keep one',
      ],
    ]);
    expect(report.summary).toBeUndefined();
  });

  it("names a duplicate provider name", async () => {
    const config = validConfig();
    const providers = config.networks.ethereum?.providers ?? [];
    for (const provider of providers) provider.name = "same";
    expect(pathsAndMessages(await check(config))).toEqual([
      [
        "networks.ethereum.providers[1].name",
        'duplicate provider name "same" (also providers[0]): names must be unique in a network',
      ],
    ]);
  });

  it("rejects a network with only backups", async () => {
    const config = validConfig();
    for (const provider of config.networks.ethereum?.providers ?? []) provider.backup = true;
    expect(pathsAndMessages(await check(config))).toEqual([
      [
        "networks.ethereum.providers",
        "every provider is a backup: mark at least one as a primary (backup: false)",
      ],
    ]);
  });

  it.each([0, -1])("rejects tiebreak_weight %d", async (weight) => {
    const config = validConfig();
    const provider = config.networks.ethereum?.providers[0] ?? {};
    provider.tiebreak_weight = weight;
    expect(pathsAndMessages(await check(config))).toEqual([
      ["networks.ethereum.providers[0].tiebreak_weight", "tiebreak_weight must be greater than 0"],
    ]);
  });

  it("rejects a bad URL", async () => {
    const config = validConfig();
    const provider = config.networks.ethereum?.providers[0] ?? {};
    provider.url = "eth.llamarpc.com";
    expect(pathsAndMessages(await check(config))).toEqual([
      ["networks.ethereum.providers[0].url", "not a valid URL: write it as https://host/path"],
    ]);
  });

  it("rejects a bad placeholder name", async () => {
    const config = validConfig();
    const provider = config.networks.ethereum?.providers[1] ?? {};
    provider.url = `https://eth-mainnet.g.alchemy.com/v2/\${alchemy-key}`;
    expect(pathsAndMessages(await check(config))).toEqual([
      [
        "networks.ethereum.providers[1].url",
        `placeholder \${alchemy-key} is not a valid secret name: use upper-case letters, digits and _ (e.g. \${ETH_KEY})`,
      ],
    ]);
  });

  it("reports every problem of a file, not just the first", async () => {
    const config = validConfig();
    const providers = config.networks.ethereum?.providers ?? [];
    if (providers[0]) providers[0].tiebreak_weight = 0;
    if (providers[1]) providers[1].url = "ftp://example.com";
    config.check_interval = 5;
    expect((await check(config)).problems.map((problem) => problem.path).sort()).toEqual([
      "(root)",
      "networks.ethereum.providers[0].tiebreak_weight",
      "networks.ethereum.providers[1].url",
    ]);
  });

  it("with envSecrets, names each placeholder that is not set, never a value", async () => {
    const missing = await check(validConfig(), { OTHER: "x" });
    expect(missing.problems).toEqual([
      {
        path: "networks.ethereum.providers[1].url",
        message: `unknown placeholder \${ALCHEMY_KEY}: ALCHEMY_KEY is not set in the environment`,
        hint: expect.stringContaining("export ALCHEMY_KEY="),
      },
    ]);

    const set = await check(validConfig(), { ALCHEMY_KEY: "s3cr3t-value" });
    expect(set.problems).toEqual([]);
    expect(JSON.stringify(set)).not.toContain("s3cr3t-value");
  });

  it("regression: a network's methods_deny written to refuse one more method silently served eth_sendTransaction, anvil_* and the rest of the default list; now the check warns, naming them", async () => {
    const config = validConfig();
    (config.networks.ethereum as Record<string, unknown>).methods_deny = ["debug_traceCall"];
    config.methods_deny = ["eth_*", "admin_*"];
    const report = await check(config);
    expect(report.problems).toEqual([]);
    expect(report.summary).toBeDefined();
    const [top, network, ...rest] = report.warnings ?? [];
    expect(rest).toEqual([]);
    expect(top?.path).toBe("methods_deny");
    // eth_* keeps every eth_ pattern refused; the others are served
    expect(top?.message).not.toContain("eth_sendTransaction*");
    expect(top?.message).toContain("anvil_*");
    expect(network?.path).toBe("networks.ethereum.methods_deny");
    expect(network?.message).toContain("eth_sendTransaction*, ");
    expect(network?.message).toContain("anvil_*");
    expect(network?.hint).toContain("§8.2");
    const kept = validConfig();
    (kept.networks.ethereum as Record<string, unknown>).methods_deny = [
      ...DEFAULT_METHODS_DENY,
      "debug_traceCall",
    ];
    expect((await check(kept)).warnings).toBeUndefined();
    expect((await check(validConfig())).warnings).toBeUndefined();
  });

  it("reports a file that cannot be read", async () => {
    const report = await checkConfigFile(join(directory, "nope.json"));
    expect(pathsAndMessages(report)).toEqual([["(root)", "cannot read the file (ENOENT)"]]);
  });
});

describe("loadConfigFile", () => {
  it("returns the config with defaults filled in", async () => {
    const file = join(directory, "load-good.json");
    await writeFile(file, JSON.stringify(validConfig()));
    const config = await loadConfigFile(file);
    expect(config.config_refresh_seconds).toBe(30);
  });

  it("throws an error listing every problem with its path", async () => {
    const file = join(directory, "load-bad.json");
    const config = validConfig();
    const provider = config.networks.ethereum?.providers[0] ?? {};
    provider.tiebreak_weight = 0;
    await writeFile(file, JSON.stringify(config));
    await expect(loadConfigFile(file)).rejects.toThrow(
      `${file}: networks.ethereum.providers[0].tiebreak_weight: tiebreak_weight must be greater than 0`,
    );
  });
});

describe("the repository's config files", async () => {
  const files = (await readdir("config")).filter((name) => name.endsWith(".json"));

  it("include dev and prod", () => {
    expect(files).toEqual(expect.arrayContaining(["dev.json", "prod.json"]));
  });

  it.each(files)("config/%s passes the check", async (name) => {
    const report = await checkConfigFile(join("config", name));
    expect(report.problems).toEqual([]);
  });
});

describe("npm run config:check", () => {
  const run = async (args: string[]) =>
    promisify(execFile)(process.execPath, [
      "--import",
      "tsx",
      "scripts/config-check.ts",
      ...args,
    ]).then(
      (result) => ({ code: 0, ...result }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  let good: string;
  beforeAll(async () => {
    good = join(directory, "cli-good.json");
    await writeFile(good, JSON.stringify(validConfig()));
  });

  it("prints ok per good file and exits 0", async () => {
    const { code, stdout } = await run([good]);
    expect(code).toBe(0);
    expect(stdout).toBe(`ok ${good} (1 networks, 2 providers)\n`);
  });

  it("prints a warning and still exits 0", async () => {
    const open = validConfig();
    (open.networks.ethereum as Record<string, unknown>).methods_deny = [];
    const file = join(directory, "cli-open.json");
    await writeFile(file, JSON.stringify(open));
    const { code, stdout, stderr } = await run([file]);
    expect(code).toBe(0);
    expect(stdout).toBe(`ok ${file} (1 networks, 2 providers)\n`);
    expect(stderr).toMatch(
      new RegExp(
        `^warning: ${file}: networks\\.ethereum\\.methods_deny: replaces the default deny list whole`,
      ),
    );
  });

  it("prints file: path: message per problem and exits 1", async () => {
    const bad = validConfig();
    const provider = bad.networks.ethereum?.providers[0] ?? {};
    provider.tiebreak_weight = 0;
    const file = join(directory, "cli-bad.json");
    await writeFile(file, JSON.stringify(bad));
    const { code, stdout, stderr } = await run([good, file]);
    expect(code).toBe(1);
    expect(stdout).toBe(`ok ${good} (1 networks, 2 providers)\n`);
    expect(stderr).toBe(
      `${file}: networks.ethereum.providers[0].tiebreak_weight: tiebreak_weight must be greater than 0\n`,
    );
  });

  it("with envSecrets, exits 1 naming the unset placeholder", async () => {
    const { code, stderr } = await run(["--env-secrets", good]);
    expect(code).toBe(1);
    expect(stderr).toContain(`${good}: networks.ethereum.providers[1].url: unknown placeholder`);
  });
});
