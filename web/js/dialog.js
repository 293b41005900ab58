// Modal dialogs and forms whose errors appear next to the field they name.
import { h, append, replace } from './dom.js';
import { ApiError } from './api.js';

let seq = 0;

/**
 * A labelled form control. spec: name, label, type (text, number, password,
 * select, textarea, checkbox), value, choices (select options: strings or
 * {value,label}), blank (label of an empty select option), required, hint,
 * and any extra input attributes in attrs.
 */
export function field(spec) {
  const id = `f${++seq}-${spec.name}`;
  const errId = `${id}-err`;
  const common = { id, name: spec.name, 'aria-describedby': errId, required: spec.required || false,
    ...(spec.attrs || {}) };
  let control;
  if (spec.type === 'select') {
    control = h('select', common);
    if (spec.blank !== undefined) control.append(h('option', { value: '', text: spec.blank }));
    for (const c of spec.choices || []) {
      const opt = typeof c === 'string' ? { value: c, label: c } : c;
      control.append(h('option', { value: opt.value, text: opt.label }));
    }
    control.value = spec.value ?? '';
  } else if (spec.type === 'textarea') {
    control = h('textarea', { ...common, rows: spec.rows || 3 });
    control.value = spec.value ?? '';
  } else {
    control = h('input', { ...common, type: spec.type || 'text', autocomplete: spec.autocomplete || 'off' });
    control.value = spec.value ?? '';
  }
  const wrap = h('div', { class: `field${spec.wide ? ' field-wide' : ''}`, dataset: { field: spec.name } },
    h('label', { for: id }, spec.label, spec.required ? h('span', { class: 'req', 'aria-hidden': 'true', text: ' *' }) : null),
    control,
    spec.hint ? h('p', { class: 'field-hint', text: spec.hint }) : null,
    h('p', { class: 'field-error', id: errId, hidden: true }));
  return wrap;
}

/** Clears every field and form-level error in a form. */
export function clearErrors(form) {
  for (const el of form.querySelectorAll('.field-error')) {
    el.textContent = '';
    el.hidden = true;
  }
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  const alert = form.querySelector('.form-alert');
  if (alert) {
    alert.textContent = '';
    alert.hidden = true;
  }
}

/** The label text of a form field's wrapper, without the required mark. */
function labelOf(wrap) {
  const label = wrap.querySelector('label');
  if (!label) return '';
  const copy = label.cloneNode(true);
  for (const mark of copy.querySelectorAll('.req')) mark.remove();
  return copy.textContent.trim();
}

/**
 * A message naming a field by its label: the server says "gpu_count must
 * be ..." where the form says "GPU count".
 */
function withLabel(message, name, label) {
  if (!label || !name || !message) return message;
  const esc = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const out = message.replace(new RegExp(`(^|[^\\w.])${esc}(?![\\w])`, 'g'), (m, pre) => `${pre}${label}`);
  return out.charAt(0).toUpperCase() + out.slice(1);
}

/**
 * Shows errors in a form: each next to the field it names when the form
 * shows that field (the first such field gets focus), the rest in the
 * form's alert box. err: one error {field, message} or, for several at
 * once, an object with `errors` [{field, message}].
 */
export function showError(form, err) {
  clearErrors(form);
  const list = err && Array.isArray(err.errors) && err.errors.length ? err.errors : [err || {}];
  // The server names fields by their API names; checks made here already
  // use the labels.
  const fromServer = Boolean(err && err.status > 0);
  const loose = [];
  let focused = false;
  for (const e of list) {
    const name = e && e.field;
    const wrap = name ? form.querySelector(`.field[data-field="${CSS.escape(name)}"]`) : null;
    if (!wrap || wrap.hidden) {
      loose.push((e && e.message) || 'Something went wrong');
      continue;
    }
    const msg = wrap.querySelector('.field-error');
    const control = wrap.querySelector('input, select, textarea');
    const text = fromServer ? withLabel(e.message, name, labelOf(wrap)) : e.message;
    msg.textContent = msg.hidden ? text : `${msg.textContent} ${text}`;
    msg.hidden = false;
    if (control) {
      control.setAttribute('aria-invalid', 'true');
      if (!focused) control.focus();
      focused = true;
    }
  }
  const alert = form.querySelector('.form-alert');
  if (alert && loose.length) {
    if (loose.length === 1) {
      alert.textContent = loose[0];
    } else {
      replace(alert, h('ul', { class: 'alert-list' }, loose.map((m) => h('li', { text: m }))));
    }
    alert.hidden = false;
  }
  if (alert && list.length > 1 && !loose.length) {
    alert.textContent = `Fix the ${list.length} problems marked below.`;
    alert.hidden = false;
  }
}

/** An error about one form field found before sending anything. */
export function fieldError(field, message) {
  return new ApiError(0, { code: 'validation_failed', field, message });
}

/** Several field errors found at once, shown together (see showError). */
export function fieldErrors(errors) {
  const e = new ApiError(0, { code: 'validation_failed', message: errors.map((x) => x.message).join(' ') });
  e.errors = errors;
  return e;
}

/**
 * Opens a modal dialog holding a form. opts: title, intro (nodes), fields
 * (nodes), submitLabel, danger (red submit button), wide, submit(form,
 * dialogApi) -> Promise; a rejection shows its error in the form, false
 * keeps the dialog open, anything else closes it. Resolves when the dialog
 * closes, to true after a
 * successful submit.
 */
export function formDialog(opts) {
  return new Promise((resolve) => {
    let done = false;
    const alert = h('div', { class: 'form-alert', role: 'alert', hidden: true });
    const submitBtn = h('button', { type: 'submit', class: `btn ${opts.danger ? 'btn-danger' : 'btn-primary'}`,
      text: opts.submitLabel || 'Save' });
    const cancelBtn = h('button', { type: 'button', class: 'btn btn-secondary', text: 'Cancel' });
    const body = h('div', { class: 'dialog-body' }, opts.intro || null, alert,
      opts.fields && opts.fields.length ? h('div', { class: 'form-grid' }, opts.fields) : null);
    const form = h('form', { method: 'dialog', novalidate: true, class: 'dialog-form' },
      h('header', { class: 'dialog-header' }, h('h2', { text: opts.title })),
      body,
      h('footer', { class: 'dialog-footer' }, cancelBtn, submitBtn));
    const dialog = h('dialog', { class: `dialog${opts.wide ? ' dialog-wide' : ''}`, 'aria-label': opts.title }, form);
    const ctl = {
      form, dialog, body, submitBtn,
      setSubmit(label, danger) {
        submitBtn.textContent = label;
        submitBtn.className = `btn ${danger ? 'btn-danger' : 'btn-primary'}`;
      },
    };
    cancelBtn.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(done);
    });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (submitBtn.disabled) return;
      clearErrors(form);
      submitBtn.disabled = true;
      form.setAttribute('aria-busy', 'true');
      try {
        // A submit that resolves to false keeps the dialog open (a step of
        // a multi-step form); anything else closes it as done.
        if ((await opts.submit(form, ctl)) === false) return;
        done = true;
        dialog.close();
      } catch (err) {
        showError(form, err instanceof ApiError ? err : { message: String(err && err.message) });
      } finally {
        submitBtn.disabled = false;
        form.removeAttribute('aria-busy');
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    const first = form.querySelector('.form-grid input, .form-grid select, .form-grid textarea');
    (first || submitBtn).focus();
  });
}

/** Reads a named control's trimmed value from a form ('' when absent). */
export function value(form, name) {
  const el = form.elements.namedItem(name);
  return el ? String(el.value).trim() : '';
}

/** Builds a paragraph from text and nodes, for dialog intros. */
export function para(...children) {
  return append(h('p', { class: 'dialog-text' }), children);
}
