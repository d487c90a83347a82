import {
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLError,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { ensureGraphQLError, parseFailed, validationFailed } from './errors';

/**
 * Documents by their text, parsed and validated once (graphql-js's rules and ours) and kept while they are among the
 * recently used: clients send the same few documents again and again. Bounded by the length of the texts kept (a
 * document's syntax tree is a multiple of it); the least recently used go first. Only valid documents are kept,
 * so a text that is in here has passed the checks that come before parsing (limits.ts) too.
 */
export class Documents {
  private readonly kept = new Map<string, DocumentNode>();
  private keptLength = 0;
  private readonly rules: readonly ValidationRule[];

  constructor(
    private readonly schema: GraphQLSchema,
    rules: readonly ValidationRule[],
    private readonly maxLength = 1024 * 1024,
  ) {
    this.rules = [...specifiedRules, ...rules];
  }

  /** Whether this text is a valid document, kept. */
  has(text: string): boolean {
    return this.kept.has(text);
  }

  /** The valid document of this text, or the errors of its parsing or validation (each with its code and 400). */
  load(text: string): DocumentNode | GraphQLError[] {
    const known = this.kept.get(text);
    if (known !== undefined) {
      // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
      this.kept.delete(text);
      this.kept.set(text, known);
      return known;
    }
    let document: DocumentNode;
    try {
      document = parse(text);
    } catch (e) {
      return [parseFailed(ensureGraphQLError(e))];
    }
    const errors = validate(this.schema, document, this.rules);
    if (errors.length > 0) return errors.map(validationFailed);
    this.kept.set(text, document);
    this.keptLength += text.length;
    while (this.keptLength > this.maxLength) {
      const oldest = this.kept.keys().next().value!;
      this.kept.delete(oldest);
      this.keptLength -= oldest.length;
    }
    return document;
  }
}
