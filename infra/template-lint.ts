import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";

/**
 * Lints synthesized CloudFormation templates with the checks cfn-lint makes: every resource's
 * properties against the CloudFormation resource schemas (unknown property E3002, wrong type
 * E3012, missing required E3003, ...), references, dependencies and best practices.
 *
 * The engine is AWS's `@aws/cloudformation-validate` (cfn-lint's rules, offline, WebAssembly,
 * with CloudFormation's resource schemas bundled): aws-cdk-lib ships it for its own synth-time
 * check, so it comes from the npm registry with the lock file and needs no Python. When the
 * Python `cfn-lint` is on the PATH it runs too, as a second opinion with its own schemas.
 */

export type Severity = "error" | "warning" | "info";

export interface Finding {
  readonly tool: "cloudformation-validate" | "cfn-lint";
  readonly template: string;
  readonly rule: string;
  readonly severity: Severity;
  readonly message: string;
  /** The resource's logical id, where the finding has one. */
  readonly resource?: string;
  readonly line?: number;
}

/**
 * Findings that are accepted, each with its reason. Anything else at warning level or above
 * fails the lint.
 */
export const SUPPRESSED_RULES: Readonly<Record<string, string>> = {
  W3005:
    "CDK gives every function an explicit DependsOn on its role next to the GetAtt of the role's ARN: redundant, and harmless.",
};

interface ValidatorDiagnostic {
  ruleId: string;
  severity: "DEBUG" | "INFO" | "WARN" | "ERROR" | "FATAL";
  message: string;
  entity?: { logicalId?: string };
  startLine?: number;
}

interface ValidatorEngine {
  validateTemplate(
    template: unknown,
    config: Record<string, unknown>,
  ): { diagnostics: ValidatorDiagnostic[] };
  free(): void;
}

interface ValidatorModule {
  RegoEngine: new () => ValidatorEngine;
  TemplateContent: new (content: string, name?: string) => unknown;
  version(): string;
}

/** The validator aws-cdk-lib bundles (it resolves from aws-cdk-lib's own folder). */
function loadValidator(): ValidatorModule {
  const fromProject = createRequire(import.meta.url);
  const fromCdk = createRequire(fromProject.resolve("aws-cdk-lib"));
  return fromCdk("@aws/cloudformation-validate") as ValidatorModule;
}

const SEVERITY: Record<ValidatorDiagnostic["severity"], Severity> = {
  FATAL: "error",
  ERROR: "error",
  WARN: "warning",
  INFO: "info",
  DEBUG: "info",
};

/** cfn-lint's rule id for a validator rule: schema violations are reported as F3xxx there. */
function cfnLintRuleId(ruleId: string): string {
  return ruleId.startsWith("F") ? `E${ruleId.slice(1)}` : ruleId;
}

export interface TemplateLinter {
  readonly version: string;
  lint(name: string, text: string): Finding[];
  close(): void;
}

export function createTemplateLinter(): TemplateLinter {
  const validator = loadValidator();
  const engine = new validator.RegoEngine();
  return {
    version: validator.version(),
    lint(name, text) {
      const report = engine.validateTemplate(new validator.TemplateContent(text, name), {
        detailLevel: "STANDARD",
        severityLevel: "INFO",
      });
      return report.diagnostics.map((diagnostic) => ({
        tool: "cloudformation-validate" as const,
        template: name,
        rule: cfnLintRuleId(diagnostic.ruleId),
        severity: SEVERITY[diagnostic.severity],
        message: diagnostic.message,
        ...(diagnostic.entity?.logicalId ? { resource: diagnostic.entity.logicalId } : {}),
        ...(diagnostic.startLine ? { line: diagnostic.startLine } : {}),
      }));
    },
    close: () => engine.free(),
  };
}

interface CfnLintMatch {
  Rule: { Id: string };
  Level: string;
  Message: string;
  Filename: string;
  Location: { Start: { LineNumber: number }; Path?: unknown[] };
}

/** cfn-lint's version, or null when it is not installed. */
export function cfnLintVersion(): string | null {
  const run = spawnSync("cfn-lint", ["--version"], { encoding: "utf8" });
  return run.status === 0 ? run.stdout.trim() : null;
}

/** Runs the Python cfn-lint on template files (it must be installed: see `cfnLintVersion`). */
export function runCfnLint(files: readonly string[]): Finding[] {
  const run = spawnSync("cfn-lint", ["--format", "json", "--", ...files], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  let matches: CfnLintMatch[];
  try {
    matches = JSON.parse(run.stdout || "[]") as CfnLintMatch[];
  } catch {
    throw new Error(`cfn-lint failed (exit ${run.status}): ${run.stderr || run.stdout}`);
  }
  return matches.map((match) => {
    const path = match.Location.Path ?? [];
    const resource = path[0] === "Resources" && typeof path[1] === "string" ? path[1] : undefined;
    return {
      tool: "cfn-lint" as const,
      template: match.Filename,
      rule: match.Rule.Id,
      severity: match.Level === "Error" ? "error" : match.Level === "Warning" ? "warning" : "info",
      message: match.Message,
      ...(resource ? { resource } : {}),
      line: match.Location.Start.LineNumber,
    };
  });
}

/** Findings that fail the lint: errors and warnings that are not suppressed. */
export function failing(findings: readonly Finding[]): Finding[] {
  return findings.filter(
    (finding) => finding.severity !== "info" && !Object.hasOwn(SUPPRESSED_RULES, finding.rule),
  );
}
