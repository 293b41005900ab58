// The resource CSV import dialog: choose a file, check it (a dry run that
// lists every problem with its line and column), then import all rows or
// none. The columns are those of the resource CSV export.
import { h, replace, num, toast } from './dom.js';
import { ApiError } from './api.js';
import { formDialog, para } from './dialog.js';

/** Sends the file's text to the import, as a dry run or for real. */
async function post(text, dryRun) {
  let res;
  try {
    res = await fetch(`/api/v1/resources/import${dryRun ? '?dry_run=true' : ''}`, {
      method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'text/csv', Accept: 'application/json' }, body: text,
    });
  } catch {
    throw new ApiError(0, { code: 'network', message: 'the server could not be reached' });
  }
  const data = await res.json().catch(() => null);
  return { status: res.status, data };
}

/**
 * Opens the dialog. dc (optional): the data center whose page it was opened
 * from, named in the hint. Resolves to true once rows were imported.
 */
export function importDialog(dc) {
  const file = h('input', { type: 'file', name: 'file', accept: '.csv,text/csv', 'aria-label': 'CSV file' });
  const report = h('div', { class: 'import-report', 'data-testid': 'import-report', hidden: true });
  let checked = null; // the text that passed the dry run
  const hint = para('The header names the columns, as in an exported file: ', h('code', { text: 'datacenter' }),
    ' (a data center’s name', dc ? `, e.g. “${dc.name}”` : '', '), ', h('code', { text: 'kind' }), ', ',
    h('code', { text: 'name' }), ', and any attribute; ', h('code', { text: 'metadata' }),
    ' holds a JSON object. Nothing is written unless every row is valid.');
  file.addEventListener('change', () => { checked = null; report.hidden = true; });
  return formDialog({
    title: 'Import resources from CSV',
    intro: [hint, h('div', { class: 'field field-wide', dataset: { field: 'file' } }, h('label', { text: 'CSV file' }), file,
      h('p', { class: 'field-error', hidden: true })), report],
    wide: true,
    submitLabel: 'Check file',
    async submit(form, ctl) {
      const f = file.files && file.files[0];
      if (!f) throw new Error('Choose a CSV file first');
      const text = await f.text();
      if (checked !== text) {
        const { status, data } = await post(text, true);
        report.hidden = false;
        if (status === 200 && data && data.valid) {
          checked = text;
          replace(report, h('p', { class: 'run-result run-ok', text: `${num(data.rows)} row${data.rows === 1 ? '' : 's'} are valid. Import them?` }));
          ctl.setSubmit('Import', false);
          return false;
        }
        const errs = (data && data.errors) || [];
        replace(report, h('div', { class: 'run-result run-failed' },
          h('strong', { text: (data && data.error && data.error.message) || `The check failed (${status})` }),
          errs.length ? h('ul', { class: 'alert-list' }, errs.slice(0, 50).map((e) => h('li', {
            text: `Line ${e.line}${e.column ? `, column ${e.column}` : ''}: ${e.reason}` }))) : null,
          errs.length > 50 ? h('p', { text: `… and ${num(errs.length - 50)} more` }) : null));
        ctl.setSubmit('Check file', false);
        return false;
      }
      const { status, data } = await post(text, false);
      if (status !== 201) {
        checked = null;
        ctl.setSubmit('Check file', false);
        const errs = (data && data.errors) || [];
        throw new Error([(data && data.error && data.error.message) || `The import failed (${status})`,
          ...errs.slice(0, 5).map((e) => `line ${e.line}: ${e.reason}`)].join('; '));
      }
      toast(`Imported ${num(data.imported)} resource${data.imported === 1 ? '' : 's'}`);
    },
  });
}
