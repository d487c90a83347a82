import {
  getNamedType,
  GraphQLError,
  isInterfaceType,
  isObjectType,
  Kind,
  type GraphQLNamedType,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { DomainError } from '../../domain/errors';

export interface QueryLimits {
  /** Deepest field nesting (introspection fields excluded, so the IDE's schema query passes). */
  maxDepth: number;
  /**
   * Estimated cost: 1 per selected field (`__typename` and introspection fields included), root fields 10 more (each
   * is a database round trip), lists times their `limit`.
   */
  maxCost: number;
  /** Aliased fields in one document: aliases are how one request repeats work. */
  maxAliases: number;
  /** Bytes of the document text, checked before it is parsed. */
  maxDocumentBytes: number;
  /** Nesting of `{`, `[` and `(` in the document text, checked before parsing (graphql-js parses recursively). */
  maxDocumentNesting: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxDepth: 10,
  maxCost: 25_000,
  maxAliases: 100,
  maxDocumentBytes: 100 * 1024,
  maxDocumentNesting: 128,
};

/**
 * The checks on the document text that must come before parsing: its size (a 2 MB document of 100,000 aliases took
 * seconds to parse and validate) and its bracket nesting (a deeply nested literal overflows the parser's stack).
 * Strings, block strings and comments are skipped. Returns the refusal, or undefined.
 */
export function checkDocumentText(text: string, limits: QueryLimits = DEFAULT_QUERY_LIMITS): DomainError | undefined {
  if (text.length > limits.maxDocumentBytes || Buffer.byteLength(text) > limits.maxDocumentBytes) {
    return new DomainError(
      'PAYLOAD_TOO_LARGE',
      `the GraphQL document is larger than ${limits.maxDocumentBytes} bytes; pass large values as variables`,
    );
  }
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x23 /* # */) {
      while (i < text.length && text.charCodeAt(i) !== 0x0a && text.charCodeAt(i) !== 0x0d) i++;
    } else if (c === 0x22 /* " */) {
      if (text.startsWith('"""', i)) {
        // A block string ends at the next unescaped """ (\""" is an escaped one).
        let end = text.indexOf('"""', i + 3);
        while (end > 0 && text.charCodeAt(end - 1) === 0x5c) end = text.indexOf('"""', end + 3);
        i = end < 0 ? text.length : end + 2;
      } else {
        i++;
        while (i < text.length && text.charCodeAt(i) !== 0x22 && text.charCodeAt(i) !== 0x0a)
          i += text.charCodeAt(i) === 0x5c ? 2 : 1;
      }
    } else if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > limits.maxDocumentNesting) {
        return new DomainError(
          'INVALID_BODY',
          `the GraphQL document nests more than ${limits.maxDocumentNesting} levels of brackets`,
        );
      }
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      depth--;
    }
  }
  return undefined;
}

/** `limit` given as a variable is unknown while validating: assume a full page. */
const VARIABLE_LIMIT = 500;
const ROOT_FIELD_COST = 10;

/**
 * A validation rule that rejects operations deeper or costlier than the limits, before anything runs, so one query
 * (deep `preview` chains, many aliased pages) cannot exhaust the service.
 */
export function queryLimitsRule(limits: QueryLimits = DEFAULT_QUERY_LIMITS): ValidationRule {
  return (ctx: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of ctx.getDocument().definitions)
      if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);

    const schema = ctx.getSchema();
    const typeNamed = (name: string | undefined, fallback: GraphQLNamedType | undefined) =>
      name ? (schema.getType(name) ?? undefined) : fallback;

    const measure = (
      set: SelectionSetNode,
      parent: GraphQLNamedType | undefined,
      level: number,
      seen: ReadonlySet<string>,
    ): { depth: number; cost: number } => {
      let depth = level;
      let cost = 0;
      for (const sel of set.selections) {
        let sub: { depth: number; cost: number } | undefined;
        if (sel.kind === Kind.FIELD) {
          const name = sel.name.value;
          if (name.startsWith('__')) {
            // __typename costs like any field; introspection (__schema, __type) counts its fields but not its depth.
            cost += 1 + (sel.selectionSet ? measure(sel.selectionSet, undefined, -Infinity, seen).cost : 0);
            if (cost > limits.maxCost) break;
            continue;
          }
          const def = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
          const inner = sel.selectionSet
            ? measure(sel.selectionSet, def ? getNamedType(def.type) : undefined, level + 1, seen)
            : { depth: level + 1, cost: 0 };
          const limitArg = sel.arguments?.find((a) => a.name.value === 'limit')?.value;
          const limitDefault = def?.args.find((a) => a.name === 'limit')?.defaultValue;
          const times =
            limitArg?.kind === Kind.INT
              ? Number(limitArg.value)
              : limitArg?.kind === Kind.VARIABLE
                ? VARIABLE_LIMIT
                : typeof limitDefault === 'number'
                  ? limitDefault
                  : 1;
          sub = { depth: inner.depth, cost: 1 + (level === 0 ? ROOT_FIELD_COST : 0) + Math.max(1, times) * inner.cost };
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          sub = measure(sel.selectionSet, typeNamed(sel.typeCondition?.name.value, parent), level, seen);
        } else {
          const name = sel.name.value;
          const frag = fragments.get(name);
          if (!frag || seen.has(name)) continue; // unknown or cyclic fragments are reported by the standard rules
          sub = measure(
            frag.selectionSet,
            typeNamed(frag.typeCondition.name.value, parent),
            level,
            new Set([...seen, name]),
          );
        }
        depth = Math.max(depth, sub.depth);
        cost += sub.cost;
        if (cost > limits.maxCost) break;
      }
      return { depth, cost };
    };

    let aliases = 0;
    return {
      Field(node) {
        if (node.alias && ++aliases === limits.maxAliases + 1) {
          ctx.reportError(
            new GraphQLError(`the document has more than ${limits.maxAliases} aliased fields`, { nodes: [node] }),
          );
        }
      },
      OperationDefinition(op) {
        const root =
          op.operation === 'mutation'
            ? schema.getMutationType()
            : op.operation === 'subscription'
              ? schema.getSubscriptionType()
              : schema.getQueryType();
        const { depth, cost } = measure(op.selectionSet, root ?? undefined, 0, new Set());
        if (depth > limits.maxDepth) {
          ctx.reportError(
            new GraphQLError(`the operation is ${depth} levels deep; the limit is ${limits.maxDepth}`, { nodes: [op] }),
          );
        }
        if (cost > limits.maxCost) {
          ctx.reportError(
            new GraphQLError(`the operation costs more than ${limits.maxCost} (fields, times list sizes)`, {
              nodes: [op],
            }),
          );
        }
      },
    };
  };
}
