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
  engines: () => request('GET', '/api/engines'),
  engine: (id) => request('GET', `/api/sessions/${id}/engine`),
  bindEngine: (id, engineId) => request('POST', `/api/sessions/${id}/engine`, { engineId }),
  unbindEngine: (id) => request('DELETE', `/api/sessions/${id}/engine`),
  openEngine: (id) => request('POST', `/api/sessions/${id}/engine/open`, {}),
  setEngineConfig: (id, configId, value) =>
    request('POST', `/api/sessions/${id}/engine/config`, { configId, value }),
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
