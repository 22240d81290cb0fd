// i18n.js — the page's English and Chinese strings and the language switch.
const STRINGS = {
  en: {
    newChat: 'New chat', send: 'Send', stop: 'Stop', empty: 'Pick a session or start a new chat.',
    placeholder: 'Message, or /command — Enter sends, Shift+Enter for a new line',
    thinking: 'Reasoning', running: 'running…', ok: 'done', failed: 'failed', args: 'arguments',
    result: 'result', noModel: 'No model is configured, so chat cannot answer yet.',
    modelOn: 'model', modelOff: 'no model', deleteConfirm: 'Delete this session?',
    turnEnded: 'Turn ended', untitled: 'Untitled', busy: 'A turn is running in this session.',
    reconnecting: 'reconnecting…', switchLang: '中文', commandLabel: 'command',
    engine: 'Engine', engineModel: 'cdsh (model)', engineLocked: 'locked after the first message',
    engineMissing: 'not installed', engineDisabled: 'disabled',
    engineBanner: 'This session talks to the engine', engineNoModel: 'no model is needed',
    engineCwd: 'working in',
    approvalHead: 'Approval needed', approvalAgent: 'The agent asks to run:',
    approvalTool: 'A tool asks to run:', approvalCancel: 'Cancel',
    approvalAllowOnce: 'Allow once', approvalReject: 'Reject',
    fork: 'Fork', forkTitle: 'Copy this session into a new one and switch to it',
    forked: 'Forked from',
    emptySession: 'No messages yet. Write the first one below.',
    noModelHint: 'Set DEEPSEEK_API_KEY, or CDSH_BASE_URL and CDSH_MODEL for another OpenAI-compatible endpoint, then restart cdsh web.',
    you: 'You', assistantName: 'Assistant',
    noteMemorySaved: 'The story noted a memory', noteMemoryUpdated: 'The story updated a memory',
    noteWorldUpdated: 'The world state changed', noteWritten: 'The story noted something',
    noteContinue: 'Continue the last reply', noteTavern: 'Tavern note',
    'panel.tavern': 'Role-play', 'panel.xiangqi': 'Xiangqi',
    viewSessions: 'Chats', viewChat: 'Story', viewPanels: 'Panels',
  },
  zh: {
    newChat: '新对话', send: '发送', stop: '停止', empty: '选择一个会话，或开始新对话。',
    placeholder: '输入消息或 /命令 — 回车发送，Shift+回车换行',
    thinking: '推理过程', running: '运行中…', ok: '完成', failed: '失败', args: '参数',
    result: '结果', noModel: '尚未配置模型，对话暂时无法回答。',
    modelOn: '模型', modelOff: '未配置模型', deleteConfirm: '删除这个会话？',
    turnEnded: '本轮结束', untitled: '未命名', busy: '该会话正在运行一轮对话。',
    reconnecting: '正在重连…', switchLang: 'English', commandLabel: '命令',
    engine: '引擎', engineModel: 'cdsh（模型）', engineLocked: '首条消息后已锁定',
    engineMissing: '未安装', engineDisabled: '已停用',
    engineBanner: '此会话由引擎处理', engineNoModel: '无需配置模型',
    engineCwd: '工作目录',
    approvalHead: '需要批准', approvalAgent: '智能体请求执行：',
    approvalTool: '工具请求执行：', approvalCancel: '取消',
    approvalAllowOnce: '允许一次', approvalReject: '拒绝',
    fork: '分叉', forkTitle: '把这个会话复制为新会话并切换过去',
    forked: '分叉自',
    emptySession: '还没有消息，在下方写下第一句吧。',
    noModelHint: '请设置 DEEPSEEK_API_KEY，或用 CDSH_BASE_URL 与 CDSH_MODEL 指定其他兼容 OpenAI 的服务，然后重启 cdsh web。',
    you: '你', assistantName: '助手',
    noteMemorySaved: '故事记下了一条记忆', noteMemoryUpdated: '故事更新了一条记忆',
    noteWorldUpdated: '世界状态有变化', noteWritten: '故事记下了一些内容',
    noteContinue: '接着写上一条回复', noteTavern: '酒馆提示',
    'panel.tavern': '角色扮演', 'panel.xiangqi': '象棋',
    viewSessions: '会话', viewChat: '对话', viewPanels: '面板',
  },
};

let lang = localStorage.getItem('cdsh.lang') ||
  ((navigator.language || 'en').startsWith('zh') ? 'zh' : 'en');
const listeners = new Set();

export function t(key) {
  return (STRINGS[lang] && STRINGS[lang][key]) || STRINGS.en[key] || key;
}

export function getLang() { return lang; }

// Both dictionaries (the browser test checks that they have the same keys).
export function dictionaries() { return STRINGS; }

export function setLang(next) {
  lang = next === 'zh' ? 'zh' : 'en';
  localStorage.setItem('cdsh.lang', lang);
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  applyStatic();
  for (const fn of listeners) fn(lang);
}

export function onLang(fn) { listeners.add(fn); return () => listeners.delete(fn); }

// Fills elements marked data-i18n / data-i18n-placeholder.
export function applyStatic() {
  for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll('[data-i18n-placeholder]'))
    el.placeholder = t(el.dataset.i18nPlaceholder);
  const btn = document.getElementById('lang');
  if (btn) btn.textContent = t('switchLang');
}
