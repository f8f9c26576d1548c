import type { GatewayModel } from "../../core/config/network-model.ts";
import { createTelemetry, type FlushableTelemetry } from "../telemetry.ts";
import type { ConfigSource, ConfigSourceEvent } from "./config-source.ts";
import { createModelSource, type ModelInForce } from "./model-source.ts";
import type { SecretResolver } from "./secrets.ts";

export interface ConfigInForceOptions {
  readonly configSource: ConfigSource;
  readonly secrets: SecretResolver;
  /** The `service` dimension; the alarms match metrics by it (the stack sets the variable). */
  readonly serviceName: string;
  readonly clock: () => number;
  /** Where EMF metric lines go (stdout by default). */
  readonly writeMetrics?: (line: string) => void;
}

/** What both Lambdas start from: the model in force, and telemetry that scrubs with it. */
export interface ConfigInForce {
  readonly telemetry: FlushableTelemetry;
  /** The config and model in force (loads them on first use, re-checks the source when due). */
  current(): Promise<ModelInForce>;
  model(): Promise<GatewayModel>;
  /** For logs, metrics and errors: the model in force's secrets removed. */
  scrub(text: string): string;
  /** For answers to callers: secret values masked, everything else byte for byte. */
  scrubAnswer(text: string): string;
}

/**
 * Config, secrets and telemetry, wired the same way for the proxy and the monitor: the model
 * is rebuilt only when the config source hands out a new object, every config event is logged
 * and counted here once (`config_loaded`, `config_rejected` with its `reason`), and every line
 * of telemetry is scrubbed with the secrets of the model in force.
 */
export function createConfigInForce(options: ConfigInForceOptions): ConfigInForce {
  let active: ModelInForce | null = null;
  const scrub = (text: string) => (active ? active.scrub(text) : text);
  const telemetry = createTelemetry({
    serviceName: options.serviceName,
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? "RpcGateway",
    scrub,
    clock: options.clock,
    ...(options.writeMetrics ? { write: options.writeMetrics } : {}),
  });
  options.configSource.subscribe((event) => reportSourceEvent(telemetry, event));
  const models = createModelSource({
    configSource: options.configSource,
    secrets: options.secrets,
    telemetry,
    clock: options.clock,
    onChange: (inForce) => {
      active = inForce;
      telemetry.log("info", "config in force", {
        source: inForce.loaded.source,
        networks: [...inForce.model.networks.keys()],
      });
      telemetry.count("config_loaded", { source: inForce.loaded.source.kind });
    },
  });
  return {
    telemetry,
    current: () => models.current(),
    model: async () => (await models.current()).model,
    scrub,
    scrubAnswer: (text) => (active ? active.scrubAnswer(text) : text),
  };
}

function reportSourceEvent(telemetry: FlushableTelemetry, event: ConfigSourceEvent): void {
  switch (event.type) {
    case "config_changed":
      telemetry.log("info", "config source changed", { source: event.source });
      break;
    case "config_rejected":
      telemetry.log("error", "config rejected: the previous config stays in force", {
        location: event.location,
        problems: event.problems,
      });
      telemetry.count("config_rejected", { reason: "invalid" });
      break;
    case "config_source_error":
      telemetry.log("warn", "config source unreachable: the previous config stays in force", {
        location: event.location,
        error: event.error,
      });
      telemetry.count("config_rejected", { reason: "unreachable" });
      break;
  }
}
