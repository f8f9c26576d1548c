import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in for the AWS Parameters and Secrets Lambda Extension on 127.0.0.1: its two GET
 * routes, its token header, and its answers as observed from the real extension (the
 * GetParameter / GetSecretValue result as JSON; HTTP 400 "an unexpected error occurred while
 * executing request" for a name that does not exist or may not be read; "not ready to serve
 * traffic, please wait" before it has started).
 */

export interface ExtensionCall {
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly token: string | undefined;
}

/** How the stand-in misbehaves while set. */
export type ExtensionFault =
  /** Before the extension has registered: 400 "not ready to serve traffic, please wait". */
  | "not-ready"
  /** Accepts the request and never answers. */
  | "silent"
  | { readonly status: number; readonly body: string };

export interface SecretsExtensionStandIn {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly port: number;
  /** The token requests must carry (the container's AWS_SESSION_TOKEN). */
  readonly token: string;
  /** SSM parameter name → value. */
  readonly parameters: Map<string, string>;
  /** Secrets Manager secret id → secret string, or a binary secret. */
  readonly secrets: Map<string, string | { readonly binary: Buffer }>;
  readonly calls: ExtensionCall[];
  /** Every request's fault while set; `faultCount` limits it to that many requests. */
  fault: ExtensionFault | null;
  faultCount: number;
  /** Milliseconds each answer waits (to see how many requests are in flight at once). */
  delayMs: number;
  /** The most requests that were in flight at once. */
  readonly maxInFlight: number;
  reset(): void;
  close(): Promise<void>;
}

const UNEXPECTED = "an unexpected error occurred while executing request";
const NOT_READY = "not ready to serve traffic, please wait";

export async function startSecretsExtension(
  token = "session-token-for-tests",
): Promise<SecretsExtensionStandIn> {
  let inFlight = 0;
  let maxInFlight = 0;
  const held = new Set<ServerResponse>();

  const text = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
    res.end(body);
  };
  const json = (res: ServerResponse, body: object) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  const answer = (req: IncomingMessage, res: ServerResponse, call: ExtensionCall) => {
    const fault = standIn.fault;
    if (fault !== null && standIn.faultCount !== 0) {
      standIn.faultCount--;
      if (standIn.faultCount === 0) standIn.fault = null;
      if (fault === "silent") {
        held.add(res);
        return;
      }
      if (fault === "not-ready") return text(res, 400, NOT_READY);
      return text(res, fault.status, fault.body);
    }
    if (req.method !== "GET") return text(res, 405, "method not allowed");
    if (call.token !== token) return text(res, 401, "Unauthorized");
    if (call.path === "/systemsmanager/parameters/get") {
      const name = call.query.name ?? "";
      const value = standIn.parameters.get(name);
      if (value === undefined) return text(res, 400, UNEXPECTED);
      const decrypted = call.query.withDecryption === "true";
      return json(res, {
        Parameter: {
          ARN: `arn:aws:ssm:us-east-1:123456789012:parameter${name}`,
          DataType: "text",
          LastModifiedDate: "2026-11-30T08:00:00.000Z",
          Name: name,
          Selector: null,
          SourceResult: null,
          Type: "SecureString",
          Value: decrypted ? value : "AQICAHh-encrypted-blob",
          Version: 1,
        },
        ResultMetadata: {},
      });
    }
    if (call.path === "/secretsmanager/get") {
      const secretId = call.query.secretId ?? "";
      const secret = standIn.secrets.get(secretId);
      if (secret === undefined) return text(res, 400, UNEXPECTED);
      const binary = typeof secret === "string" ? null : secret.binary.toString("base64");
      return json(res, {
        ARN: `arn:aws:secretsmanager:us-east-1:123456789012:secret:${secretId}-AbCdEf`,
        CreatedDate: "2026-11-30T08:00:00.000Z",
        Name: secretId,
        SecretBinary: binary,
        SecretString: typeof secret === "string" ? secret : null,
        VersionId: "b1c367b9-7f53-4a47-82c4-be51a054b953",
        VersionStages: ["AWSCURRENT"],
        ResultMetadata: {},
      });
    }
    return text(res, 404, "not found");
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const header = req.headers["x-aws-parameters-secrets-token"];
    const call: ExtensionCall = {
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      token: Array.isArray(header) ? header[0] : header,
    };
    standIn.calls.push(call);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.on("close", () => inFlight--);
    if (standIn.delayMs > 0) setTimeout(() => answer(req, res, call), standIn.delayMs);
    else answer(req, res, call);
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const port = (server.address() as AddressInfo).port;

  const standIn: SecretsExtensionStandIn = {
    origin: `http://127.0.0.1:${port}`,
    port,
    token,
    parameters: new Map(),
    secrets: new Map(),
    calls: [],
    fault: null,
    faultCount: -1,
    delayMs: 0,
    get maxInFlight() {
      return maxInFlight;
    },
    reset() {
      standIn.parameters.clear();
      standIn.secrets.clear();
      standIn.calls.length = 0;
      standIn.fault = null;
      standIn.faultCount = -1;
      standIn.delayMs = 0;
      maxInFlight = 0;
      for (const res of held) res.destroy();
      held.clear();
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return standIn;
}
