import type { ModelTask } from '../engine/index.ts';
import type { TransformersDtype } from './transformers/load-pretrained.ts';

/** The public model IDs of the API (spec §1): three chat models and one embedding model. */
export const PUBLIC_MODELS = Object.freeze({
  'crimson-falcon-4': 'chat',
  'indigo-owl-4': 'chat',
  'amber-phoenix-4': 'chat',
  'jade-mole-4': 'embeddings',
} as const satisfies Record<string, ModelTask>);

export type PublicModelId = keyof typeof PUBLIC_MODELS;

/** What a public model ID runs: a transformers.js model folder and its weights. */
export interface ModelSource {
  task: ModelTask;
  /** A Hugging Face hub ID, a folder path (Node) or a URL (browser) of a model in the transformers.js layout. */
  model: string;
  dtype?: TransformersDtype;
  /** When this model was published, in Unix seconds (the `created` of `/v1/models`). */
  created: number;
}

/** Public model IDs and what each runs. */
export type ModelProfile = Readonly<Record<string, ModelSource>>;

/** The date the bundled fixture models were generated (`scripts/fixtures/generate.py`). */
const BUNDLED_CREATED = Date.UTC(2026, 10, 21) / 1000;

/**
 * The bundled profile: the project's own tiny fixture models (`public/models`), so all four IDs answer offline and in
 * tests. The three chat IDs share one tiny chat model, which is loaded once.
 *
 * @param base - where `public/models` is: a folder path in Node, a URL path such as `/models` in a browser.
 */
export function bundledProfile(base: string): ModelProfile {
  const at = (name: string) => `${base.replace(/\/+$/, '')}/${name}`;
  const chat: ModelSource = { task: 'chat', model: at('tiny-chat'), dtype: 'fp32', created: BUNDLED_CREATED };
  return Object.freeze({
    'crimson-falcon-4': chat,
    'indigo-owl-4': chat,
    'amber-phoenix-4': chat,
    'jade-mole-4': { task: 'embeddings', model: at('tiny-embed'), dtype: 'fp32', created: BUNDLED_CREATED },
  });
}
