// Generates the types of the client from the published interface descriptions
// (docs/openapi/v1.json and v2.json, themselves generated from the service by `npm run openapi`).
//
//   node --import tsx clients/typescript/generate.ts           writes src/generated/v1.ts and v2.ts
//   node --import tsx clients/typescript/generate.ts --check   exits 1 when they are not current
//
// The output is formatted with the repository's Prettier settings, so a fresh generation is
// byte-for-byte comparable with the committed files (test/client.test.ts compares them).
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import * as prettier from 'prettier';

export const VERSIONS = ['v1', 'v2'] as const;
export type ApiVersion = (typeof VERSIONS)[number];

const documentUrl = (version: ApiVersion) => new URL(`../../docs/openapi/${version}.json`, import.meta.url);
export const generatedUrl = (version: ApiVersion) => new URL(`./src/generated/${version}.ts`, import.meta.url);

const header = (
  version: ApiVersion,
) => `// generated — do not edit. Source: docs/openapi/${version}.json (the published ${version} interface description).
// Regenerate with: node --import tsx clients/typescript/generate.ts
`;

/** The TypeScript source of src/generated/<version>.ts as a fresh generation makes it. */
export async function generate(version: ApiVersion): Promise<string> {
  const document = JSON.parse(await readFile(documentUrl(version), 'utf8')) as OpenAPI3;
  const ast = await openapiTS(document, { silent: true });
  const file = fileURLToPath(generatedUrl(version));
  const options = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(header(version) + astToString(ast), { ...options, filepath: file });
}

/** Versions whose committed file differs from a fresh generation. */
export async function staleVersions(): Promise<ApiVersion[]> {
  const stale: ApiVersion[] = [];
  for (const version of VERSIONS) {
    const committed = await readFile(generatedUrl(version), 'utf8').catch(() => '');
    if (committed !== (await generate(version))) stale.push(version);
  }
  return stale;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--check')) {
    const stale = await staleVersions();
    if (stale.length) {
      process.stderr.write(`out of date: ${stale.join(', ')}; run node --import tsx clients/typescript/generate.ts\n`);
      process.exit(1);
    }
    process.stdout.write('generated types are current\n');
  } else {
    for (const version of VERSIONS) {
      await writeFile(generatedUrl(version), await generate(version));
      process.stdout.write(`wrote clients/typescript/src/generated/${version}.ts\n`);
    }
  }
}
