import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { CfnElement } from "aws-cdk-lib";
import { describe, expect, it, onTestFinished } from "vitest";
import { PROJECT_ROOT } from "../../infra/gateway-config.ts";
import { synthGateway } from "./synth.ts";

/**
 * Real esbuild bundling through CDK (what `cdk deploy` uploads). Needs both handler files;
 * until they exist the suite is skipped and says which one is missing.
 */
const ENTRIES = ["functions/proxy/handler.ts", "functions/monitor/handler.ts"];
const missing = ENTRIES.filter((entry) => !existsSync(join(PROJECT_ROOT, entry)));
const title =
  missing.length === 0
    ? "real bundling of the dev stack"
    : `real bundling of the dev stack (SKIPPED: ${missing.join(", ")} not written yet)`;
if (missing.length > 0) console.warn(`bundle.test.ts: ${title}`);

const MAX_PROXY_BYTES = 600 * 1024;

describe.skipIf(missing.length > 0)(title, () => {
  it("bundles each handler as one ESM file with the env's config.json beside it", () => {
    const { stack, template, outdir } = synthGateway("dev", { bundle: true });
    onTestFinished(() => rmSync(outdir, { recursive: true, force: true }));
    const resources = template.toJSON().Resources as Record<
      string,
      { Properties: { Code: { S3Key: string } } }
    >;
    const config = readFileSync(join(PROJECT_ROOT, "config", "dev.json"), "utf8");
    const sizes: Record<string, number> = {};
    for (const [name, fn] of [
      ["proxy", stack.proxy.function],
      ["monitor", stack.monitor.function],
    ] as const) {
      const key =
        resources[stack.getLogicalId(fn.node.defaultChild as CfnElement)]?.Properties.Code.S3Key;
      const dir = join(outdir, `asset.${key?.replace(/\.zip$/, "")}`);
      const bundle = join(dir, "index.mjs");
      expect(existsSync(bundle), `${name}: ${bundle}`).toBe(true);
      expect(readFileSync(join(dir, "config.json"), "utf8")).toBe(config);
      const code = readFileSync(bundle, "utf8");
      expect(code.startsWith("import { createRequire } from 'node:module';")).toBe(true);
      expect(code).toMatch(/export\s*\{[^}]*\bas handler\b[^}]*\}/);
      expect(code).not.toMatch(/sourceMappingURL/);
      // Parses as an ES module (syntax only: nothing runs, nothing calls AWS).
      execFileSync(process.execPath, ["--check", bundle]);
      sizes[name] = statSync(bundle).size;
    }
    // CDK's CloudFormation schema validation ran in this synth and found nothing.
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8")) as {
      pluginReports: Array<{ pluginName: string; violations?: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
    const proxyKb = Math.round((sizes.proxy ?? 0) / 1024);
    expect(sizes.proxy, `proxy bundle is ${proxyKb} KB, limit 600 KB`).toBeLessThanOrEqual(
      MAX_PROXY_BYTES,
    );
  }, 180_000);
});
