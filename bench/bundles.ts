import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { build, type Metafile, type Plugin } from "esbuild";
import { writeBundledConfig } from "../infra/constructs/bundled-config.ts";
import { BUNDLE_DEFINES, CREATE_REQUIRE_BANNER } from "../infra/constructs/node-function.ts";

/**
 * Lambda bundles built as the stack builds them (infra/constructs/node-function.ts: esbuild,
 * ESM, minified, `module` main fields, the AWS SDK bundled, the createRequire banner, the
 * config beside the bundle with the config prepared from it), so size and import time are what
 * `cdk deploy` ships.
 */

const ROOT = resolve(import.meta.dirname, "..");
export const BUNDLES_DIR = join(ROOT, "bench", ".tmp", "bundles");

/** Which HTTP client carries upstream calls: the shipped adapter, or Node's (the A/B). */
export type UpstreamClientName = "undici" | "node-http";

export interface BundleSpec {
  /** Directory name under bench/.tmp/bundles. */
  readonly name: string;
  /** Handler file, relative to the repository root. */
  readonly entry: string;
  readonly client: UpstreamClientName;
  /** For profiles: readable names, no minification. */
  readonly readable?: boolean;
  /**
   * The config document bundled beside the handler, as a deploy bundles the one it uploads to
   * S3; default `config/dev.json`.
   */
  readonly configText?: string;
}

export interface Bundle {
  readonly name: string;
  readonly file: string;
  readonly dir: string;
  readonly bytes: number;
  /** What the bundle holds, input by input (also written beside it as `meta.json`). */
  readonly metafile: Metafile;
}

export const GATEWAY_ENTRY = "functions/proxy/handler.ts";
export const BASELINE_ENTRY = "bench/baseline/minimal-handler.ts";

const NODE_HTTP_ADAPTER = join(ROOT, "bench", "node-http-upstream.ts");

/** Points every import of the upstream adapter at Node's client (except the one inside it). */
const useNodeHttpUpstream: Plugin = {
  name: "node-http-upstream",
  setup(build) {
    build.onResolve({ filter: /\/adapters\/upstream\.ts$/ }, (args) =>
      args.importer === NODE_HTTP_ADAPTER ? undefined : { path: NODE_HTTP_ADAPTER },
    );
  },
};

export async function buildBundle(spec: BundleSpec): Promise<Bundle> {
  const dir = join(BUNDLES_DIR, spec.name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, spec.entry)],
    outfile: file,
    bundle: true,
    minify: spec.readable !== true,
    keepNames: spec.readable === true,
    platform: "node",
    target: "node24",
    format: "esm",
    mainFields: ["module", "main"],
    banner: { js: CREATE_REQUIRE_BANNER },
    define: BUNDLE_DEFINES,
    plugins: spec.client === "node-http" ? [useNodeHttpUpstream] : [],
    logLevel: "error",
    metafile: true,
  });
  const configText = spec.configText ?? readFileSync(join(ROOT, "config", "dev.json"), "utf8");
  writeBundledConfig(configText, "config.json", dir);
  writeFileSync(join(dir, "meta.json"), JSON.stringify(metafile));
  return { name: spec.name, file, dir: dirname(file), bytes: statSync(file).size, metafile };
}

/**
 * Bytes of the minified output by origin: the npm package (`@aws-sdk/client-s3`), or the
 * project directory (`functions/core`) with `depth` path segments.
 */
export function bytesByOrigin(metafile: Metafile, depth = 2): Map<string, number> {
  const totals = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      const owner =
        /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ??
        path
          .replace(/^(\.\.\/)+/, "")
          .split("/")
          .slice(0, depth)
          .join("/");
      totals.set(owner, (totals.get(owner) ?? 0) + input.bytesInOutput);
    }
  }
  return totals;
}
