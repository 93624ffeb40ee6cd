import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundledProfile, OPENAI_ALIASES, PUBLIC_MODELS } from '../src/models/model-profile.ts';

/**
 * The README and docs/ name files, sections and commands of this repository; a rename that forgets them leaves a reader
 * following a link to nothing. This reads every one and checks it against the repository as it is: relative links (and
 * their `#section`), backticked repository paths, `npm run` commands, and nothing pointing outside the repository;
 * and the models the code serves against the docs that name them (docs/models.md, the README's quick start).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs')).flatMap((name) => (name.endsWith('.md') ? [`docs/${name}`] : [])),
];

/** The folders whose files the docs name by their repository path (`dist/` is built, so not among them). */
const REPOSITORY_FOLDERS = ['src', 'sw', 'test', 'scripts', 'bench', 'docs', 'public'];

/**
 * Backticked paths that are not files of a clone: the README's quick start edits the new Vite app's `src/main.ts`;
 * the bench generates its realistic model into `bench/.models/` (git-ignored).
 */
const NOT_REPOSITORY_PATHS = new Set(['src/main.ts', 'bench/.models/']);

/** Scripts of another package.json: the quick start's Vite app (`npm run dev`, `npm run preview`). */
const OTHER_SCRIPTS = new Set(['dev', 'preview']);

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
/** The text outside fenced code blocks: a code sample's paths and links are the sample's, not the repository's. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor for each heading of a Markdown file (its words lowercased, punctuation dropped, a suffix on repeats). */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const [, heading] of prose(read(file)).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const repeats = seen.get(slug) ?? 0;
    seen.set(slug, repeats + 1);
    found.add(repeats === 0 ? slug : `${slug}-${repeats}`);
  }
  return found;
}

/**
 * Whether a repository path exists. `*` stands for any part of a name and `<name>` for any name (as in
 * `src/engines/<name>/<name>-engine.ts`): such a path exists when one file or folder matches it.
 */
function pathExists(path: string): boolean {
  const segments = path.replace(/\/$/, '').split('/');
  const walk = (folder: string, rest: string[]): boolean => {
    const [segment, ...after] = rest;
    if (segment === undefined) return true;
    if (!/[*<]/.test(segment)) return existsSync(join(folder, segment)) && walk(join(folder, segment), after);
    if (!existsSync(folder) || !statSync(folder).isDirectory()) return false;
    const pattern = new RegExp(
      `^${segment
        .split(/(\*|<[^>]+>)/)
        .map((part) =>
          part === '*' ? '[^/]*' : part.startsWith('<') ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('')}$`,
    );
    return readdirSync(folder).some((name) => pattern.test(name) && walk(join(folder, name), after));
  };
  return walk(ROOT, segments);
}

describe('the README and docs/', () => {
  it('link only to files and sections that exist', () => {
    const broken: string[] = [];
    for (const file of DOCS) {
      for (const [, target] of prose(read(file)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z+.-]*:/i.test(target!)) continue; // https:, mailto:
        const [path, anchor] = target!.split('#');
        const resolved = path ? normalize(join(dirname(file), path)) : file;
        if (!existsSync(join(ROOT, resolved))) broken.push(`${file}: ${target} (no ${resolved})`);
        else if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) {
          broken.push(`${file}: ${target} (no section #${anchor} in ${resolved})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('name only repository paths that exist', () => {
    const folders = REPOSITORY_FOLDERS.join('|');
    const missing: string[] = [];
    for (const file of DOCS) {
      for (const [, path] of prose(read(file)).matchAll(new RegExp(`\`((?:${folders})/[^\`\\s]*)\``, 'g'))) {
        if (!NOT_REPOSITORY_PATHS.has(path!) && !pathExists(path!)) missing.push(`${file}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('give only npm scripts that package.json has', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    const unknown: string[] = [];
    for (const file of DOCS) {
      for (const [, name] of read(file).matchAll(/npm run ([\w:-]*\w)/g)) {
        if (!Object.hasOwn(scripts, name!) && !OTHER_SCRIPTS.has(name!)) unknown.push(`${file}: npm run ${name}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it('point nowhere outside the repository', () => {
    // The repository stands alone: a reader has no design notes or shared folders beside it.
    const outside = DOCS.flatMap((file) =>
      [...read(file).matchAll(/DESIGN\.md|\.\.\/shared\b/g)].map((match) => `${file}: ${match[0]}`),
    );
    expect(outside).toEqual([]);
  });

  it('say what every model ID and OpenAI name is (docs/models.md)', () => {
    const models = read('docs/models.md');
    const names = [...Object.keys(PUBLIC_MODELS), ...Object.values(OPENAI_ALIASES).flat()];
    expect(names.filter((name) => !models.includes(`\`${name}\``))).toEqual([]);
  });

  it("list in the README's quick start every model its page shows", () => {
    const readme = read('README.md');
    const start = readme.indexOf('\n## Quick start\n');
    const quickStart = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const shown = Object.keys(bundledProfile('/models'));
    expect(shown.filter((id) => !quickStart.includes(`\`${id}\``))).toEqual([]);
  });
});
