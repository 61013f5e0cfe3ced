// Requests refused before any hook runs, by Node's HTTP parser or by Fastify's router: they never
// reach a route, and still get the error object and the common headers.
import type { FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { answerUnparsableRequest } from '../http/unparsable-request.js';
import type { RateLimitDecision } from '../infra/rate-limiter.js';
import { ApiError } from '../shared/errors.js';
import { renderError, routeNotFound } from './errors.js';

export interface EarlyRefusalsOptions {
  requestIds: () => string;
  /** counts a request refused by the parser against its address (there is no key to count it on) */
  rateLimitOf: (address: string) => Promise<RateLimitDecision>;
  ensureRateLimitHeaders: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** the line each refusal of the parser is logged with */
  log: (line: Record<string, unknown>) => void;
}

export function earlyRefusals(
  o: EarlyRefusalsOptions,
): Pick<FastifyServerOptions, 'clientErrorHandler' | 'frameworkErrors'> {
  return {
    clientErrorHandler: (err, socket) => answerUnparsableRequest(err, socket, o.requestIds(), o.rateLimitOf, o.log),
    // URLs the router refuses before any hook runs (undecodable, a parameter over 512 characters).
    frameworkErrors: (error, request, reply) => {
      void (async () => {
        await o.ensureRateLimitHeaders(request, reply);
        const message =
          error.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? 'A path parameter is longer than 512 characters.'
            : 'The URL path is not valid (check its percent-encoding).';
        // Under /docs there are only pages: a path that cannot even be decoded names none.
        const refusal = request.url.startsWith('/docs/')
          ? routeNotFound(request)
          : new ApiError('invalid_path_parameter', { message });
        renderError(request, reply, refusal);
      })();
    },
  };
}
