import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SSMClient } from "@aws-sdk/client-ssm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createSecretResolver,
  envSecretResolver,
  MissingSecretError,
  secretsManagerSecretResolver,
  ssmSecretResolver,
} from "../../functions/adapters/secrets.ts";
import { parseConfig } from "../../functions/core/network-model.ts";
import { resolveUrlTemplate, secretNamesOf } from "../../functions/core/placeholders.ts";

/**
 * A stand-in for SSM and Secrets Manager on 127.0.0.1, speaking their AWS JSON 1.1 protocol
 * (`X-Amz-Target` picks the operation), so the real SDK clients make real HTTP calls.
 */
interface Call {
  readonly target: string;
  readonly body: Record<string, unknown>;
}

const parameters = new Map<string, string>();
const secrets = new Map<string, string>();
const calls: Call[] = [];
let denyAll = false;
let server: Server;
let endpoint: string;

function awsError(type: string, message: string) {
  return { status: 400, body: { __type: type, message } };
}

function answer(target: string, body: Record<string, unknown>): { status: number; body: object } {
  if (denyAll) return awsError("AccessDeniedException", "not authorized to perform this call");
  if (target === "AmazonSSM.GetParameters") {
    const names = body.Names as string[];
    const found = names.filter((name) => parameters.has(name));
    return {
      status: 200,
      body: {
        Parameters: found.map((name) => ({
          Name: name,
          Type: "SecureString",
          Value: parameters.get(name),
          Version: 1,
        })),
        InvalidParameters: names.filter((name) => !parameters.has(name)),
      },
    };
  }
  if (target === "secretsmanager.GetSecretValue") {
    const id = body.SecretId as string;
    const secretString = secrets.get(id);
    if (secretString === undefined) {
      return awsError(
        "ResourceNotFoundException",
        "Secrets Manager can't find the specified secret.",
      );
    }
    return {
      status: 200,
      body: { ARN: `arn:aws:secretsmanager:::secret:${id}`, Name: id, SecretString: secretString },
    };
  }
  return awsError("UnknownOperationException", target);
}

beforeAll(async () => {
  server = createServer((request, response) => {
    let raw = "";
    request.on("data", (chunk: Buffer) => {
      raw += chunk.toString();
    });
    request.on("end", () => {
      const target = String(request.headers["x-amz-target"]);
      const body = JSON.parse(raw || "{}") as Record<string, unknown>;
      calls.push({ target, body });
      const { status, body: out } = answer(target, body);
      const headers: Record<string, string> = { "content-type": "application/x-amz-json-1.1" };
      if (status !== 200) headers["x-amzn-errortype"] = (out as { __type: string }).__type;
      response.writeHead(status, headers).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ssm = new SSMClient(clientConfig());
  secretsManager = new SecretsManagerClient(clientConfig());
});

afterAll(async () => {
  ssm.destroy();
  secretsManager.destroy();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  parameters.clear();
  secrets.clear();
  calls.length = 0;
  denyAll = false;
});

const clientConfig = () => ({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
  maxAttempts: 1,
});
let ssm: SSMClient;
let secretsManager: SecretsManagerClient;

const PREFIX = "/evm-rpc-gateway/test/";

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: Error) => error,
  );
}

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

  it("names a placeholder without a value", () => {
    expect(() => resolveUrlTemplate(`https://x.example/\${NOPE}`, new Map())).toThrow(
      `no value for placeholder \${NOPE}`,
    );
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
    expect(await resolver.resolve(["ETH_KEY", "BASE_KEY"])).toEqual(
      new Map([
        ["ETH_KEY", "eth-value"],
        ["BASE_KEY", "base-value"],
      ]),
    );
  });

  it("names every missing or empty placeholder, never a value", async () => {
    const resolver = envSecretResolver({ SET_KEY: "the-value", EMPTY_KEY: " " });
    const error = await rejection(resolver.resolve(["SET_KEY", "EMPTY_KEY", "UNSET_KEY"]));
    expect(error).toBeInstanceOf(MissingSecretError);
    expect(error.message).toBe(
      `no value for placeholder \${EMPTY_KEY}, \${UNSET_KEY}: set EMPTY_KEY, UNSET_KEY in the environment`,
    );
    expect(error.message).not.toContain("the-value");
  });
});

describe("SSM Parameter Store resolver", () => {
  it("reads SecureString parameters decrypted, in batches of 10", async () => {
    const names = Array.from({ length: 23 }, (_, index) => `KEY_${index}`);
    for (const name of names) parameters.set(`${PREFIX}${name}`, `value-of-${name}`);

    const values = await ssmSecretResolver(ssm, PREFIX).resolve(names);

    expect(values).toEqual(new Map(names.map((name) => [name, `value-of-${name}`])));
    expect(calls.map((call) => call.target)).toEqual(Array(3).fill("AmazonSSM.GetParameters"));
    expect(calls.map((call) => (call.body.Names as string[]).length).sort()).toEqual([10, 10, 3]);
    expect(calls.every((call) => call.body.WithDecryption === true)).toBe(true);
    expect(calls.flatMap((call) => call.body.Names as string[]).sort()).toEqual(
      names.map((name) => `${PREFIX}${name}`).sort(),
    );
  });

  it("names the missing placeholder and its parameter, never a value", async () => {
    parameters.set(`${PREFIX}PRESENT_KEY`, "present-secret-value");

    const error = await rejection(
      ssmSecretResolver(ssm, PREFIX).resolve(["PRESENT_KEY", "ABSENT_KEY"]),
    );

    expect(error).toBeInstanceOf(MissingSecretError);
    expect((error as MissingSecretError).names).toEqual(["ABSENT_KEY"]);
    expect(error.message).toBe(
      `no value for placeholder \${ABSENT_KEY}: create the SecureString parameter ${PREFIX}ABSENT_KEY`,
    );
    expect(error.message).not.toContain("present-secret-value");
  });

  it("reports a service error with the parameters it concerns", async () => {
    denyAll = true;
    const error = await rejection(ssmSecretResolver(ssm, PREFIX).resolve(["ETH_KEY"]));
    expect(error.message).toBe(
      `cannot read SSM parameters ${PREFIX}ETH_KEY: AccessDeniedException: not authorized to perform this call`,
    );
  });
});

describe("Secrets Manager resolver", () => {
  it('reads a JSON secret {"value": ...} and a plain-string secret', async () => {
    secrets.set(`${PREFIX}JSON_KEY`, JSON.stringify({ value: "json-secret" }));
    secrets.set(`${PREFIX}PLAIN_KEY`, "plain-secret");

    const values = await secretsManagerSecretResolver(secretsManager, PREFIX).resolve([
      "JSON_KEY",
      "PLAIN_KEY",
    ]);

    expect(values).toEqual(
      new Map([
        ["JSON_KEY", "json-secret"],
        ["PLAIN_KEY", "plain-secret"],
      ]),
    );
    expect(calls.map((call) => call.body.SecretId).sort()).toEqual([
      `${PREFIX}JSON_KEY`,
      `${PREFIX}PLAIN_KEY`,
    ]);
  });

  it("names the missing placeholder and its secret id", async () => {
    secrets.set(`${PREFIX}PRESENT_KEY`, "present-secret-value");

    const error = await rejection(
      secretsManagerSecretResolver(secretsManager, PREFIX).resolve(["PRESENT_KEY", "ABSENT_KEY"]),
    );

    expect(error).toBeInstanceOf(MissingSecretError);
    expect(error.message).toBe(
      `no value for placeholder \${ABSENT_KEY}: create the secret ${PREFIX}ABSENT_KEY in Secrets Manager`,
    );
    expect(error.message).not.toContain("present-secret-value");
  });

  it("rejects a JSON secret without a string value field, without showing it", async () => {
    secrets.set(`${PREFIX}WRONG_KEY`, JSON.stringify({ apiKey: "hidden-secret" }));

    const error = await rejection(
      secretsManagerSecretResolver(secretsManager, PREFIX).resolve(["WRONG_KEY"]),
    );

    expect(error.message).toBe(`secret ${PREFIX}WRONG_KEY is JSON without a string "value" field`);
  });
});

describe("createSecretResolver", () => {
  const env = { SECRETS_SOURCE: "ssm", SECRETS_PREFIX: PREFIX };

  it("resolves once per set of names, and again when the set changes", async () => {
    parameters.set(`${PREFIX}A_KEY`, "a");
    parameters.set(`${PREFIX}B_KEY`, "b");
    const resolver = createSecretResolver(env, { ssm });

    expect(await resolver.resolve(["A_KEY", "B_KEY"])).toEqual(
      new Map([
        ["A_KEY", "a"],
        ["B_KEY", "b"],
      ]),
    );
    await resolver.resolve(["B_KEY", "A_KEY", "A_KEY"]);
    expect(calls).toHaveLength(1);

    expect(await resolver.resolve(["A_KEY"])).toEqual(new Map([["A_KEY", "a"]]));
    expect(calls).toHaveLength(2);
  });

  it("does not cache a failure: a secret created later is found", async () => {
    const resolver = createSecretResolver(env, { ssm });
    await expect(resolver.resolve(["LATE_KEY"])).rejects.toThrow(MissingSecretError);

    parameters.set(`${PREFIX}LATE_KEY`, "late");
    expect(await resolver.resolve(["LATE_KEY"])).toEqual(new Map([["LATE_KEY", "late"]]));
  });

  it("picks Secrets Manager, and the environment by default", async () => {
    secrets.set(`${PREFIX}SM_KEY`, "from-secrets-manager");
    const fromSecretsManager = createSecretResolver(
      { SECRETS_SOURCE: "secretsmanager", SECRETS_PREFIX: PREFIX },
      { secretsManager },
    );
    expect(await fromSecretsManager.resolve(["SM_KEY"])).toEqual(
      new Map([["SM_KEY", "from-secrets-manager"]]),
    );

    const fromEnv = createSecretResolver({ SM_KEY: "from-env" });
    expect(await fromEnv.resolve(["SM_KEY"])).toEqual(new Map([["SM_KEY", "from-env"]]));
  });

  it("refuses an unknown SECRETS_SOURCE", () => {
    expect(() => createSecretResolver({ SECRETS_SOURCE: "vault" })).toThrow(
      'SECRETS_SOURCE must be env, ssm or secretsmanager, not "vault"',
    );
  });
});
