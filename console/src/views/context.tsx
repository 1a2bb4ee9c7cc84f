/** The context form, built from the agent's declared `context`: one field per key. */

import type { ContextField, IrType } from "../types";

export type Values = Record<string, unknown>;

/** The literal values of a union of literals (a select), else null. */
function choices(type: IrType): unknown[] | null {
  if (type.kind !== "union") return null;
  const options = (type.variants ?? []) as IrType[];
  return options.length > 0 && options.every((o) => o.kind === "literal") ? options.map((o) => o.value) : null;
}

/** The value a field's text stands for (a JSON field's text parsed; "" for an empty one). */
export function parseField(type: IrType, text: string): unknown {
  if (type.kind === "number") return text === "" ? undefined : Number(text);
  if (type.kind === "string" || type.kind === "text") return text;
  if (text.trim() === "") return undefined;
  return JSON.parse(text);
}

export function ContextForm(props: {
  fields: ContextField[];
  values: Values;
  onChange: (values: Values) => void;
}) {
  const { fields, values, onChange } = props;
  if (fields.length === 0) return <p class="muted">This agent declares no context.</p>;
  const set = (name: string, value: unknown) => {
    const next = { ...values };
    if (value === undefined) delete next[name];
    else next[name] = value;
    onChange(next);
  };
  return (
    <fieldset class="context">
      <legend>Context</legend>
      {fields.map((field) => (
        <Field key={field.name} field={field} value={values[field.name]} set={(v) => set(field.name, v)} />
      ))}
    </fieldset>
  );
}

function Field(props: { field: ContextField; value: unknown; set: (value: unknown) => void }) {
  const { field, value, set } = props;
  const id = `ctx-${field.name}`;
  const label = (
    <label for={id}>
      {field.name}
      {field.optional ? "" : " *"}
      {field.description ? <span class="muted"> {field.description}</span> : null}
    </label>
  );
  const type = field.type;
  if (type.kind === "boolean") {
    return (
      <div class="field check">
        <input id={id} type="checkbox" checked={value === true} onChange={(e) => set(e.currentTarget.checked)} />
        {label}
      </div>
    );
  }
  const options = choices(type);
  if (options !== null) {
    return (
      <div class="field">
        {label}
        <select id={id} value={value === undefined ? "" : JSON.stringify(value)}
          onChange={(e) => set(e.currentTarget.value === "" ? undefined : JSON.parse(e.currentTarget.value))}>
          <option value="">(not set)</option>
          {options.map((o) => <option key={JSON.stringify(o)} value={JSON.stringify(o)}>{String(o)}</option>)}
        </select>
      </div>
    );
  }
  if (type.kind === "string" || type.kind === "text" || type.kind === "number") {
    return (
      <div class="field">
        {label}
        <input id={id} type={type.kind === "number" ? "number" : "text"}
          value={value === undefined ? "" : String(value)}
          onInput={(e) => set(parseField(type, e.currentTarget.value))} />
      </div>
    );
  }
  return <JsonField id={id} label={label} type={type} value={value} set={set} />;
}

function JsonField(props: { id: string; label: unknown; type: IrType; value: unknown; set: (v: unknown) => void }) {
  const { id, type, value, set } = props;
  return (
    <div class="field">
      {props.label}
      <textarea id={id} rows={2} placeholder="JSON"
        value={value === undefined ? "" : JSON.stringify(value)}
        onChange={(e) => {
          try {
            set(parseField(type, e.currentTarget.value));
            e.currentTarget.setCustomValidity("");
          } catch {
            e.currentTarget.setCustomValidity("not valid JSON");
            e.currentTarget.reportValidity();
          }
        }} />
    </div>
  );
}

/** The form's first values: a required boolean starts unchecked, which is `false` (the
 * other keys start unset). */
export function contextDefaults(fields: ContextField[]): Values {
  return Object.fromEntries(fields.filter((f) => f.type.kind === "boolean" && !f.optional).map((f) => [f.name, false]));
}
