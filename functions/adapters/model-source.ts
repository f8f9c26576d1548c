import { buildModel, type GatewayModel, urlRedactions } from "../core/network-model.ts";
import { resolveUrlTemplate, secretNamesOf } from "../core/placeholders.ts";
import { makeScrubber, makeSecretScrubber } from "../core/redact.ts";
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
  /** A new model came into force. */
  readonly onChange?: (inForce: ModelInForce) => void;
  /** A new config was not applied because its secrets could not be resolved. */
  readonly onSecretsFailed?: (error: unknown) => void;
}

/**
 * Builds the model only when the config source hands out a new config object, resolving its
 * secrets then; concurrent callers share one build. A new config whose secrets cannot be
 * resolved never replaces a working one.
 */
export function createModelSource(options: ModelSourceOptions): {
  current(): Promise<ModelInForce>;
} {
  let active: ModelInForce | null = null;
  let building: { config: LoadedConfig["config"]; promise: Promise<ModelInForce> } | null = null;

  async function build(loaded: LoadedConfig): Promise<ModelInForce> {
    const values = await options.secrets.resolve(secretNamesOf(loaded.config));
    const model = buildModel(loaded.config, (template) => resolveUrlTemplate(template, values));
    const secrets = [...values.values()];
    return {
      loaded,
      model,
      scrub: makeScrubber(urlRedactions(model), secrets),
      scrubAnswer: makeSecretScrubber(secrets),
    };
  }

  return {
    async current() {
      const loaded = await options.configSource.current();
      if (active !== null && active.loaded.config === loaded.config) {
        if (active.loaded !== loaded) active = { ...active, loaded };
        return active;
      }
      if (building === null || building.config !== loaded.config) {
        const promise = build(loaded).then(
          (built) => {
            active = built;
            building = null;
            options.onChange?.(built);
            return built;
          },
          (error: unknown) => {
            building = null;
            if (active === null) throw error;
            options.onSecretsFailed?.(error);
            return active;
          },
        );
        building = { config: loaded.config, promise };
      }
      return building.promise;
    },
  };
}
