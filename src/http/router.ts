/** Finds the operation a request's method and path name, or says why there is none (404, 405 with Allow). */
import { SeppError } from '../engine/errors.ts';
import { HttpError } from './errors.ts';
import type { RouteSpec } from './route-spec.ts';

interface Entry {
  route: RouteSpec;
  pattern: RegExp;
  names: string[];
}

export class Router {
  private readonly entries: Entry[];

  constructor(routes: readonly RouteSpec[]) {
    // Literal paths first: POST /v1/jobs/batch is not POST /v1/jobs/{jobId}.
    const ordered = [...routes].sort((a, b) => paramCount(a.path) - paramCount(b.path));
    this.entries = ordered.map((route) => {
      const names: string[] = [];
      const source = route.path
        .split('/')
        .map((segment) => {
          const param = /^\{([A-Za-z]+)\}$/.exec(segment);
          if (param === null) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(param[1] ?? '');
          return '([^/]+)';
        })
        .join('/');
      return { route, pattern: new RegExp(`^${source}$`), names };
    });
  }

  /**
   * HEAD finds the GET operation of its path and is answered as it, without the body (RFC 9110
   * §9.3.2; Node's response drops it); but an event stream, which would stay open: 405 there.
   */
  match(method: string, path: string): { route: RouteSpec; params: Record<string, string> } {
    const allow = new Set<string>();
    for (const { route, pattern, names } of this.entries) {
      const found = pattern.exec(path);
      if (found === null) continue;
      const headAsGet = route.method === 'GET' && route.kind === 'json';
      if (route.method !== method && !(method === 'HEAD' && headAsGet)) {
        allow.add(route.method);
        if (headAsGet) allow.add('HEAD');
        continue;
      }
      const params: Record<string, string> = {};
      names.forEach((name, i) => {
        params[name] = found[i + 1] ?? '';
      });
      return { route, params };
    }
    if (allow.size > 0) {
      const methods = [...allow].sort().join(', ');
      throw new HttpError('method_not_allowed', `${method} is not allowed on ${path}; use ${methods}`, {
        Allow: methods,
      });
    }
    throw new SeppError(
      'not_found',
      `no operation at ${method} ${path.slice(0, 200)}; the operations are listed at GET /v1/openapi.json`,
    );
  }
}

function paramCount(path: string): number {
  return (path.match(/\{/g) ?? []).length;
}
