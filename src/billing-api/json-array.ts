/**
 * Splits the text of a JSON array into the exact text of each element, without parsing and
 * re-serialising them: a re-serialised body would lose what JSON.parse cannot keep (number
 * spelling such as 1.50, integers beyond 2^53, duplicate keys), and the loader stores bodies as
 * fetched. Throws SyntaxError unless `text` is a JSON array.
 */
export function splitJsonArray(text: string): string[] {
  if (!Array.isArray(JSON.parse(text))) throw new SyntaxError('expected a JSON array');
  // The text is valid JSON from here on, so tracking strings and nesting depth is enough.
  const items: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  const take = (end: number): void => {
    const item = text.slice(start, end).trim();
    if (item !== '') items.push(item);
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
    } else if (ch === '[' || ch === '{') {
      depth++;
      if (depth === 1) start = i + 1;
    } else if (ch === ']' || ch === '}') {
      if (depth === 1) take(i);
      depth--;
    } else if (ch === ',' && depth === 1) {
      take(i);
      start = i + 1;
    }
  }
  return items;
}
