import { arrayElementSpans } from "../jsonrpc/json-raw.ts";
import {
  type Call,
  ErrorCode,
  errorResponse,
  isCall,
  type ParsedRequest,
} from "../jsonrpc/jsonrpc.ts";
import { isRegistryMethod, type RegistryCall } from "./registry.ts";
import { WEBSOCKET_MESSAGE_BYTES } from "./websocket-quotas.ts";

/**
 * One WebSocket message, split between the registry (`eth_subscribe`, `eth_unsubscribe`) and
 * the pipeline (everything else), then put back together (docs/behaviour.md "Subscriptions
 * over WebSocket"). A message without registry calls goes to the pipeline unchanged, so it is
 * answered exactly as the same body over HTTP; a batch with some is answered in the caller's
 * order, notifications left out, each answer carrying its call's id.
 */

type Member =
  | { readonly route: "registry"; readonly position: number; readonly call: RegistryCall }
  | { readonly route: "pipeline"; readonly position: number; readonly call: Call }
  | {
      readonly route: "invalid";
      readonly position: number;
      readonly rawId: string | null;
      readonly message: string;
    };

export type MessagePlan =
  /** No registry call: the body goes to the pipeline as it came. */
  | { readonly kind: "pipeline" }
  | {
      readonly kind: "split";
      readonly batch: boolean;
      readonly members: readonly Member[];
      /** The pipeline's part as a batch of the calls' own texts; null when there is none. */
      readonly pipelineBody: string | null;
    };

export function planMessage(request: ParsedRequest): MessagePlan {
  if (request.kind === "error") return { kind: "pipeline" };
  if (request.kind === "single") {
    const { call } = request;
    if (!isRegistryMethod(call.method)) return { kind: "pipeline" };
    return { kind: "split", batch: false, members: [registryMember(call)], pipelineBody: null };
  }
  if (!request.members.some((member) => isCall(member) && isRegistryMethod(member.method))) {
    return { kind: "pipeline" };
  }
  const members: Member[] = request.members.map((member) => {
    if (!isCall(member)) {
      return {
        route: "invalid",
        position: member.position,
        rawId: member.rawId,
        message: member.message,
      };
    }
    return isRegistryMethod(member.method)
      ? registryMember(member)
      : { route: "pipeline", position: member.position, call: member };
  });
  const piped = members.flatMap((member) => (member.route === "pipeline" ? [member.call.raw] : []));
  return {
    kind: "split",
    batch: true,
    members,
    pipelineBody: piped.length === 0 ? null : `[${piped.join(",")}]`,
  };
}

function registryMember(call: Call): Member {
  const method = call.method as RegistryCall["method"];
  return {
    route: "registry",
    position: call.position,
    call: { method, params: call.params, rawId: call.rawId },
  };
}

/**
 * The answer to a split message: the registry's answers by position, and the pipeline's
 * answer to its part (a batch answer in its calls' order, notifications left out, or "").
 * "" when nothing is to be sent back (notifications only).
 */
export function assembleAnswer(
  plan: Extract<MessagePlan, { kind: "split" }>,
  registry: ReadonlyMap<number, string | null>,
  pipelineAnswer: string,
): string {
  const piped = arrayElementSpans(pipelineAnswer).map((span) =>
    pipelineAnswer.slice(span.start, span.end),
  );
  const expected = plan.members.filter(
    (member) => member.route === "pipeline" && member.call.rawId !== null,
  ).length;
  // The pipeline answers a batch it took with one answer per call that has an id, in order;
  // anything else (never seen) is passed on whole rather than matched wrongly.
  const matched = piped.length === expected;
  let next = 0;
  const answers: string[] = [];
  for (const member of plan.members) {
    if (member.route === "registry") {
      const text = registry.get(member.position);
      if (text !== null && text !== undefined) answers.push(text);
    } else if (member.route === "invalid") {
      answers.push(errorResponse(member.rawId ?? "null", ErrorCode.invalidRequest, member.message));
    } else if (matched && member.call.rawId !== null) {
      answers.push(piped[next++] as string);
    }
  }
  if (!matched && pipelineAnswer !== "")
    answers.push(...(piped.length > 0 ? piped : [pipelineAnswer]));
  if (!plan.batch) return answers[0] ?? "";
  return answers.length === 0 ? "" : `[${answers.join(",")}]`;
}

/**
 * A split message's answer within the 128 KB bound: when it is over, the pipeline's calls get
 * the gateway's error naming the limit and the registry's answers stay, since those calls took
 * effect (a subscription whose id the client never learns would be delivered to, and counted,
 * for nothing).
 */
export function assembleWithinLimit(
  plan: Extract<MessagePlan, { kind: "split" }>,
  registry: ReadonlyMap<number, string | null>,
  pipelineAnswer: string,
): string {
  const whole = assembleAnswer(plan, registry, pipelineAnswer);
  const bytes = Buffer.byteLength(whole, "utf8");
  if (bytes <= WEBSOCKET_MESSAGE_BYTES) return whole;
  const errors = plan.members.flatMap((member) =>
    member.route === "pipeline" && member.call.rawId !== null
      ? [errorResponse(member.call.rawId, ErrorCode.internal, overLimit(bytes))]
      : [],
  );
  return assembleAnswer(plan, registry, errors.length === 0 ? "" : `[${errors.join(",")}]`);
}

const overLimit = (bytes: number) =>
  `the answer is ${bytes} bytes, over the ${WEBSOCKET_MESSAGE_BYTES} bytes (128 KB) one WebSocket message carries: ask for less (fewer calls in a batch, a narrower block range), or send this call over HTTP`;

/**
 * The answer as one WebSocket message may carry it: API Gateway sends at most 128 KB, so an
 * answer over it is replaced by the gateway's error naming the limit, one per call that
 * expects an answer with its id, never cut short.
 */
export function withinMessageLimit(answer: string, request: ParsedRequest): string {
  const bytes = Buffer.byteLength(answer, "utf8");
  if (bytes <= WEBSOCKET_MESSAGE_BYTES) return answer;
  const message = overLimit(bytes);
  const replaced = errorForEveryCall(request, ErrorCode.internal, message);
  return Buffer.byteLength(replaced, "utf8") <= WEBSOCKET_MESSAGE_BYTES
    ? replaced
    : errorResponse("null", ErrorCode.internal, message);
}

/**
 * One error for every call of the request that expects an answer, each with its id: over a
 * socket, an answer with another id (or null) matches nothing the client waits for, so a
 * refusal of the whole message is answered call by call ("" when all are notifications).
 */
export function errorForEveryCall(request: ParsedRequest, code: number, message: string): string {
  switch (request.kind) {
    case "single":
      return request.call.rawId === null ? "" : errorResponse(request.call.rawId, code, message);
    case "error":
      return errorResponse(request.rawId, code, message);
    case "batch": {
      const answers = request.members
        .filter((member) => !isCall(member) || member.rawId !== null)
        .map((member) => errorResponse(member.rawId, code, message));
      return answers.length === 0 ? "" : `[${answers.join(",")}]`;
    }
  }
}
