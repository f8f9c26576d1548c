import type { Agent as AgentType } from "undici";
import Agent from "undici/lib/dispatcher/agent.js";
import { errorCode } from "../upstream/transport-failure.ts";
import { exchange } from "../upstream/undici-exchange.ts";

/**
 * The AWS Parameters and Secrets Lambda Extension: a layer whose process serves SSM parameters
 * and Secrets Manager secrets on localhost (`GET /systemsmanager/parameters/get?name=...`,
 * `GET /secretsmanager/get?secretId=...`), read with the function's role and cached by it. Only
 * requests carrying the container's `AWS_SESSION_TOKEN` in `X-Aws-Parameters-Secrets-Token` are
 * served. Reading through it keeps the SSM and Secrets Manager SDK clients out of the bundle.
 *
 * Each GET is one bounded exchange (`undici-exchange.ts`: one timer for all of it, the answer
 * capped); the extension's own calls to AWS have no timeout unless the function sets one, so
 * this bounds them too. A GET is tried once more after
 * a short pause when the extension could not take it (connection refused or reset, "not ready",
 * a 5xx), never after a timeout, so one name costs at most two attempts.
 */

/** The extension's answer to one GET. */
export type ExtensionAnswer =
  /** 200: the GetParameter / GetSecretValue result as JSON. */
  | { readonly kind: "found"; readonly json: unknown }
  /**
   * 400: the extension's answer when AWS refused the read, whether the name does not exist or
   * the role may not read it ("an unexpected error occurred while executing request").
   */
  | { readonly kind: "unreadable"; readonly detail: string }
  /** Anything else: why, naming no value. */
  | { readonly kind: "failed"; readonly reason: string };

export interface SecretsExtension {
  /** Never rejects. `query` is URL-encoded here. */
  get(path: string, query: Readonly<Record<string, string>>): Promise<ExtensionAnswer>;
  close(): Promise<void>;
}

export interface SecretsExtensionOptions {
  /** `http://localhost:<port>`. */
  readonly origin: string;
  /**
   * The container's `AWS_SESSION_TOKEN`, read at each GET; without it every GET fails at once,
   * with why.
   */
  readonly token: () => string | undefined;
  /** One attempt's limit, connect to last byte; default 3000 ms. */
  readonly timeoutMs?: number;
  /** Pause before the second attempt; default 200 ms. */
  readonly retryPauseMs?: number;
}

const DEFAULT_TIMEOUT_MS = 3_000;
const DEFAULT_RETRY_PAUSE_MS = 200;
/**
 * GETs in flight at once; more wait for a connection within their own time limit, so a lookup
 * of any number of names takes at most two attempts' time. The stack lets the extension open as
 * many connections to AWS.
 */
export const EXTENSION_CONNECTIONS = 10;
/** A Secrets Manager secret is at most 64 KB; its answer carries some metadata besides. */
const MAX_ANSWER_BYTES = 256 * 1024;
/** What an error answer may show of its body: the extension's own short messages. */
const EXCERPT_CHARS = 160;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });
/** A GetParameter or GetSecretValue result's fields: such a body is never shown. */
const VALUE_SHAPE = /"(Parameter|Value|SecretString|SecretBinary)"/;

type Attempt =
  | { readonly status: number; readonly body: Buffer }
  | { readonly error: string; readonly retryable: boolean };

export function createSecretsExtension(options: SecretsExtensionOptions): SecretsExtension {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const retryPauseMs = options.retryPauseMs ?? DEFAULT_RETRY_PAUSE_MS;
  const where = `the Parameters and Secrets extension at ${options.origin}`;
  let agent: AgentType | null = null;
  // Created on the first GET: a config without placeholders never opens it.
  const dispatcher = () => {
    agent ??= new Agent({ connections: EXTENSION_CONNECTIONS, headersTimeout: 0, bodyTimeout: 0 });
    return agent;
  };

  async function attempt(path: string, token: string): Promise<Attempt> {
    const outcome = await exchange(
      dispatcher(),
      {
        origin: options.origin,
        path,
        method: "GET",
        headers: { "x-aws-parameters-secrets-token": token, accept: "application/json" },
      },
      { timeoutMs, maxBytes: MAX_ANSWER_BYTES },
    );
    switch (outcome.kind) {
      case "answer":
        return { status: outcome.status, body: outcome.body };
      // A GET not yet started was never sent: it waited for a connection (more names at once
      // than the connections serve in time), which is not the extension's silence.
      case "timeout":
        return {
          error: outcome.started
            ? `no answer from ${where} within ${timeoutMs} ms`
            : `no connection to ${where} was free within ${timeoutMs} ms (more names asked at once than its ${EXTENSION_CONNECTIONS} connections answered in time)`,
          retryable: false,
        };
      case "too_large":
        return { error: `${where} answered over ${MAX_ANSWER_BYTES} bytes`, retryable: false };
      case "aborted":
        return { error: `the GET to ${where} was aborted`, retryable: false };
      case "failed": {
        const code = errorCode(outcome.error);
        return {
          error: `cannot reach ${where}: ${code ? `${code} ` : ""}${outcome.error.message}`,
          // Refused: the extension is not listening yet (or the layer is missing).
          retryable: code === "ECONNREFUSED" || code === "ECONNRESET" || code === "UND_ERR_SOCKET",
        };
      }
    }
  }

  function judge(
    result: Attempt,
    token: string,
  ): ExtensionAnswer & { readonly retryable: boolean } {
    if ("error" in result) {
      return { kind: "failed", reason: result.error, retryable: result.retryable };
    }
    if (result.status === 200) {
      // The body may hold a value: it is never shown.
      let text: string;
      try {
        // A lenient decode would turn a bad byte into U+FFFD and hand out a corrupted key.
        text = STRICT_UTF8.decode(result.body);
      } catch {
        return {
          kind: "failed",
          reason: `${where} answered 200 with a body that is not UTF-8`,
          retryable: false,
        };
      }
      try {
        return { kind: "found", json: JSON.parse(text), retryable: false };
      } catch {
        return {
          kind: "failed",
          reason: `${where} answered 200 with a body that is not JSON`,
          retryable: false,
        };
      }
    }
    // Any other success, or an answer in the shape of a read's result, may hold a value.
    const body = result.body.toString("utf8");
    if ((result.status >= 200 && result.status < 300) || VALUE_SHAPE.test(body)) {
      return {
        kind: "failed",
        reason: `${where} answered HTTP ${result.status} with a body that may hold a value (not shown)`,
        retryable: false,
      };
    }
    // An error answer holds no value: its start is shown, for the operator, without the token
    // (an extension may echo the request it refused).
    const excerpt = excerptOf(withoutToken(body, token));
    if (/not ready/i.test(body)) {
      return { kind: "failed", reason: `${where} was not ready (${excerpt})`, retryable: true };
    }
    if (result.status === 400) {
      return { kind: "unreadable", detail: `HTTP 400: ${excerpt}`, retryable: false };
    }
    if (result.status === 401 || result.status === 403) {
      return {
        kind: "failed",
        reason: `${where} refused the session token (HTTP ${result.status}: ${excerpt})`,
        retryable: false,
      };
    }
    return {
      kind: "failed",
      reason: `${where} answered HTTP ${result.status}: ${excerpt}`,
      retryable: result.status >= 500,
    };
  }

  return {
    async get(path, query) {
      const token = options.token();
      if (token === undefined || token === "") {
        return {
          kind: "failed",
          reason: `AWS_SESSION_TOKEN is not set, so ${where} cannot be asked (it serves only inside Lambda)`,
        };
      }
      const target = `${path}?${new URLSearchParams(query).toString()}`;
      const first = judge(await attempt(target, token), token);
      if (!first.retryable) return strip(first);
      await new Promise((resolve) => setTimeout(resolve, retryPauseMs));
      return strip(judge(await attempt(target, token), token));
    },
    async close() {
      await agent?.destroy();
      agent = null;
    },
  };
}

function strip(answer: ExtensionAnswer & { readonly retryable: boolean }): ExtensionAnswer {
  switch (answer.kind) {
    case "found":
      return { kind: "found", json: answer.json };
    case "unreadable":
      return { kind: "unreadable", detail: answer.detail };
    default:
      return { kind: "failed", reason: answer.reason };
  }
}

/** `text` with the session token masked as written, URL-encoded or JSON-escaped. */
function withoutToken(text: string, token: string): string {
  const forms = new Set([
    token,
    encodeURIComponent(token),
    JSON.stringify(token).slice(1, -1),
    token.replaceAll("/", "\\/"),
  ]);
  let out = text;
  for (const form of forms) out = out.split(form).join("***");
  return out;
}

/** The start of an error answer on one line: the extension's message, for the operator. */
function excerptOf(body: string): string {
  const line = body.replace(/\s+/g, " ").trim();
  if (line === "") return "empty answer";
  return line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS)}…` : line;
}

/** `http://localhost:<PARAMETERS_SECRETS_EXTENSION_HTTP_PORT>`, 2773 by default. */
export function extensionOrigin(port: string | undefined): string | { readonly error: string } {
  if (port === undefined || port === "") return "http://localhost:2773";
  const number = Number(port);
  if (!/^\d+$/.test(port) || number < 1 || number > 65_535) {
    return { error: `PARAMETERS_SECRETS_EXTENSION_HTTP_PORT is not a port: "${port}"` };
  }
  return `http://localhost:${number}`;
}
