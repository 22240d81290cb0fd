// api.js — calls to the cdsh web API (the access token travels as the
// HttpOnly cookie set when the page was opened) and the RPC gateway.
async function request(method, path, body) {
  const init = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    const err = new Error((data && data.error && data.error.message) || `HTTP ${res.status}`);
    err.status = res.status;
    err.code = data && data.error && data.error.code;
    throw err;
  }
  return data;
}

// An /acp call's value, or an Error carrying the plugin's precise code
// (ENGINE_LOCKED, UNKNOWN_ENGINE...) when the result is not ok.
async function engineCall(endpoint, payload) {
  const r = await api.rpc('acp', endpoint, payload);
  if (r.ok) return r.value;
  const err = new Error((r.error && r.error.message) || `/acp/${endpoint} failed`);
  err.code = (r.error && r.error.details && r.error.details.code) || (r.error && r.error.code);
  throw err;
}

export const api = {
  status: () => request('GET', '/api/status'),
  sessions: () => request('GET', '/api/sessions'),
  createSession: (title) => request('POST', '/api/sessions', title ? { title } : {}),
  session: (id) => request('GET', `/api/sessions/${id}`),
  deleteSession: (id) => request('DELETE', `/api/sessions/${id}`),
  forkSession: (id, body) => request('POST', `/api/sessions/${id}/fork`, body || {}),
  send: (id, text) => request('POST', `/api/sessions/${id}/messages`, { text }),
  cancel: (id) => request('POST', `/api/sessions/${id}/cancel`),
  command: (id, line) => request('POST', `/api/sessions/${id}/commands`, { line }),
  panels: () => request('GET', '/api/panels'),
  // Engines (external ACP agents): the acp plugin's RPC channel, the one
  // engines surface (docs/acp.md). Each per-session call resolves to
  // {binding, locked, config}; a disabled plugin rejects (no channel).
  engines: () => engineCall('engines'),
  engine: (id) => engineCall('session', { session: id }),
  bindEngine: (id, engine) => engineCall('bind', { session: id, engine }),
  unbindEngine: (id) => engineCall('unbind', { session: id }),
  openEngine: (id) => engineCall('open', { session: id }),
  setEngineConfig: (id, configId, value) => engineCall('config', { session: id, configId, value }),
  approvals: (id) => request('GET', `/api/sessions/${id}/approvals`),
  answerApproval: (id, aid, optionId) =>
    request('POST', `/api/sessions/${id}/approvals/${aid}`, { optionId }),
  cancelApproval: (id, aid) => request('POST', `/api/sessions/${id}/approvals/${aid}`, { cancel: true }),
  // RPC gateway: resolves to the RpcResult {ok, value} | {ok:false, error}.
  async rpc(channel, endpoint, payload) {
    const ch = channel.replace(/^\//, '');
    const rpcId = (crypto.randomUUID && crypto.randomUUID()) || String(Math.random()).slice(2);
    const res = await fetch(`/rpc/${ch}/${endpoint}`, {
      method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'client-request', rpcId, method: endpoint, payload: payload ?? null }),
    });
    const data = await res.json().catch(() => null);
    if (!data || data.rpcId !== rpcId || !data.result)
      throw new Error(`transport failure for /${ch}/${endpoint}: HTTP ${res.status}`);
    return data.result;
  },
};
