/** The frame around every page: the product name, the search box, the navigation and who is logged in. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { can, query } from '../api.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import type { Role, Session } from '../types.ts';
import { type GoKey, Shortcuts } from './shortcuts.tsx';

/** The pages in the navigation; `key` is the letter that goes there after `g` (shortcuts.tsx). */
const nav: { href: string; label: string; role: Role; key?: string }[] = [
  { href: '/', label: 'Dashboard', role: 'viewer', key: 'd' },
  { href: '/queues', label: 'Queues', role: 'viewer', key: 'q' },
  { href: '/jobs', label: 'Jobs', role: 'viewer', key: 'j' },
  { href: '/dead-letters', label: 'Dead letters', role: 'viewer', key: 'l' },
  { href: '/schedules', label: 'Schedules', role: 'viewer' },
  { href: '/batches', label: 'Batches', role: 'viewer' },
  { href: '/workers', label: 'Workers', role: 'viewer', key: 'w' },
  { href: '/enqueue', label: 'Enqueue', role: 'operator' },
  { href: '/audit', label: 'Audit log', role: 'operator', key: 'a' },
  { href: '/config', label: 'Configuration', role: 'admin', key: 'c' },
];
const goKeys: readonly GoKey[] = nav.flatMap(({ key, href, label }) =>
  key === undefined ? [] : [{ key, href, label }],
);

function isCurrent(href: string, path: string): boolean {
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`);
}

const searchId = 'top-search';

/** Finds a job by full id, the distinctive end of one (as lists show it), a prefix, or an idempotency key. */
function SearchBox() {
  const { path, params } = useLocation();
  const [text, setText] = useState(path === '/search' ? (params.get('q') ?? '') : '');
  return (
    <search class="top-search">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const q = text.trim();
          if (q !== '') navigate(`/search${query({ q })}`);
        }}
      >
        <label for={searchId} class="sr-only">
          Search jobs by id or idempotency key
        </label>
        <input
          id={searchId}
          type="search"
          placeholder="Job id or idempotency key  ( / )"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          autocomplete="off"
          spellcheck={false}
        />
      </form>
    </search>
  );
}

export function Layout({
  session,
  onLogout,
  children,
}: {
  session: Session;
  onLogout: () => void;
  children: ComponentChildren;
}) {
  const { path } = useLocation();
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href="/" class="brand" aria-label="sepp admin, dashboard">
          <span class="brand-mark" aria-hidden="true">
            s
          </span>
          <span class="brand-name">sepp</span>
        </Link>
        <SearchBox />
        <div class="whoami">
          {session.open ? (
            <span class="muted" title="No admin users are configured; only this machine can reach the UI">
              login off · local only
            </span>
          ) : (
            <>
              <span class="whoami-name">
                {session.user} <span class="role">{session.role}</span>
              </span>
              <button type="button" class="btn btn-small" onClick={onLogout}>
                Log out
              </button>
            </>
          )}
        </div>
      </header>
      <nav class="sidenav" aria-label="Main">
        <ul>
          {nav
            .filter((item) => can(session, item.role))
            .map((item) => (
              <li key={item.href}>
                <Link href={item.href} aria-current={isCurrent(item.href, path) ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
        </ul>
      </nav>
      <main id="main" class="content" tabIndex={-1}>
        {children}
      </main>
      <Shortcuts searchId={searchId} goKeys={goKeys} />
    </div>
  );
}
