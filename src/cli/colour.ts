// Colour on a terminal only: --color=always|never wins, then NO_COLOR (any non-empty value turns
// colour off, https://no-color.org), then FORCE_COLOR, then auto = stdout is a TTY.
export type ColorMode = 'auto' | 'always' | 'never';

export function useColour(mode: ColorMode = 'auto', env = process.env, tty = process.stdout.isTTY): boolean {
  if (mode === 'always') return true;
  if (mode === 'never') return false;
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR && env.FORCE_COLOR !== '0') return true;
  return tty === true;
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof CODES;

/** A painter: `paint('red', text)` when colour is on, the text unchanged when off. */
export function painter(on: boolean): (c: Colour, text: string) => string {
  return on ? (c, text) => `\u001b[${CODES[c]}m${text}\u001b[0m` : (_c, text) => text;
}
