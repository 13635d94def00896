/** A datetime-local input's value (the person's local time) as the API's date-time (UTC), or undefined. */
export function isoOf(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
