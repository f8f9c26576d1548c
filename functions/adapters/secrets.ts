import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { SSMClient } from "@aws-sdk/client-ssm";

/**
 * Where the values of `${NAME}` placeholders come from. Each name is resolved on its own, so
 * one missing or unreadable secret leaves out only the providers that use it. Reasons name
 * placeholders, parameter names and secret ids, never a value.
 */
export interface SecretResolver {
  /** Never rejects: every name is either in `values` or in `unresolved` with the reason. */
  lookup(names: readonly string[]): Promise<SecretLookup>;
}

export interface SecretLookup {
  readonly values: ReadonlyMap<string, string>;
  readonly unresolved: ReadonlyMap<string, string>;
}

type Env = Readonly<Record<string, string | undefined>>;

/** What a source said about one name: its value, or why it could not be read. Absent = not found. */
type Read = { readonly value: string } | { readonly error: string };

/** Surrounding whitespace (a newline pasted with a key) would corrupt the URL. */
function clean(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === "" ? undefined : trimmed;
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * A resolver from a source-specific read, which reports the names it found or failed to read;
 * every name it did not mention is missing, with `howToFix` saying what to create.
 */
function resolverFrom(
  read: (names: readonly string[]) => Promise<Map<string, Read>>,
  howToFix: (name: string) => string,
): SecretResolver {
  return {
    async lookup(names) {
      const unique = [...new Set(names)];
      let answers: Map<string, Read>;
      try {
        answers = await read(unique);
      } catch (error) {
        const reason = `cannot read secrets: ${errorText(error)}`;
        answers = new Map(unique.map((name) => [name, { error: reason }]));
      }
      const values = new Map<string, string>();
      const unresolved = new Map<string, string>();
      for (const name of unique) {
        const answer = answers.get(name);
        if (answer === undefined) {
          unresolved.set(name, `no value for placeholder \${${name}}: ${howToFix(name)}`);
        } else if ("error" in answer) {
          unresolved.set(name, answer.error);
        } else {
          values.set(name, answer.value);
        }
      }
      return { values, unresolved };
    },
  };
}

/** Local runs: each placeholder is the environment variable of the same name. */
export function envSecretResolver(env: Env = process.env): SecretResolver {
  return resolverFrom(
    async (names) => {
      const found = new Map<string, Read>();
      for (const name of names) {
        const value = clean(env[name]);
        if (value !== undefined) found.set(name, { value });
      }
      return found;
    },
    (name) => `set ${name} in the environment`,
  );
}

/** Bounded, so a slow secrets service delays a config build by seconds, never indefinitely. */
const CLIENT_OPTIONS = {
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 1000, requestTimeout: 3000, throwOnRequestTimeout: true },
};

/**
 * Runs `load` on the first call and keeps its promise. A failed load stays failed (a module
 * import that failed fails again): each lookup then reports its names unreadable, with why.
 */
function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load();
    return loaded;
  };
}

const SSM_BATCH = 10; // GetParameters accepts at most 10 names per call.

/**
 * SSM Parameter Store: SecureString parameter `${prefix}${NAME}`, decrypted. The SDK client is
 * loaded on the first lookup (`client` or a new one): most configs have no placeholder, and
 * loading it costs every cold start ~10 ms of CPU.
 */
export function ssmSecretResolver(client: SSMClient | undefined, prefix: string): SecretResolver {
  const sdk = onFirstUse(async () => {
    const { GetParametersCommand, SSMClient } = await import("./secrets-sdk.ts");
    return { client: client ?? new SSMClient(CLIENT_OPTIONS), GetParametersCommand };
  });
  const readBatch = async (names: readonly string[]): Promise<Array<[string, Read]>> => {
    const parameterNames = names.map((name) => `${prefix}${name}`);
    try {
      const { client, GetParametersCommand } = await sdk();
      const answer = await client.send(
        new GetParametersCommand({ Names: parameterNames, WithDecryption: true }),
      );
      const byParameter = new Map(answer.Parameters?.map((p) => [p.Name, clean(p.Value)]));
      return names.flatMap((name): Array<[string, Read]> => {
        const value = byParameter.get(`${prefix}${name}`);
        return value === undefined ? [] : [[name, { value }]];
      });
    } catch (error) {
      // A throttled or denied batch leaves out only its own names, and is retried later.
      const reason = `cannot read SSM parameters ${parameterNames.join(", ")}: ${errorText(error)}`;
      return names.map((name): [string, Read] => [name, { error: reason }]);
    }
  };
  return resolverFrom(
    async (names) => {
      const batches: Array<Promise<Array<[string, Read]>>> = [];
      for (let start = 0; start < names.length; start += SSM_BATCH) {
        batches.push(readBatch(names.slice(start, start + SSM_BATCH)));
      }
      return new Map((await Promise.all(batches)).flat());
    },
    (name) => `create the SecureString parameter ${prefix}${name}`,
  );
}

/**
 * Secrets Manager: secret id `${prefix}${NAME}`, whose string is either `{"value":"..."}`
 * or the value itself. The SDK client is loaded on the first lookup, as for SSM.
 */
export function secretsManagerSecretResolver(
  client: SecretsManagerClient | undefined,
  prefix: string,
): SecretResolver {
  const sdk = onFirstUse(async () => {
    const { GetSecretValueCommand, SecretsManagerClient } = await import("./secrets-sdk.ts");
    return { client: client ?? new SecretsManagerClient(CLIENT_OPTIONS), GetSecretValueCommand };
  });
  const read = async (name: string): Promise<Array<[string, Read]>> => {
    const secretId = `${prefix}${name}`;
    let secretString: string | undefined;
    try {
      const { client, GetSecretValueCommand } = await sdk();
      const answer = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      secretString = answer.SecretString;
    } catch (error) {
      if (error instanceof Error && error.name === "ResourceNotFoundException") return [];
      return [
        [name, { error: `cannot read secret ${secretId} for \${${name}}: ${errorText(error)}` }],
      ];
    }
    if (secretString === undefined) {
      const error = `secret ${secretId} for \${${name}} has no string value (binary is not supported)`;
      return [[name, { error }]];
    }
    const parsed = jsonValueOrSelf(secretString, secretId);
    if ("error" in parsed) return [[name, parsed]];
    const value = clean(parsed.value);
    return value === undefined ? [] : [[name, { value }]];
  };
  return resolverFrom(
    async (names) => new Map((await Promise.all(names.map(read))).flat()),
    (name) => `create the secret ${prefix}${name} in Secrets Manager`,
  );
}

function jsonValueOrSelf(secretString: string, secretId: string): Read {
  if (!secretString.trimStart().startsWith("{")) return { value: secretString };
  let parsed: unknown;
  try {
    parsed = JSON.parse(secretString);
  } catch {
    return { value: secretString };
  }
  const value = (parsed as { value?: unknown }).value;
  if (typeof value !== "string") {
    return { error: `secret ${secretId} is JSON without a string "value" field` };
  }
  return { value };
}

/**
 * The resolver this process should use: `SECRETS_SOURCE` = `env` (default) | `ssm` |
 * `secretsmanager`; `SECRETS_PREFIX` is put before each name for SSM and Secrets Manager.
 * Values are cached by the model source, which also spaces out retries of failed names.
 */
export function createSecretResolver(
  env: Env = process.env,
  clients: { ssm?: SSMClient; secretsManager?: SecretsManagerClient } = {},
): SecretResolver {
  const source = env.SECRETS_SOURCE ?? "env";
  const prefix = env.SECRETS_PREFIX ?? "";
  switch (source) {
    case "env":
      return envSecretResolver(env);
    case "ssm":
      return ssmSecretResolver(clients.ssm, prefix);
    case "secretsmanager":
      return secretsManagerSecretResolver(clients.secretsManager, prefix);
    default:
      throw new Error(`SECRETS_SOURCE must be env, ssm or secretsmanager, not "${source}"`);
  }
}
