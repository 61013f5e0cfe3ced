// Clients generated from the published documents must refuse, at compile time, the bodies the
// service refuses, and narrow events on their type. For each document (docs/openapi/v1.json and
// v2.json) and each of two common generators, openapi-typescript and @hey-api/openapi-ts, the
// types are generated into a temporary directory and compiled with the cases of
// openapi-types-cases.ts by the TypeScript compiler: a positive case that does not compile, or a
// negative one (@ts-expect-error) that does, is a compile error and fails the test.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createClient } from '@hey-api/openapi-ts';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { ADAPTERS, CONTACT_CASES, V2_CASES } from './openapi-types-cases.js';

type Generator = keyof typeof ADAPTERS;
const VERSIONS = ['v1', 'v2'] as const;
type Version = (typeof VERSIONS)[number];

const work = mkdtempSync(join(tmpdir(), 'wsapi-openapi-types-'));
after(() => rmSync(work, { recursive: true, force: true }));

const documentOf = (version: Version) =>
  JSON.parse(readFileSync(new URL(`../docs/openapi/${version}.json`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;

/** Writes the generator's types of `version` into `dir` (v1.ts, or v1/types.gen.ts). */
async function generate(generator: Generator, version: Version, dir: string): Promise<void> {
  const document = documentOf(version);
  if (generator === 'openapi-typescript') {
    writeFileSync(join(dir, `${version}.ts`), astToString(await openapiTS(document as never)));
  } else {
    await createClient({
      input: document,
      output: { path: join(dir, version) },
      plugins: ['@hey-api/typescript'],
      logs: { level: 'silent' },
    });
  }
}

/** The compiler's errors for `files`, one formatted line each. */
function compileErrors(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!d.file || d.start === undefined) return text;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${d.file.fileName.slice(work.length + 1)}:${line + 1}: ${text} (TS${d.code})`;
  });
}

describe('generated client types refuse what the service refuses', () => {
  for (const generator of Object.keys(ADAPTERS) as Generator[]) {
    for (const version of VERSIONS) {
      test(`${generator}, ${version}`, async () => {
        const dir = join(work, generator.replace(/\W/g, '-'), version);
        mkdirSync(dir, { recursive: true });
        await generate(generator, version, dir);
        writeFileSync(join(dir, 'types.ts'), ADAPTERS[generator](version));
        const cases = [join(dir, 'contacts.cases.ts')];
        writeFileSync(cases[0]!, CONTACT_CASES);
        if (version === 'v2') {
          cases.push(join(dir, 'v2.cases.ts'));
          writeFileSync(cases[1]!, V2_CASES);
        }
        const errors = compileErrors(cases);
        assert.deepEqual(errors, [], `the cases do not hold against ${generator}'s types of ${version}`);
      });
    }
  }
});
