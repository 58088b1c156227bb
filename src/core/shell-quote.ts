// Words for a POSIX shell: what genjob writes into a script or a remote command line, and the commands
// it suggests to the user, read back by a shell exactly as they were meant.

/** Single-quotes one word: 'it'\''s' (nothing inside is expanded). */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The word as typed at a prompt: bare when the shell would read it unchanged, quoted otherwise. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : shellQuote(word);
}
