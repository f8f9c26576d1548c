import { readFile } from "node:fs/promises";
import type { Config } from "../../core/config/config-schema.ts";
import { type ConfigProblem, formatPath, parseConfig } from "../../core/config/network-model.ts";
import { placeholderUses } from "../../core/config/placeholders.ts";
import { duplicateKeys } from "../../core/jsonrpc/json-duplicate-keys.ts";
import { reopenedByDefault } from "../../core/methods/deny-by-default.ts";

/** A problem found in a config document; `hint` says how to fix it where the message does not. */
export interface ConfigFileProblem extends ConfigProblem {
  readonly hint?: string;
}

export interface ConfigFileReport {
  readonly file: string;
  readonly problems: readonly ConfigFileProblem[];
  /** Present only when the file has no problem. */
  readonly summary?: { readonly networks: number; readonly providers: number };
  /** What the file makes the gateway do that its author may not mean; never a failure. */
  readonly warnings?: readonly ConfigFileProblem[];
}

export interface CheckOptions {
  /** When given, every `${NAME}` placeholder must be set (non-empty) here. */
  readonly envSecrets?: Readonly<Record<string, string | undefined>>;
}

const ROOT = "(root)";

export type ConfigTextResult =
  | { readonly ok: true; readonly config: Config }
  | { readonly ok: false; readonly problems: readonly ConfigFileProblem[] };

/** Parses a config document's text: JSON syntax (with line and column), then the schema. */
export function parseConfigText(text: string): ConfigTextResult {
  // Editors on some systems save a byte-order mark, which JSON.parse rejects.
  const json = text.startsWith("\uFEFF") ? text.slice(1) : text;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return { ok: false, problems: [jsonSyntaxProblem(json, error)] };
  }
  const repeated = duplicateKeys(json);
  if (repeated.length > 0) {
    return {
      ok: false,
      problems: repeated.map(({ path, key }) => ({
        path: formatPath(path),
        message: `key ${JSON.stringify(key)} appears more than once in this object (JSON keeps only the last): keep one`,
      })),
    };
  }
  return parseConfig(value);
}

function jsonSyntaxProblem(text: string, error: unknown): ConfigFileProblem {
  const message = error instanceof Error ? error.message : String(error);
  const { line, column } = lineAndColumn(text, jsonErrorOffset(text, message));
  const reason = message
    .replace(/,\s*".*" is not valid JSON$/s, "")
    .replace(/\s*in JSON at position.*$/s, "");
  return {
    path: ROOT,
    message: `invalid JSON at line ${line}, column ${column}: ${reason}`,
    hint: "look for a missing or trailing comma, an unquoted key or a missing quote at that spot",
  };
}

/** The offset V8's message gives: "at position N", or the end for "end of JSON input". */
function reportedOffset(message: string, length: number): number | undefined {
  const position = /at position (\d+)/.exec(message)?.[1];
  if (position !== undefined) return Number(position);
  return message.includes("end of JSON input") ? length : undefined;
}

/**
 * The offset of a JSON syntax error. V8 omits it for an unexpected token; then the shortest
 * prefix that fails before its own end ends at the bad character, found by bisection.
 */
function jsonErrorOffset(text: string, message: string): number {
  const reported = reportedOffset(message, text.length);
  if (reported !== undefined) return reported;
  const failsBeforeEnd = (length: number): boolean => {
    try {
      JSON.parse(text.slice(0, length));
      return false;
    } catch (error) {
      const offset = reportedOffset(error instanceof Error ? error.message : "", length);
      return offset === undefined || offset < length;
    }
  };
  let low = 1;
  let high = text.length;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (failsBeforeEnd(middle)) high = middle;
    else low = middle + 1;
  }
  return high - 1;
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, column: offset - lineStart + 1 };
}

function unsetPlaceholders(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): ConfigFileProblem[] {
  return placeholderUses(config)
    .filter(({ name }) => !env[name]?.trim())
    .map(({ path, name }) => ({
      path,
      message: `unknown placeholder \${${name}}: ${name} is not set in the environment`,
      hint: `export ${name}=... before running, or drop --env-secrets to check the file alone`,
    }));
}

async function readConfigFile(file: string): Promise<ConfigTextResult> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    return { ok: false, problems: [{ path: ROOT, message: `cannot read the file (${reason})` }] };
  }
  return parseConfigText(text);
}

/** Checks one config file; never throws (an unreadable file is a problem too). */
export async function checkConfigFile(
  file: string,
  options: CheckOptions = {},
): Promise<ConfigFileReport> {
  const result = await readConfigFile(file);
  if (!result.ok) return { file, problems: result.problems };
  const problems = options.envSecrets ? unsetPlaceholders(result.config, options.envSecrets) : [];
  if (problems.length > 0) return { file, problems };
  const networks = Object.values(result.config.networks);
  const providers = networks.reduce((sum, network) => sum + network.providers.length, 0);
  const warnings = reopenedMethods(result.config);
  return {
    file,
    problems,
    summary: { networks: networks.length, providers },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/**
 * A `methods_deny` of the file's own replaces the default deny list whole (docs/behaviour.md
 * §8.2): one written to refuse one more method serves signing and node control to anyone.
 */
function reopenedMethods(config: Config): ConfigFileProblem[] {
  const lists: Array<[string, readonly string[] | undefined]> = [
    ["methods_deny", config.methods_deny],
    ...Object.entries(config.networks).map(
      ([name, network]): [string, readonly string[] | undefined] => [
        `networks.${name}.methods_deny`,
        network.methods_deny,
      ],
    ),
  ];
  return lists.flatMap(([path, deny]) => {
    const reopened = deny === undefined ? [] : reopenedByDefault(deny);
    if (reopened.length === 0) return [];
    return [
      {
        path,
        message: `replaces the default deny list whole and serves ${reopened.length} of its patterns to every caller: ${reopened.join(", ")}`,
        hint: "methods that sign with the node's keys or change its state then reach the providers; list the ones this network must refuse again (docs/behaviour.md §8.2)",
      },
    ];
  });
}

/** One line per problem: `file: json.path: message`, and the hint on the next line. */
export function describeProblems(file: string, problems: readonly ConfigFileProblem[]): string {
  return problems
    .map(
      ({ path, message, hint }) => `${file}: ${path}: ${message}${hint ? `\n  fix: ${hint}` : ""}`,
    )
    .join("\n");
}

/** Loads and validates a config file, throwing an error that lists every problem. */
export async function loadConfigFile(file: string): Promise<Config> {
  const result = await readConfigFile(file);
  if (!result.ok) {
    throw new Error(
      `config file ${file} is not usable:\n${describeProblems(file, result.problems)}`,
    );
  }
  return result.config;
}
