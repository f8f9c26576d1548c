import * as z from "zod/mini";
import { isKnownMethod, methodSpec } from "../methods/catalogue.ts";

/**
 * A network's read consensus (docs/behaviour.md §17): which methods need `agreement` providers
 * to give the same answer before it goes out, what a dispute does, which fields of an answer
 * legitimately differ between nodes, and how a provider found in the minority again and again
 * is left out of consensus routing. Off unless a network names it.
 */

/** A dotted path into a result: names and `*` (any key or element), e.g. `logs.*.blockTimestamp`. */
const FIELD_PATH = /^(\*|[A-Za-z0-9_]+)(\.(\*|[A-Za-z0-9_]+))*$/;

/** Built inside `defineConfigSchemas`, on first use, as the other schemas are. */
export function defineConsensusSchema() {
  const method = z.string().check(z.minLength(1));
  const fieldPath = z
    .string()
    .check(z.regex(FIELD_PATH, "a path is names and * joined by dots, e.g. logs.*.blockTimestamp"));
  return z.strictObject({
    methods: z.array(method).check(
      z.minLength(1, "list the methods whose answers need agreement"),
      z.superRefine((methods, ctx) => {
        methods.forEach((name, index) => {
          const problem = consensusMethodProblem(name);
          if (problem !== null) ctx.addIssue({ code: "custom", path: [index], message: problem });
        });
      }),
    ),
    agreement: z._default(z.int().check(z.gte(2), z.lte(5)), 2),
    on_dispute: z._default(z.enum(["ask_more", "error"]), "ask_more"),
    ignore_fields: z._default(z.record(method, z.array(fieldPath)), {}),
    minority_limit: z._default(z.int().check(z.gte(1), z.lte(100)), 3),
    minority_window_seconds: z._default(z.number().check(z.gte(1), z.lte(86_400)), 600),
    sit_out_seconds: z._default(z.number().check(z.gte(1), z.lte(86_400)), 1800),
  });
}

export type ConsensusConfig = z.infer<ReturnType<typeof defineConsensusSchema>>;

/**
 * Why a method cannot be a consensus method, or null: only reads about a block or a hash can be
 * agreed on, since every honest node answers those alike once pinned (docs/behaviour.md §17.1).
 */
export function consensusMethodProblem(name: string): string | null {
  if (!isKnownMethod(name)) {
    return `${name} is not in the method catalogue: consensus needs to know where its block is`;
  }
  const spec = methodSpec(name);
  if (!spec.idempotent)
    return `${name} is not a read: only reads can be asked of several providers`;
  if (spec.cache !== "by-block" && spec.cache !== "by-hash") {
    return `${name} is not about a block or a hash: honest providers need not agree on it`;
  }
  return null;
}

/** The network-level checks: enough providers to agree, and ignored fields of listed methods. */
export function consensusIssues(network: {
  readonly providers: readonly unknown[];
  readonly consensus?: ConsensusConfig | undefined;
}): Array<{ readonly path: PropertyKey[]; readonly message: string }> {
  const { consensus } = network;
  if (consensus === undefined) return [];
  const issues: Array<{ path: PropertyKey[]; message: string }> = [];
  if (network.providers.length < consensus.agreement) {
    issues.push({
      path: ["consensus", "agreement"],
      message: `agreement ${consensus.agreement} needs at least ${consensus.agreement} providers; this network has ${network.providers.length}`,
    });
  }
  for (const name of Object.keys(consensus.ignore_fields)) {
    if (!consensus.methods.includes(name)) {
      issues.push({
        path: ["consensus", "ignore_fields", name],
        message: `${name} is not in consensus.methods: its ignored fields would never be read`,
      });
    }
  }
  return issues;
}
