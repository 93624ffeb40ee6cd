import { css, html, LitElement, nothing } from 'lit';
import type OpenAI from 'openai';
import { cosineMatrix, heatColour } from './similarity.ts';
import { panelStyles } from './styles.ts';

const EXAMPLES = [
  'The cat sat on the mat.',
  'A kitten is sitting on the sofa.',
  'Offline search finds similar sentences.',
  'hello world',
];

/** Several texts through `/v1/embeddings`, and their cosine similarities as a heatmap (a table, readable as such). */
export class EmbeddingsPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .heatmap td {
        text-align: center;
        min-width: 3.5rem;
        font-variant-numeric: tabular-nums;
      }
      .heatmap th {
        max-width: 12rem;
        overflow: hidden;
        text-overflow: ellipsis;
        white-space: nowrap;
        font-weight: 500;
        font-size: 0.85rem;
      }
      .scroll {
        overflow-x: auto;
        margin-top: 1rem;
      }
    `,
  ];
  static override properties = {
    client: { attribute: false },
    texts: { state: true },
    matrix: { state: true },
    error: { state: true },
    busy: { state: true },
  };

  declare client: OpenAI | undefined;
  declare texts: string[];
  declare matrix: number[][] | undefined;
  declare error: string;
  declare busy: boolean;

  constructor() {
    super();
    this.texts = [];
    this.error = '';
    this.busy = false;
  }

  override render() {
    return html`
      <h2>Embeddings</h2>
      <p class="hint">One text per line; each becomes a vector from <code>jade-mole-4</code>.</p>
      <form @submit=${this.#embed}>
        <label for="texts">Texts</label>
        <textarea id="texts" rows="5" .value=${EXAMPLES.join('\n')}></textarea>
        <div class="row" style="margin-top:0.5rem">
          <button type="submit" ?disabled=${this.busy || !this.client}>Compare</button>
        </div>
      </form>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${this.matrix ? this.#heatmap(this.matrix) : nothing}
    `;
  }

  #heatmap(matrix: number[][]) {
    return html`<div class="scroll">
      <table class="heatmap" aria-label="Cosine similarity of every pair of texts">
        <caption class="visually-hidden">
          Cosine similarity, from −1 (opposite) to 1 (same meaning)
        </caption>
        <thead>
          <tr>
            <td></td>
            ${this.texts.map((t, i) => html`<th scope="col" title=${t}>${i + 1}. ${t}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${matrix.map(
            (row, i) =>
              html`<tr>
                <th scope="row" title=${this.texts[i]!}>${i + 1}. ${this.texts[i]}</th>
                ${row.map((value) => {
                  const colour = heatColour(value);
                  return html`<td style="background:${colour.background};color:${colour.text}">
                    ${value.toFixed(2)}
                  </td>`;
                })}
              </tr>`,
          )}
        </tbody>
      </table>
    </div>`;
  }

  async #embed(event: Event) {
    event.preventDefault();
    if (!this.client) return;
    const texts = (this.renderRoot.querySelector('#texts') as HTMLTextAreaElement).value
      .split('\n')
      .map((t) => t.trim())
      .filter(Boolean);
    if (!texts.length) return;
    this.busy = true;
    this.error = '';
    try {
      const response = await this.client.embeddings.create({ model: 'jade-mole-4', input: texts });
      this.texts = texts;
      this.matrix = cosineMatrix(response.data.map((d) => d.embedding));
    } catch (error) {
      this.error = (error as Error).message;
    } finally {
      this.busy = false;
    }
  }
}

customElements.define('embeddings-panel', EmbeddingsPanel);
