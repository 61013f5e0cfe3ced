import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { compileBodyValidator, type BodyValidator } from './body-validator.js';

const common = { useDefaults: true, removeAdditional: false, strict: false, verbose: true } as const;
const bodyFirstError = new Ajv({ ...common, coerceTypes: false, allErrors: false });
const bodyEveryError = new Ajv({ ...common, coerceTypes: false, allErrors: true });
const textAjv = new Ajv({ ...common, coerceTypes: true, allErrors: false });
for (const ajv of [bodyFirstError, bodyEveryError, textAjv]) addFormats.default(ajv);

/**
 * A validator of a JSON body, or of a part of one that a route checks on its own (the items of a
 * partial batch): the same checks and the same 422 as a route's declared body.
 */
export const compileBody = (schema: object): BodyValidator =>
  compileBodyValidator(schema, bodyFirstError, bodyEveryError);

/**
 * Query strings, path parameters and headers arrive as text and are coerced to their declared
 * types; bodies are JSON and are never coerced (a number is not a name), and are checked at a
 * bounded cost (src/http/body-validator.ts). None has unknown properties removed: a schema that
 * forbids them rejects them.
 */
export function useStrictValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body' ? compileBody(schema as object) : textAjv.compile(schema),
  );
}
