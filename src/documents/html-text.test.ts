import { describe, expect, it } from 'vitest';
import { htmlToText } from './html-text.ts';

describe('htmlToText', () => {
  it('keeps the title and the body, blocks on lines of their own, paragraphs apart', () => {
    const html = `<!DOCTYPE html>
      <html><head><meta charset="utf-8"><title>Release notes</title>
        <link rel="stylesheet" href="a.css"></head>
      <body>
        <h1>Version 2</h1>
        <p>Faster   chunking,
           and <b>better</b> <i>search</i>.</p>
        <ul><li>One</li><li>Two</li></ul>
        <div>A div</div><div>Another</div>
      </body></html>`;
    expect(htmlToText(html)).toBe(
      'Release notes\n\nVersion 2\n\nFaster chunking, and better search.\n\nOne\nTwo\n\nA div\nAnother',
    );
  });

  it('drops scripts, styles, templates, comments, menus and inline SVG, even when they hold markup', () => {
    const html = `<p>Before</p>
      <script>if (a < b) document.write('<svg><p>not text</p>');</script>
      <style>p { color: red } /* </p> */</style>
      <template><p>Template</p></template>
      <!-- <p>A comment</p> -->
      <nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
      <svg viewBox="0 0 1 1"><text>Logo</text></svg>
      <noscript>Enable JavaScript</noscript>
      <SCRIPT type="module">console.log("</p>")</SCRIPT >
      <p>After</p>`;
    expect(htmlToText(html)).toBe('Before\n\nAfter');
  });

  it('turns <br> into line breaks, two of them into a blank line', () => {
    expect(htmlToText('<p>Roses are red,<br>violets are blue.<br/><br />Sugar is sweet.</p>')).toBe(
      'Roses are red,\nviolets are blue.\n\nSugar is sweet.',
    );
  });

  it('decodes named and numeric character references, and leaves unknown names as written', () => {
    expect(htmlToText('<p>Caf&eacute; &amp; cr&egrave;me&nbsp;br&ucirc;l&eacute;e &copy; 2024</p>')).toBe(
      'Café & crème brûlée © 2024',
    );
    expect(htmlToText('&#72;&#x69;&#X21; &#128512; &lt;tag&gt; &quot;q&quot; &apos;a&apos;')).toBe(
      'Hi! 😀 <tag> "q" \'a\'',
    );
    expect(htmlToText('it&#146;s &#150; &#0; &#x110000; &unknown; &amp AT&T')).toBe(
      'it’s – \ufffd \ufffd &unknown; &amp AT&T',
    );
  });

  it('keeps the whitespace of <pre>, but for its first newline', () => {
    const html = '<p>Code:</p><pre>\nfunction f() {\n    return  1;\n}\n</pre><p>Done.</p>';
    expect(htmlToText(html)).toBe('Code:\n\nfunction f() {\n    return  1;\n}\n\nDone.');
  });

  it('writes table rows as lines, cells apart by a bar', () => {
    const html = '<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ada</td><td>36</td></tr></table><p>End</p>';
    expect(htmlToText(html)).toBe('Name | Age\nAda | 36\n\nEnd');
  });

  it('reads attributes holding > and a lone < as text', () => {
    expect(htmlToText('<a title="a > b" href=\'x>y\'>link</a> and 1 < 2 <3')).toBe('link and 1 < 2 <3');
  });

  it('ends in the middle of a tag or comment without failing', () => {
    expect(htmlToText('<p>Text</p><!-- unclosed')).toBe('Text');
    expect(htmlToText('<p>Text</p><a href="unclosed>more')).toBe('Text');
    expect(htmlToText('<p>Text<script>never closed')).toBe('Text');
    expect(htmlToText('')).toBe('');
  });
});
