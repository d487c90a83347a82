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

export interface QueryLimits {
  /** Deepest field nesting (introspection fields excluded, so the IDE's schema query passes). */
  maxDepth: number;
  /** Estimated cost: 1 per field, root fields 10 more (each is a database round trip), lists times their `limit`. */
  maxCost: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = { maxDepth: 10, maxCost: 25_000 };

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
    for (const d of ctx.getDocument().definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);

    const schema = ctx.getSchema();
    const typeNamed = (name: string | undefined, fallback: GraphQLNamedType | undefined) => (name ? schema.getType(name) ?? undefined : fallback);

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
          if (name.startsWith('__')) continue;
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
          sub = measure(frag.selectionSet, typeNamed(frag.typeCondition.name.value, parent), level, new Set([...seen, name]));
        }
        depth = Math.max(depth, sub.depth);
        cost += sub.cost;
        if (cost > limits.maxCost) break;
      }
      return { depth, cost };
    };

    return {
      OperationDefinition(op) {
        const root = op.operation === 'mutation' ? schema.getMutationType() : op.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType();
        const { depth, cost } = measure(op.selectionSet, root ?? undefined, 0, new Set());
        if (depth > limits.maxDepth) {
          ctx.reportError(new GraphQLError(`the operation is ${depth} levels deep; the limit is ${limits.maxDepth}`, { nodes: [op] }));
        }
        if (cost > limits.maxCost) {
          ctx.reportError(new GraphQLError(`the operation costs more than ${limits.maxCost} (fields, times list sizes)`, { nodes: [op] }));
        }
      },
    };
  };
}
