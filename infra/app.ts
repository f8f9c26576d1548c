// CDK entry (cdk.json "app"): `npx cdk synth|diff|deploy -c env=<dev|prod>`.
import { SetupError } from "./environments.ts";
import { createGatewayApp } from "./gateway-app.ts";

try {
  createGatewayApp().app.synth();
} catch (error) {
  if (!(error instanceof SetupError)) throw error;
  console.error(`error: ${error.message}`);
  process.exitCode = 1;
}
