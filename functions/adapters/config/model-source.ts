import type { Config } from "../../core/config/config-schema.ts";
import { buildModel, type GatewayModel, urlRedactions } from "../../core/config/network-model.ts";
import { resolveUrlTemplate, secretNamesOf } from "../../core/config/placeholders.ts";
import { makeScrubber, makeSecretScrubber, secretPartsOf } from "../../core/config/redact.ts";
import type { Telemetry } from "../../core/ports.ts";
import type { ConfigSource, LoadedConfig } from "./config-source.ts";
import type { SecretResolver } from "./secrets.ts";

/** The config in force, built into the model both Lambdas run on, with its scrubbers. */
export interface ModelInForce {
  readonly loaded: LoadedConfig;
  readonly model: GatewayModel;
  /** For logs, metrics and errors: resolved URLs redacted, secret values masked. */
  readonly scrub: (text: string) => string;
  /** For answers to callers: secret values masked, everything else byte for byte. */
  readonly scrubAnswer: (text: string) => string;
}

export interface ModelSourceOptions {
  readonly configSource: ConfigSource;
  readonly secrets: SecretResolver;
  /** Logs each provider left out for a secret, and measures `providers_left_out`. */
  readonly telemetry?: Pick<Telemetry, "log" | "measure">;
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly clock?: () => number;
  /** A new model came into force. */
  readonly onChange?: (inForce: ModelInForce) => void;
}

/**
 * Builds the model only when the config source hands out a new config object, and resolves
 * its secrets then, one name at a time: a provider whose secret is missing or unreadable is
 * left out (with the reason, an error log and the `providers_left_out` metric) and every other
 * provider serves. A value once found is kept for the container's life. A name that failed is
 * tried again at most every `config_refresh_seconds`, in the background, never per request.
 */
export function createModelSource(options: ModelSourceOptions): {
  current(): Promise<ModelInForce>;
} {
  const clock = options.clock ?? Date.now;
  const known = new Map<string, string>();
  /** Names that did not resolve: why, and when they were last tried (ms). */
  const failed = new Map<string, { readonly reason: string; readonly at: number }>();
  let active: ModelInForce | null = null;
  let building: { config: Config; promise: Promise<ModelInForce> } | null = null;

  const retryDue = (name: string, config: Config, now: number): boolean => {
    const failure = failed.get(name);
    return failure === undefined || now - failure.at >= config.config_refresh_seconds * 1000;
  };
  /** When the next failed name of `config` may be tried again (ms); cached per config. */
  let retryPlan: { config: Config; at: number } | null = null;
  const nextRetryAt = (config: Config): number => {
    if (retryPlan?.config !== config) {
      const times = secretNamesOf(config).flatMap((name) => failed.get(name)?.at ?? []);
      const at = Math.min(...times) + config.config_refresh_seconds * 1000;
      retryPlan = { config, at: Number.isFinite(at) ? at : Number.POSITIVE_INFINITY };
    }
    return retryPlan.at;
  };

  async function resolveSecrets(config: Config): Promise<void> {
    const now = clock();
    const wanted = secretNamesOf(config).filter(
      (name) => !known.has(name) && retryDue(name, config, now),
    );
    if (wanted.length === 0) return;
    const { values, unresolved } = await options.secrets.lookup(wanted);
    for (const [name, value] of values) {
      known.set(name, value);
      failed.delete(name);
    }
    for (const [name, reason] of unresolved) failed.set(name, { reason, at: now });
    retryPlan = null;
  }

  async function build(loaded: LoadedConfig): Promise<ModelInForce> {
    await resolveSecrets(loaded.config);
    const reasons = new Map([...failed].map(([name, failure]) => [name, failure.reason]));
    const model = buildModel(loaded.config, (template) =>
      resolveUrlTemplate(template, known, reasons),
    );
    reportLeftOut(model);
    const secrets = [
      ...secretNamesOf(loaded.config).flatMap((name) => known.get(name) ?? []),
      ...[...model.networks.values()].flatMap((network) =>
        network.providers.flatMap((provider) => secretPartsOf(provider.url)),
      ),
    ];
    return {
      loaded,
      model,
      scrub: makeScrubber(urlRedactions(model), secrets),
      scrubAnswer: makeSecretScrubber(secrets),
    };
  }

  function reportLeftOut(model: GatewayModel): void {
    const telemetry = options.telemetry;
    if (telemetry === undefined) return;
    let count = 0;
    for (const network of model.networks.values()) {
      for (const provider of network.leftOut) {
        count++;
        telemetry.log("error", "provider left out: its secret did not resolve", {
          network: network.name,
          provider: provider.name,
          detail: provider.detail,
        });
      }
    }
    telemetry.measure("providers_left_out", {}, count, "Count");
  }

  function adopt(built: ModelInForce): ModelInForce {
    active = built;
    options.onChange?.(built);
    return built;
  }

  /** Builds from `loaded` once, however many callers ask while it runs. */
  function buildShared(loaded: LoadedConfig): Promise<ModelInForce> {
    if (building === null || building.config !== loaded.config) {
      const promise = build(loaded).finally(() => {
        if (building?.promise === promise) building = null;
      });
      building = { config: loaded.config, promise };
    }
    return building.promise;
  }

  /** Which providers are left out and why: a retry that changes it is adopted. */
  const leftOutSignature = (model: GatewayModel): string =>
    JSON.stringify([...model.networks.values()].map((network) => network.leftOut));

  /** Tries the failed names again when due; the model in force serves meanwhile. */
  function retryInBackground(inForce: ModelInForce): void {
    if (building !== null || clock() < nextRetryAt(inForce.loaded.config)) return;
    buildShared(inForce.loaded).then(
      (built) => {
        if (active !== inForce) return;
        if (leftOutSignature(built.model) !== leftOutSignature(inForce.model)) adopt(built);
      },
      (error: unknown) =>
        options.telemetry?.log("error", "secrets retry failed", {
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  }

  return {
    async current() {
      const loaded = await options.configSource.current();
      if (active !== null && active.loaded.config === loaded.config) {
        if (active.loaded !== loaded) active = { ...active, loaded };
        retryInBackground(active);
        return active;
      }
      let built: ModelInForce;
      try {
        built = await buildShared(loaded);
      } catch (error) {
        // Only a defect gets here (lookups never reject): keep serving what is in force.
        if (active === null) throw error;
        options.telemetry?.log("error", "new config not applied: the model could not be built", {
          error: error instanceof Error ? error.message : String(error),
        });
        return active;
      }
      return active?.loaded.config === loaded.config ? active : adopt(built);
    },
  };
}
