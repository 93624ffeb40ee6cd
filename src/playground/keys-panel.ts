import { css, html, LitElement, nothing } from 'lit';
import type { KeyInfo, LocalAPI } from '../client/index.ts';
import { panelStyles } from './styles.ts';

/** Ages a person picks for "unused for", in days. */
const STALE_DAYS = [1, 7, 30, 90] as const;

/**
 * API keys: issue one (shown once, with a copy button), list them with when each was last used, revoke one, or revoke
 * every key unused for a while (an app that issued a key on every load leaves many).
 */
export class KeysPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .issued {
        margin: 1rem 0;
        border-color: var(--accent);
      }
      .issued code {
        word-break: break-all;
      }
      td.actions {
        text-align: right;
      }
      .revoked {
        color: var(--muted);
      }
    `,
  ];
  static override properties = {
    keys: { attribute: false },
    list: { state: true },
    issued: { state: true },
    copied: { state: true },
    message: { state: true },
  };

  declare keys: LocalAPI['keys'] | undefined;
  declare list: KeyInfo[];
  declare issued: { key: string; name: string } | undefined;
  declare copied: boolean;
  declare message: string;

  constructor() {
    super();
    this.list = [];
    this.copied = false;
    this.message = '';
  }

  override updated(changed: Map<string, unknown>) {
    if (changed.has('keys')) void this.#refresh();
  }

  override render() {
    return html`
      <h2>API keys</h2>
      <p class="hint">
        Keys open this origin's <code>/v1</code> to apps on this device, and any script of this site can issue one. Only
        their hashes are stored (and an app's own key, from <code>keys.forApp</code>, in its localStorage).
      </p>
      <form class="row" @submit=${this.#issue}>
        <div style="flex:1">
          <label for="key-name">Name</label>
          <input id="key-name" placeholder="my app" required />
        </div>
        <button type="submit">Issue a key</button>
      </form>
      ${
        this.issued
          ? html`<div class="card issued" role="region" aria-label="New key">
              <p><strong>${this.issued.name}</strong>: copy this key now. It is shown only once.</p>
              <p><code id="new-key">${this.issued.key}</code></p>
              <div class="row">
                <button type="button" @click=${this.#copy}>${this.copied ? 'Copied' : 'Copy'}</button>
                <button type="button" class="secondary" @click=${() => (this.issued = undefined)}>Done</button>
              </div>
            </div>`
          : nothing
      }
      <h3>Issued keys</h3>
      ${
        this.list.length === 0
          ? html`<p class="hint">No keys yet.</p>`
          : html`<div class="scroll-x">
                <table aria-label="Issued keys">
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Key</th>
                      <th scope="col">Created</th>
                      <th scope="col">Last used</th>
                      <th scope="col">Status</th>
                      <th scope="col"><span class="visually-hidden">Actions</span></th>
                    </tr>
                  </thead>
                  <tbody>
                    ${this.list.map(
                      (k) =>
                        html`<tr class=${k.revokedAt ? 'revoked' : ''}>
                          <td>${k.name}</td>
                          <td><code>${k.prefix}</code></td>
                          <td>${new Date(k.createdAt * 1000).toLocaleString()}</td>
                          <td>${k.lastUsedAt ? new Date(k.lastUsedAt * 1000).toLocaleString() : 'never'}</td>
                          <td>${k.revokedAt ? 'revoked' : 'active'}</td>
                          <td class="actions">
                            ${
                              k.revokedAt
                                ? nothing
                                : html`<button
                                    type="button"
                                    class="secondary"
                                    aria-label=${`Revoke ${k.name}`}
                                    @click=${() => this.#revoke(k.id)}
                                  >
                                    Revoke
                                  </button>`
                            }
                          </td>
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>
              <form class="row" style="margin-top:0.75rem" @submit=${this.#revokeStale}>
                <div>
                  <label for="stale-days">Unused for</label>
                  <select id="stale-days">
                    ${STALE_DAYS.map((days) => html`<option value=${days}>${days === 1 ? '1 day' : `${days} days`}</option>`)}
                  </select>
                </div>
                <button type="submit" class="secondary">Revoke unused keys</button>
              </form>
              <p class="hint" role="status">${this.message}</p>`
      }
    `;
  }

  async #refresh() {
    this.list = ((await this.keys?.list()) ?? []).sort((a, b) => b.createdAt - a.createdAt);
  }

  async #issue(event: Event) {
    event.preventDefault();
    const input = this.renderRoot.querySelector('#key-name') as HTMLInputElement;
    const name = input.value.trim();
    if (!this.keys || !name) return;
    const { key } = await this.keys.issue(name);
    input.value = '';
    this.copied = false;
    this.issued = { key, name };
    await this.#refresh();
  }

  async #copy() {
    if (!this.issued) return;
    await navigator.clipboard.writeText(this.issued.key);
    this.copied = true;
  }

  /** Revokes every key not used in the chosen number of days (a key never used counts from its creation). */
  async #revokeStale(event: Event) {
    event.preventDefault();
    const days = Number((this.renderRoot.querySelector('#stale-days') as HTMLSelectElement).value);
    const revoked = (await this.keys?.revokeUnusedSince(new Date(Date.now() - days * 24 * 3600 * 1000))) ?? [];
    this.message = revoked.length
      ? `Revoked ${revoked.length} ${revoked.length === 1 ? 'key' : 'keys'}: ${revoked.map((k) => k.name).join(', ')}.`
      : 'No key was unused for that long.';
    await this.#refresh();
  }

  async #revoke(id: string) {
    await this.keys?.revoke(id);
    await this.#refresh();
  }
}

customElements.define('keys-panel', KeysPanel);
