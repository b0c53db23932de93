// The console's shell: log-in, navigation (hash routes) and the pages.
import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { call, setCredentials, whenUnauthorized } from './api.js';
import { Overview } from './overview.js';
import { Topics } from './topics.js';
import { Messages } from './messages.js';
import { Groups } from './groups.js';
import { SqlEditor } from './sqlpage.js';
import { Expansions } from './expansions.js';
import { Security } from './security.js';

const PAGES = [
  ['overview', 'Overview'], ['topics', 'Topics'], ['messages', 'Messages'], ['groups', 'Groups'],
  ['sql', 'SQL'], ['expansions', 'Expansions'], ['security', 'Users & policies'],
];

function route() {
  const [page, arg] = location.hash.replace(/^#\/?/, '').split('/');
  return { page: page || 'overview', arg: arg ? decodeURIComponent(arg) : '' };
}

function Login({ message, onDone }) {
  const [error, setError] = useState(message);
  const submit = async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    setCredentials(f.get('user'), f.get('password'));
    try {
      onDone(await call('GET', '/v1/whoami'));
    } catch (err) {
      setCredentials(null);
      setError(err.message);
    }
  };
  return html`<form class="login" onSubmit=${submit} data-testid="login">
    <h1>Sluice</h1>
    <p>Log in with a broker user (SASL/SCRAM credentials).</p>
    <input name="user" placeholder="user" autocomplete="username" required autofocus />
    <input name="password" type="password" placeholder="password" autocomplete="current-password" required />
    <button type="submit">Log in</button>
    ${error && html`<div class="error" role="alert">${error}</div>`}
  </form>`;
}

function App() {
  const [me, setMe] = useState(undefined);
  const [login, setLogin] = useState('');
  const [r, setRoute] = useState(route());
  useEffect(() => {
    // The first answer decides between the pages and the log-in form (none when the
    // browser presented a client certificate the broker verified: its name is the user);
    // a later 401 (the password changed, the user removed) brings the form back with the
    // broker's reason.
    call('GET', '/v1/whoami').then(setMe, () => setMe(null))
      .finally(() => whenUnauthorized((message) => { setMe(null); setLogin(message); }));
    const onHash = () => setRoute(route());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  if (me === undefined) return html`<p class="loading">Loading…</p>`;
  if (me === null) return html`<${Login} message=${login} onDone=${setMe} />`;
  const pages = PAGES.filter(([p]) => p !== 'security' || me.cluster.describe);
  const logout = () => { setCredentials(null); setLogin(''); setMe(null); };
  let body;
  switch (r.page) {
    case 'topics': body = html`<${Topics} topic=${r.arg} />`; break;
    case 'messages': body = html`<${Messages} topic=${r.arg} key=${r.arg} />`; break;
    case 'groups': body = html`<${Groups} group=${r.arg} />`; break;
    case 'sql': body = html`<${SqlEditor} />`; break;
    case 'expansions': body = html`<${Expansions} />`; break;
    case 'security': body = html`<${Security} me=${me} />`; break;
    default: body = html`<${Overview} me=${me} />`;
  }
  return html`<div class="shell">
    <nav>
      <div class="brand">Sluice</div>
      ${pages.map(([p, label]) => html`<a href=${'#/' + p} class=${r.page === p ? 'active' : ''}>${label}</a>`)}
      <div class="who" data-testid="who">${me.user}${me.certificate
        ? html` <span class="note" data-testid="who-certificate">(client certificate)</span>`
        : me.security && html` <button class="link" onClick=${logout}>log out</button>`}</div>
    </nav>
    <main>${body}</main>
  </div>`;
}

render(html`<${App} />`, document.getElementById('app'));
