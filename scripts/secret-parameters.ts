import { DescribeSecretCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { GetParametersCommand, type SSMClient } from "@aws-sdk/client-ssm";
import type { Config } from "../functions/core/config/config-schema.ts";
import { placeholderUses } from "../functions/core/config/placeholders.ts";

/**
 * The secrets a config needs, and whether each exists where the deployed gateway will look:
 * SSM parameter metadata (GetParameters without decryption) or Secrets Manager's
 * DescribeSecret. No value is ever read into a result.
 */

export interface SecretParameter {
  /** The placeholder, e.g. `ALCHEMY_KEY`. */
  readonly name: string;
  /** Where the gateway looks: the parameter name or secret id, e.g. `/rpc-gateway/prod/ALCHEMY_KEY`. */
  readonly location: string;
  /** JSON paths of the URLs that use it. */
  readonly usedBy: readonly string[];
}

export type ParameterStatus =
  | { readonly exists: true; readonly detail: string; readonly warning?: string }
  | { readonly exists: false };

export function secretParameters(config: Config, prefix: string): SecretParameter[] {
  const byName = new Map<string, string[]>();
  for (const { name, path } of placeholderUses(config)) {
    byName.set(name, [...(byName.get(name) ?? []), path]);
  }
  return [...byName.keys()]
    .sort()
    .map((name) => ({ name, location: `${prefix}${name}`, usedBy: byName.get(name) ?? [] }));
}

const SSM_BATCH = 10;

/** SSM: which parameters exist, with their type and version (the value stays encrypted and unread). */
export async function checkSsmParameters(
  client: SSMClient,
  parameters: readonly SecretParameter[],
): Promise<Map<string, ParameterStatus>> {
  const statuses = new Map<string, ParameterStatus>();
  for (let start = 0; start < parameters.length; start += SSM_BATCH) {
    const names = parameters.slice(start, start + SSM_BATCH).map((p) => p.location);
    const answer = await client.send(
      new GetParametersCommand({ Names: names, WithDecryption: false }),
    );
    for (const found of answer.Parameters ?? []) {
      if (found.Name === undefined) continue;
      statuses.set(found.Name, {
        exists: true,
        detail: `${found.Type ?? "?"}, version ${found.Version ?? "?"}`,
        ...(found.Type === "SecureString"
          ? {}
          : { warning: "not a SecureString: the key is stored unencrypted" }),
      });
    }
    for (const name of names) if (!statuses.has(name)) statuses.set(name, { exists: false });
  }
  return statuses;
}

/** Secrets Manager: which secrets exist (DescribeSecret reads metadata only). */
export async function checkSecretsManagerSecrets(
  client: SecretsManagerClient,
  parameters: readonly SecretParameter[],
): Promise<Map<string, ParameterStatus>> {
  const statuses = new Map<string, ParameterStatus>();
  for (const { location } of parameters) {
    try {
      const answer = await client.send(new DescribeSecretCommand({ SecretId: location }));
      const deleted = answer.DeletedDate !== undefined;
      statuses.set(
        location,
        deleted
          ? { exists: false }
          : {
              exists: true,
              detail: `secret, changed ${answer.LastChangedDate?.toISOString() ?? "?"}`,
            },
      );
    } catch (error) {
      if (error instanceof Error && error.name === "ResourceNotFoundException") {
        statuses.set(location, { exists: false });
      } else {
        throw error;
      }
    }
  }
  return statuses;
}
