import { CfnResource, Stack, Validations } from "aws-cdk-lib";
import { rules } from "cdk-nag";
import { flattenCfnReference } from "cdk-nag/lib/utils/flatten-cfn-reference.js";
import type { IConstruct } from "constructs";

/**
 * cdk-nag 3 acknowledgments (CDK's `Validations.of(scope).acknowledge`). A finding of a rule
 * that reports several (IAM4, IAM5) has the id `AwsSolutions-<rule>[<finding>]` and must be
 * acknowledged one by one, so these helpers build exactly the ids the rules report.
 */

export function acknowledge(scope: IConstruct, rule: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-${rule}`, reason });
}

/** IAM5 for exactly these resource ARNs (tokens allowed) in the policies under `scope`. */
export function acknowledgeWildcardResources(
  scope: IConstruct,
  resources: readonly string[],
  reason: string,
): void {
  const stack = Stack.of(scope);
  for (const resource of resources) {
    const finding = flattenCfnReference(stack.resolve(resource));
    acknowledge(scope, `IAM5[Resource::${finding}]`, reason);
  }
}

/**
 * For a construct CDK builds and we cannot configure (e.g. BucketDeployment's handler):
 * acknowledges every IAM4/IAM5 finding its resources have now, plus the given whole rules.
 */
export function acknowledgeCdkManaged(
  scope: IConstruct,
  wholeRules: readonly string[],
  reason: string,
): void {
  for (const rule of wholeRules) acknowledge(scope, rule, reason);
  const checks = [
    ["IAM4", rules.iam.IAMNoManagedPolicies],
    ["IAM5", rules.iam.IAMNoWildcardPermissions],
  ] as const;
  for (const node of scope.node.findAll()) {
    if (!CfnResource.isCfnResource(node)) continue;
    for (const [rule, check] of checks) {
      const result = check(node);
      if (!Array.isArray(result)) continue;
      for (const finding of result) acknowledge(scope, `${rule}[${finding}]`, reason);
    }
  }
}
