// An environment variable set but blank reads as unset: an environment file's `NAME=` means "not set", and
// as a path an empty string names the current directory (a cache or config dir made in the repository).

/** The variable's value, or undefined when it is unset or holds only white space. */
export function envValue(value: string | undefined): string | undefined {
  return value?.trim() ? value : undefined;
}
