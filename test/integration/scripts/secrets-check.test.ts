import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SSMClient } from "@aws-sdk/client-ssm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { parseConfig } from "../../../functions/core/config/network-model.ts";
import {
  checkSecretsManagerSecrets,
  checkSsmParameters,
  secretParameters,
} from "../../../scripts/secret-parameters.ts";
import { type SecretsService, startSecretsService } from "../../support/secrets-service.ts";

/**
 * `npm run secrets:check`: the parameters a config needs and whether each exists, against a
 * local server speaking the SSM and Secrets Manager APIs through the real SDK clients (the CLI
 * finds it through `AWS_ENDPOINT_URL_SSM`, as it would find a VPC endpoint). No value is read.
 */

const PREFIX = "/rpc-gateway/prod/";
const ROOT = join(import.meta.dirname, "../../..");
const CONFIG: ConfigInput = {
  networks: {
    ethereum: {
      chain_id: 1,
      providers: [
        { url: "https://eth-mainnet.g.alchemy.com/v2/${ALCHEMY_KEY}" },
        { url: "https://mainnet.infura.io/v3/${INFURA_KEY}" },
        { url: "https://eth.llamarpc.com" },
      ],
    },
    base: { chain_id: 8453, providers: [{ url: "https://base.g.alchemy.com/v2/${ALCHEMY_KEY}" }] },
  },
};
const parsed = parseConfig(CONFIG);
if (!parsed.ok) throw new Error("test config invalid");
const config = parsed.config;

let service: SecretsService;
let dir: string;

beforeAll(async () => {
  service = await startSecretsService();
  dir = await mkdtemp(join(tmpdir(), "secrets-check-"));
});
afterAll(async () => {
  await service.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  service.parameters.clear();
  service.parameterTypes.clear();
  service.secrets.clear();
  service.calls.length = 0;
  service.fault = null;
});

describe("the secrets a config needs", () => {
  it("lists each placeholder once, where the gateway looks for it, and the URLs that use it", () => {
    expect(secretParameters(config, PREFIX)).toEqual([
      {
        name: "ALCHEMY_KEY",
        location: "/rpc-gateway/prod/ALCHEMY_KEY",
        usedBy: ["networks.ethereum.providers[0].url", "networks.base.providers[0].url"],
      },
      {
        name: "INFURA_KEY",
        location: "/rpc-gateway/prod/INFURA_KEY",
        usedBy: ["networks.ethereum.providers[1].url"],
      },
    ]);
  });

  it("SSM: reads metadata without decryption; says which exist, and warns of a plain String", async () => {
    service.parameters.set(`${PREFIX}ALCHEMY_KEY`, "alchemy-value");
    service.parameters.set(`${PREFIX}INFURA_KEY`, "infura-value");
    service.parameterTypes.set(`${PREFIX}INFURA_KEY`, "String");
    const ssm = new SSMClient(service.clientConfig());

    const statuses = await checkSsmParameters(ssm, secretParameters(config, PREFIX));
    ssm.destroy();

    expect(Object.fromEntries(statuses)).toEqual({
      "/rpc-gateway/prod/ALCHEMY_KEY": { exists: true, detail: "SecureString, version 1" },
      "/rpc-gateway/prod/INFURA_KEY": {
        exists: true,
        detail: "String, version 1",
        warning: "not a SecureString: the key is stored unencrypted",
      },
    });
    expect(service.calls.map((call) => call.body.WithDecryption)).toEqual([false]);
    expect(JSON.stringify([...statuses])).not.toContain("value");
  });

  it("Secrets Manager: DescribeSecret, never GetSecretValue", async () => {
    service.secrets.set(`${PREFIX}ALCHEMY_KEY`, "alchemy-value");
    const client = new SecretsManagerClient(service.clientConfig());

    const statuses = await checkSecretsManagerSecrets(client, secretParameters(config, PREFIX));
    client.destroy();

    expect(statuses.get(`${PREFIX}ALCHEMY_KEY`)?.exists).toBe(true);
    expect(statuses.get(`${PREFIX}INFURA_KEY`)).toEqual({ exists: false });
    expect(new Set(service.calls.map((call) => call.target))).toEqual(
      new Set(["secretsmanager.DescribeSecret"]),
    );
  });
});

describe("npm run secrets:check", () => {
  async function run(args: string[]) {
    const file = join(dir, "prod.json");
    await writeFile(file, JSON.stringify(CONFIG));
    return promisify(execFile)(
      "npx",
      ["tsx", "scripts/secrets-check.ts", ...args, "--config", file],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          AWS_ENDPOINT_URL_SSM: service.endpoint,
          AWS_REGION: "us-east-1",
          AWS_ACCESS_KEY_ID: "test",
          AWS_SECRET_ACCESS_KEY: "test",
          AWS_PROFILE: "",
        },
      },
    ).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
  }

  it("lists every parameter with ok or MISSING, prints no value, and exits 1 when one is missing", async () => {
    service.parameters.set(`${PREFIX}ALCHEMY_KEY`, "alchemy-secret-value");

    const { code, stdout, stderr } = await run(["--env", "prod"]);

    expect(code).toBe(1);
    expect(stdout).toMatch(
      /ok {7}\/rpc-gateway\/prod\/ALCHEMY_KEY {2}\(SecureString, version 1; used by networks\.ethereum\.providers\[0\]\.url, networks\.base\.providers\[0\]\.url\)/,
    );
    expect(stdout).toContain(
      "MISSING  /rpc-gateway/prod/INFURA_KEY  (used by networks.ethereum.providers[1].url)",
    );
    expect(stderr).toContain("1 missing");
    expect(stdout + stderr).not.toContain("alchemy-secret-value");
  });

  it("exits 0 when every parameter exists", async () => {
    service.parameters.set(`${PREFIX}ALCHEMY_KEY`, "a");
    service.parameters.set(`${PREFIX}INFURA_KEY`, "b");
    expect((await run(["--env", "prod"])).code).toBe(0);
  });

  it("exits 2 with the reason when SSM cannot be asked", async () => {
    service.fault = {
      type: "AccessDeniedException",
      message: "not authorized to perform ssm:GetParameters",
    };
    const { code, stderr } = await run(["--env", "prod"]);
    expect(code).toBe(2);
    expect(stderr).toContain("cannot check SSM Parameter Store");
    expect(stderr).toContain("AccessDeniedException");
  });
});
