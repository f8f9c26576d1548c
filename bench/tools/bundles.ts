import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import { writeBundledConfig } from "../../infra/constructs/bundled-config.ts";
import { BUNDLE_DEFINES, CREATE_REQUIRE_BANNER } from "../../infra/constructs/node-function.ts";

/**
 * Lambda bundles built as the stack builds them (infra/constructs/node-function.ts: esbuild,
 * ESM, minified, `module` main fields, the AWS SDK bundled, the createRequire banner, the
 * config beside the bundle with the config prepared from it), so size and import time are what
 * `cdk deploy` ships.
 */

const ROOT = resolve(import.meta.dirname, "..", "..");
const BUNDLES_DIR = join(ROOT, "bench", ".tmp", "bundles");

export interface BundleSpec {
  /** Directory name under bench/.tmp/bundles. */
  readonly name: string;
  /** Handler file, relative to the repository root. */
  readonly entry: string;
  /**
   * The config document bundled beside the handler, as a deploy bundles the one it uploads to
   * S3; default `config/dev.json`.
   */
  readonly configText?: string;
  /** The source tree to build from (another revision's, for `--against`); default this one. */
  readonly root?: string;
}

export interface Bundle {
  readonly name: string;
  readonly file: string;
  readonly bytes: number;
}

export const GATEWAY_ENTRY = "functions/proxy/handler.ts";
export const BASELINE_ENTRY = "bench/baseline/minimal-handler.ts";
/** The gateway's handler with its stage observer on (the `stages` part). */
export const STAGED_ENTRY = "bench/tools/staged-handler.ts";

export async function buildBundle(spec: BundleSpec): Promise<Bundle> {
  const root = spec.root ?? ROOT;
  const dir = join(BUNDLES_DIR, spec.name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  const { metafile } = await build({
    absWorkingDir: root,
    entryPoints: [join(root, spec.entry)],
    outfile: file,
    bundle: true,
    minify: true,
    platform: "node",
    target: "node24",
    format: "esm",
    mainFields: ["module", "main"],
    banner: { js: CREATE_REQUIRE_BANNER },
    define: BUNDLE_DEFINES,
    logLevel: "error",
    metafile: true,
  });
  const configText = spec.configText ?? readFileSync(join(ROOT, "config", "dev.json"), "utf8");
  writeBundledConfig(configText, "config.json", dir);
  // What the bundle holds, input by input: esbuild's analyser reads it.
  writeFileSync(join(dir, "meta.json"), JSON.stringify(metafile));
  return { name: spec.name, file, bytes: statSync(file).size };
}
