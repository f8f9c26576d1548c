// `npm run synth:lint`: synthesizes every deployed environment as `cdk synth` does (real
// bundling, cdk.json's context) and lints each template; exits non-zero on any error or
// unsuppressed warning. `-- <template.json>…` lints given files instead.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEPLOYED_ENVIRONMENTS } from "../infra/environments.ts";
import { createGatewayApp } from "../infra/gateway-app.ts";
import { PROJECT_ROOT } from "../infra/gateway-config.ts";
import {
  cfnLintVersion,
  createTemplateLinter,
  type Finding,
  failing,
  runCfnLint,
  SUPPRESSED_RULES,
} from "../infra/template-lint.ts";

function synthesizeAll(workDir: string): string[] {
  const { context } = JSON.parse(readFileSync(join(PROJECT_ROOT, "cdk.json"), "utf8")) as {
    context: Record<string, unknown>;
  };
  return DEPLOYED_ENVIRONMENTS.map((env) => {
    const outdir = join(workDir, env);
    const { app, stack } = createGatewayApp({
      appProps: { context: { ...context, env }, outdir, builtinCloudFormationValidation: false },
    });
    const assembly = app.synth();
    const template = assembly.getStackByName(stack.stackName).template as unknown;
    const file = join(workDir, `${stack.stackName}.template.json`);
    writeFileSync(file, JSON.stringify(template, null, 1));
    return file;
  });
}

function print(finding: Finding): void {
  const where = [finding.template, finding.resource, finding.line].filter(Boolean).join(":");
  console.log(
    `  ${finding.severity} ${finding.rule} [${finding.tool}] ${where}: ${finding.message}`,
  );
}

const given = process.argv.slice(2);
const workDir = mkdtempSync(join(tmpdir(), "synth-lint-"));
try {
  const files = given.length > 0 ? given : synthesizeAll(workDir);
  const linter = createTemplateLinter();
  const findings: Finding[] = [];
  try {
    for (const file of files) findings.push(...linter.lint(file, readFileSync(file, "utf8")));
  } finally {
    linter.close();
  }
  const tools = [`@aws/cloudformation-validate ${linter.version}`];
  const pythonLint = cfnLintVersion();
  if (pythonLint === null) {
    console.log(
      "cfn-lint (Python) is not installed: linted with @aws/cloudformation-validate only",
    );
  } else {
    tools.push(pythonLint);
    findings.push(...runCfnLint(files));
  }

  const failed = failing(findings);
  const suppressed = findings.filter((finding) => Object.hasOwn(SUPPRESSED_RULES, finding.rule));
  const informational = findings.filter((finding) => finding.severity === "info");
  console.log(`linted ${files.length} template(s) with ${tools.join(" and ")}`);
  for (const rule of new Set(suppressed.map((finding) => finding.rule))) {
    const count = suppressed.filter((finding) => finding.rule === rule).length;
    console.log(`  suppressed ${rule} ×${count}: ${SUPPRESSED_RULES[rule]}`);
  }
  console.log(`  ${informational.length} informational finding(s) not shown`);
  for (const finding of failed) print(finding);
  console.log(failed.length === 0 ? "no errors, no warnings" : `${failed.length} problem(s)`);
  process.exitCode = failed.length === 0 ? 0 : 1;
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
