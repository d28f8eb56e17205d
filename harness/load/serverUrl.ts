// Where a route of an OpenAI-compatible server lives, given the URL the user named it by. Servers
// behind a gateway are often named with a path (`https://api.example.com/openai/v1`): every
// route, the OpenAI ones (`/v1/...`) and the server's own (`/tokenize`, `/metrics`, `/health`),
// lives under that path, and a trailing `/v1` is the OpenAI routes' prefix, not part of it.
// `new URL('/v1/models', base)` would drop the path and ask the gateway's root instead. Pure.

/** The server's root: the URL without query, trailing slashes or a trailing `/v1`. */
export function serverRoot(baseUrl: string): string {
  const u = new URL(baseUrl);
  const path = u.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return `${u.origin}${path}`;
}

/** The URL of `route` (starting with `/`: `/v1/models`, `/tokenize`) on the server named by `baseUrl`. */
export function serverUrl(baseUrl: string, route: string): URL {
  return new URL(`${serverRoot(baseUrl)}${route}`);
}
