/** Parses a JSON textarea: undefined for empty, or the value; throws a message to show on its field. */
export function parseJsonField(text: string, what = 'This'): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not valid JSON: ${(e as Error).message}`);
  }
}
