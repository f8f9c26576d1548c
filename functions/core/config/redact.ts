/**
 * Redaction of provider URLs and of any text that may carry one. A resolved provider URL
 * never leaves the process unredacted: logs, metrics, status and error messages all pass
 * through these functions.
 */

const MASK = "***";

/** A path segment that is a plain word or version ("v3", "rpc", "eth-mainnet") is kept. */
function isHarmlessSegment(segment: string): boolean {
  if (segment.length === 0) return true;
  if (segment.length > 24) return false;
  if (/^v\d+(\.\d+)?$/i.test(segment)) return true;
  // Words of letters joined by '-' or '_' with at most two digits in all: a route, not a key.
  const digits = segment.replace(/\D/g, "").length;
  return /^[a-z][a-z0-9]*([-_.][a-z0-9]+)*$/i.test(segment) && digits <= 2;
}

/** Keeps the origin; masks credentials, key-like path segments and every query value. */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return MASK;
  }
  const origin = `${url.protocol}//${url.host}`;
  const path = url.pathname
    .split("/")
    .map((segment) => (isHarmlessSegment(decodeURIComponentSafe(segment)) ? segment : MASK))
    .join("/");
  const query = [...url.searchParams.keys()].map((key) => `${key}=${MASK}`).join("&");
  return `${origin}${path === "/" ? "" : path}${query ? `?${query}` : ""}`;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * The parts of a provider URL its redaction masks as keys (credentials, key-like path
 * segments, query values that are not plain words), decoded. A key written into the URL
 * itself rather than as a placeholder is as secret as a placeholder's value, so the
 * scrubbers take these too: a provider that echoes its key in an error must not hand it on.
 */
export function secretPartsOf(raw: string): string[] {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [];
  }
  const parts = [
    decodeURIComponentSafe(url.username),
    ...url.pathname.split("/").map(decodeURIComponentSafe),
    ...url.searchParams.values(),
    // Shorter parts (a port-like number, a short id) are rarely keys and would mask every
    // occurrence of themselves in logs. So are numbers: a chain id such as Sepolia's 11155111
    // taken for a key masked net_version's answer and every log line naming the chain.
  ].filter(
    (part) =>
      part.length >= MIN_SECRET_LENGTH_IN_ANSWERS && !isHarmlessSegment(part) && !NUMBER.test(part),
  );
  const password = decodeURIComponentSafe(url.password);
  return password === "" ? parts : [...parts, password];
}

/** A decimal number JavaScript holds exactly: a chain id, a port, a tenant number. */
const NUMBER = /^\d{1,16}$/;

/** Replaces `${NAME}` placeholders so the redaction masks them whatever their value. */
export function redactTemplate(template: string): string {
  return redactUrl(template.replace(/\$\{[^}]*\}/g, MASK));
}

function secretReplacements(secrets: readonly string[]): Array<[string, string]> {
  const replacements: Array<[string, string]> = [];
  for (const secret of secrets) {
    if (secret.length >= 4) replacements.push([secret, MASK], [encodeURIComponent(secret), MASK]);
  }
  return replacements;
}

/**
 * A scrubber for free text (upstream error messages, exception text): every occurrence of a
 * resolved URL is replaced by its redacted form, then every known secret by a mask.
 */
export function makeScrubber(
  urls: ReadonlyArray<{ readonly resolved: string; readonly redacted: string }>,
  secrets: readonly string[],
): (text: string) => string {
  const replacements: Array<[string, string]> = [];
  for (const { resolved, redacted } of urls) {
    replacements.push([resolved, redacted]);
    const withoutSlash = resolved.replace(/\/+$/, "");
    if (withoutSlash !== resolved) replacements.push([withoutSlash, redacted]);
  }
  replacements.push(...secretReplacements(secrets));
  return replacer(replacements);
}

/**
 * Answers are real data: a secret is masked there only as a whole token (not inside a longer
 * run of letters and digits, as in a hash) and only when it is long enough to be a key.
 */
export const MIN_SECRET_LENGTH_IN_ANSWERS = 8;

/**
 * For answers to callers: masks secret values only, so an upstream that echoes its own URL
 * cannot hand a key to a caller, while a block whose hex happens to contain a secret-like
 * string arrives unchanged. Without secrets it is the identity, and costs nothing.
 */
export function makeSecretScrubber(secrets: readonly string[]): (text: string) => string {
  const needles = [
    ...new Set(
      secrets
        .filter((secret) => secret.length >= MIN_SECRET_LENGTH_IN_ANSWERS)
        .flatMap((secret) => [secret, encodeURIComponent(secret)]),
    ),
  ].sort((a, b) => b.length - a.length);
  if (needles.length === 0) return (text) => text;
  const tokens = needles.map(
    (needle) =>
      [needle, new RegExp(`(?<![A-Za-z0-9])${escapeRegExp(needle)}(?![A-Za-z0-9])`, "g")] as const,
  );
  return (text) => {
    let out = text;
    for (const [needle, token] of tokens) {
      if (out.includes(needle)) out = out.replace(token, MASK);
    }
    return out;
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function replacer(replacements: Array<[string, string]>): (text: string) => string {
  // Longest first, so a URL is replaced whole before a secret inside it.
  replacements.sort((a, b) => b[0].length - a[0].length);
  return (text) => {
    let out = text;
    for (const [needle, replacement] of replacements) {
      if (out.includes(needle)) out = out.split(needle).join(replacement);
    }
    return out;
  };
}
