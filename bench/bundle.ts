/**
 * Bundle size and cold import time of the two Lambdas, as CDK builds them (esbuild, ESM,
 * minified, AWS SDK bundled, the createRequire banner: infra/constructs/node-function.ts).
 * Each bundle is imported by fresh Node processes, as a Lambda cold start imports it; the
 * median of several imports is reported. Part of `npm run bench`; writes its section of
 * bench/RESULTS.md between the `bundle:` markers.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";

const OUT = join(import.meta.dirname, ".tmp", "bundles");
const RESULTS = join(import.meta.dirname, "RESULTS.md");
const IMPORTS = 7;
const TARGET_BYTES = 600 * 1024;
const TARGET_IMPORT_MS = 150;
const BANNER =
  "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

// What the stack gives both Lambdas; nothing is called at import time.
const LAMBDA_ENV = {
  PATH: process.env.PATH ?? "",
  AWS_REGION: "us-east-1",
  TABLE_NAME: "bench",
  CONFIG_BUCKET: "bench",
  CONFIG_KEY: "config/dev.json",
  SECRETS_SOURCE: "ssm",
  POWERTOOLS_SERVICE_NAME: "rpc-gateway-dev",
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function measure(name: string, entry: string) {
  const dir = join(OUT, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  await build({
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    minify: true,
    platform: "node",
    target: "node24",
    format: "esm",
    mainFields: ["module", "main"],
    banner: { js: BANNER },
    logLevel: "error",
  });
  copyFileSync("config/dev.json", join(dir, "config.json"));
  const times: number[] = [];
  for (let i = 0; i < IMPORTS; i++) {
    const output = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const t = performance.now(); await import(${JSON.stringify(file)}); console.log(performance.now() - t); process.exit(0);`,
      ],
      { env: LAMBDA_ENV, encoding: "utf8" },
    );
    times.push(Number(output.trim().split("\n").at(-1)));
  }
  return { name, bytes: statSync(file).size, importMs: median(times), times };
}

const loadBefore = loadavg();
const results = [
  await measure("proxy", "functions/proxy/handler.ts"),
  await measure("monitor", "functions/monitor/handler.ts"),
];
const [proxy] = results;
const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;
const lines = [
  "## Lambda bundles: size and cold import",
  "",
  `- Run: ${new Date().toISOString()}, ${cpus()[0]?.model ?? "?"}, ${cpus().length} cores, Node ${process.version}`,
  `- Load average at start: ${loadBefore.map((value) => value.toFixed(2)).join(" / ")}`,
  `- Built as CDK builds them (esbuild ESM, minified, AWS SDK bundled); each imported ${IMPORTS} times by a fresh Node process with the Lambda's environment; median shown.`,
  "",
  "| bundle | size | cold import (median) | every import, ms |",
  "|---|---:|---:|---|",
  ...results.map(
    (result) =>
      `| ${result.name} | ${kb(result.bytes)} | ${result.importMs.toFixed(0)} ms | ${result.times.map((time) => time.toFixed(0)).join(", ")} |`,
  ),
  "",
  "| target | measured | verdict |",
  "|---|---|---|",
  `| proxy bundle ≤ 600 KB minified | ${kb(proxy?.bytes ?? 0)} | **${(proxy?.bytes ?? Infinity) <= TARGET_BYTES ? "PASS" : "FAIL"}** |`,
  `| proxy cold import ≤ 150 ms here | ${proxy?.importMs.toFixed(0)} ms | **${(proxy?.importMs ?? Infinity) <= TARGET_IMPORT_MS ? "PASS" : "FAIL"}** |`,
];
console.log(lines.join("\n"));

const section = `<!-- bundle:start -->\n${lines.join("\n")}\n<!-- bundle:end -->`;
const current = readFileSync(RESULTS, "utf8");
const marked = /<!-- bundle:start -->[\s\S]*?<!-- bundle:end -->/;
writeFileSync(
  RESULTS,
  marked.test(current)
    ? current.replace(marked, section)
    : current.replace("<!-- bench:end -->", `<!-- bench:end -->\n\n${section}`),
);
console.log(`bench: wrote ${RESULTS}`);
