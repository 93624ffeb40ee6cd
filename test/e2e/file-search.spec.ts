import { handWrittenPdf } from '../../src/documents/hand-written-pdf.test-support.ts';
import type { Page } from '@playwright/test';
import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/*
 * Files, vector stores and `file_search` in the browser: the openai SDK in the page uploads browser `File`s, the
 * service worker extracts their text (pdf.js for a PDF, in its own bundle), the engine worker embeds the chunks, and
 * IndexedDB keeps the files, chunks and index, so that they outlive a reload, the service worker and the network. The
 * OpenAI Agents SDK runs on it in the page as an app bundles it. The bundled tiny-embed was trained on everyday
 * paraphrases only (on these documents its vectors carry little meaning) and tiny-chat answers nonsense: the checks are
 * the files found and cited, not the prose. The routes run in the service worker as on both devices: the WebAssembly
 * project is enough.
 */
// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

test.skip(
  ({ device }) => device === 'webgpu',
  'the same service worker code on both paths: the wasm project covers it',
);

/** The documents of test/file-search.test.ts, one per type; each question below is worded unlike its document. */
const DOCUMENTS: Record<string, { text: string; type: string }> = {
  'travel-policy.md': {
    type: 'text/markdown',
    text:
      '# Travel policy\n\nEmployees book flights through the Wayfarer portal. Economy class is the rule for trips ' +
      'under six hours; business class needs a director’s approval. Hotel nights are reimbursed up to 180 euros in ' +
      'Paris and 140 euros elsewhere. Receipts must be filed within 30 days of return.',
  },
  'espresso-machine.html': {
    type: 'text/html',
    text:
      '<html><head><title>Manual</title><style>body{}</style></head><body><h1>Model XR-7734 espresso machine</h1>' +
      '<p>Descale the boiler every 200 cups with citric acid. The steam wand is cleaned after each use by purging ' +
      'it for two seconds.</p><p>Error code E4 means the water tank is empty.</p></body></html>',
  },
  'garden.txt': {
    type: 'text/plain',
    text:
      'Tomatoes need six to eight hours of direct sun. Water them deeply twice a week rather than a little every ' +
      'day. Basil planted beside tomatoes keeps aphids away. Harvest when the fruit is fully red and slightly soft.',
  },
  'onboarding.json': {
    type: 'application/json',
    text: JSON.stringify({
      onboarding: {
        first_day: 'Collect your badge from reception on floor 2 at 9:00.',
        laptop: 'IT hands out laptops on the first morning; the Wi-Fi network is called Lighthouse.',
        buddy: 'Every new hire is paired with a buddy for their first month.',
      },
    }),
  },
  'parking.pdf': {
    type: 'application/pdf',
    text: handWrittenPdf([
      [
        'Parking rules',
        'Staff park their cars in garage B, on level minus two.',
        'Visitors use bays 1 to 12 beside the main entrance.',
        'Bicycles are locked in the shed behind reception.',
      ],
    ]),
  },
};

/** Questions, each with the one document that answers it. */
const QUESTIONS: [string, string][] = [
  ['On the XR-7734, what does error code E4 mean?', 'espresso-machine.html'],
  ['how much can I spend on a hotel in Paris', 'travel-policy.md'],
  ['What is the wifi called?', 'onboarding.json'],
  ['which plant keeps aphids off tomatoes', 'garden.txt'],
  ['Where can visitors leave their car?', 'parking.pdf'],
];

/**
 * Uploads `names` as browser `File`s (`files.create`), makes a vector store of them and polls each until indexed.
 * Resolves with the store's id, the files' ids by name, and each file's status and error.
 */
function indexDocuments(tab: Tab, key: string, names: string[]) {
  return tab.evaluate(
    async ({ k, documents }) => {
      const client = window.harness.client(k);
      const ids: Record<string, string> = {};
      for (const { name, text, type } of documents) {
        const file = new File([text], name, { type });
        ids[name] = (await client.files.create({ file, purpose: 'assistants' })).id;
      }
      const store = await client.vectorStores.create({ name: 'handbook', file_ids: Object.values(ids) });
      const statuses: Record<string, unknown> = {};
      for (const [name, id] of Object.entries(ids)) {
        const done = await client.vectorStores.files.poll(store.id, id, { pollIntervalMs: 100 });
        statuses[name] = done.last_error ? { status: done.status, error: done.last_error } : done.status;
      }
      return { storeId: store.id, ids, statuses };
    },
    { k: key, documents: names.map((name) => ({ name, ...DOCUMENTS[name]! })) },
  );
}

/** A greedy `responses.create` with file_search on `storeId`: its output items, and the message's citations. */
function answerWithSearch(tab: Tab, key: string, storeId: string, question: string) {
  return tab.evaluate(
    async ({ k, id, input }) => {
      const response = await window.harness.client(k).responses.create({
        model: 'crimson-falcon-4',
        input,
        tools: [{ type: 'file_search', vector_store_ids: [id] }],
        include: ['file_search_call.results'],
        max_output_tokens: 64,
        temperature: 0,
      });
      const [search, message] = response.output;
      const part = message?.type === 'message' ? message.content[0] : undefined;
      return {
        status: response.status,
        types: response.output.map((item) => item.type),
        search:
          search?.type === 'file_search_call'
            ? { status: search.status, queries: search.queries, files: search.results?.map((r) => r.filename) }
            : null,
        text: response.output_text,
        annotations: part?.type === 'output_text' ? part.annotations : [],
      };
    },
    { k: key, id: storeId, input: question },
  );
}

test(
  'openai SDK with browser Files: upload, index (a PDF too), search, file_search answers and cites, streamed and not; another key sees none of it',
  { tag: PORTABLE },
  async ({ tab }) => {
    await openHarness(tab);
    const key = await issueKey(tab);
    const other = await issueKey(tab, 'other');

    // files.create with File objects, then a store made of their ids.
    const indexed = await indexDocuments(tab, key, ['travel-policy.md', 'garden.txt']);
    expect(indexed.statuses).toEqual({ 'travel-policy.md': 'completed', 'garden.txt': 'completed' });
    const { storeId, ids } = indexed;

    // The SDK's upload helpers (a multipart upload, then polling), and a PDF, whose text pdf.js extracts.
    const added = await tab.evaluate(
      async ({ k, id, documents }) => {
        const client = window.harness.client(k);
        const file = (name: string) => new File([documents[name]!.text], name, { type: documents[name]!.type });
        const html = await client.vectorStores.files.uploadAndPoll(id, file('espresso-machine.html'), {
          pollIntervalMs: 100,
        });
        const batch = await client.vectorStores.fileBatches.uploadAndPoll(
          id,
          { files: [file('onboarding.json'), file('parking.pdf')] },
          { pollIntervalMs: 100 },
        );
        const batchFiles = await client.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: id });
        const names: Record<string, string> = {};
        for (const f of (await client.files.list()).data) names[f.id] = f.filename;
        const store = await client.vectorStores.retrieve(id);
        const pdfId = Object.keys(names).find((fileId) => names[fileId] === 'parking.pdf')!;
        const pdf = await client.files.content(pdfId);
        return {
          pdfBack: { type: pdf.headers.get('content-type'), text: await pdf.text() },
          html: { status: html.status, error: html.last_error },
          batch: { status: batch.status, counts: batch.file_counts },
          batchFiles: batchFiles.data.map((f) => ({ name: names[f.id], status: f.status, error: f.last_error })),
          store: { status: store.status, counts: store.file_counts },
          ids: Object.fromEntries(Object.entries(names).map(([fileId, name]) => [name, fileId])),
        };
      },
      { k: key, id: storeId, documents: DOCUMENTS },
    );
    console.log(`[file-search] added: ${JSON.stringify(added.batchFiles)}`);
    expect(added.html).toEqual({ status: 'completed', error: null });
    expect(added.pdfBack).toEqual({ type: 'application/pdf', text: DOCUMENTS['parking.pdf']!.text });
    expect(added.batchFiles).toEqual(
      expect.arrayContaining([
        { name: 'onboarding.json', status: 'completed', error: null },
        { name: 'parking.pdf', status: 'completed', error: null },
      ]),
    );
    expect(added.batch).toEqual({
      status: 'completed',
      counts: { in_progress: 0, completed: 2, failed: 0, cancelled: 0, total: 2 },
    });
    expect(added.store).toEqual({
      status: 'completed',
      counts: { in_progress: 0, completed: 5, failed: 0, cancelled: 0, total: 5 },
    });

    // Search: each question finds its document first; the PDF's passage is its text, not its syntax.
    const searched = await tab.evaluate(
      async ({ k, id, questions }) => {
        const client = window.harness.client(k);
        const found: string[][] = [];
        for (const [query] of questions) {
          const page = await client.vectorStores.search(id, { query, max_num_results: 2 });
          found.push(page.data.map((r) => r.filename));
        }
        const pdf = await client.vectorStores.search(id, { query: 'visitors bays main entrance', max_num_results: 1 });
        return { found, pdfText: pdf.data[0]?.content[0]?.text };
      },
      { k: key, id: storeId, questions: QUESTIONS },
    );
    expect(searched.found.map((files) => files[0])).toEqual(QUESTIONS.map(([, name]) => name));
    expect(searched.pdfText).toContain('Visitors use bays 1 to 12 beside the main entrance.');
    expect(searched.pdfText).not.toMatch(/\bTf\b|endstream|BT\n/);

    // file_search in the Responses API: the search item first, its best result the right file, the answer citing it.
    const answered = await answerWithSearch(tab, key, storeId, QUESTIONS[0]![0]);
    // Answered, whole or cut at max_output_tokens: tiny-chat's answer beside sources may run to the cap (it does not
    // read them: scripts/fixtures/README.md); what is tested here is the search, its item and the citation.
    expect(['completed', 'incomplete']).toContain(answered.status);
    expect(answered.types).toEqual(['file_search_call', 'message']);
    expect(answered.search).toMatchObject({ status: 'completed', queries: [QUESTIONS[0]![0]] });
    expect(answered.search!.files![0]).toBe('espresso-machine.html');
    expect(answered.annotations[0]).toMatchObject({
      type: 'file_citation',
      file_id: added.ids['espresso-machine.html'],
      filename: 'espresso-machine.html',
    });

    // Streamed: the search's events, then the citation's, then the response with both.
    const streamed = await tab.evaluate(
      async ({ k, id }) => {
        const stream = await window.harness.client(k).responses.create({
          model: 'crimson-falcon-4',
          input: 'Hotel budget for a night in Paris?',
          tools: [{ type: 'file_search', vector_store_ids: [id] }],
          max_output_tokens: 64,
          temperature: 0,
          stream: true,
        });
        const types: string[] = [];
        let annotation: unknown;
        let output: unknown[] = [];
        for await (const event of stream) {
          types.push(event.type);
          if (event.type === 'response.output_text.annotation.added') annotation ??= event.annotation;
          if (event.type === 'response.completed' || event.type === 'response.incomplete')
            output = event.response.output;
        }
        return { types, annotation, output };
      },
      { k: key, id: storeId },
    );
    const order = [
      'response.created',
      'response.file_search_call.in_progress',
      'response.file_search_call.searching',
      'response.file_search_call.completed',
      'response.output_text.annotation.added',
      streamed.types.includes('response.incomplete') ? 'response.incomplete' : 'response.completed',
    ].map((type) => streamed.types.indexOf(type));
    expect(
      order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!)),
      streamed.types.join(' '),
    ).toBe(true);
    const citation = { type: 'file_citation', file_id: ids['travel-policy.md'], filename: 'travel-policy.md' };
    expect(streamed.annotation).toMatchObject(citation);
    expect(streamed.output[0]).toMatchObject({ type: 'file_search_call', status: 'completed', results: null });
    expect(streamed.output[1]).toMatchObject({ type: 'message', content: [{ annotations: [citation] }] });

    // Another key: the store, its files and their search are not found; it lists nothing.
    const theirs = await tab.evaluate(
      async ({ k, id, fileId }) => {
        const client = window.harness.client(k);
        const status = (call: Promise<unknown>) =>
          call.then(
            () => 'answered',
            (error: unknown) => (error as { status?: number }).status ?? String(error),
          );
        return {
          store: await status(client.vectorStores.retrieve(id)),
          search: await status(client.vectorStores.search(id, { query: 'hotel Paris' })),
          storeFiles: await status(client.vectorStores.files.list(id)),
          file: await status(client.files.retrieve(fileId)),
          content: await status(client.files.content(fileId)),
          response: await status(
            client.responses.create({
              model: 'crimson-falcon-4',
              input: 'hotel',
              tools: [{ type: 'file_search', vector_store_ids: [id] }],
            }),
          ),
          files: (await client.files.list()).data.length,
          stores: (await client.vectorStores.list()).data.length,
        };
      },
      { k: other, id: storeId, fileId: ids['travel-policy.md']! },
    );
    expect(theirs).toEqual({
      store: 404,
      search: 404,
      storeFiles: 404,
      file: 404,
      content: 404,
      response: 404,
      files: 0,
      stores: 0,
    });
  },
);

test(
  'the files and the index outlive a reload without the network: search, file_search and the bytes as they were',
  { tag: PORTABLE },
  async ({ tab, lanternBrowser }) => {
    const server = await startServer(workerPort(4199));
    try {
      await openHarness(tab, '', server.origin);
      const key = await issueKey(tab);
      const { storeId, ids, statuses } = await indexDocuments(tab, key, ['garden.txt', 'onboarding.json']);
      expect(statuses).toEqual({ 'garden.txt': 'completed', 'onboarding.json': 'completed' });
      expect((await tab.evaluate(() => window.harness.lantern.offlineReady)).ready).toBe(true);

      await server.close();
      await expect(fetch(`${server.origin}/`)).rejects.toThrow(); // the network really is gone
      if (lanternBrowser === 'chromium') {
        // In Chromium, the service worker too: the next one finds everything in IndexedDB, nothing in its memory.
        const page = tab as Page;
        const cdp = await page.context().newCDPSession(page);
        const statuses: string[] = [];
        cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) =>
          versions.forEach((v: { runningStatus: string }) => statuses.push(v.runningStatus)),
        );
        await cdp.send('ServiceWorker.enable');
        await cdp.send('ServiceWorker.stopAllWorkers');
        await expect.poll(() => statuses.at(-1)).toBe('stopped');
      }
      await tab.reload();
      await tab.waitForFunction(() => window.harness !== undefined, undefined, { timeout: 60_000 });

      const after = await tab.evaluate(
        async ({ k, id, fileId }) => {
          const client = window.harness.client(k);
          const store = await client.vectorStores.retrieve(id);
          const page = await client.vectorStores.search(id, { query: 'which plant keeps aphids off tomatoes' });
          const content = await client.files.content(fileId);
          return {
            store: { status: store.status, counts: store.file_counts },
            found: page.data.map((r) => r.filename),
            content: { type: content.headers.get('content-type'), text: await content.text() },
          };
        },
        { k: key, id: storeId, fileId: ids['garden.txt']! },
      );
      expect(after.store).toEqual({
        status: 'completed',
        counts: { in_progress: 0, completed: 2, failed: 0, cancelled: 0, total: 2 },
      });
      expect(after.found[0]).toBe('garden.txt');
      expect(after.content).toEqual({ type: 'text/plain', text: DOCUMENTS['garden.txt']!.text });

      const answered = await answerWithSearch(tab, key, storeId, 'What is the wifi called?');
      expect(answered.types).toEqual(['file_search_call', 'message']);
      expect(answered.search!.files![0]).toBe('onboarding.json');
      expect(answered.annotations[0]).toMatchObject({ file_id: ids['onboarding.json'], filename: 'onboarding.json' });
    } finally {
      await server.close();
    }
  },
);

test(
  "OpenAI Agents SDK in the page: fileSearchTool and a function tool, streamed and not; a forced call's next turn",
  { tag: PORTABLE },
  async ({ tab }) => {
    await openHarness(tab);
    const key = await issueKey(tab);
    const { storeId, ids, statuses } = await indexDocuments(tab, key, [
      'espresso-machine.html',
      'onboarding.json',
      'travel-policy.md',
    ]);
    expect(Object.values(statuses)).toEqual(['completed', 'completed', 'completed']);

    const result = await tab.evaluate(
      async ({ k, id }) => {
        const { Agent, Runner, tool, fileSearchTool, OpenAIProvider, z, summary } = window.harness.agents;
        // The SDK's client, recording what the SDK sends to /v1/responses and the status it gets.
        const sent: {
          input: { type?: string; name?: string; arguments?: string }[];
          tools: unknown[];
          include?: string[];
          status: number;
        }[] = [];
        const client = new window.harness.OpenAI({
          baseURL: window.harness.lantern.baseURL,
          apiKey: k,
          dangerouslyAllowBrowser: true,
          maxRetries: 0,
          fetch: async (url: RequestInfo | URL, init?: RequestInit) => {
            const response = await fetch(url, init);
            if (String(url).endsWith('/responses'))
              sent.push({ ...JSON.parse(String(init?.body)), status: response.status });
            return response;
          },
        });
        const runner = new Runner({
          modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: true }),
          tracingDisabled: true,
        });
        const bookRoom = tool({
          name: 'book_room',
          description: 'Books a meeting room for the user.',
          // A room from a list: the call's arguments stay short, and the next turn's prompt leaves room in tiny-chat's
          // window (1,024 tokens) for the passages, which it is then given and cites.
          parameters: z.object({ room: z.enum(['Lighthouse', 'Harbour']) }),
          execute: async ({ room }) => `Room ${room} is booked.`,
        });
        const agent = (toolChoice?: string) =>
          new Agent({
            name: 'handbook',
            instructions: 'Answer questions about the company handbook from its files.',
            model: 'crimson-falcon-4',
            tools: [fileSearchTool([id], { includeSearchResults: true }), bookRoom],
            modelSettings: { temperature: 0, maxTokens: 32, ...(toolChoice && { toolChoice }) },
          });
        const question = 'On the XR-7734, what does error code E4 mean?';
        const plain = await summary(await runner.run(agent(), question));
        const plainSent = sent.splice(0);
        const streamed = await summary(await runner.run(agent(), question, { stream: true }));
        const streamedSent = sent.splice(0);
        const forced = await summary(
          await runner.run(agent('book_room'), 'Book the Lighthouse room, then tell me the Wi-Fi name.'),
        );
        return { plain, plainSent, streamed, streamedSent, forced, forcedSent: sent };
      },
      { k: key, id: storeId },
    );

    const e4 = 'On the XR-7734, what does error code E4 mean?';
    const espresso = {
      type: 'file_citation',
      file_id: ids['espresso-machine.html'],
      filename: 'espresso-machine.html',
    };
    for (const run of [result.plain, result.streamed]) {
      expect(typeof run.finalOutput).toBe('string');
      expect(run.kinds).toEqual(['file_search_call', 'message_output_item']);
      expect(run.searches).toEqual([{ status: 'completed', queries: [e4], files: expect.any(Array) }]);
      expect(run.searches[0]!.files![0]).toBe('espresso-machine.html');
      expect(run.citations[0]).toEqual(espresso);
      expect(run.responses).toBe(1);
    }
    for (const sent of [result.plainSent, result.streamedSent]) {
      expect(sent.map((s) => s.status)).toEqual([200]);
      expect(sent[0]!.tools).toEqual([
        { type: 'file_search', vector_store_ids: [storeId] },
        expect.objectContaining({ type: 'function', name: 'book_room' }),
      ]);
      expect(sent[0]!.include).toEqual(['file_search_call.results']);
    }

    // The forced call runs, and the next turn sends the search back as input: Lantern takes it, searches again, answers.
    expect(typeof result.forced.finalOutput).toBe('string');
    expect(result.forced.kinds).toEqual([
      'file_search_call',
      'function_call',
      'tool_call_output_item',
      'file_search_call',
      'message_output_item',
    ]);
    expect(result.forced.searches.map((s) => s.files![0])).toEqual(['onboarding.json', 'onboarding.json']);
    expect(result.forced.citations[0]).toMatchObject({ file_id: ids['onboarding.json'], filename: 'onboarding.json' });
    expect(result.forcedSent.map((s) => s.status)).toEqual([200, 200]);
    expect(result.forcedSent[1]!.input.map((item) => item.type)).toEqual([
      undefined,
      'file_search_call',
      'function_call',
      'function_call_output',
    ]);
    expect(result.forcedSent[1]!.input[2]).toMatchObject({
      name: 'book_room',
      arguments: expect.stringMatching(/"(Lighthouse|Harbour)"/),
    });
  },
);
