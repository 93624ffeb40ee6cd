import { css } from 'lit';

/**
 * The playground's look, shared by every panel: colours come from custom properties set on the document (light and
 * dark themes in index.html), which cross shadow roots.
 */
export const panelStyles = css`
  :host {
    display: block;
    color: var(--text);
  }
  h2 {
    font-size: 1.15rem;
    margin: 0 0 0.75rem;
  }
  h3 {
    font-size: 1rem;
    margin: 1rem 0 0.5rem;
  }
  p.hint {
    color: var(--muted);
    margin: 0 0 0.75rem;
  }
  label {
    display: block;
    font-weight: 600;
    font-size: 0.85rem;
    margin-bottom: 0.2rem;
  }
  input,
  textarea,
  select {
    font: inherit;
    color: inherit;
    background: var(--field);
    border: 1px solid var(--border);
    border-radius: 6px;
    padding: 0.4rem 0.5rem;
    width: 100%;
    box-sizing: border-box;
  }
  textarea {
    resize: vertical;
  }
  button {
    font: inherit;
    border: 1px solid var(--accent);
    background: var(--accent);
    color: var(--on-accent);
    border-radius: 6px;
    padding: 0.4rem 0.9rem;
    cursor: pointer;
  }
  button.secondary {
    background: transparent;
    color: var(--accent-text);
  }
  button:disabled {
    opacity: 0.5;
    cursor: default;
  }
  :focus-visible {
    outline: 3px solid var(--focus);
    outline-offset: 2px;
  }
  .row {
    display: flex;
    gap: 0.5rem;
    align-items: flex-end;
    flex-wrap: wrap;
  }
  .grid {
    display: grid;
    gap: 0.75rem;
    grid-template-columns: repeat(auto-fill, minmax(9rem, 1fr));
  }
  .card {
    border: 1px solid var(--border);
    border-radius: 8px;
    padding: 0.75rem;
    background: var(--surface);
  }
  .error {
    color: var(--danger);
    white-space: pre-wrap;
  }
  code,
  pre {
    font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
    font-size: 0.85rem;
  }
  pre {
    background: var(--code);
    border: 1px solid var(--border);
    border-radius: 6px;
    padding: 0.6rem;
    overflow: auto;
    max-height: 24rem;
    white-space: pre-wrap;
    word-break: break-word;
  }
  table {
    border-collapse: collapse;
  }
  /*
   * A table wider than a narrow screen scrolls inside its own box, rather than widening the page; positioned, so that
   * the box also clips what is positioned inside it (a visually hidden header).
   */
  .scroll-x {
    position: relative;
    max-width: 100%;
    overflow-x: auto;
  }
  /* The route list scrolls within the panel rather than widening a narrow screen. */
  table.routes {
    display: block;
    max-width: 100%;
    overflow-x: auto;
    font-size: 0.85rem;
  }
  table.routes code {
    word-break: break-word;
  }
  th,
  td {
    border: 1px solid var(--border);
    padding: 0.3rem 0.5rem;
    text-align: left;
  }
  .visually-hidden {
    position: absolute;
    width: 1px;
    height: 1px;
    overflow: hidden;
    clip: rect(0 0 0 0);
    white-space: nowrap;
  }
`;
