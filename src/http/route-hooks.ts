// Hooks a plugin attaches, as each route is declared, to the routes that need them: requests of
// the other routes pay nothing for them.
import type { RouteOptions } from 'fastify';

/** A route's hooks of one kind as a list, whether it declared none, one or several. */
export const hooksOf = <H>(declared: H | H[] | undefined): H[] =>
  declared === undefined ? [] : Array.isArray(declared) ? declared : [declared];

/** Whether every method the route answers is one of `methods`. */
export function answersOnly(route: Pick<RouteOptions, 'method'>, methods: ReadonlySet<string>): boolean {
  return (Array.isArray(route.method) ? route.method : [route.method]).every((m) => methods.has(m));
}
