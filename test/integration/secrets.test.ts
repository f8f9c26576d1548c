import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SSMClient } from "@aws-sdk/client-ssm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createSecretResolver,
  envSecretResolver,
  secretsManagerSecretResolver,
  ssmSecretResolver,
} from "../../functions/adapters/secrets.ts";
import { parseConfig } from "../../functions/core/network-model.ts";
import { resolveUrlTemplate, secretNamesOf } from "../../functions/core/placeholders.ts";
import { type SecretsService, startSecretsService } from "../support/secrets-service.ts";

/** The real SDK clients against a local stand-in speaking the SSM and Secrets Manager APIs. */
let service: SecretsService;
let ssm: SSMClient;
let secretsManager: SecretsManagerClient;

beforeAll(async () => {
  service = await startSecretsService();
  ssm = new SSMClient(service.clientConfig());
  secretsManager = new SecretsManagerClient(service.clientConfig());
});

afterAll(async () => {
  ssm.destroy();
  secretsManager.destroy();
  await service.close();
});

beforeEach(() => {
  service.parameters.clear();
  service.secrets.clear();
  service.calls.length = 0;
  service.fault = null;
});

const PREFIX = "/evm-rpc-gateway/test/";

describe("resolveUrlTemplate", () => {
  it("fills every placeholder, URL-encoded so a value cannot change the URL's shape", () => {
    const values = new Map([
      ["KEY", "abc123"],
      ["ODD", "a/b?c"],
    ]);
    expect(resolveUrlTemplate(`https://x.example/v2/\${KEY}?k=\${ODD}`, values)).toBe(
      "https://x.example/v2/abc123?k=a%2Fb%3Fc",
    );
  });

  it("names a placeholder without a value, with the reason it did not resolve", () => {
    expect(resolveUrlTemplate(`https://x.example/\${NOPE}`, new Map())).toEqual({
      unresolved: `no value for placeholder \${NOPE}`,
    });
    expect(
      resolveUrlTemplate(
        `https://x.example/\${A}/\${B}`,
        new Map(),
        new Map([["A", "cannot read SSM parameters /p/A: ThrottlingException: Rate exceeded"]]),
      ),
    ).toEqual({
      unresolved:
        "cannot read SSM parameters /p/A: ThrottlingException: Rate exceeded; no value for placeholder ${B}",
    });
  });

  it("lists a config's secret names once each", () => {
    const parsed = parseConfig({
      networks: {
        a: { chain_id: 1, providers: [{ url: `https://a.example/\${B_KEY}/\${A_KEY}` }] },
        b: { chain_id: 2, providers: [{ url: `https://b.example/\${A_KEY}` }] },
      },
    });
    expect(parsed.ok && secretNamesOf(parsed.config)).toEqual(["A_KEY", "B_KEY"]);
  });
});

describe("environment resolver", () => {
  it("reads each placeholder from the variable of the same name, trimmed", async () => {
    const resolver = envSecretResolver({ ETH_KEY: "eth-value\n", BASE_KEY: "base-value" });
    expect(await resolver.lookup(["ETH_KEY", "BASE_KEY"])).toEqual({
      values: new Map([
        ["ETH_KEY", "eth-value"],
        ["BASE_KEY", "base-value"],
      ]),
      unresolved: new Map(),
    });
  });

  it("names every missing or empty placeholder, never a value, and resolves the rest", async () => {
    const resolver = envSecretResolver({ SET_KEY: "the-value", EMPTY_KEY: " " });
    const { values, unresolved } = await resolver.lookup(["SET_KEY", "EMPTY_KEY", "UNSET_KEY"]);
    expect(values).toEqual(new Map([["SET_KEY", "the-value"]]));
    expect(unresolved).toEqual(
      new Map([
        ["EMPTY_KEY", `no value for placeholder \${EMPTY_KEY}: set EMPTY_KEY in the environment`],
        ["UNSET_KEY", `no value for placeholder \${UNSET_KEY}: set UNSET_KEY in the environment`],
      ]),
    );
    expect(JSON.stringify([...unresolved])).not.toContain("the-value");
  });
});

describe("SSM Parameter Store resolver", () => {
  it("reads SecureString parameters decrypted, in batches of 10", async () => {
    const names = Array.from({ length: 23 }, (_, index) => `KEY_${index}`);
    for (const name of names) service.parameters.set(`${PREFIX}${name}`, `value-of-${name}`);

    const { values, unresolved } = await ssmSecretResolver(ssm, PREFIX).lookup(names);

    expect(values).toEqual(new Map(names.map((name) => [name, `value-of-${name}`])));
    expect(unresolved.size).toBe(0);
    expect(service.calls.map((call) => call.target)).toEqual(
      Array(3).fill("AmazonSSM.GetParameters"),
    );
    expect(service.calls.map((call) => (call.body.Names as string[]).length).sort()).toEqual([
      10, 10, 3,
    ]);
    expect(service.calls.every((call) => call.body.WithDecryption === true)).toBe(true);
    expect(service.calls.flatMap((call) => call.body.Names as string[]).sort()).toEqual(
      names.map((name) => `${PREFIX}${name}`).sort(),
    );
  });

  it("names the missing placeholder and its parameter, never a value", async () => {
    service.parameters.set(`${PREFIX}PRESENT_KEY`, "present-secret-value");

    const { values, unresolved } = await ssmSecretResolver(ssm, PREFIX).lookup([
      "PRESENT_KEY",
      "ABSENT_KEY",
    ]);

    expect(values).toEqual(new Map([["PRESENT_KEY", "present-secret-value"]]));
    expect(unresolved).toEqual(
      new Map([
        [
          "ABSENT_KEY",
          `no value for placeholder \${ABSENT_KEY}: create the SecureString parameter ${PREFIX}ABSENT_KEY`,
        ],
      ]),
    );
  });

  it("reports a service error with the parameters it concerns, for each of its names", async () => {
    service.fault = {
      type: "AccessDeniedException",
      message: "not authorized to perform this call",
    };
    const { values, unresolved } = await ssmSecretResolver(ssm, PREFIX).lookup(["ETH_KEY"]);
    expect(values.size).toBe(0);
    expect(unresolved.get("ETH_KEY")).toBe(
      `cannot read SSM parameters ${PREFIX}ETH_KEY: AccessDeniedException: not authorized to perform this call`,
    );
  });
});

describe("Secrets Manager resolver", () => {
  it('reads a JSON secret {"value": ...} and a plain-string secret', async () => {
    service.secrets.set(`${PREFIX}JSON_KEY`, JSON.stringify({ value: "json-secret" }));
    service.secrets.set(`${PREFIX}PLAIN_KEY`, "plain-secret");

    const { values } = await secretsManagerSecretResolver(secretsManager, PREFIX).lookup([
      "JSON_KEY",
      "PLAIN_KEY",
    ]);

    expect(values).toEqual(
      new Map([
        ["JSON_KEY", "json-secret"],
        ["PLAIN_KEY", "plain-secret"],
      ]),
    );
    expect(service.calls.map((call) => call.body.SecretId).sort()).toEqual([
      `${PREFIX}JSON_KEY`,
      `${PREFIX}PLAIN_KEY`,
    ]);
  });

  it("names the missing placeholder and its secret id", async () => {
    service.secrets.set(`${PREFIX}PRESENT_KEY`, "present-secret-value");

    const { values, unresolved } = await secretsManagerSecretResolver(
      secretsManager,
      PREFIX,
    ).lookup(["PRESENT_KEY", "ABSENT_KEY"]);

    expect(values).toEqual(new Map([["PRESENT_KEY", "present-secret-value"]]));
    expect(unresolved.get("ABSENT_KEY")).toBe(
      `no value for placeholder \${ABSENT_KEY}: create the secret ${PREFIX}ABSENT_KEY in Secrets Manager`,
    );
  });

  it("rejects a JSON secret without a string value field, without showing it", async () => {
    service.secrets.set(`${PREFIX}WRONG_KEY`, JSON.stringify({ apiKey: "hidden-secret" }));

    const { unresolved } = await secretsManagerSecretResolver(secretsManager, PREFIX).lookup([
      "WRONG_KEY",
    ]);

    expect(unresolved.get("WRONG_KEY")).toBe(
      `secret ${PREFIX}WRONG_KEY is JSON without a string "value" field`,
    );
  });
});

describe("createSecretResolver", () => {
  it("picks SSM, Secrets Manager, and the environment by default", async () => {
    service.parameters.set(`${PREFIX}SSM_KEY`, "from-ssm");
    service.secrets.set(`${PREFIX}SM_KEY`, "from-secrets-manager");
    const fromSsm = createSecretResolver(
      { SECRETS_SOURCE: "ssm", SECRETS_PREFIX: PREFIX },
      { ssm },
    );
    expect((await fromSsm.lookup(["SSM_KEY"])).values).toEqual(new Map([["SSM_KEY", "from-ssm"]]));

    const fromSecretsManager = createSecretResolver(
      { SECRETS_SOURCE: "secretsmanager", SECRETS_PREFIX: PREFIX },
      { secretsManager },
    );
    expect((await fromSecretsManager.lookup(["SM_KEY"])).values).toEqual(
      new Map([["SM_KEY", "from-secrets-manager"]]),
    );

    const fromEnv = createSecretResolver({ SM_KEY: "from-env" });
    expect((await fromEnv.lookup(["SM_KEY"])).values).toEqual(new Map([["SM_KEY", "from-env"]]));
  });

  it("without an injected client, loads the SDK on the first lookup and reads through its own client", async () => {
    service.parameters.set(`${PREFIX}SSM_KEY`, "from-ssm");
    service.secrets.set(`${PREFIX}SM_KEY`, "from-secrets-manager");
    // The resolver's own clients take their endpoint and credentials from the process
    // environment, as in Lambda; here they point at the local stand-in.
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_SSM: service.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: service.endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
    });
    try {
      const fromSsm = createSecretResolver({ SECRETS_SOURCE: "ssm", SECRETS_PREFIX: PREFIX });
      const fromSecretsManager = createSecretResolver({
        SECRETS_SOURCE: "secretsmanager",
        SECRETS_PREFIX: PREFIX,
      });
      expect(service.calls).toEqual([]);

      expect(await fromSsm.lookup(["SSM_KEY", "ABSENT_KEY"])).toEqual({
        values: new Map([["SSM_KEY", "from-ssm"]]),
        unresolved: new Map([
          [
            "ABSENT_KEY",
            `no value for placeholder \${ABSENT_KEY}: create the SecureString parameter ${PREFIX}ABSENT_KEY`,
          ],
        ]),
      });
      expect((await fromSecretsManager.lookup(["SM_KEY"])).values).toEqual(
        new Map([["SM_KEY", "from-secrets-manager"]]),
      );
      expect(service.calls.map((call) => call.target)).toEqual([
        "AmazonSSM.GetParameters",
        "secretsmanager.GetSecretValue",
      ]);
    } finally {
      process.env = saved;
    }
  });

  it("regression: a secrets service that accepted the connection and never answered kept a lookup waiting for good (the SDK only warned at its request timeout); now each source gives up after two 3 s attempts", async () => {
    const silent = createServer(() => undefined);
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_SSM: endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
    });
    try {
      const lookups = ["ssm", "secretsmanager"].map((source) =>
        createSecretResolver({ SECRETS_SOURCE: source, SECRETS_PREFIX: PREFIX }).lookup(["KEY"]),
      );
      for (const lookup of await Promise.all(lookups)) {
        expect(lookup.values.size).toBe(0);
        expect(lookup.unresolved.get("KEY")).toMatch(/TimeoutError/);
      }
    } finally {
      process.env = saved;
      silent.closeAllConnections();
      silent.close();
    }
  }, 20_000);

  it("refuses an unknown SECRETS_SOURCE", () => {
    expect(() => createSecretResolver({ SECRETS_SOURCE: "vault" })).toThrow(
      'SECRETS_SOURCE must be env, ssm or secretsmanager, not "vault"',
    );
  });
});
