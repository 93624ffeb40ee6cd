import { describe, expect, it } from 'vitest';
import { StopSequenceMatcher } from './stop-sequences.ts';

/** Feeds `pieces` one by one and returns what was emitted and whether a stop matched. */
function run(stops: string[], pieces: string[]) {
  const matcher = new StopSequenceMatcher(stops);
  let out = '';
  for (const piece of pieces) {
    const { text, stopped } = matcher.push(piece);
    out += text;
    if (stopped) return { out, stopped: true };
  }
  return { out: out + matcher.flush(), stopped: false };
}

/** Every way of cutting `text` into two or three pieces. */
function splits(text: string): string[][] {
  const out: string[][] = [[text]];
  for (let i = 0; i <= text.length; i++) {
    out.push([text.slice(0, i), text.slice(i)]);
    for (let j = i; j <= text.length; j++) out.push([text.slice(0, i), text.slice(i, j), text.slice(j)]);
  }
  return out;
}

describe('StopSequenceMatcher', () => {
  it('cuts at a stop sequence however the text is split into tokens', () => {
    for (const pieces of splits('1, 2, 3, 4, 5, 6')) {
      expect(run([', 4'], pieces)).toEqual({ out: '1, 2, 3', stopped: true });
    }
  });

  it('never emits any part of a stop sequence before it is known not to match', () => {
    const matcher = new StopSequenceMatcher(['\n\nUser:']);
    expect(matcher.push('Hi!\n')).toEqual({ text: 'Hi!', stopped: false });
    expect(matcher.push('\nUs')).toEqual({ text: '', stopped: false });
    expect(matcher.push('er:')).toEqual({ text: '', stopped: true });
  });

  it('releases held text once it can no longer start a stop sequence', () => {
    const matcher = new StopSequenceMatcher(['STOP']);
    expect(matcher.push('a ST')).toEqual({ text: 'a ', stopped: false });
    expect(matcher.push('ART')).toEqual({ text: 'START', stopped: false });
  });

  it('stops at the earliest of several stop sequences', () => {
    for (const pieces of splits('abcdef')) {
      expect(run(['def', 'bc', 'cd'], pieces)).toEqual({ out: 'a', stopped: true });
    }
  });

  it('gives back held text at the end when no stop sequence matched', () => {
    for (const pieces of splits('the end is ne')) {
      expect(run(['near'], pieces)).toEqual({ out: 'the end is ne', stopped: false });
    }
  });

  it('handles stop sequences that overlap themselves and non-ASCII text', () => {
    for (const pieces of splits('aaab👋c')) expect(run(['aab'], pieces)).toEqual({ out: 'a', stopped: true });
    for (const pieces of splits('héllo 👋 wörld'))
      expect(run(['👋'], pieces)).toEqual({ out: 'héllo ', stopped: true });
  });

  it('passes text straight through without stop sequences', () => {
    const matcher = new StopSequenceMatcher([]);
    expect(matcher.push('anything')).toEqual({ text: 'anything', stopped: false });
    expect(matcher.flush()).toBe('');
  });
});
