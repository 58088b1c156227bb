export async function hookInstall(_o: unknown): Promise<never> {
  throw new Error('todo');
}
