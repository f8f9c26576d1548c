import type { Config } from "./config-schema.ts";
import { formatPath, type ResolvedUrl } from "./network-model.ts";
import { PLACEHOLDER, placeholdersOf } from "./provider-url.ts";

/** One `${NAME}` placeholder in one provider URL, with the URL's JSON path. */
export interface PlaceholderUse {
  readonly path: string;
  readonly name: string;
}

export function placeholderUses(config: Config): PlaceholderUse[] {
  const uses: PlaceholderUse[] = [];
  for (const [network, { providers }] of Object.entries(config.networks)) {
    providers.forEach((provider, index) => {
      const path = formatPath(["networks", network, "providers", index, "url"]);
      for (const name of placeholdersOf(provider.url)) uses.push({ path, name });
    });
  }
  return uses;
}

/** The distinct secret names a config needs, sorted. */
export function secretNamesOf(config: Config): string[] {
  return [...new Set(placeholderUses(config).map((use) => use.name))].sort();
}

/**
 * Fills every `${NAME}` of a URL template. Values are URL-encoded so a secret can never
 * change the URL's structure (add a path segment, a query or a host). When a placeholder has
 * no value, the result says why (from `unresolved`, else "no value"), naming placeholders and
 * where they were looked for, never a value.
 */
export function resolveUrlTemplate(
  template: string,
  values: ReadonlyMap<string, string>,
  unresolved: ReadonlyMap<string, string> = new Map(),
): ResolvedUrl {
  const reasons: string[] = [];
  const url = template.replace(PLACEHOLDER, (_match, name: string) => {
    const value = values.get(name);
    if (value !== undefined) return encodeURIComponent(value);
    const reason = unresolved.get(name) ?? `no value for placeholder \${${name}}`;
    if (!reasons.includes(reason)) reasons.push(reason);
    return "";
  });
  return reasons.length === 0 ? url : { unresolved: reasons.join("; ") };
}
