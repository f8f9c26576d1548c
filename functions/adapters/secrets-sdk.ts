/**
 * The SSM and Secrets Manager clients and the one command each resolver sends, imported on
 * first use (a config without placeholders never needs them). Imported by path: a module
 * imported at run time is bundled with everything it imports, and the packages' indexes
 * import every command and model they have.
 */
export { GetSecretValueCommand } from "@aws-sdk/client-secrets-manager/dist-es/commands/GetSecretValueCommand.js";
export { SecretsManagerClient } from "@aws-sdk/client-secrets-manager/dist-es/SecretsManagerClient.js";
export { GetParametersCommand } from "@aws-sdk/client-ssm/dist-es/commands/GetParametersCommand.js";
export { SSMClient } from "@aws-sdk/client-ssm/dist-es/SSMClient.js";
