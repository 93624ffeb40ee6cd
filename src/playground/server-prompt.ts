import { css, html, LitElement, nothing } from 'lit';
import { allowOnce, rememberServer, type ServerChoice } from './server-consent.ts';
import { panelStyles } from './styles.ts';

/**
 * The question the playground asks before it sends any chat to a server its URL names: the server's origin (what a
 * person can judge), its URL and model, and the choice. Until they answer yes, the page runs this browser's models
 * only (main.ts left the server out of every chain) and says so here. Yes reloads the page with the server in the
 * chains, for that load only unless "Remember this server" is ticked; no takes the server out of the URL.
 */
export class ServerPrompt extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .card {
        border-color: var(--accent);
        margin-bottom: 1rem;
      }
      h2 {
        margin-bottom: 0.5rem;
      }
      .origin {
        font-size: 1.05rem;
        word-break: break-all;
      }
      .choice {
        display: flex;
        gap: 0.4rem;
        align-items: center;
        margin: 0.5rem 0;
      }
      .choice input {
        width: auto;
      }
      .choice label {
        margin: 0;
      }
    `,
  ];
  static override properties = {
    server: { attribute: false },
    declined: { state: true },
  };

  /** The server the URL names, not (yet) allowed. */
  declare server: ServerChoice | undefined;
  declare declined: boolean;

  constructor() {
    super();
    this.declined = false;
  }

  override render() {
    const server = this.server;
    if (!server) return nothing;
    if (this.declined) {
      return html`<p class="hint" role="status">
        Chats stay in this browser: nothing was sent to <strong>${server.origin}</strong>.
      </p>`;
    }
    const here = server.origin === location.origin;
    return html`<section class="card" role="region" aria-labelledby="server-prompt-title">
      <h2 id="server-prompt-title">Send your chats to another server?</h2>
      <p>
        This link asks the playground to send your conversations to
        <strong class="origin" id="server-origin">${server.origin}</strong>${here ? ' (this site itself)' : ''}:
        <code>${server.shown}</code>${server.model ? html`, model <code>${server.model}</code>` : nothing},
        ${server.policy}.
      </p>
      <p role="status">
        Nothing has been sent there. Until you say yes, chats stay in this browser, answered by its own models.
      </p>
      <div class="choice">
        <input id="remember-server" type="checkbox" />
        <label for="remember-server">Remember this server</label>
      </div>
      <div class="row">
        <button type="button" @click=${this.#allow}>Yes, use ${server.origin}</button>
        <button type="button" class="secondary" @click=${this.#decline}>No, stay in this browser</button>
      </div>
    </section>`;
  }

  #allow() {
    const server = this.server!;
    const remember = (this.renderRoot.querySelector('#remember-server') as HTMLInputElement).checked;
    if (remember) rememberServer(server.baseURL);
    else allowOnce(server.baseURL);
    // The chains are fixed when Lantern starts: the next load starts it with the server in them.
    location.reload();
  }

  #decline() {
    // Out of the URL too: a reload or a bookmark of this page does not ask again for a server already refused.
    const url = new URL(location.href);
    for (const name of ['remote', 'remoteModel', 'policy']) url.searchParams.delete(name);
    history.replaceState(history.state, '', url);
    this.declined = true;
  }
}

customElements.define('server-prompt', ServerPrompt);
