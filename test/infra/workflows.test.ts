import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { PROJECT_ROOT } from "../../infra/gateway-config.ts";

/**
 * The GitHub Actions workflows: every pull request is checked (and gets the `cdk diff`), a
 * merge to main deploys dev and a tag or an approved manual run deploys prod, from the
 * assembly the same run tested, through OIDC with no long-lived keys, on actions whose
 * runtime is current.
 */

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  needs?: string | string[];
  if?: string;
  environment?: string;
  permissions?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}

const DIR = join(PROJECT_ROOT, ".github", "workflows");
const files = readdirSync(DIR).filter((file) => /\.ya?ml$/.test(file));
const text = (file: string) => readFileSync(join(DIR, file), "utf8");
const load = (file: string) => parse(text(file)) as Workflow;

/** The majors on the Node 24 action runtime (Node 20 actions are being retired). */
const CURRENT_MAJORS: Record<string, number> = {
  "actions/checkout": 6,
  "actions/setup-node": 6,
  "actions/upload-artifact": 7,
  "actions/download-artifact": 8,
  "aws-actions/configure-aws-credentials": 6,
};

const steps = (workflow: Workflow) => Object.values(workflow.jobs).flatMap((job) => job.steps);

describe("every workflow", () => {
  it("has the pull-request and deploy workflows", () => {
    expect(files.sort()).toEqual(["deploy.yml", "pull-request.yml"]);
  });

  it.each(files)("%s: every action is a known one at its current major", (file) => {
    for (const step of steps(load(file))) {
      if (step.uses === undefined) continue;
      const [action, ref] = step.uses.split("@");
      expect(Object.keys(CURRENT_MAJORS), step.uses).toContain(action);
      expect(ref, step.uses).toBe(`v${CURRENT_MAJORS[action ?? ""]}`);
    }
  });

  it.each(files)(
    "%s: regression: no apt chromium (GitHub's image ships it; 24.04's package is a snap shim)",
    (file) => {
      expect(text(file)).not.toMatch(/apt(-get)? install[^\n]*chromium/);
    },
  );

  it.each(files)(
    "%s: no long-lived AWS keys; OIDC tokens only where a job assumes a role",
    (file) => {
      const workflow = load(file);
      expect(text(file)).not.toMatch(
        /aws-access-key-id|aws-secret-access-key|AWS_SECRET_ACCESS_KEY/,
      );
      expect(workflow.permissions).toEqual({ contents: "read" });
      for (const job of Object.values(workflow.jobs)) {
        const assumesRole = job.steps.some((step) =>
          step.uses?.startsWith("aws-actions/configure-aws-credentials"),
        );
        expect(job.permissions?.["id-token"] === "write").toBe(assumesRole);
      }
    },
  );
});

describe("deploy.yml", () => {
  const workflow = load("deploy.yml");
  const { build, "deploy-dev": dev, "deploy-prod": prod } = workflow.jobs;

  it("runs on a merge to main, on a v* tag, and by hand for one environment", () => {
    expect(workflow.on.push).toEqual({ branches: ["main"], tags: ["v*"] });
    expect(workflow.on.workflow_dispatch).toMatchObject({
      inputs: { environment: { type: "choice", options: ["dev", "prod"] } },
    });
  });

  it("builds once: check, test and synth of both environments, kept as the artefact", () => {
    const runs = (build?.steps ?? []).map((step) => step.run ?? step.uses ?? "");
    const index = (pattern: RegExp) => runs.findIndex((run) => pattern.test(run));
    expect(index(/^npm ci$/)).toBeGreaterThanOrEqual(0);
    expect(index(/npm run check/)).toBeGreaterThan(index(/^npm ci$/));
    expect(index(/npm test/)).toBeGreaterThan(index(/npm run check/));
    expect(
      index(
        /cdk synth -c env=dev .*--output cdk.out\/dev[\s\S]*cdk synth -c env=prod .*--output cdk.out\/prod/,
      ),
    ).toBeGreaterThan(index(/npm test/));
    expect(index(/^actions\/upload-artifact/)).toBe(runs.length - 1);
  });

  it.each([
    ["dev", dev, /github.ref == 'refs\/heads\/main'/],
    ["prod", prod, /startsWith\(github.ref, 'refs\/tags\/v'\)/],
  ] as const)(
    "deploys %s from the tested assembly, after checking its secrets",
    (env, job, trigger) => {
      expect(job?.needs).toBe("build");
      expect(job?.environment).toBe(env);
      expect(job?.if).toMatch(trigger);
      expect(job?.if).toContain(`inputs.environment == '${env}'`);
      const runs = (job?.steps ?? []).map((step) => step.run ?? step.uses ?? "");
      const download = runs.findIndex((run) => run.startsWith("actions/download-artifact"));
      const secrets = runs.indexOf(`npm run secrets:check -- --env ${env}`);
      const deploy = runs.findIndex((run) =>
        run.startsWith(`npx cdk deploy --app cdk.out/${env} RpcGateway-${env}`),
      );
      expect(download).toBeGreaterThan(0);
      expect(secrets).toBeGreaterThan(download);
      expect(deploy).toBeGreaterThan(secrets);
      expect(runs.some((run) => /cdk synth/.test(run))).toBe(false);
    },
  );
});

describe("pull-request.yml", () => {
  const workflow = load("pull-request.yml");

  it("checks, tests and synthesizes every pull request", () => {
    expect(Object.keys(workflow.on)).toEqual(["pull_request"]);
    const runs = (workflow.jobs.verify?.steps ?? []).map((step) => step.run ?? "");
    for (const command of ["npm ci", "npm run check", "npm test", "npm run synth"]) {
      expect(runs).toContain(command);
    }
  });

  it("posts the cdk diff of each environment on the pull request, never for a fork", () => {
    const diff = workflow.jobs.diff;
    expect(diff?.if).toContain(
      "github.event.pull_request.head.repo.full_name == github.repository",
    );
    expect(diff?.permissions).toMatchObject({ "pull-requests": "write", "id-token": "write" });
    const runs = (diff?.steps ?? []).map((step) => step.run ?? "").join("\n");
    expect(runs).toMatch(/for env in dev prod[\s\S]*npx cdk diff -c env="\$\{env\}"/);
    expect(runs).toMatch(/gh pr comment .* --edit-last --create-if-none/);
  });
});
