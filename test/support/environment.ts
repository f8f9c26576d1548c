import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { isJavaAvailable, type LocalDynamoDb, startDynalite } from "../../local/dynamodb.ts";
import { startSharedDynamoDbLocal } from "./shared-dynamodb-local.ts";

/**
 * The real parts that come from the machine rather than from npm: a Java runtime (for AWS's
 * DynamoDB Local) and Chromium (for the status page). A developer's machine may lack them and
 * the tests that need them are skipped there; under CI (`CI=true`, exported by `.ci/run`,
 * which installs both) they always run, so a missing one fails the run instead of going green.
 */
export const UNDER_CI = process.env.CI === "true";

/** The first of `names` that is an executable on PATH, as a full path. */
export function findOnPath(names: readonly string[]): string | undefined {
  for (const directory of (process.env.PATH ?? "").split(delimiter)) {
    if (directory === "") continue;
    for (const name of names) {
      const candidate = join(directory, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** Chromium under any of the names distributions give it. */
export function findChromium(): string | undefined {
  return findOnPath(["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]);
}

/**
 * Whether the DynamoDB Local tests run: where Java is, and always under CI, where a missing
 * Java makes `startDynamoDbLocal` throw and the tests fail.
 */
export const RUN_DYNAMODB_LOCAL = isJavaAvailable() || UNDER_CI;

export interface DynamoBackend {
  readonly name: string;
  start(options: { tableName: string }): Promise<LocalDynamoDb>;
}

/** Both emulators that speak the real DynamoDB API: dynalite always, DynamoDB Local as above. */
export function dynamoBackends(): DynamoBackend[] {
  const dynalite: DynamoBackend = { name: "dynalite", start: startDynalite };
  const dynamoDbLocal: DynamoBackend = { name: "DynamoDB Local", start: startSharedDynamoDbLocal };
  return RUN_DYNAMODB_LOCAL ? [dynalite, dynamoDbLocal] : [dynalite];
}
