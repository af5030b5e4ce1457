/** The frame around every page: the product name, the navigation and who is logged in. */
import type { ComponentChildren } from 'preact';
import { can } from '../api.ts';
import { Link, useLocation } from '../router.tsx';
import type { Role, Session } from '../types.ts';

const nav: { href: string; label: string; role: Role }[] = [
  { href: '/', label: 'Dashboard', role: 'viewer' },
  { href: '/queues', label: 'Queues', role: 'viewer' },
  { href: '/jobs', label: 'Jobs', role: 'viewer' },
  { href: '/dead-letters', label: 'Dead letters', role: 'viewer' },
  { href: '/schedules', label: 'Schedules', role: 'viewer' },
  { href: '/enqueue', label: 'Enqueue', role: 'operator' },
  { href: '/audit', label: 'Audit log', role: 'operator' },
  { href: '/config', label: 'Configuration', role: 'admin' },
];

function isCurrent(href: string, path: string): boolean {
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`);
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
          sepp
        </Link>
        <div class="whoami">
          {session.open ? (
            <span class="muted" title="No admin users are configured; only this machine can reach the UI">
              login off · local only
            </span>
          ) : (
            <>
              <span>
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
    </div>
  );
}
