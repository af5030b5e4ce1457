/**
 * A small History API router: the server answers every client route with
 * index.html, and links change the URL without reloading. Query parameters
 * carry page state (queue, state, filters) so that pages can be bookmarked and
 * shared.
 */
import type { AnchorHTMLAttributes, ComponentChildren } from 'preact';
import { useLayoutEffect, useState } from 'preact/hooks';

export interface Location {
  path: string;
  params: URLSearchParams;
}

const listeners = new Set<() => void>();

function current(): Location {
  return { path: window.location.pathname, params: new URLSearchParams(window.location.search) };
}

export function navigate(to: string, options: { replace?: boolean; state?: unknown } = {}): void {
  if (to === window.location.pathname + window.location.search) return;
  if (options.replace) window.history.replaceState(options.state ?? null, '', to);
  else window.history.pushState(options.state ?? null, '', to);
  for (const listener of listeners) listener();
  if (!options.replace) window.scrollTo(0, 0);
}

window.addEventListener('popstate', () => {
  for (const listener of listeners) listener();
});

/**
 * Calls `listener` right as the URL changes (a navigate, back or forward),
 * before any page renders: for module-level state that belongs to a page.
 */
export function onLocationChange(listener: () => void): void {
  listeners.add(listener);
}

export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  // Listening from the draw that shows the page (a layout effect): an effect began a frame later,
  // and an address changed within that frame (the back button, a link) was never seen.
  useLayoutEffect(() => {
    const listener = () => setLocation(current());
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return location;
}

/** Matches `/jobs/:id` style patterns; returns the parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const names: string[] = [];
  const source = pattern.replace(/:([a-z]+)/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  const found = new RegExp(`^${source}/?$`).exec(path);
  if (found === null) return null;
  return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1] ?? '')]));
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; children?: ComponentChildren };

/** An ordinary link (keyboard, middle-click and copy all work) that navigates in place. */
export function Link({ href, children, ...rest }: LinkProps) {
  const onClick = (event: MouseEvent) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    ) {
      return;
    }
    event.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
