import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, PORTABLE, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/**
 * Images in, through the real service worker and engine worker: the openai SDK in the page sends a held-out image of
 * test/fixtures/vision as an app does (a data URL read from a `Blob` with a FileReader), the engine worker decodes it
 * with the platform's decoder (createImageBitmap and an OffscreenCanvas) and the bundled tiny-vision answers about it.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/vision/', import.meta.url));
const MODELS = fileURLToPath(new URL('../../public/models/', import.meta.url));
const reference = JSON.parse(readFileSync(`${MODELS}tiny-vision/reference.json`, 'utf8')) as {
  pytorch_answers: { file: string; answer: string }[];
};
const manifest = JSON.parse(readFileSync(`${FIXTURES}manifest.json`, 'utf8')) as {
  file: string;
  kind: string;
  messages: { role: string; content: ({ type: 'image' } | { type: 'text'; text: string })[] | string }[];
}[];
/** Questions asked with one image, and what PyTorch answered from the same weights. */
const singles = reference.pytorch_answers
  .map(({ file, answer }) => ({ ...manifest.find((m) => m.file === file)!, answer }))
  .filter((m) => m.kind === 'single');

let key: string;

// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

test(
  'held-out images, sent as data URLs read in the page, answered as PyTorch answers them',
  { tag: PORTABLE },
  async ({ tab }) => {
    for (const held of singles.slice(0, 2)) {
      const parts = held.messages[0]!.content as ({ type: 'image' } | { type: 'text'; text: string })[];
      const answer = await tab.evaluate(
        async ({ k, png, parts }) => {
          const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
          const url = await new Promise<string>((resolve, reject) => {
            const reader = new FileReader();
            reader.onload = () => resolve(reader.result as string);
            reader.onerror = () => reject(reader.error);
            reader.readAsDataURL(new Blob([bytes], { type: 'image/png' }));
          });
          const completion = await window.harness.client(k).chat.completions.create({
            model: 'crimson-falcon-4',
            temperature: 0,
            messages: [
              {
                role: 'user',
                content: parts.map((p) =>
                  p.type === 'image'
                    ? { type: 'image_url' as const, image_url: { url } }
                    : { type: 'text' as const, text: p.text },
                ),
              },
            ],
          });
          return completion.choices[0]!.message.content;
        },
        { k: key, png: readFileSync(`${FIXTURES}${held.file}`).toString('base64'), parts },
      );
      expect(answer, held.file).toBe(held.answer);
    }
  },
);

test(
  'an image that is not one names its part, and the next request is answered',
  { tag: PORTABLE },
  async ({ tab }) => {
    const outcome = await tab.evaluate(
      async ({ k }) => {
        const client = window.harness.client(k);
        const ask = (url: string) =>
          client.chat.completions.create({
            model: 'crimson-falcon-4',
            max_tokens: 8,
            messages: [
              {
                role: 'user',
                content: [
                  { type: 'text', text: 'What shape appears in the picture?' },
                  { type: 'image_url', image_url: { url } },
                ],
              },
            ],
          });
        let refused: unknown;
        try {
          await ask(`data:image/png;base64,${btoa('not an image at all')}`);
        } catch (error) {
          const { status, param } = error as { status: number; param: string };
          refused = { status, param };
        }
        const next = await client.chat.completions.create({
          model: 'crimson-falcon-4',
          max_tokens: 3,
          messages: [{ role: 'user', content: 'Hello' }],
        });
        return { refused, answered: next.choices[0]!.message.role };
      },
      { k: key },
    );
    expect(outcome).toEqual({ refused: { status: 400, param: 'messages[0].content[1]' }, answered: 'assistant' });
  },
);
