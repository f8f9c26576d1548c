import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  PREPARED_CONFIG_FILE,
  prepareConfig,
} from "../../functions/adapters/config/config-prepared.ts";

/** Where the bundled fallback config lands in the function package (the Lambda task root). */
export const BUNDLED_CONFIG_FILE = "config.json";
export const BUNDLED_CONFIG_PATH = `/var/task/${BUNDLED_CONFIG_FILE}`;

/**
 * What a function package carries of its environment's config: the document, byte for byte
 * (the cold-start fallback, and the same text the stack uploads to S3), and the config prepared
 * from it (validated now, so a cold start whose S3 object has these bytes skips the schema).
 * The stack's bundling and the benchmark's bundles both write exactly these files.
 */
export function bundledConfigFiles(
  text: string,
  file: string,
): ReadonlyArray<{ readonly name: string; readonly contents: string }> {
  const prepared = prepareConfig(text, file);
  return [
    { name: BUNDLED_CONFIG_FILE, contents: text },
    ...(prepared === undefined ? [] : [{ name: PREPARED_CONFIG_FILE, contents: prepared }]),
  ];
}

export function writeBundledConfig(text: string, file: string, dir: string): void {
  for (const { name, contents } of bundledConfigFiles(text, file)) {
    writeFileSync(join(dir, name), contents);
  }
}

/** Linux caps one command-line argument at 128 KiB; each piece of a file goes well under it. */
const ARGUMENT_PIECE = 64 * 1024;

/**
 * The same files as shell commands, for CDK's `afterBundling` hook (which runs commands, not
 * code): each file's bytes in base64 (only shell-safe characters), written by `node`, one
 * command per piece (the first creates the file, the others append), since local bundling
 * runs each command as the single argument of `bash -c`.
 */
export function bundledConfigCommands(text: string, file: string, outputDir: string): string[] {
  const write =
    "const [path, flag, piece] = process.argv.slice(1); require('node:fs').writeFileSync(path, Buffer.from(piece, 'base64'), { flag })";
  return bundledConfigFiles(text, file).flatMap(({ name, contents }) => {
    const base64 = Buffer.from(contents, "utf8").toString("base64");
    const commands: string[] = [];
    // A piece of 64 KiB (a multiple of 4) of base64 is whole base64 on its own.
    for (let at = 0; at === 0 || at < base64.length; at += ARGUMENT_PIECE) {
      const piece = base64.slice(at, at + ARGUMENT_PIECE);
      commands.push(
        `node -e "${write}" "${join(outputDir, name)}" ${at === 0 ? "w" : "a"} "${piece}"`,
      );
    }
    return commands;
  });
}
