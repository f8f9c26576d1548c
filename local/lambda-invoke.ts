import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";
import type { InvocationDeadlines } from "./apigw-deadlines.ts";
import { ACCOUNT_ID } from "./apigw-event.ts";

/**
 * One Lambda invocation as the emulators run it (the HTTP API's and the WebSocket API's): the
 * context a handler gets, and the wait for its result until its function's or its API's
 * timeout, whichever comes first.
 */

export type LambdaHandler<E> = (event: E, context: Context) => Promise<unknown>;

export type Timeout = "function_timeout" | "integration_timeout";

export type Outcome =
  | { readonly kind: "result"; readonly value: unknown }
  | { readonly kind: "error"; readonly error: Error }
  | { readonly kind: "function_timeout" }
  /** The API stopped waiting; the function, still `running`, did not stop. */
  | { readonly kind: "integration_timeout"; readonly running: Promise<unknown> };

const FUNCTION_TIMED_OUT: Outcome = { kind: "function_timeout" };

/** The names a function's every invocation shares, formatted once per emulator. */
export interface FunctionIdentity {
  readonly functionName: string;
  readonly invokedFunctionArn: string;
  readonly logGroupName: string;
}

export function functionIdentity(functionName: string): FunctionIdentity {
  return {
    functionName,
    invokedFunctionArn: `arn:aws:lambda:us-east-1:${ACCOUNT_ID}:function:${functionName}`,
    logGroupName: `/aws/lambda/${functionName}`,
  };
}

export interface Invocation {
  readonly identity: FunctionIdentity;
  readonly functionTimeoutMs: number;
  readonly deadlines: InvocationDeadlines<Timeout>;
}

/**
 * The Lambda context of one invocation. A class, so the emulator's one per request shares its
 * fixed fields and methods instead of building closures for them.
 */
class LambdaContext implements Context {
  readonly callbackWaitsForEmptyEventLoop = true;
  readonly functionVersion = "$LATEST";
  readonly memoryLimitInMB = "1024";
  readonly logStreamName = "local";
  readonly awsRequestId = randomUUID();
  readonly invokedFunctionArn: string;
  readonly logGroupName: string;
  readonly functionName: string;
  readonly #deadline: number;

  constructor(identity: FunctionIdentity, timeoutMs: number) {
    this.functionName = identity.functionName;
    this.invokedFunctionArn = identity.invokedFunctionArn;
    this.logGroupName = identity.logGroupName;
    this.#deadline = Date.now() + timeoutMs;
  }

  /** An own function, not a method: callers take it off the context and call it alone. */
  readonly getRemainingTimeInMillis = (): number => Math.max(0, this.#deadline - Date.now());

  done(): never {
    return callbackStyleUnsupported();
  }

  fail(): never {
    return callbackStyleUnsupported();
  }

  succeed(): never {
    return callbackStyleUnsupported();
  }
}

function callbackStyleUnsupported(): never {
  throw new Error("done/fail/succeed are not supported: return a promise from the handler");
}

/**
 * Runs the handler until it settles or its timeout passes. A handler that timed out keeps
 * running in the background: the emulator cannot stop it, only stop waiting for it.
 */
export function invoke<E>(
  handler: LambdaHandler<E>,
  event: E,
  invocation: Invocation,
): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    const waiting = invocation.deadlines.watch((expired) =>
      resolve(
        expired === "function_timeout"
          ? FUNCTION_TIMED_OUT
          : { kind: "integration_timeout", running: handled },
      ),
    );
    const settle = (outcome: Outcome) => {
      invocation.deadlines.release(waiting);
      resolve(outcome);
    };
    const context = new LambdaContext(invocation.identity, invocation.functionTimeoutMs);
    let handled: Promise<unknown>;
    try {
      handled = handler(event, context);
    } catch (error) {
      handled = Promise.reject(error);
    }
    Promise.resolve(handled).then(
      (value) => settle({ kind: "result", value }),
      (error: unknown) =>
        settle({ kind: "error", error: error instanceof Error ? error : new Error(String(error)) }),
    );
  });
}
