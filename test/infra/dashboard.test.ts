import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import { Code, Function as LambdaFunction, Runtime } from "aws-cdk-lib/aws-lambda";
import { describe, expect, it } from "vitest";
import { ENVIRONMENTS } from "../../infra/environments.ts";
import { BLACKLIST_REASONS, RETRY_KINDS } from "../../infra/metric-contract.ts";
import { Monitoring } from "../../infra/monitoring.ts";
import { scratchOutdir } from "../support/scratch-outdir.ts";

/**
 * The dashboard tells each network's story as the status page does: requests, errors by kind,
 * blacklists by reason, quorum size, head lag, and (once the code emits them) served head lag
 * and cache hit ratio. Which metrics each graph draws is checked here; that the code emits
 * them is test/infra/metric-contract.test.ts's job.
 */

interface Widget {
  readonly properties: { readonly title?: string; readonly metrics?: unknown[][] };
}

function dashboardOf(): Widget[] {
  const stack = new Stack(
    new App({ outdir: scratchOutdir("rpc-gateway-dashboard-") }),
    "DashboardTest",
  );
  const fn = (id: string) =>
    new LambdaFunction(stack, id, {
      runtime: Runtime.NODEJS_22_X,
      handler: "index.handler",
      code: Code.fromInline("exports.handler = async () => {};"),
    });
  new Monitoring(stack, "Monitoring", {
    settings: ENVIRONMENTS.dev,
    serviceName: "rpc-gateway-dev",
    networks: ["ethereum", "base"],
    api: new HttpApi(stack, "Api"),
    proxy: fn("Proxy"),
    monitor: fn("Monitor"),
  });
  const [dashboard] = Object.values(
    Template.fromStack(stack).findResources("AWS::CloudWatch::Dashboard"),
  ) as Array<{ Properties: { DashboardBody: { "Fn::Join": [string, unknown[]] } } }>;
  const parts = dashboard?.Properties.DashboardBody["Fn::Join"][1] ?? [];
  const body = parts.map((part) => (typeof part === "string" ? part : "TOKEN")).join("");
  return (JSON.parse(body) as { widgets: Widget[] }).widgets;
}

/** The expressions (or metric names) a graph draws, with their labels. */
function seriesOf(widgets: Widget[], title: string): Array<{ expression: string; label: string }> {
  const widget = widgets.find((candidate) => candidate.properties.title === title);
  if (widget === undefined) throw new Error(`no graph "${title}"`);
  return (widget.properties.metrics ?? []).map((entry) => {
    const options = entry.at(-1) as { expression?: string; label?: string };
    return {
      expression: options.expression ?? entry.filter((part) => typeof part === "string").join(" "),
      label: options.label ?? "",
    };
  });
}

const titles = (widgets: Widget[]) => widgets.map((widget) => widget.properties.title ?? "");

describe("the dashboard", () => {
  const widgets = dashboardOf();

  it.each(["ethereum", "base"])(
    "has %s's rows: traffic, errors by kind, blacklists by reason, quorum, heads, by provider",
    (network) => {
      expect(titles(widgets)).toEqual(
        expect.arrayContaining([
          `${network}: requests, attempts`,
          `${network}: latency (ms)`,
          `${network}: retried errors by kind`,
          `${network}: blacklists by reason`,
          `${network}: quorum size, primaries, backup`,
          `${network}: head lag by provider (s)`,
          `${network}: retried errors by provider and kind`,
          `${network}: blacklists by provider and reason`,
          `${network}: probe results`,
          `${network}: hedged reads by provider and outcome`,
        ]),
      );
    },
  );

  it("draws one series per error kind, summed over the network's providers", () => {
    const series = seriesOf(widgets, "ethereum: retried errors by kind");
    expect(series.map((entry) => entry.label)).toEqual([...RETRY_KINDS]);
    expect(series[0]?.expression).toBe(
      `SUM(SEARCH('{RpcGateway,service,network,provider,kind} MetricName="retried_errors" service="rpc-gateway-dev" network="ethereum" kind="rate_limit"', 'Sum', 60))`,
    );
  });

  it("draws one series per blacklist reason", () => {
    const series = seriesOf(widgets, "base: blacklists by reason");
    expect(series.map((entry) => entry.label)).toEqual([...BLACKLIST_REASONS]);
    expect(
      series.every((entry) => entry.expression.includes('MetricName="blacklist_events"')),
    ).toBe(true);
    expect(series.every((entry) => entry.expression.includes('network="base"'))).toBe(true);
  });

  it("draws the served head lag, and the cache hit ratio from hits and misses", () => {
    const enabled = widgets;
    expect(seriesOf(enabled, "ethereum: served head lag (s)")).toEqual([
      {
        expression: "RpcGateway served_head_lag_seconds network ethereum service rpc-gateway-dev",
        label: "served_head_lag_seconds Maximum",
      },
    ]);
    const ratio = seriesOf(enabled, "base: cache hit ratio (%)");
    const shown = ratio.find((entry) => entry.label === "hit ratio %");
    expect(shown?.expression).toBe("IF(hits + misses > 0, 100 * hits / (hits + misses), 0)");
    const inputs = ratio.filter((entry) => entry !== shown).map((entry) => entry.expression);
    expect(inputs).toEqual([
      `SUM(SEARCH('{RpcGateway,service,network,class} MetricName="cache_hits" service="rpc-gateway-dev" network="base"', 'Sum', 60))`,
      `SUM(SEARCH('{RpcGateway,service,network,class} MetricName="cache_misses" service="rpc-gateway-dev" network="base"', 'Sum', 60))`,
    ]);
  });
});
