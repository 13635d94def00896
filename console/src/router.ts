import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routing (`#/applications/<id>`): the server serves one index.html, whatever the route.
 * A route is the hash's path split on `/`, plus its query (`#/logs?entity_type=token`).
 */
export type Route = { parts: string[]; query: URLSearchParams };

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [path, q = ''] = raw.split('?', 2);
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** An href for a route: href('applications', id) → `#/applications/<id>`. */
export function href(...parts: (string | undefined)[]): string {
  return `#/${parts.filter((p): p is string => !!p).map(encodeURIComponent).join('/')}`;
}

export function navigate(to: string): void {
  window.location.hash = to.replace(/^#/, '');
}
