import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  bundledConfigCommands,
  bundledConfigFiles,
} from "../../infra/constructs/bundled-config.ts";

/**
 * The afterBundling commands that put the config and the config prepared from it into a
 * function package, run as CDK's local bundling runs them: each one alone, as the single
 * argument of `bash -c`, which Linux caps at 128 KiB.
 */

const LINUX_MAX_ARGUMENT_BYTES = 128 * 1024;

/** A config of `count` networks of five providers each, pretty-printed as people write them. */
function configOf(count: number): string {
  const networks: Record<string, unknown> = {};
  for (let index = 0; index < count; index++) {
    networks[`network-${index}`] = {
      chain_id: index + 1,
      providers: Array.from({ length: 5 }, (_, provider) => ({
        url: `https://provider-${provider}.example/${index}/\${KEY_${provider}}`,
      })),
    };
  }
  return `${JSON.stringify({ networks }, null, 2)}\n`;
}

let outputDir: string | undefined;
afterEach(() => {
  if (outputDir) rmSync(outputDir, { recursive: true, force: true });
});

describe("the bundled config's afterBundling commands", () => {
  it.each([
    ["a small config", 3],
    [
      "regression: a config of 300 networks (~130 KB) made each command longer than one argument may be (bash -c failed with E2BIG, and the deploy with it); now every command stays under it",
      300,
    ],
  ])("%s: written byte for byte, each command under the limit", (_name, networks) => {
    const text = configOf(networks);
    outputDir = mkdtempSync(join(tmpdir(), "bundled-config-commands-"));
    const dir = outputDir;

    const commands = bundledConfigCommands(text, "config/dev.json", dir);

    for (const command of commands) {
      expect(Buffer.byteLength(command)).toBeLessThan(LINUX_MAX_ARGUMENT_BYTES);
      const run = spawnSync("bash", ["-c", command]);
      expect({ error: run.error?.message, status: run.status }).toEqual({
        error: undefined,
        status: 0,
      });
    }
    for (const { name, contents } of bundledConfigFiles(text, "config/dev.json")) {
      expect(readFileSync(join(dir, name)).equals(Buffer.from(contents, "utf8"))).toBe(true);
    }
  });
});
