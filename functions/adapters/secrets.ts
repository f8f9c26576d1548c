import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { GetParametersCommand, SSMClient } from "@aws-sdk/client-ssm";

/**
 * Where the values of `${NAME}` placeholders come from. Error messages name placeholders,
 * parameter names and secret ids, never a value.
 */
export interface SecretResolver {
  /** Values by placeholder name; rejects with `MissingSecretError` when any is absent. */
  resolve(names: readonly string[]): Promise<Map<string, string>>;
}

type Env = Readonly<Record<string, string | undefined>>;

export class MissingSecretError extends Error {
  constructor(
    readonly names: readonly string[],
    where: string,
  ) {
    const list = names.map((name) => `\${${name}}`).join(", ");
    super(`no value for placeholder ${list}: ${where}`);
    this.name = "MissingSecretError";
  }
}

/** Surrounding whitespace (a newline pasted with a key) would corrupt the URL. */
function clean(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === "" ? undefined : trimmed;
}

/**
 * A resolver from a source-specific lookup, which returns the values it found; every name
 * it did not find is reported at once, with `howToFix` saying what to create.
 */
function resolverFrom(
  lookup: (names: readonly string[]) => Promise<Map<string, string>>,
  howToFix: (missing: readonly string[]) => string,
): SecretResolver {
  return {
    async resolve(names) {
      const found = await lookup(names);
      const missing = names.filter((name) => !found.has(name));
      if (missing.length > 0) throw new MissingSecretError(missing, howToFix(missing));
      return found;
    },
  };
}

/** Local runs: each placeholder is the environment variable of the same name. */
export function envSecretResolver(env: Env = process.env): SecretResolver {
  return resolverFrom(
    async (names) => {
      const found = new Map<string, string>();
      for (const name of names) {
        const value = clean(env[name]);
        if (value !== undefined) found.set(name, value);
      }
      return found;
    },
    (missing) => `set ${missing.join(", ")} in the environment`,
  );
}

const SSM_BATCH = 10; // GetParameters accepts at most 10 names per call.

/** SSM Parameter Store: SecureString parameter `${prefix}${NAME}`, decrypted. */
export function ssmSecretResolver(client: SSMClient, prefix: string): SecretResolver {
  const readBatch = async (names: readonly string[]): Promise<Array<[string, string]>> => {
    const parameterNames = names.map((name) => `${prefix}${name}`);
    const answer = await client
      .send(new GetParametersCommand({ Names: parameterNames, WithDecryption: true }))
      .catch((error: Error) => {
        throw new Error(
          `cannot read SSM parameters ${parameterNames.join(", ")}: ${error.name}: ${error.message}`,
        );
      });
    const byParameter = new Map(answer.Parameters?.map((p) => [p.Name, clean(p.Value)]));
    return names.flatMap((name) => {
      const value = byParameter.get(`${prefix}${name}`);
      return value === undefined ? [] : [[name, value] as [string, string]];
    });
  };
  return resolverFrom(
    async (names) => {
      const batches: Array<Promise<Array<[string, string]>>> = [];
      for (let start = 0; start < names.length; start += SSM_BATCH) {
        batches.push(readBatch(names.slice(start, start + SSM_BATCH)));
      }
      return new Map((await Promise.all(batches)).flat());
    },
    (missing) =>
      `create the SecureString parameter ${missing.map((name) => `${prefix}${name}`).join(", ")}`,
  );
}

/**
 * Secrets Manager: secret id `${prefix}${NAME}`, whose string is either `{"value":"..."}`
 * or the value itself.
 */
export function secretsManagerSecretResolver(
  client: SecretsManagerClient,
  prefix: string,
): SecretResolver {
  const read = async (name: string): Promise<Array<[string, string]>> => {
    const secretId = `${prefix}${name}`;
    let secretString: string | undefined;
    try {
      const answer = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      secretString = answer.SecretString;
    } catch (error) {
      if (error instanceof Error && error.name === "ResourceNotFoundException") return [];
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new Error(`cannot read secret ${secretId} for \${${name}}: ${reason}`);
    }
    if (secretString === undefined) {
      throw new Error(
        `secret ${secretId} for \${${name}} has no string value (binary is not supported)`,
      );
    }
    const value = clean(jsonValueOrSelf(secretString, secretId));
    return value === undefined ? [] : [[name, value]];
  };
  return resolverFrom(
    async (names) => new Map((await Promise.all(names.map(read))).flat()),
    (missing) =>
      `create the secret ${missing.map((name) => `${prefix}${name}`).join(", ")} in Secrets Manager`,
  );
}

function jsonValueOrSelf(secretString: string, secretId: string): string {
  if (!secretString.trimStart().startsWith("{")) return secretString;
  let parsed: unknown;
  try {
    parsed = JSON.parse(secretString);
  } catch {
    return secretString;
  }
  const value = (parsed as { value?: unknown }).value;
  if (typeof value !== "string") {
    throw new Error(`secret ${secretId} is JSON without a string "value" field`);
  }
  return value;
}

/**
 * Resolves once per container and set of names: a config change that adds or drops a
 * placeholder resolves again; a failure is not cached, so the next call retries.
 */
export function cachedSecretResolver(inner: SecretResolver): SecretResolver {
  let cached: { key: string; values: Promise<Map<string, string>> } | undefined;
  return {
    async resolve(names) {
      const sorted = [...new Set(names)].sort();
      const key = sorted.join("\n");
      let entry = cached;
      if (entry === undefined || entry.key !== key) {
        const fresh = { key, values: inner.resolve(sorted) };
        fresh.values.catch(() => {
          if (cached === fresh) cached = undefined;
        });
        cached = entry = fresh;
      }
      return new Map(await entry.values);
    },
  };
}

/**
 * The resolver this process should use, cached: `SECRETS_SOURCE` = `env` (default) | `ssm` |
 * `secretsmanager`; `SECRETS_PREFIX` is put before each name for SSM and Secrets Manager.
 */
export function createSecretResolver(
  env: Env = process.env,
  clients: { ssm?: SSMClient; secretsManager?: SecretsManagerClient } = {},
): SecretResolver {
  const source = env.SECRETS_SOURCE ?? "env";
  const prefix = env.SECRETS_PREFIX ?? "";
  switch (source) {
    case "env":
      return cachedSecretResolver(envSecretResolver(env));
    case "ssm":
      return cachedSecretResolver(ssmSecretResolver(clients.ssm ?? new SSMClient({}), prefix));
    case "secretsmanager":
      return cachedSecretResolver(
        secretsManagerSecretResolver(
          clients.secretsManager ?? new SecretsManagerClient({}),
          prefix,
        ),
      );
    default:
      throw new Error(`SECRETS_SOURCE must be env, ssm or secretsmanager, not "${source}"`);
  }
}
