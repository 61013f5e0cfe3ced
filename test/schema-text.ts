// What a route's response schema makes of a value: the text Fastify's serializer for that schema
// writes. Answers the service writes another way (JSON.stringify of projected rows, text the
// database composed) are held to it byte for byte.
import Fastify from 'fastify';
import type { TSchema } from 'typebox';

/** The text Fastify's serializer for `schema` writes for the value `raw` parses to. */
export async function schemaText(schema: TSchema, raw: string): Promise<string> {
  const app = Fastify();
  app.get('/', { schema: { response: { 200: schema } } }, async () => JSON.parse(raw) as unknown);
  try {
    return (await app.inject({ method: 'GET', url: '/' })).body;
  } finally {
    await app.close();
  }
}

/** Every character JSON escapes one way or another, and some it leaves alone. */
export const ODD = 'quote " backslash \\ slash / tab \t newline \n bell \u0007 del \u007f line sep \u2028 emoji 🐙 é ﬁ';
