// Users and policies (docs/security.md), for a user with KafkaDescribe on sluice:cluster
// (changes need KafkaAlter): the HTTP API behind `sluice user` and `sluice policy`.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from './api.js';
import { Table, ErrorLine, useLoad } from './ui.js';

export function Security({ me }) {
  const [users, usersError, reloadUsers] = useLoad(() => call('GET', '/v1/users'), []);
  const [policies, policiesError, reloadPolicies] = useLoad(() => call('GET', '/v1/policies'), []);
  const [error, setError] = useState(null);
  const [done, setDone] = useState('');
  const act = (fn, what) => async (e) => {
    e.preventDefault();
    const f = Object.fromEntries(new FormData(e.target));
    try {
      await fn(f);
      setError(null);
      setDone(what(f));
      e.target.reset();
      reloadUsers();
      reloadPolicies();
    } catch (err) {
      setError(err);
      setDone('');
    }
  };
  const addUser = act((f) => call('POST', '/v1/users', JSON.stringify({ name: f.name, password: f.password })), (f) => `user ${f.name} added`);
  const putPolicy = act((f) => call('PUT', '/v1/policies/' + encodeURIComponent(f.name), f.document), (f) => `policy ${f.name} stored`);
  // Removing asks first; the broker checks KafkaAlter on sluice:cluster.
  const remove = async (what, path) => {
    if (!confirm(`Remove ${what}?`)) return;
    try {
      await call('DELETE', path);
      setError(null);
      setDone(`${what} removed`);
      reloadUsers();
      reloadPolicies();
    } catch (err) {
      setError(err);
      setDone('');
    }
  };
  const attach = act((f) => call('POST', `/v1/policies/${encodeURIComponent(f.policy)}/users`, JSON.stringify({ user: f.user })), (f) => `policy ${f.policy} attached to ${f.user}`);
  return html`<section>
    <h1>Users and policies</h1>
    <${ErrorLine} error=${usersError || policiesError} />
    <h2>Users</h2>
    <${Table} testid="users" rows=${users?.users || []} columns=${['name', { label: 'mechanisms', render: (u) => u.mechanisms.join(', ') },
      { label: '', render: (u) => html`<button class="small" onClick=${() => remove(`user ${u.name}`, '/v1/users/' + encodeURIComponent(u.name))}>remove</button>` }]} />
    <h2>Policies</h2>
    <${Table} testid="policies" rows=${policies?.policies || []} columns=${['name',
      { label: 'users', render: (p) => p.users.join(', ') },
      { label: 'document', render: (p) => html`<code class="doc">${JSON.stringify(p.document)}</code>` },
      { label: '', render: (p) => html`<button class="small" onClick=${() => remove(`policy ${p.name}`, '/v1/policies/' + encodeURIComponent(p.name))}>remove</button>` }]} />
    ${me.cluster.alter ? '' : html`<p class="note">You may look but not change (KafkaAlter on sluice:cluster is needed).</p>`}
    <${ErrorLine} error=${error} />
    ${done && html`<div class="ok" data-testid="security-done">${done}</div>`}
    <div class="forms">
      <form onSubmit=${addUser} data-testid="add-user"><h3>Add a user</h3>
        <input name="name" placeholder="name" required /><input name="password" type="password" placeholder="password" required />
        <button type="submit">Add</button></form>
      <form onSubmit=${putPolicy} data-testid="put-policy"><h3>Store a policy</h3>
        <input name="name" placeholder="policy name" required />
        <textarea name="document" rows="4" required placeholder='{"Version": "1", "Statement": [{"Effect": "Allow", "Action": "KafkaRead", "Resource": "sluice:topic:orders"}]}'></textarea>
        <button type="submit">Store</button></form>
      <form onSubmit=${attach} data-testid="attach-policy"><h3>Attach a policy</h3>
        <input name="policy" placeholder="policy" required /><input name="user" placeholder="user" required />
        <button type="submit">Attach</button></form>
    </div>
  </section>`;
}
