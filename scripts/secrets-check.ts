/**
 * `npm run secrets:check -- --env <dev|prod> [--source ssm|secretsmanager] [--config FILE]`:
 * lists the secrets `config/<env>.json` needs and whether each exists where that environment's
 * gateway reads them, without reading or printing any value. Exits 1 when one is missing, 2
 * when the check itself cannot run (no credentials, access denied). Run it before a deploy
 * that adds a placeholder: a provider whose secret is missing is left out of service.
 */
import { parseArgs } from "node:util";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SSMClient } from "@aws-sdk/client-ssm";
import { loadConfigFile } from "../functions/adapters/config/config-file.ts";
import { DEPLOYED_ENVIRONMENTS, ENVIRONMENTS, secretsPrefixOf } from "../infra/environments.ts";
import {
  checkSecretsManagerSecrets,
  checkSsmParameters,
  type ParameterStatus,
  secretParameters,
} from "./secret-parameters.ts";

const usage =
  "usage: secrets:check -- --env <dev|prod> [--source ssm|secretsmanager] [--config FILE]";

function fail(message: string, code: number): never {
  console.error(message);
  process.exit(code);
}

let values: { env?: string; source?: string; config?: string; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      env: { type: "string" },
      source: { type: "string" },
      config: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (error) {
  fail(`${error instanceof Error ? error.message : String(error)}\n${usage}`, 2);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const env = values.env;
if (env === undefined || !(DEPLOYED_ENVIRONMENTS as readonly string[]).includes(env)) {
  fail(`--env must be one of ${DEPLOYED_ENVIRONMENTS.join(", ")}\n${usage}`, 2);
}
const settings = ENVIRONMENTS[env as (typeof DEPLOYED_ENVIRONMENTS)[number]];
const source = values.source ?? settings.secretsSource;
if (source !== "ssm" && source !== "secretsmanager") {
  fail(`--source must be ssm or secretsmanager, not "${source}"`, 2);
}
const file = values.config ?? `config/${env}.json`;

let config: Awaited<ReturnType<typeof loadConfigFile>>;
try {
  config = await loadConfigFile(file);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error), 2);
}
const prefix = secretsPrefixOf(env);
const parameters = secretParameters(config, prefix);
const where = source === "ssm" ? "SSM Parameter Store" : "Secrets Manager";
if (parameters.length === 0) {
  console.log(`${file} uses no secrets`);
  process.exit(0);
}

let statuses: Map<string, ParameterStatus>;
try {
  statuses =
    source === "ssm"
      ? await checkSsmParameters(new SSMClient({ maxAttempts: 3 }), parameters)
      : await checkSecretsManagerSecrets(new SecretsManagerClient({ maxAttempts: 3 }), parameters);
} catch (error) {
  const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  fail(`cannot check ${where} (credentials for the ${env} account and region?): ${reason}`, 2);
}

console.log(`${file} needs ${parameters.length} secret(s) in ${where}:`);
let missing = 0;
for (const parameter of parameters) {
  const status = statuses.get(parameter.location) ?? { exists: false };
  const used = `used by ${parameter.usedBy.join(", ")}`;
  if (status.exists) {
    console.log(`  ok       ${parameter.location}  (${status.detail}; ${used})`);
    if (status.warning) console.log(`           warning: ${status.warning}`);
  } else {
    missing++;
    console.log(`  MISSING  ${parameter.location}  (${used})`);
  }
}
if (missing > 0) {
  const create =
    source === "ssm"
      ? `aws ssm put-parameter --type SecureString --name <name> --value "$KEY"`
      : `aws secretsmanager create-secret --name <name> --secret-string '{"value":"..."}'`;
  console.error(
    `${missing} missing: the providers that use them would be left out of service. Create each with: ${create}`,
  );
  process.exit(1);
}
