/** The error `fn` throws (the test fails when it throws none). */
export function thrown<E = Error>(fn: () => unknown): E {
  try {
    fn();
  } catch (err) {
    return err as E;
  }
  throw new Error('expected a throw');
}
