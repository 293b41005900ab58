// The sign-in page: user name and password for a session cookie.
import { h, replace } from './dom.js';
import { api } from './api.js';
import { field, showError, clearErrors, value } from './dialog.js';

/** Renders the sign-in page into root; calls onSignedIn(who) on success. */
export function renderLogin(root, onSignedIn) {
  const alert = h('div', { class: 'form-alert', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block', text: 'Sign in' });
  const form = h('form', { class: 'login-form', novalidate: true, 'aria-label': 'Sign in' },
    alert,
    field({ name: 'username', label: 'User name', required: true, autocomplete: 'username',
      attrs: { autocapitalize: 'off', spellcheck: 'false' } }),
    field({ name: 'password', label: 'Password', type: 'password', required: true,
      autocomplete: 'current-password' }),
    submit);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const username = value(form, 'username');
    const password = form.elements.namedItem('password').value;
    if (!username) return showError(form, { field: 'username', message: 'Enter your user name' });
    if (!password) return showError(form, { field: 'password', message: 'Enter your password' });
    submit.disabled = true;
    submit.textContent = 'Signing in…';
    try {
      const who = await api('POST', '/api/v1/session', { username, password }, { quiet401: true });
      onSignedIn(who);
    } catch (err) {
      showError(form, err.status === 401
        ? { field: 'password', message: 'Wrong user name or password' } : err);
      form.elements.namedItem('password').select();
    } finally {
      submit.disabled = false;
      submit.textContent = 'Sign in';
    }
  });
  replace(root, h('div', { class: 'login-page' },
    h('section', { class: 'login-card' },
      h('div', { class: 'login-brand' },
        h('img', { src: 'logo.svg', alt: '', width: 40, height: 40 }),
        h('div', {},
          h('h1', { text: 'gpuinv' }),
          h('p', { class: 'muted', text: 'Data-center GPU inventory' }))),
      form,
      h('p', { class: 'login-foot muted', text: 'Sign in with your gpuinv account.' }))));
  const pw = form.elements.namedItem('password');
  const un = form.elements.namedItem('username');
  (un.value ? pw : un).focus();
}
