import { html, LitElement, nothing } from 'lit';
import { fetchSnippet, ROUTES, sdkSnippet, type SnippetProfile } from './code-snippets.ts';
import type { Exchange } from './recording-fetch.ts';
import { panelStyles } from './styles.ts';

/** A body as the view shows it: JSON indented, text as it is, and a multipart body's fields one a line, as sent. */
function shown(body: unknown, multipart = false): string {
  if (body === undefined) return '';
  if (typeof body === 'string') return body;
  if (multipart) {
    return Object.entries(body as Record<string, string | string[]>)
      .flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v) => `${name}: ${v}`))
      .join('\n');
  }
  return JSON.stringify(body, null, 2);
}

/** Every route of the API and the openai SDK call that makes it, folded away until asked for. */
const routeList = html`<details>
  <summary>Every route, with its openai SDK call</summary>
  <table class="routes">
    <thead>
      <tr>
        <th scope="col">Route</th>
        <th scope="col">openai SDK</th>
      </tr>
    </thead>
    <tbody>
      ${ROUTES.map(
        (route) =>
          html`<tr>
            <td><code>${route.method} ${route.path}</code></td>
            <td><code>${route.sdk}</code></td>
          </tr>`,
      )}
    </tbody>
  </table>
</details>`;

/** The last request the playground made: the code that makes it, and the raw request and response, events included. */
export class ApiPanel extends LitElement {
  static override styles = [panelStyles];
  static override properties = { exchange: { attribute: false }, profile: { attribute: false } };

  declare exchange: Exchange | undefined;
  /** The models the page runs: the code starts Lantern on the same ones. */
  declare profile: SnippetProfile;

  constructor() {
    super();
    this.profile = 'bundled';
  }

  override render() {
    const x = this.exchange;
    if (!x)
      return html`<h2>API</h2>
        <p class="hint">
          Chat, compare embeddings, transcribe, speak or ask your documents: the request shows up here.
        </p>
        ${routeList}`;
    const request = { method: x.method, path: x.path, body: x.body };
    return html`
      <h2>API: <code>${x.method} ${x.path}</code></h2>
      <p class="hint">
        Each is a whole <code>src/main.ts</code> of the README's quick start app: paste it there and it runs, on the
        same models as this page.
      </p>
      <h3>With the openai SDK</h3>
      <pre tabindex="0" aria-label="openai SDK code"><code>${sdkSnippet(request, this.profile)}</code></pre>
      <h3>With fetch</h3>
      <pre tabindex="0" aria-label="fetch code"><code>${fetchSnippet(request, this.profile)}</code></pre>
      <h3>Request</h3>
      <pre tabindex="0" aria-label="Raw request"><code>${x.method} ${x.path}
${Object.entries(x.headers)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n')}

${shown(x.body, x.headers['content-type']?.startsWith('multipart/form-data'))}</code></pre>
      <h3>Response${x.status === undefined ? ' (waiting)' : ` ${x.status}`}</h3>
      ${
        x.responseHeaders
          ? html`<pre tabindex="0" aria-label="Response headers"><code>${Object.entries(x.responseHeaders)
              .map(([k, v]) => `${k}: ${v}`)
              .join('\n')}</code></pre>`
          : nothing
      }
      ${
        x.events
          ? html`<p class="hint">${x.events.length} server-sent events</p>
              <pre
                tabindex="0"
                aria-label="Server-sent events"
              ><code>${x.events.map((e) => `data: ${e}`).join('\n\n')}</code></pre>`
          : x.response !== undefined
            ? html`<pre tabindex="0" aria-label="Response body"><code>${shown(x.response)}</code></pre>`
            : nothing
      }
      ${routeList}
    `;
  }
}

customElements.define('api-panel', ApiPanel);
