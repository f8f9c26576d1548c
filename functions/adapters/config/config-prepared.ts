import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Config } from "../../core/config/config-schema.ts";
import { describeProblems, parseConfigText } from "./config-file.ts";

/**
 * A config validated when the function was built, so a cold start need not build the schema
 * and parse with it. The build writes, beside the bundled config, the schema's output for that
 * exact document with the document's SHA-256. At run time a document with that digest (the S3
 * object a deploy uploaded with the same bytes) gets the prepared output; any other text, such
 * as an operator's edit in S3, is parsed and validated as always.
 */
export const PREPARED_CONFIG_FILE = "config.prepared.json";

interface PreparedDocument {
  readonly source_sha256: string;
  readonly config: Config;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * Build time: the prepared file's contents for a config document, or undefined when JSON
 * cannot carry the schema's output exactly (then nothing is prepared and every document is
 * parsed). Throws, listing every problem, when the document is not a valid config.
 */
export function prepareConfig(text: string, file: string): string | undefined {
  const result = parseConfigText(text);
  if (!result.ok) {
    throw new Error(
      `${file} is not a valid gateway config:\n${describeProblems(file, result.problems)}`,
    );
  }
  const prepared = JSON.stringify({ source_sha256: sha256(text), config: result.config });
  const { config } = JSON.parse(prepared) as PreparedDocument;
  return sameValue(config, result.config) ? prepared : undefined;
}

/**
 * Run time: the prepared config for a document with exactly the text it was prepared from,
 * else undefined. The file is read on first use; a missing or unreadable one only means that
 * every document is parsed. Each match gets a fresh object, as a parse would.
 */
export function preparedConfigReader(path: string): (text: string) => Config | undefined {
  let file: { readonly text: string; readonly digest: string } | null | undefined;
  const read = () => {
    try {
      const text = readFileSync(path, "utf8");
      const digest: unknown = (JSON.parse(text) as Partial<PreparedDocument>).source_sha256;
      return typeof digest === "string" ? { text, digest } : null;
    } catch {
      return null;
    }
  };
  return (text) => {
    file ??= read();
    if (file === null || sha256(text) !== file.digest) return undefined;
    const { config } = JSON.parse(file.text) as Partial<PreparedDocument>;
    return typeof config === "object" && config !== null ? config : undefined;
  };
}

/** Equal values, keys in the same order, `undefined` members and -0 told apart. */
function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const keysA = Reflect.ownKeys(a);
  const keysB = Reflect.ownKeys(b);
  return (
    keysA.length === keysB.length &&
    keysA.every(
      (key, index) =>
        key === keysB[index] &&
        sameValue(
          (a as Record<PropertyKey, unknown>)[key],
          (b as Record<PropertyKey, unknown>)[key],
        ),
    )
  );
}
