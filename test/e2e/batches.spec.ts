import { expect, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/*
 * The Batch API in the browser: a batch of 100 chat requests runs in the service worker's background, each line through
 * the engine worker, its state and every finished line kept in IndexedDB; Chromium's DevTools protocol stops the
 * service worker halfway, and the next request the page sends (its poll) starts a new one, which resumes the batch:
 * the output file holds every line once. The same service worker code runs on both devices: the wasm project covers it.
 */
test.skip(({ device }) => device === 'webgpu', 'device-independent: the wasm project covers it');

const LINES = 100;

test('a batch of 100 chat requests finishes in the background, through a service worker stopped halfway', async ({
  page,
  context,
}) => {
  test.setTimeout(240_000);
  await openHarness(page);
  const key = await issueKey(page);

  // Uploads the file, creates the batch and watches it from the page until a quarter of its lines are done.
  const { id, halfway } = await page.evaluate(
    async ({ k, count }) => {
      const client = window.harness.client(k);
      const jsonl = Array.from({ length: count }, (_, i) =>
        JSON.stringify({
          custom_id: `doc-${i}`,
          method: 'POST',
          url: '/v1/chat/completions',
          body: {
            model: 'crimson-falcon-4',
            messages: [{ role: 'user', content: `Summarise document number ${i}.` }],
            max_tokens: 24,
            temperature: 0,
          },
        }),
      ).join('\n');
      const file = await client.files.create({
        file: new File([jsonl], 'documents.jsonl', { type: 'application/jsonl' }),
        purpose: 'batch',
      });
      const batch = await client.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
      for (;;) {
        const now = await client.batches.retrieve(batch.id);
        if (now.request_counts!.completed >= count / 4 || (now.status !== 'in_progress' && now.status !== 'validating'))
          return { id: batch.id, halfway: { status: now.status, counts: now.request_counts! } };
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    { k: key, count: LINES },
  );
  expect(halfway.status).toBe('in_progress');
  expect(halfway.counts.completed).toBeLessThan(LINES);

  const cdp = await context.newCDPSession(page);
  const statuses: string[] = [];
  cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) =>
    versions.forEach((v: { runningStatus: string }) => statuses.push(v.runningStatus)),
  );
  await cdp.send('ServiceWorker.enable');
  await cdp.send('ServiceWorker.stopAllWorkers');
  // Seen stopped at least once: the page's keep-awake messages, or its next request, may start a new one at once.
  await expect.poll(() => statuses.includes('stopped')).toBe(true);

  // The lines the stopped worker finished, as IndexedDB kept them: each keeps its answer (its request id) to the end.
  const kept = await page.evaluate(
    () =>
      new Promise<Record<string, string>>((resolve, reject) => {
        const open = indexedDB.open('lantern-documents');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const all = open.result.transaction('batch_results').objectStore('batch_results').getAll();
          all.onsuccess = () => {
            open.result.close();
            const results = all.result as { line: { custom_id: string; response: { request_id: string } } }[];
            resolve(Object.fromEntries(results.map(({ line }) => [line.custom_id, line.response.request_id])));
          };
        };
      }),
  );
  expect(Object.keys(kept).length).toBeGreaterThanOrEqual(halfway.counts.completed);
  expect(Object.keys(kept).length).toBeLessThan(LINES);

  // The page's next poll starts a new service worker, which resumes the batch from what IndexedDB kept.
  const result = await page.evaluate(
    async ({ k, batchId }) => {
      const client = window.harness.client(k);
      for (;;) {
        const batch = await client.batches.retrieve(batchId);
        if (!['validating', 'in_progress', 'finalizing'].includes(batch.status)) {
          const text = batch.output_file_id ? await (await client.files.content(batch.output_file_id)).text() : '';
          const lines = text
            .split('\n')
            .filter(Boolean)
            .map(
              (line) =>
                JSON.parse(line) as { custom_id: string; response: { status_code: number; request_id: string } },
            );
          return {
            status: batch.status,
            counts: batch.request_counts,
            errorFile: batch.error_file_id ?? null,
            ids: lines.map((line) => line.custom_id),
            requestIds: Object.fromEntries(lines.map((line) => [line.custom_id, line.response.request_id])),
            statuses: [...new Set(lines.map((line) => line.response.status_code))],
          };
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    { k: key, batchId: id },
  );
  expect(statuses).toContain('running');
  expect(result).toMatchObject({
    status: 'completed',
    counts: { total: LINES, completed: LINES, failed: 0 },
    errorFile: null,
    statuses: [200],
  });
  expect(result.ids).toHaveLength(LINES);
  expect(new Set(result.ids).size).toBe(LINES);
  // Not run again: the kept lines' answers are the output's.
  for (const [customId, requestId] of Object.entries(kept)) expect(result.requestIds[customId]).toBe(requestId);
  expect(result.ids.sort()).toEqual(Array.from({ length: LINES }, (_, i) => `doc-${i}`).sort());
});
