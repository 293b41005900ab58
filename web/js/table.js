// A data table with server-side sorting, and a cursor pager.
import { h, replace, num } from './dom.js';

/** Parses "name" / "-name" into {key, desc}. */
export function parseSort(sort) {
  if (!sort) return { key: '', desc: false };
  return sort.startsWith('-') ? { key: sort.slice(1), desc: true } : { key: sort, desc: false };
}

/**
 * Creates a table. opts: columns [{label, sortKey?, cell(row) -> node|string,
 * cls?, width?}], sort ("name" or "-name"), onSort(newSort), onRow(row) (row
 * click), rowClass(row) (extra class of a row), empty (text or node shown
 * with no rows; a function of nothing returning either), label (accessible
 * name), minWidth (px under which the table scrolls inside its wrapper).
 *
 * The table is laid out fixed to its wrapper's width: columns with a width
 * keep it, the others share what is left, and a cell's overflowing text is
 * clipped (its whole text in a tooltip where the cell sets one). Below
 * minWidth the table keeps that width and scrolls inside its wrapper, so
 * the page itself never scrolls sideways.
 * Returns {el, setRows(rows), setSort(sort), setBusy(bool)}.
 */
export function dataTable(opts) {
  let sort = opts.sort || '';
  const headRow = h('tr');
  const tbody = h('tbody');
  const table = h('table', { class: 'data-table fit', 'aria-label': opts.label || null },
    h('thead', {}, headRow), tbody);
  table.style.minWidth = `${opts.minWidth || 900}px`;
  const wrap = h('div', { class: 'table-wrap', 'aria-busy': 'false' }, table);

  /** A header cell, sized when the column asks for a width. */
  function th(c, ...children) {
    const el = h('th', { scope: 'col', class: c.cls || null, dataset: { col: c.key || null } }, ...children);
    if (c.width) el.style.width = c.width;
    return el;
  }

  function drawHead() {
    const { key, desc } = parseSort(sort);
    replace(headRow, opts.columns.map((c) => {
      if (!c.sortKey) return th(c, c.label);
      const active = key === c.sortKey;
      const btn = h('button', { type: 'button', class: `sort${active ? ' sort-active' : ''}`,
        dataset: { sort: c.sortKey },
        on: { click: () => {
          const next = active && !desc ? `-${c.sortKey}` : c.sortKey;
          sort = next;
          drawHead();
          opts.onSort(next);
        } } },
      c.label, h('span', { class: 'sort-ind', 'aria-hidden': 'true', text: active ? (desc ? '▼' : '▲') : '↕' }));
      const cell = th(c, btn);
      cell.setAttribute('aria-sort', active ? (desc ? 'descending' : 'ascending') : 'none');
      return cell;
    }));
  }

  function setRows(rows) {
    if (!rows.length) {
      const empty = typeof opts.empty === 'function' ? opts.empty() : opts.empty;
      replace(tbody, h('tr', { class: 'empty-row' },
        h('td', { colspan: opts.columns.length, 'data-testid': 'empty-state' }, empty || 'Nothing to show')));
      return;
    }
    replace(tbody, rows.map((row) => {
      const tr = h('tr', { dataset: { id: row.id }, class: (opts.rowClass && opts.rowClass(row)) || null },
        opts.columns.map((c) => h('td', { class: c.cls || null, dataset: { col: c.key || null } }, c.cell(row))));
      if (opts.onRow) {
        tr.classList.add('clickable');
        tr.addEventListener('click', (ev) => {
          if (ev.target.closest('a, button, input, select')) return;
          opts.onRow(row);
        });
      }
      return tr;
    }));
  }

  drawHead();
  return {
    el: wrap,
    setRows,
    setSort(s) { sort = s || ''; drawHead(); },
    setBusy(b) { wrap.setAttribute('aria-busy', b ? 'true' : 'false'); },
  };
}

/**
 * A pager over cursor-paged lists. onPage(cursor) loads a page. Call
 * update(count, total, next) after each load; reset() on a new query.
 */
export function pager(onPage) {
  let stack = [];       // {cursor, start} of the pages before the current one
  let current = null;   // cursor of the current page (null: first)
  let start = 0;        // index of the current page's first row
  let shown = 0;
  let nextCursor = null;
  const info = h('span', { class: 'pager-info', 'data-testid': 'pager-info' });
  const prev = h('button', { type: 'button', class: 'btn btn-secondary btn-sm', text: '← Previous', disabled: true,
    on: { click: () => {
      const p = stack.pop();
      current = p ? p.cursor : null;
      start = p ? p.start : 0;
      onPage(current);
    } } });
  const next = h('button', { type: 'button', class: 'btn btn-secondary btn-sm', text: 'Next →', disabled: true,
    on: { click: () => {
      stack.push({ cursor: current, start });
      current = nextCursor;
      start += shown;
      onPage(current);
    } } });
  const el = h('nav', { class: 'pager', 'aria-label': 'Pages' }, info, h('div', { class: 'pager-buttons' }, prev, next));
  return {
    el,
    cursor: () => current,
    reset() { stack = []; current = null; start = 0; nextCursor = null; },
    update(count, total, nxt) {
      nextCursor = nxt;
      shown = count;
      info.textContent = total === 0 || count === 0 ? 'No results'
        : `${num(start + 1)}–${num(start + count)} of ${num(total)}`;
      prev.disabled = stack.length === 0;
      next.disabled = !nxt;
    },
  };
}
