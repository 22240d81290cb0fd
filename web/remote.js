// remote.js — a plugin channel's RPC remote, built from the channel's own
// operations table: the reserved endpoint `$ops` lists the rows (host/ops.h),
// so the panel's method names come from the plugin, never from a list
// written here. A call to a name the table lacks fails at once, in the page,
// without a round trip. Not here: what a panel shows, or how host.rpc travels.

// Loads `$ops` of `channel` through host.rpc(channel, endpoint, payload) and
// resolves to { names: Set, call(name, payload) } where call() answers as
// host.rpc does ({ok, value} | {ok:false, error}). Rejects when the channel
// cannot list its rows (the panel then reports the channel unavailable).
export async function loadRemote(host, channel) {
  const r = await host.rpc(channel, '$ops', {});
  if (!r || !r.ok || !Array.isArray(r.value)) {
    const msg = (r && r.error && r.error.message) || `${channel} lists no operations`;
    throw Object.assign(new Error(msg), { code: (r && r.error && r.error.code) || 'unavailable' });
  }
  const names = new Set(r.value.map((row) => row.name));
  return {
    names,
    call(name, payload) {
      if (!names.has(name)) {
        return Promise.resolve({
          ok: false,
          error: { code: 'not-found', message: `${channel} has no operation "${name}"` },
        });
      }
      return host.rpc(channel, name, payload);
    },
  };
}

// The same, loaded on first use and shared by every call: remote(name,
// payload) answers as host.rpc does. When `$ops` cannot be loaded the call
// answers that failure ({ok:false, error}: the channel's own code, e.g.
// not-found when the plugin is off) and the next call tries again.
export function lazyRemote(host, channel) {
  let loading = null;
  return async (name, payload) => {
    if (!loading) loading = loadRemote(host, channel);
    try {
      return (await loading).call(name, payload);
    } catch (e) {
      loading = null;
      return { ok: false, error: { code: e.code || 'unavailable', message: e.message } };
    }
  };
}
