/**
 * `npm run config:check [--env-secrets] [file...]`: validates config files (all of
 * config/*.json when none is named), prints every problem with its JSON path, exits 1 on any;
 * a warning (a methods_deny that serves what the default refuses) is printed, not a failure.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { checkConfigFile, describeProblems } from "../functions/adapters/config/config-file.ts";

const args = process.argv.slice(2);
const envSecrets = args.includes("--env-secrets");
const unknownFlags = args.filter((arg) => arg.startsWith("--") && arg !== "--env-secrets");
if (unknownFlags.length > 0) {
  console.error(
    `unknown option ${unknownFlags.join(", ")}; usage: config:check [--env-secrets] [file...]`,
  );
  process.exit(2);
}

let files = args.filter((arg) => !arg.startsWith("--"));
if (files.length === 0) {
  const names = await readdir("config");
  files = names
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => join("config", name));
  if (files.length === 0) {
    console.error("no config/*.json to check");
    process.exit(1);
  }
}

let failed = false;
for (const file of files) {
  const report = await checkConfigFile(file, envSecrets ? { envSecrets: process.env } : {});
  if (report.summary) {
    const { networks, providers } = report.summary;
    console.log(`ok ${file} (${networks} networks, ${providers} providers)`);
    if (report.warnings) console.error(describeProblems(`warning: ${file}`, report.warnings));
  } else {
    failed = true;
    console.error(describeProblems(file, report.problems));
  }
}
process.exit(failed ? 1 : 0);
