import { css, html, LitElement, nothing } from 'lit';
import type OpenAI from 'openai';
import type { LocalAPI, LocalAPIEventMap } from '../client/index.ts';
import { panelStyles } from './styles.ts';

/** Where the tab keeps its vector store's ID: the store (in IndexedDB, the playground key's) outlives a reload. */
const STORE_KEY = 'lantern:playground:vector-store';

/**
 * The types the Files API reads as text (src/documents/extract-text.ts, docs/file-search.md): plain text, Markdown,
 * code, HTML, JSON, PDF, Word and PowerPoint. Another type is uploaded all the same if dropped, and fails with its reason.
 */
const ACCEPT = [
  ...['.txt', '.text', '.md', '.markdown', '.csv', '.tsv', '.log', '.rst', '.tex', '.html', '.htm'],
  ...['.json', '.jsonl', '.pdf', '.docx', '.pptx', '.xml', '.yaml', '.yml', '.toml'],
  ...['.c', '.cpp', '.h', '.cs', '.css', '.go', '.java', '.js', '.mjs', '.ts', '.py', '.rb', '.php', '.sh'],
].join(',');

/**
 * A document to try the tab with, for one who has none at hand. The question the tab suggests shares its words with the
 * one sentence that answers it, so that the search finds that passage first (the bundled tiny model does not read it:
 * its answer is not the passage's, which the page's notice says; a real model answers from it).
 */
const EXAMPLE = {
  name: 'travel-policy.md',
  text:
    '# Travel policy\n\nEconomy class is the rule for trips under six hours. Hotel nights are reimbursed up to 180 ' +
    'euros in Paris and 140 euros elsewhere. Receipts are filed within 30 days.\n',
};

/** How often the files' statuses are asked for while one is being indexed. */
const POLL_MS = 1000;

/** A file of the store, as the list shows it. */
interface Row {
  id: string;
  filename: string;
  status: OpenAI.VectorStores.VectorStoreFile['status'] | 'uploading';
  error?: string;
}

/** How far a file's indexing has got, from LocalAPI's `indexing` event. */
interface Progress {
  chunksDone: number;
  chunksTotal: number;
}

/** The answer to a question: its text as it streams, its citations and the passages the search found. */
interface Answer {
  text: string;
  done: boolean;
  citations: { file_id: string; filename: string }[];
  passages: OpenAI.Responses.ResponseFileSearchToolCall.Result[];
}

const kilobytes = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;
const notFound = (error: unknown) => (error as { status?: number }).status === 404;

/**
 * Your documents through the Files and Vector Stores APIs, and questions about them through `/v1/responses` with the
 * `file_search` tool: files dropped or picked are uploaded (`files.create`) and attached to the tab's vector store,
 * their indexing shown as LocalAPI reports it, and an answer streams with its citations and the passages found.
 * Listing and polling go through a client that the API tab does not record: it shows the requests a person made.
 */
export class DocumentsPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .drop {
        border: 2px dashed var(--border);
        border-radius: 8px;
        padding: 0.75rem;
        margin-bottom: 1rem;
      }
      .drop.over {
        border-color: var(--accent);
      }
      .files {
        width: 100%;
        margin-bottom: 1rem;
      }
      .files td {
        vertical-align: middle;
      }
      /* A long file name breaks rather than widening a narrow screen. */
      .files td:first-child {
        overflow-wrap: anywhere;
      }
      .files progress {
        width: 8rem;
        margin-left: 0.5rem;
        vertical-align: middle;
      }
      .files button {
        padding: 0.2rem 0.6rem;
      }
      .status {
        min-height: 1.2em;
        color: var(--muted);
        font-size: 0.85rem;
      }
      .answer {
        white-space: pre-wrap;
        border: 1px solid var(--border);
        border-radius: 8px;
        padding: 0.6rem 0.8rem;
        background: var(--surface);
        min-height: 2.5rem;
        margin: 0;
      }
      .passages {
        padding-left: 1.5rem;
      }
      .passages li {
        margin-bottom: 0.6rem;
      }
      .passages .meta {
        font-size: 0.85rem;
        color: var(--muted);
      }
      .passages blockquote {
        margin: 0.2rem 0 0;
        white-space: pre-wrap;
        font-size: 0.9rem;
      }
      .cited {
        border: 1px solid var(--accent);
        color: var(--accent-text);
        border-radius: 4px;
        padding: 0 0.3rem;
        font-size: 0.8rem;
      }
      .note {
        color: var(--muted);
        font-size: 0.85rem;
      }
    `,
  ];
  static override properties = {
    client: { attribute: false },
    lantern: { attribute: false },
    models: { attribute: false },
    active: { attribute: false },
    storeId: { state: true },
    rows: { state: true },
    progress: { state: true },
    dragging: { state: true },
    uploading: { state: true },
    asking: { state: true },
    answer: { state: true },
    error: { state: true },
    status: { state: true },
  };

  declare client: OpenAI | undefined;
  declare lantern: LocalAPI | undefined;
  /** The chat models the profile serves: the answer's model is picked from them. */
  declare models: string[];
  /** Whether the tab is shown: the store is looked up the first time it is, not on every page load. */
  declare active: boolean;
  declare storeId: string | undefined;
  declare rows: Row[];
  declare progress: Map<string, Progress>;
  declare dragging: boolean;
  declare uploading: boolean;
  declare asking: boolean;
  declare answer: Answer | undefined;
  declare error: string;
  declare status: string;
  /** Filenames by file ID: `files.retrieve` once per file. */
  #names = new Map<string, string>();
  #loaded = false;
  #poll: ReturnType<typeof setTimeout> | undefined;
  #listening: LocalAPI | undefined;

  constructor() {
    super();
    this.models = [];
    this.active = false;
    this.rows = [];
    this.progress = new Map();
    this.dragging = false;
    this.uploading = false;
    this.asking = false;
    this.error = '';
    this.status = '';
  }

  override disconnectedCallback() {
    super.disconnectedCallback();
    clearTimeout(this.#poll);
    this.#listening?.removeEventListener('indexing', this.#onIndexing);
    this.#listening = undefined;
  }

  override updated() {
    if (this.lantern && this.#listening !== this.lantern) {
      this.#listening?.removeEventListener('indexing', this.#onIndexing);
      this.lantern.addEventListener('indexing', this.#onIndexing);
      this.#listening = this.lantern;
    }
    if (this.active && this.client && this.lantern && !this.#loaded) {
      this.#loaded = true;
      void this.#open();
    }
  }

  /** A client whose requests the API tab does not show: the listing and polling behind the scenes. */
  #quiet(): OpenAI {
    return this.client!.withOptions({ fetch: this.lantern!.fetch });
  }

  #onIndexing = (event: Event) => {
    const { vectorStoreId, fileId, chunksDone, chunksTotal } = (event as LocalAPIEventMap['indexing']).detail;
    if (vectorStoreId !== this.storeId) return;
    this.progress = new Map(this.progress).set(fileId, { chunksDone, chunksTotal });
  };

  override render() {
    const pending = this.rows.filter((r) => r.status === 'in_progress' || r.status === 'uploading').length;
    const ready = this.rows.some((r) => r.status === 'completed');
    const status = this.status || (pending ? `Indexing ${pending} of ${this.rows.length} files…` : '');
    return html`
      <h2>Documents</h2>
      <p class="hint">
        Add documents, then ask about them: they are indexed in this browser, and the answer cites the passages it used.
      </p>
      <div
        class="drop ${this.dragging ? 'over' : ''}"
        @dragover=${(e: DragEvent) => (e.preventDefault(), (this.dragging = true))}
        @dragleave=${() => (this.dragging = false)}
        @drop=${this.#onDrop}
      >
        <label for="documents">Files to add (or drop them here)</label>
        <input
          id="documents"
          type="file"
          multiple
          accept=${ACCEPT}
          aria-describedby="documents-types"
          ?disabled=${!this.client}
          @change=${this.#onChoose}
        />
        <p class="note" id="documents-types">Text, Markdown, HTML, JSON, PDF and code files.</p>
        <p class="note">
          No file at hand?
          <button
            type="button"
            class="secondary"
            ?disabled=${!this.client || this.uploading || this.rows.some((r) => r.filename === EXAMPLE.name)}
            @click=${() => this.#add([new File([EXAMPLE.text], EXAMPLE.name, { type: 'text/markdown' })])}
          >
            Add an example document
          </button>
          (${EXAMPLE.name}), then ask the question below.
        </p>
      </div>
      ${this.#renderFiles()}
      <form @submit=${this.#ask}>
        <div class="grid" style="margin-bottom:0.5rem;grid-template-columns:minmax(12rem,20rem)">
          <div>
            <label for="answer-model">Chat model</label>
            <select id="answer-model">
              ${this.models.map((m) => html`<option value=${m}>${m}</option>`)}
            </select>
          </div>
        </div>
        <label for="question">Question</label>
        <!-- The example document's, in the words of the one sentence that answers it (see EXAMPLE). -->
        <input id="question" placeholder="e.g. How much are hotel nights reimbursed in Paris?" />
        <div class="row" style="margin-top:0.5rem">
          <button type="submit" ?disabled=${this.asking || !ready || !this.models.length}>Ask</button>
        </div>
      </form>
      <p class="status" role="status" aria-live="polite">${status}</p>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${this.answer ? this.#renderAnswer(this.answer) : nothing}
    `;
  }

  #renderFiles() {
    if (!this.rows.length) return html`<p class="note">No documents yet.</p>`;
    return html`<table class="files" aria-label="Documents in the store">
      <thead>
        <tr>
          <th scope="col">File</th>
          <th scope="col">Status</th>
          <th scope="col"><span class="visually-hidden">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        ${this.rows.map((row) => {
          const progress = this.progress.get(row.id);
          return html`<tr>
            <td>${row.filename}</td>
            <td>
              <span class="file-status">${row.status}</span>
              ${
                row.status === 'in_progress' && progress
                  ? html`<progress
                        max=${progress.chunksTotal}
                        .value=${progress.chunksDone}
                        aria-label=${`Indexing ${row.filename}`}
                      ></progress>
                      <span class="note">${progress.chunksDone} of ${progress.chunksTotal} chunks</span>`
                  : nothing
              }
              ${row.error ? html`<div class="error">${row.error}</div>` : nothing}
            </td>
            <td>
              <button
                type="button"
                class="secondary"
                aria-label=${`Remove ${row.filename}`}
                ?disabled=${row.status === 'uploading'}
                @click=${() => this.#remove(row)}
              >
                Remove
              </button>
            </td>
          </tr>`;
        })}
      </tbody>
    </table>`;
  }

  #renderAnswer(answer: Answer) {
    const cited = new Set(answer.citations.map((c) => c.file_id));
    return html`<h3>Answer${answer.done ? '' : ' (streaming)'}</h3>
      <p class="answer" aria-busy=${!answer.done}>${answer.text}</p>
      ${
        answer.citations.length
          ? html`<h3 id="citations">Citations</h3>
              <ul aria-labelledby="citations">
                ${answer.citations.map((c) => html`<li>${c.filename}</li>`)}
              </ul>`
          : nothing
      }
      ${
        answer.done
          ? html`<h3 id="passages">Passages found</h3>
              ${
                answer.passages.length
                  ? html`<ol class="passages" aria-labelledby="passages">
                      ${answer.passages.map(
                        (p) =>
                          html`<li>
                            <span class="meta"
                              ><strong>${p.filename}</strong> · score ${(p.score ?? 0).toFixed(2)}
                              ${cited.has(p.file_id!) ? html`<span class="cited">cited</span>` : nothing}</span
                            >
                            <blockquote>${p.text}</blockquote>
                          </li>`,
                      )}
                    </ol>`
                  : html`<p class="note">No passage matched.</p>`
              }`
          : nothing
      }`;
  }

  /** Finds the stored vector store again (a 404: it is gone, and the next upload makes one) and lists its files. */
  async #open() {
    const id = localStorage.getItem(STORE_KEY) ?? undefined;
    if (!id) return;
    try {
      await this.#quiet().vectorStores.retrieve(id);
      this.storeId = id;
      await this.#refresh();
    } catch (error) {
      if (notFound(error)) localStorage.removeItem(STORE_KEY);
      else this.error = (error as Error).message;
    }
  }

  /** The tab's vector store, made on first use. */
  async #store(): Promise<string> {
    if (this.storeId) return this.storeId;
    const store = await this.client!.vectorStores.create({ name: 'Playground documents' });
    localStorage.setItem(STORE_KEY, store.id);
    this.storeId = store.id;
    return store.id;
  }

  /** The store's files and their statuses; polled again in a second while one is still being indexed. */
  async #refresh() {
    clearTimeout(this.#poll);
    const id = this.storeId;
    if (!id) return;
    const quiet = this.#quiet();
    const rows: Row[] = [];
    for await (const file of quiet.vectorStores.files.list(id, { limit: 100 })) {
      let filename = this.#names.get(file.id);
      if (filename === undefined) {
        filename = await quiet.files.retrieve(file.id).then(
          (f) => f.filename,
          () => file.id,
        );
        this.#names.set(file.id, filename);
      }
      rows.push({
        id: file.id,
        filename,
        status: file.status,
        ...(file.last_error && { error: file.last_error.message }),
      });
    }
    if (id !== this.storeId) return;
    // Uploads not yet attached stay listed as uploading.
    this.rows = [...this.rows.filter((r) => r.status === 'uploading' && !rows.some((f) => f.id === r.id)), ...rows];
    if (rows.some((r) => r.status === 'in_progress')) {
      this.#poll = setTimeout(() => void this.#refresh().catch((e: Error) => (this.error = e.message)), POLL_MS);
    } else if (!this.uploading && this.status.startsWith('Indexing')) {
      const failed = rows.filter((r) => r.status === 'failed').length;
      const indexed = rows.filter((r) => r.status === 'completed').length;
      this.status = `${indexed} of ${rows.length} files indexed${failed ? `, ${failed} failed` : ''}.`;
    }
  }

  #onChoose(event: Event) {
    const input = event.target as HTMLInputElement;
    const files = [...(input.files ?? [])];
    input.value = '';
    void this.#add(files);
  }

  #onDrop(event: DragEvent) {
    event.preventDefault();
    this.dragging = false;
    void this.#add([...(event.dataTransfer?.files ?? [])]);
  }

  /** Uploads each file and attaches it to the store (a new store if the old one is gone), then watches its indexing. */
  async #add(files: File[]) {
    if (!this.client || !files.length) return;
    this.uploading = true;
    this.error = '';
    const pending: Row[] = files.map((f, i) => ({
      id: `upload-${Date.now()}-${i}`,
      filename: f.name,
      status: 'uploading',
    }));
    this.rows = [...pending, ...this.rows];
    try {
      for (const [i, file] of files.entries()) {
        this.status = `Uploading ${file.name} (${kilobytes(file.size)})…`;
        const uploaded = await this.client.files.create({ file, purpose: 'assistants' });
        this.#names.set(uploaded.id, uploaded.filename);
        try {
          await this.client.vectorStores.files.create(await this.#store(), { file_id: uploaded.id });
        } catch (error) {
          if (!notFound(error)) throw error;
          // The store was deleted elsewhere: a new one.
          this.storeId = undefined;
          this.rows = this.rows.filter((r) => r.status === 'uploading');
          await this.client.vectorStores.files.create(await this.#store(), { file_id: uploaded.id });
        }
        this.rows = this.rows.map((r) => (r === pending[i] ? { ...r, id: uploaded.id, status: 'in_progress' } : r));
      }
      this.status = `Indexing ${files.length === 1 ? files[0]!.name : `${files.length} files`}…`;
    } catch (error) {
      this.error = (error as Error).message;
      this.status = 'The upload failed.';
    } finally {
      this.uploading = false;
      this.rows = this.rows.filter((r) => r.status !== 'uploading');
      await this.#refresh().catch((e: Error) => (this.error = e.message));
    }
  }

  /** Detaches the file from the store and deletes it. */
  async #remove(row: Row) {
    if (!this.client || !this.storeId) return;
    this.error = '';
    try {
      await this.client.vectorStores.files.delete(row.id, { vector_store_id: this.storeId });
      await this.client.files.delete(row.id);
      this.status = `Removed ${row.filename}.`;
    } catch (error) {
      if (!notFound(error)) this.error = (error as Error).message;
    }
    const progress = new Map(this.progress);
    progress.delete(row.id);
    this.progress = progress;
    this.rows = this.rows.filter((r) => r.id !== row.id);
    await this.#refresh().catch((e: Error) => (this.error = e.message));
  }

  /** Asks with `file_search` over the store: the answer streams in, then its citations and the passages found. */
  async #ask(event: Event) {
    event.preventDefault();
    const question = (this.renderRoot.querySelector('#question') as HTMLInputElement).value.trim();
    if (!this.client || !this.storeId || !question || this.asking) return;
    const model = (this.renderRoot.querySelector('#answer-model') as HTMLSelectElement).value || this.models[0]!;
    this.asking = true;
    this.error = '';
    this.status = 'Searching the documents and answering…';
    let answer: Answer = { text: '', done: false, citations: [], passages: [] };
    this.answer = answer;
    const update = (changes: Partial<Answer>) => (this.answer = answer = { ...answer, ...changes });
    try {
      const stream = await this.client.responses.create({
        model,
        input: question,
        tools: [{ type: 'file_search', vector_store_ids: [this.storeId] }],
        include: ['file_search_call.results'],
        stream: true,
      });
      for await (const e of stream) {
        if (e.type === 'response.output_text.delta') update({ text: answer.text + e.delta });
        else if (e.type === 'response.output_text.annotation.added') {
          const citation = e.annotation as { type: string; file_id: string; filename: string };
          if (citation.type === 'file_citation' && !answer.citations.some((c) => c.file_id === citation.file_id))
            update({ citations: [...answer.citations, { file_id: citation.file_id, filename: citation.filename }] });
        } else if (e.type === 'response.output_item.done' && e.item.type === 'file_search_call')
          update({ passages: e.item.results ?? [] });
        else if (e.type === 'response.completed') this.#settle(e.response, update);
        else if (e.type === 'response.failed' || e.type === 'response.incomplete') this.#settle(e.response, update);
        else if (e.type === 'error') throw new Error(e.message);
      }
      update({ done: true });
      const cited = answer.citations.length;
      this.status = `Answered from ${answer.passages.length} passages, with ${cited} ${cited === 1 ? 'citation' : 'citations'}.`;
    } catch (error) {
      this.error = (error as Error).message;
      this.status = 'The question failed.';
      update({ done: true });
    } finally {
      this.asking = false;
    }
  }

  /** The final response's text, citations and search results, which the events have already brought. */
  #settle(response: OpenAI.Responses.Response, update: (changes: Partial<Answer>) => void) {
    const citations = new Map<string, { file_id: string; filename: string }>();
    const changes: Partial<Answer> = {};
    for (const item of response.output) {
      if (item.type === 'file_search_call' && item.results) changes.passages = item.results;
      if (item.type !== 'message') continue;
      for (const part of item.content) {
        if (part.type !== 'output_text') continue;
        changes.text = part.text;
        for (const a of part.annotations)
          if (a.type === 'file_citation') citations.set(a.file_id, { file_id: a.file_id, filename: a.filename });
      }
    }
    if (citations.size) changes.citations = [...citations.values()];
    if (response.error) this.error = response.error.message;
    update(changes);
  }
}

customElements.define('documents-panel', DocumentsPanel);
