import {
  createSecretsExtension,
  extensionOrigin,
  type SecretsExtension,
} from "./secrets-extension.ts";

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

/** What a source's answer for one name resolves to: a value, an error, or nothing (missing). */
type Entry = [string, Read];

/**
 * SSM Parameter Store: SecureString parameter `${prefix}${NAME}`, decrypted, read through the
 * Parameters and Secrets extension (one GET per name; the extension calls GetParameter).
 */
export function ssmSecretResolver(extension: SecretsExtension, prefix: string): SecretResolver {
  const read = async (name: string): Promise<Entry[]> => {
    const parameter = `${prefix}${name}`;
    const answer = await extension.get("/systemsmanager/parameters/get", {
      name: parameter,
      withDecryption: "true",
    });
    if (answer.kind === "unreadable") {
      const error = `no value for placeholder \${${name}}: SSM parameter ${parameter} does not exist or the function's role may not read it (the extension answered ${answer.detail}); create the SecureString parameter ${parameter}`;
      return [[name, { error }]];
    }
    if (answer.kind === "failed") {
      return [
        [
          name,
          { error: `cannot read SSM parameter ${parameter} for \${${name}}: ${answer.reason}` },
        ],
      ];
    }
    const value = (answer.json as { Parameter?: { Value?: unknown } } | null)?.Parameter?.Value;
    if (typeof value !== "string") {
      const error = `SSM parameter ${parameter} for \${${name}} came back without a string value`;
      return [[name, { error }]];
    }
    const cleaned = clean(value);
    if (cleaned === undefined) {
      return [[name, { error: `SSM parameter ${parameter} for \${${name}} is empty` }]];
    }
    return [[name, { value: cleaned }]];
  };
  return resolverFrom(
    async (names) => new Map((await Promise.all(names.map(read))).flat()),
    (name) => `create the SecureString parameter ${prefix}${name}`,
  );
}

/**
 * Secrets Manager: secret id `${prefix}${NAME}`, whose string is either `{"value":"..."}`
 * or the value itself (one that does not start with "{"), read through the Parameters and Secrets extension (GetSecretValue).
 */
export function secretsManagerSecretResolver(
  extension: SecretsExtension,
  prefix: string,
): SecretResolver {
  const read = async (name: string): Promise<Entry[]> => {
    const secretId = `${prefix}${name}`;
    const answer = await extension.get("/secretsmanager/get", { secretId });
    if (answer.kind === "unreadable") {
      const error = `no value for placeholder \${${name}}: secret ${secretId} does not exist or the function's role may not read it (the extension answered ${answer.detail}); create the secret ${secretId} in Secrets Manager`;
      return [[name, { error }]];
    }
    if (answer.kind === "failed") {
      return [
        [name, { error: `cannot read secret ${secretId} for \${${name}}: ${answer.reason}` }],
      ];
    }
    const secretString = (answer.json as { SecretString?: unknown } | null)?.SecretString;
    if (typeof secretString !== "string") {
      const error = `secret ${secretId} for \${${name}} has no string value (binary is not supported)`;
      return [[name, { error }]];
    }
    const parsed = jsonValueOrSelf(secretString, secretId);
    if ("error" in parsed) return [[name, parsed]];
    const value = clean(parsed.value);
    if (value === undefined) {
      return [[name, { error: `secret ${secretId} for \${${name}} is empty` }]];
    }
    return [[name, { value }]];
  };
  return resolverFrom(
    async (names) => new Map((await Promise.all(names.map(read))).flat()),
    (name) => `create the secret ${prefix}${name} in Secrets Manager`,
  );
}

/** Every name unresolved with one reason: a setting that makes the source unusable. */
function failingResolver(reason: string): SecretResolver {
  return resolverFrom(
    async (names) => new Map(names.map((name): Entry => [name, { error: reason }])),
    () => reason,
  );
}

function jsonValueOrSelf(secretString: string, secretId: string): Read {
  if (!secretString.trimStart().startsWith("{")) return { value: secretString };
  let parsed: unknown;
  try {
    parsed = JSON.parse(secretString);
  } catch {
    // A key never starts with "{": this is a mistyped {"value": ...}, not a value to send.
    return { error: `secret ${secretId} starts with "{" but is not JSON` };
  }
  const value = (parsed as { value?: unknown }).value;
  if (typeof value !== "string") {
    return { error: `secret ${secretId} is JSON without a string "value" field` };
  }
  return { value };
}

/**
 * The resolver this process should use: `SECRETS_SOURCE` = `env` (default) | `ssm` |
 * `secretsmanager`; `SECRETS_PREFIX` is put before each name for SSM and Secrets Manager,
 * which are read through the Parameters and Secrets extension on
 * `PARAMETERS_SECRETS_EXTENSION_HTTP_PORT` (default 2773) with `AWS_SESSION_TOKEN`.
 * Values are cached by the model source, which also spaces out retries of failed names.
 */
export function createSecretResolver(env: Env = process.env): SecretResolver {
  const source = env.SECRETS_SOURCE ?? "env";
  const prefix = env.SECRETS_PREFIX ?? "";
  if (source === "env") return envSecretResolver(env);
  if (source !== "ssm" && source !== "secretsmanager") {
    throw new Error(`SECRETS_SOURCE must be env, ssm or secretsmanager, not "${source}"`);
  }
  const origin = extensionOrigin(env.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT);
  if (typeof origin !== "string") return failingResolver(`cannot read secrets: ${origin.error}`);
  const extension = createSecretsExtension({ origin, token: () => env.AWS_SESSION_TOKEN });
  return source === "ssm"
    ? ssmSecretResolver(extension, prefix)
    : secretsManagerSecretResolver(extension, prefix);
}
