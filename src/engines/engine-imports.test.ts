import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/*
 * The engine contract has one direction (issue 64, item 4): `src/models` (profiles, routing, the public view) imports
 * `src/engines`, never the other way; what every engine implements is in leaf modules that import no engine; and an
 * engine's folder is imported from outside it only by the registries, which list each engine on one line.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const FOLDERS = ['src', 'sw'];

/** The registries: the only modules outside an engine's folder that import it (one line per engine). */
const REGISTRIES = [
  'src/engines/engine-registry.ts',
  'src/engines/loader-registry.ts',
  'src/engines/model-manifests.ts',
  'src/engines/browser-realms.ts',
];

/** The contract's leaves: what engines implement and import, which must reach no engine and no registry. */
const CONTRACT = ['src/engines/engine-descriptor.ts', 'src/engines/model-loaders.ts'];

/** Folders of `src/engines` that hold no engine: shared helpers the local engine and engines import. */
const NOT_ENGINES = new Set(['speech']);

/**
 * Imports of an engine's folder from outside it that are not a registry's, each with why. The remote engine has no
 * loaders: the router serves its candidates itself, and the public view scrubs what its servers answer.
 */
const ALLOWED: Readonly<Record<string, string>> = {
  'src/models/model-router.ts -> src/engines/remote/circuit-breaker.ts': 'the router serves remote candidates',
  'src/models/model-router.ts -> src/engines/remote/remote-model.ts': 'the router serves remote candidates',
  'src/models/public-view.ts -> src/engines/remote/upstream-errors.ts': "the public view scrubs a server's words",
  'src/models/index.ts -> src/engines/remote/upstream-request.ts': 'the public API exports REMOTE_TIMEOUTS',
  'src/models/index.ts -> src/engines/remote/circuit-breaker.ts': 'the public API exports DEFAULT_COOL_DOWN_MS',
  // The store's one-time upgrade of its first layout, which marked web-llm's model libraries by their cache.
  'src/engines/model-files.ts -> src/engines/web-llm/web-llm-cache.ts': 'the store upgrades its first layout',
};

/** Every TypeScript file of the folders (tests and test helpers left out: they may reach into any engine). */
function sourceFiles(): string[] {
  return FOLDERS.flatMap((folder) =>
    readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && /\.ts$/.test(entry.name) && !/\.test(-support)?\.ts$/.test(entry.name))
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)).split(sep).join('/')),
  );
}

/** Each file's relative imports and re-exports (type-only ones too: they tie the files as much), by repository path. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
      const targets = importedFiles
        .map(({ fileName }) => fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) =>
          relative(ROOT, resolve(ROOT, dirname(file), name))
            .split(sep)
            .join('/'),
        )
        .filter((target) => known.has(target));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** The engine folder a file is in (`src/engines/<folder>/…`), if any. */
function engineFolder(file: string): string | undefined {
  const match = /^src\/engines\/([^/]+)\//.exec(file);
  return match && !NOT_ENGINES.has(match[1]!) ? match[1] : undefined;
}

/** The groups of files that import each other in a circle (Tarjan's strongly connected components of two or more). */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) === index.get(file)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== file);
      if (group.length > 1) circles.push(group.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
}

/** Every file `from` reaches through its imports. */
function reached(graph: ReadonlyMap<string, readonly string[]>, from: string): Set<string> {
  const seen = new Set<string>();
  const walk = (file: string) => {
    for (const target of graph.get(file) ?? []) if (!seen.has(target) && seen.add(target)) walk(target);
  };
  walk(from);
  return seen;
}

describe('the engine contract has one direction', () => {
  const graph = importGraph(sourceFiles());
  const edges = [...graph].flatMap(([file, targets]) => targets.map((target) => [file, target] as const));

  it('src/engines never imports src/models', () => {
    const upward = edges.filter(
      ([file, target]) => file.startsWith('src/engines/') && target.startsWith('src/models/'),
    );
    expect(upward.map((edge) => edge.join(' -> '))).toEqual([]);
  });

  it('no files of src/engines and src/models import each other in a circle', () => {
    const inScope = (file: string) => /^src\/(engines|models)\//.test(file);
    const scoped = new Map(
      [...graph].filter(([file]) => inScope(file)).map(([file, targets]) => [file, targets.filter(inScope)]),
    );
    expect(importCircles(scoped)).toEqual([]);
  });

  it('an engine is imported from outside its folder only by the registries', () => {
    const outside = edges
      .filter(([file, target]) => {
        const folder = engineFolder(target);
        return folder !== undefined && engineFolder(file) !== folder && !REGISTRIES.includes(file);
      })
      .map((edge) => edge.join(' -> '))
      .filter((edge) => !Object.hasOwn(ALLOWED, edge));
    expect(outside).toEqual([]);
  });

  it('the contract reaches no engine and no registry', () => {
    for (const leaf of CONTRACT) {
      const reach = [...reached(graph, leaf)].filter((file) => engineFolder(file) || REGISTRIES.includes(file));
      expect({ leaf, reach }).toEqual({ leaf, reach: [] });
    }
  });
});
