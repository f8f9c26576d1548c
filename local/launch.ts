import { mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build, stop } from "esbuild";

/**
 * `npm start`: bundles local/start.ts and its project imports into one ESM file (about
 * 100 ms), then runs it. Measured against tsx running the sources: tsx always compiles with
 * `keepNames`, so every closure made per request pays an `Object.defineProperty`; the bundle
 * has none of that. Packages stay outside the bundle and load from node_modules as usual.
 * Source maps are on, so stack traces name the TypeScript files and lines.
 * Tests and the benchmark's other parts import the TypeScript sources directly.
 */
const ROOT = join(import.meta.dirname, "..");
const OUT_DIR = join(ROOT, "local", ".build");

// Concurrent starts each write their own file, then move it into place in one step.
const staging = join(OUT_DIR, `start-${process.pid}.mjs`);
const target = join(OUT_DIR, "start.mjs");
try {
  mkdirSync(OUT_DIR, { recursive: true });
  await build({
    entryPoints: [join(ROOT, "local", "start.ts")],
    outfile: staging,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    packages: "external",
    sourcemap: "inline",
    sourcesContent: false,
    logLevel: "silent",
  });
  renameSync(staging, target);
  // esbuild's service process would otherwise live as long as the gateway.
  await stop();
} catch (error) {
  rmSync(staging, { force: true });
  console.error(
    `could not build local/start.ts: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
}
process.setSourceMapsEnabled(true);
await import(pathToFileURL(target).href);
