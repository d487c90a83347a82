/**
 * A parser for the subset of the Prisma schema language this project uses, and the PostgreSQL DDL `prisma migrate`
 * would generate from it (Prisma's type mapping, nullability, defaults and constraint/index naming rules). The
 * schema-migrations test applies this DDL to an empty database and compares it with the migrated one, since
 * `prisma migrate diff` needs a schema engine binary we cannot download here.
 *
 * Anything outside the subset (implicit many-to-many relations, Unsupported types, composite types, views) throws,
 * so an unknown construct fails the test loudly instead of being ignored.
 */

export type Value =
  | { kind: 'str'; v: string }
  | { kind: 'num'; v: string }
  | { kind: 'ident'; name: string; args?: Arg[] }
  | { kind: 'list'; items: Value[] };
export interface Arg {
  name?: string;
  value: Value;
}
export interface Attribute {
  name: string;
  args: Arg[];
}
export interface Field {
  name: string;
  type: string;
  optional: boolean;
  list: boolean;
  attrs: Attribute[];
}
export interface Model {
  name: string;
  fields: Field[];
  attrs: Attribute[];
}
export interface Enum {
  name: string;
  values: { name: string; dbName: string }[];
  dbName: string;
}
export interface PrismaSchema {
  models: Model[];
  enums: Enum[];
}

/** Removes `//` and `///` comments outside string literals. */
function stripComments(src: string): string {
  let out = '';
  let inStr = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (inStr) {
      out += c;
      if (c === '\\') out += src[++i] ?? '';
      else if (c === '"') inStr = false;
    } else if (c === '"') {
      inStr = true;
      out += c;
    } else if (c === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
      out += '\n';
    } else out += c;
  }
  return out;
}

/** A cursor over one declaration (a field or a block attribute), possibly spanning lines. */
class Cursor {
  i = 0;
  constructor(readonly s: string) {}
  ws() {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }
  peek() {
    this.ws();
    return this.s[this.i];
  }
  eat(ch: string) {
    this.ws();
    if (this.s[this.i] !== ch) throw new Error(`expected "${ch}" at ${this.i} in: ${this.s}`);
    this.i++;
  }
  ident(): string {
    this.ws();
    const m = /^[A-Za-z_][\w.]*/.exec(this.s.slice(this.i));
    if (!m) throw new Error(`expected a name at ${this.i} in: ${this.s}`);
    this.i += m[0].length;
    return m[0];
  }
  done() {
    this.ws();
    return this.i >= this.s.length;
  }
  value(): Value {
    const c = this.peek();
    if (c === '"') {
      let v = '';
      this.i++;
      while (this.s[this.i] !== '"') {
        if (this.i >= this.s.length) throw new Error(`unterminated string in: ${this.s}`);
        if (this.s[this.i] === '\\') this.i++;
        v += this.s[this.i++];
      }
      this.i++;
      return { kind: 'str', v };
    }
    if (c === '[') {
      this.i++;
      const items: Value[] = [];
      while (this.peek() !== ']') {
        items.push(this.value());
        if (this.peek() === ',') this.i++;
      }
      this.i++;
      return { kind: 'list', items };
    }
    const num = /^-?\d+(\.\d+)?/.exec(this.s.slice(this.i));
    if (num) {
      this.i += num[0].length;
      return { kind: 'num', v: num[0] };
    }
    const name = this.ident();
    return this.peek() === '(' ? { kind: 'ident', name, args: this.args() } : { kind: 'ident', name };
  }
  /** `( [name:] value, ... )` */
  args(): Arg[] {
    this.eat('(');
    const out: Arg[] = [];
    while (this.peek() !== ')') {
      const save = this.i;
      const m = /^\s*([A-Za-z_]\w*)\s*:/.exec(this.s.slice(this.i));
      if (m) {
        this.i += m[0].length;
        out.push({ name: m[1], value: this.value() });
      } else {
        this.i = save;
        out.push({ value: this.value() });
      }
      if (this.peek() === ',') this.i++;
    }
    this.i++;
    return out;
  }
  attributes(prefix: '@' | '@@'): Attribute[] {
    const out: Attribute[] = [];
    while (!this.done()) {
      if (!this.s.startsWith(prefix, this.i) || (prefix === '@' && this.s[this.i + 1] === '@')) {
        throw new Error(`expected ${prefix}attribute at ${this.i} in: ${this.s}`);
      }
      this.i += prefix.length;
      const name = this.ident();
      out.push({ name, args: this.s[this.i] === '(' ? this.args() : [] });
    }
    return out;
  }
}

/** Splits a block body into declarations, joining lines while brackets are open. */
function declarations(body: string): string[] {
  const out: string[] = [];
  let cur = '';
  let depth = 0;
  for (const line of body.split('\n')) {
    cur += (cur ? ' ' : '') + line.trim();
    for (const ch of line.replace(/"(\\.|[^"\\])*"/g, '""')) {
      if ('([{'.includes(ch)) depth++;
      if (')]}'.includes(ch)) depth--;
    }
    if (depth === 0) {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    }
  }
  if (depth !== 0) throw new Error(`unbalanced brackets in: ${cur}`);
  return out;
}

/** `kind name { body }` blocks; braces inside string literals do not count. Stray text outside blocks throws. */
function blocks(text: string): { kind: string; name: string; body: string }[] {
  const out: { kind: string; name: string; body: string }[] = [];
  let i = 0;
  for (;;) {
    const head = /^\s*(\w+)\s+(\w+)\s*\{/.exec(text.slice(i));
    if (!head) break;
    let j = i + head[0].length;
    const start = j;
    let inStr = false;
    for (; j < text.length; j++) {
      const c = text[j];
      if (inStr) {
        if (c === '\\') j++;
        else if (c === '"') inStr = false;
      } else if (c === '"') inStr = true;
      else if (c === '}') break;
    }
    if (j >= text.length) throw new Error(`unterminated block ${head[2]}`);
    out.push({ kind: head[1]!, name: head[2]!, body: text.slice(start, j) });
    i = j + 1;
  }
  const rest = text.slice(i).trim();
  if (rest) throw new Error(`unparsed schema text: ${rest.slice(0, 200)}`);
  return out;
}

export function parsePrismaSchema(src: string): PrismaSchema {
  const text = stripComments(src);
  const models: Model[] = [];
  const enums: Enum[] = [];
  for (const { kind, name, body } of blocks(text)) {
    if (kind === 'generator' || kind === 'datasource') continue;
    if (kind === 'enum') {
      const values: Enum['values'] = [];
      let dbName = name;
      for (const d of declarations(body)) {
        const c = new Cursor(d);
        if (d.startsWith('@@')) {
          for (const a of c.attributes('@@')) if (a.name === 'map') dbName = str(a.args[0]!.value);
          continue;
        }
        const v = c.ident();
        const attrs = c.attributes('@');
        const map = attrs.find((a) => a.name === 'map');
        values.push({ name: v, dbName: map ? str(map.args[0]!.value) : v });
      }
      enums.push({ name, values, dbName });
    } else if (kind === 'model') {
      const model: Model = { name, fields: [], attrs: [] };
      for (const d of declarations(body)) {
        const c = new Cursor(d);
        if (d.startsWith('@@')) {
          model.attrs.push(...c.attributes('@@'));
          continue;
        }
        const fieldName = c.ident();
        c.ws();
        const t = /^(\w+)(\[\])?(\?)?/.exec(c.s.slice(c.i));
        if (!t || t[1] === 'Unsupported') throw new Error(`unsupported field type in: ${d}`);
        c.i += t[0].length;
        model.fields.push({ name: fieldName, type: t[1]!, list: !!t[2], optional: !!t[3], attrs: c.attributes('@') });
      }
      models.push(model);
    } else {
      throw new Error(`this parser does not know "${kind}" blocks (${name})`);
    }
  }
  return { models, enums };
}

function str(v: Value): string {
  if (v.kind !== 'str') throw new Error(`expected a string, got ${JSON.stringify(v)}`);
  return v.v;
}
const attr = (attrs: Attribute[], name: string) => attrs.find((a) => a.name === name);
const named = (a: Attribute | undefined, name: string) => a?.args.find((x) => x.name === name)?.value;
const positional = (a: Attribute | undefined) => a?.args.find((x) => x.name === undefined)?.value;
const q = (id: string) => `"${id.replace(/"/g, '""')}"`;
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
/** PostgreSQL truncates identifiers to 63 bytes; so do Prisma's generated names. */
const pgName = (s: string) => Buffer.from(s).subarray(0, 63).toString();

const SCALAR_TYPES: Record<string, string> = {
  String: 'TEXT',
  Int: 'INTEGER',
  BigInt: 'BIGINT',
  Float: 'DOUBLE PRECISION',
  Decimal: 'DECIMAL(65,30)',
  Boolean: 'BOOLEAN',
  DateTime: 'TIMESTAMP(3)',
  Json: 'JSONB',
  Bytes: 'BYTEA',
};
const REFERENTIAL_ACTIONS: Record<string, string> = {
  Cascade: 'CASCADE',
  Restrict: 'RESTRICT',
  NoAction: 'NO ACTION',
  SetNull: 'SET NULL',
  SetDefault: 'SET DEFAULT',
};

/** The DDL `prisma migrate dev` would write for this schema on PostgreSQL (statement order aside). */
export function prismaDdl(schema: PrismaSchema): string[] {
  const models = new Map(schema.models.map((m) => [m.name, m]));
  const enums = new Map(schema.enums.map((e) => [e.name, e]));
  const tableOf = (m: Model) => {
    const map = attr(m.attrs, 'map');
    return map ? str(positional(map)!) : m.name;
  };
  const columnOf = (m: Model, fieldName: string) => {
    const f = m.fields.find((x) => x.name === fieldName);
    if (!f) throw new Error(`${m.name} has no field ${fieldName}`);
    const map = attr(f.attrs, 'map');
    return map ? str(positional(map)!) : f.name;
  };
  const out: string[] = [];
  for (const e of schema.enums)
    out.push(`CREATE TYPE ${q(e.dbName)} AS ENUM (${e.values.map((v) => lit(v.dbName)).join(', ')})`);

  const indexes: string[] = [];
  const foreignKeys: string[] = [];
  for (const m of schema.models) {
    const table = tableOf(m);
    const cols: string[] = [];
    let pk: string[] | undefined;
    let pkName = `${table}_pkey`;
    for (const f of m.fields) {
      const related = models.get(f.type);
      if (related) {
        const rel = attr(f.attrs, 'relation');
        const fields = named(rel, 'fields');
        if (!fields) {
          const back = related.fields.find((x) => x.type === m.name);
          if (f.list && back?.list)
            throw new Error(`implicit many-to-many ${m.name}.${f.name} is not supported by this parser`);
          continue; // the other side holds the foreign key
        }
        const refs = named(rel, 'references');
        if (fields.kind !== 'list' || refs?.kind !== 'list') throw new Error(`bad @relation on ${m.name}.${f.name}`);
        const fkCols = fields.items.map((v) => columnOf(m, identName(v)));
        const refCols = refs.items.map((v) => columnOf(related, identName(v)));
        const onDelete = identName(
          named(rel, 'onDelete') ?? { kind: 'ident', name: f.optional ? 'SetNull' : 'Restrict' },
        );
        const onUpdate = identName(named(rel, 'onUpdate') ?? { kind: 'ident', name: 'Cascade' });
        const map = named(rel, 'map');
        const name = map ? str(map) : pgName(`${table}_${fkCols.join('_')}_fkey`);
        foreignKeys.push(
          `ALTER TABLE ${q(table)} ADD CONSTRAINT ${q(name)} FOREIGN KEY (${fkCols.map(q).join(', ')}) REFERENCES ${q(tableOf(related))}(${refCols
            .map(q)
            .join(', ')}) ON DELETE ${REFERENTIAL_ACTIONS[onDelete]} ON UPDATE ${REFERENTIAL_ACTIONS[onUpdate]}`,
        );
        continue;
      }
      const col = columnOf(m, f.name);
      const dflt = attr(f.attrs, 'default');
      const dv = positional(dflt);
      const isAutoincrement = dv?.kind === 'ident' && dv.name === 'autoincrement';
      let type = sqlType(f, enums);
      if (isAutoincrement) type = type === 'BIGINT' ? 'BIGSERIAL' : type === 'SMALLINT' ? 'SMALLSERIAL' : 'SERIAL';
      let def = `${q(col)} ${type}`;
      if (!f.optional && !f.list) def += ' NOT NULL';
      if (dv && !isAutoincrement) {
        const sql = defaultSql(dv, f, type, enums);
        if (sql !== undefined) def += ` DEFAULT ${sql}`;
      }
      cols.push(def);
      const id = attr(f.attrs, 'id');
      if (id) {
        pk = [col];
        const map = named(id, 'map');
        if (map) pkName = str(map);
      }
      const unique = attr(f.attrs, 'unique');
      if (unique) {
        const map = named(unique, 'map');
        indexes.push(
          `CREATE UNIQUE INDEX ${q(map ? str(map) : pgName(`${table}_${col}_key`))} ON ${q(table)}(${q(col)})`,
        );
      }
    }
    for (const a of m.attrs) {
      if (a.name === 'map') continue;
      const list = positional(a);
      if (list?.kind !== 'list') throw new Error(`@@${a.name} on ${m.name} needs a field list`);
      const keys = list.items.map((v) => indexKey(m, v, columnOf));
      const map = named(a, 'map');
      const colPart = keys.map((k) => k.column).join('_');
      if (a.name === 'id') {
        pk = keys.map((k) => k.column);
        if (map) pkName = str(map);
      } else if (a.name === 'unique' || a.name === 'index') {
        const unique = a.name === 'unique';
        const name = map ? str(map) : pgName(`${table}_${colPart}_${unique ? 'key' : 'idx'}`);
        const type = named(a, 'type');
        const using = type ? ` USING ${identName(type).toUpperCase()}` : '';
        indexes.push(
          `CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${q(name)} ON ${q(table)}${using} (${keys.map((k) => k.sql).join(', ')})`,
        );
      } else {
        throw new Error(`@@${a.name} on ${m.name} is not supported by this parser`);
      }
    }
    if (pk) cols.push(`CONSTRAINT ${q(pkName)} PRIMARY KEY (${pk.map(q).join(', ')})`);
    out.push(`CREATE TABLE ${q(table)} (\n  ${cols.join(',\n  ')}\n)`);
  }
  return [...out, ...indexes, ...foreignKeys];
}

function identName(v: Value): string {
  if (v.kind !== 'ident') throw new Error(`expected a name, got ${JSON.stringify(v)}`);
  return v.name;
}

/** `field`, `field(sort: Desc)`, `field(ops: JsonbPathOps)` → the column and its SQL in CREATE INDEX. */
function indexKey(m: Model, v: Value, columnOf: (m: Model, f: string) => string): { column: string; sql: string } {
  if (v.kind !== 'ident') throw new Error(`bad index key on ${m.name}: ${JSON.stringify(v)}`);
  const column = columnOf(m, v.name);
  let sql = q(column);
  for (const a of v.args ?? []) {
    if (a.name === 'ops') sql += ' ' + snake(identName(a.value));
    else if (a.name === 'sort') sql += identName(a.value) === 'Desc' ? ' DESC' : ' ASC';
    else throw new Error(`index argument ${a.name} on ${m.name}.${v.name} is not supported by this parser`);
  }
  return { column, sql };
}

const snake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

function sqlType(f: Field, enums: Map<string, Enum>): string {
  const db = f.attrs.find((a) => a.name.startsWith('db.'));
  let base: string;
  if (db) {
    const native = db.name.slice(3);
    const args = db.args.map((a) => (a.value.kind === 'num' ? a.value.v : JSON.stringify(a.value)));
    const name = native === 'DoublePrecision' ? 'DOUBLE PRECISION' : native.toUpperCase();
    base = args.length ? `${name}(${args.join(',')})` : name;
  } else if (enums.has(f.type)) {
    base = q(enums.get(f.type)!.dbName);
  } else {
    const t = SCALAR_TYPES[f.type];
    if (!t) throw new Error(`unknown type ${f.type} of field ${f.name}`);
    base = t;
  }
  return f.list ? `${base}[]` : base;
}

/** Prisma's SQL for a @default, or undefined for defaults the client computes (uuid(), cuid(), ...). */
function defaultSql(v: Value, f: Field, type: string, enums: Map<string, Enum>): string | undefined {
  const scalar = (x: Value): string => {
    if (x.kind === 'str') return lit(x.v);
    if (x.kind === 'num') return x.v;
    if (x.kind === 'ident' && (x.name === 'true' || x.name === 'false')) return x.name;
    if (x.kind === 'ident' && enums.has(f.type)) {
      const e = enums.get(f.type)!;
      const value = e.values.find((ev) => ev.name === x.name);
      if (!value) throw new Error(`${x.name} is not a value of ${e.name}`);
      return lit(value.dbName);
    }
    throw new Error(`unsupported default ${JSON.stringify(x)} on ${f.name}`);
  };
  if (v.kind === 'list') return `ARRAY[${v.items.map(scalar).join(', ')}]::${type}`;
  if (v.kind === 'ident' && v.args) {
    switch (v.name) {
      case 'now':
        return 'CURRENT_TIMESTAMP';
      case 'dbgenerated':
        return v.args[0] ? str(v.args[0].value) : undefined;
      case 'uuid':
      case 'cuid':
      case 'nanoid':
      case 'ulid':
        return undefined;
      default:
        throw new Error(`unsupported default function ${v.name}() on ${f.name}`);
    }
  }
  return scalar(v);
}
