import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in for SSM Parameter Store and Secrets Manager on 127.0.0.1, speaking their AWS JSON
 * 1.1 protocol (`X-Amz-Target` picks the operation), so the real SDK clients (and the AWS CLI
 * conventions such as `AWS_ENDPOINT_URL_SSM`) make real HTTP calls against it.
 */

export interface SecretsServiceCall {
  readonly target: string;
  readonly body: Record<string, unknown>;
}

/** An AWS error every call answers while set, e.g. `ThrottlingException`. */
export interface ServiceFault {
  readonly type: string;
  readonly message: string;
}

export interface SecretsService {
  readonly endpoint: string;
  /** SSM parameter name → value (a SecureString unless `parameterTypes` says otherwise). */
  readonly parameters: Map<string, string>;
  readonly parameterTypes: Map<string, "String" | "SecureString">;
  /** Secrets Manager secret id → secret string. */
  readonly secrets: Map<string, string>;
  readonly calls: SecretsServiceCall[];
  fault: ServiceFault | null;
  /** Same-origin client options for the SDK: endpoint, a region, dummy credentials, no retries. */
  clientConfig(): {
    endpoint: string;
    region: string;
    credentials: { accessKeyId: string; secretAccessKey: string };
    maxAttempts: number;
  };
  close(): Promise<void>;
}

function awsError(type: string, message: string) {
  return { status: 400, body: { __type: type, message } };
}

/** What SSM returns for a SecureString read without decryption: not the value. */
const ENCRYPTED = "AQICAHh-encrypted-blob";

export async function startSecretsService(): Promise<SecretsService> {
  const parameters = new Map<string, string>();
  const parameterTypes = new Map<string, "String" | "SecureString">();
  const secrets = new Map<string, string>();
  const calls: SecretsServiceCall[] = [];

  const answer = (
    service: SecretsService,
    target: string,
    body: Record<string, unknown>,
  ): { status: number; body: object } => {
    if (service.fault) return awsError(service.fault.type, service.fault.message);
    if (target === "AmazonSSM.GetParameters") {
      const names = body.Names as string[];
      const found = names.filter((name) => parameters.has(name));
      return {
        status: 200,
        body: {
          Parameters: found.map((name) => {
            const type = parameterTypes.get(name) ?? "SecureString";
            const plain = body.WithDecryption === true || type === "String";
            return {
              Name: name,
              Type: type,
              Value: plain ? parameters.get(name) : ENCRYPTED,
              Version: 1,
            };
          }),
          InvalidParameters: names.filter((name) => !parameters.has(name)),
        },
      };
    }
    if (target === "secretsmanager.GetSecretValue" || target === "secretsmanager.DescribeSecret") {
      const id = body.SecretId as string;
      const secretString = secrets.get(id);
      if (secretString === undefined) {
        return awsError(
          "ResourceNotFoundException",
          "Secrets Manager can't find the specified secret.",
        );
      }
      const described = { ARN: `arn:aws:secretsmanager:::secret:${id}`, Name: id };
      return {
        status: 200,
        body:
          target === "secretsmanager.DescribeSecret"
            ? described
            : { ...described, SecretString: secretString },
      };
    }
    return awsError("UnknownOperationException", target);
  };

  let service: SecretsService | undefined;
  const server: Server = createServer((request, response) => {
    let raw = "";
    request.on("data", (chunk: Buffer) => {
      raw += chunk.toString();
    });
    request.on("end", () => {
      const target = String(request.headers["x-amz-target"]);
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw || "{}") as Record<string, unknown>;
      } catch {
        body = {};
      }
      calls.push({ target, body });
      const { status, body: out } = service
        ? answer(service, target, body)
        : awsError("ServiceUnavailable", "starting");
      const headers: Record<string, string> = { "content-type": "application/x-amz-json-1.1" };
      if (status !== 200) headers["x-amzn-errortype"] = (out as { __type: string }).__type;
      response.writeHead(status, headers).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  service = {
    endpoint,
    parameters,
    parameterTypes,
    secrets,
    calls,
    fault: null,
    clientConfig: () => ({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return service;
}
