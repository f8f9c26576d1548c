// The SDK modules functions/adapters/secrets-sdk.ts imports by path; the packages' own types
// describe them.
declare module "@aws-sdk/client-secrets-manager/dist-es/commands/GetSecretValueCommand.js" {
  export { GetSecretValueCommand } from "@aws-sdk/client-secrets-manager";
}

declare module "@aws-sdk/client-secrets-manager/dist-es/SecretsManagerClient.js" {
  export { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
}

declare module "@aws-sdk/client-ssm/dist-es/commands/GetParametersCommand.js" {
  export { GetParametersCommand } from "@aws-sdk/client-ssm";
}

declare module "@aws-sdk/client-ssm/dist-es/SSMClient.js" {
  export { SSMClient } from "@aws-sdk/client-ssm";
}
