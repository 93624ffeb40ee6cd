import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUNDLED_MODELS } from './lantern.ts';

type Json = Record<string, unknown>;

/**
 * A bundled fixture model in a fresh temporary folder, with some of its JSON files changed: for tests of what real
 * models' files say and the fixtures do not (a generation_config with penalties, a tokenizer that cleans up spaces, a
 * chat template with a thinking switch). Its weights are linked, not copied; nothing is written into the project.
 *
 * @param edits - file name → its new content, given the bundled one (`{}` when the model has no such file).
 */
export function modelCopy(
  model: 'tiny-chat' | 'tiny-embed' | 'tiny-vision',
  edits: Record<string, (json: Json) => Json>,
): string {
  const source = join(BUNDLED_MODELS, model);
  const folder = mkdtempSync(join(tmpdir(), `lantern-${model}-`));
  for (const file of readdirSync(source)) {
    if (file.endsWith('.json')) writeFileSync(join(folder, file), readFileSync(join(source, file)));
    else symlinkSync(join(source, file), join(folder, file));
  }
  for (const [file, edit] of Object.entries(edits)) {
    let json: Json = {};
    try {
      json = JSON.parse(readFileSync(join(folder, file), 'utf8')) as Json;
    } catch {
      // a file the bundled model does not have
    }
    writeFileSync(join(folder, file), JSON.stringify(edit(json), null, 2));
  }
  return folder;
}
