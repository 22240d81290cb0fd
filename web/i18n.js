// i18n.js — the page's English and Chinese strings and the language switch.
const STRINGS = {
  en: {
    'jobs.title': 'Background jobs', 'jobs.none': 'No background jobs.', 'jobs.kill': 'Stop',
    'jobs.running': 'running', 'jobs.stopping': 'stopping', 'jobs.completed': 'completed',
    'jobs.killed': 'stopped', 'jobs.failed': 'failed', 'jobs.start.acp-probe': 'Probe every engine',
    'card.exit': 'exit code', 'card.query': 'query', 'card.noHits': 'nothing found',
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
    branches: '{n} branches', delete: 'Delete', branchTitle: '{name} — turn {turn}, variant {variant}', branchShort: 'turn {turn} · variant {variant}',
    modelFailed: 'The model could not answer',
    actRegenerate: 'Regenerate (a new variant)', actEdit: 'Edit', actRollback: 'Roll back to here',
    actDelete: 'Delete this turn', cannotDeleteFirst: 'The first turn cannot be deleted; start a new story instead.',
    prevVariant: 'Previous variant', nextVariant: 'Next variant', newVariant: 'A new variant', save: 'Save', cancel: 'Cancel',
    rpContinue: 'Continue the reply', rpImpersonate: 'Write my line',
    routeChats: 'Chats', routeCharacters: 'Characters',
    hitRelevance: '{p}%', hitScore: 'Search score {s} (full-text rank, faded by age); the best hit is 100%',
    'rp.gallery': 'Characters', 'rp.search': 'Search names, tags, creators, descriptions',
    'rp.import': 'Import a card', 'rp.count': '{n} of {total}', 'rp.none': 'No characters yet. Import a card (PNG, JSON or CHARX) to begin.',
    'rp.noMatch': 'No character matches the search.', 'rp.by': 'by {name}', 'rp.version': 'version {v}',
    'rp.greetingsN': '{n} greetings', 'rp.bookN': 'book: {n} entries',
    'rp.bookTitle': 'This card has its own lorebook', 'rp.bookBody': 'It holds {n} entries. Import them with the card?',
    'rp.bookImport': 'Import with the book', 'rp.bookDiscard': 'Import without it', 'rp.imported': 'Imported {name}.',
    'rp.back': 'All characters', 'rp.start': 'Start a story', 'rp.greetings': 'Greeting',
    'rp.firstMessage': 'First message', 'rp.alternate': 'Alternate greeting {n}', 'rp.noGreeting': '(no greeting)',
    'rp.persona': 'Play as', 'rp.noPersona': 'Yourself (no persona)', 'rp.begin': 'Begin the story',
    'rp.description': 'Description', 'rp.personality': 'Personality', 'rp.scenario': 'Scenario',
    'rp.book': 'Lorebook “{name}” ({n} entries)', 'rp.noKeys': '(no keys)', 'rp.constant': 'always on',
    'rp.disabled': 'off', 'rp.creatorNotes': 'Creator’s notes', 'rp.examples': 'Example dialogue',
    'fix.MISSING_CREDENTIAL': 'Set DEEPSEEK_API_KEY (or CDSH_BASE_URL and CDSH_MODEL for another endpoint) and restart cdsh web.',
    'fix.INVALID_CREDENTIAL': 'The endpoint refused the key: check DEEPSEEK_API_KEY / CDSH_API_KEY, then restart cdsh web.',
    'fix.QUOTA': 'The account is out of credit or quota: top it up or use another endpoint.',
    'fix.RATE_LIMIT': 'Too many requests: wait a moment and send again.',
    'fix.CONTEXT_WINDOW_EXCEEDED': 'The conversation is too long for the model: roll back a few turns, start a branch, or lower the reply length in the settings.',
    'fix.TIMEOUT': 'The endpoint did not answer in time: check that it is running, then send again.',
    'fix.LLM_STREAM_IDLE_TIMEOUT': 'The reply stopped arriving: send again, or check the endpoint.',
    'fix.TRANSPORT': 'The endpoint cannot be reached: check CDSH_BASE_URL and the network.',
    'fix.SERVER': 'The endpoint had an error of its own: send again later.',
    'fix.INVALID_REQUEST': 'The endpoint refused the request: check the model name (CDSH_MODEL) and the settings.',
    'fix.BAD_RESPONSE': 'The endpoint answered something that is not a chat reply: check CDSH_BASE_URL.',
    'fix.EMPTY_RESPONSE': 'The model sent an empty reply: send again.',
    'fix.REPLY_TOO_LARGE': 'The reply was too large: lower the reply length in the settings.',
    'fix.INVALID_CONFIG': 'The model settings are invalid: check CDSH_BASE_URL and CDSH_MODEL.',
  },
  zh: {
    'jobs.title': '后台任务', 'jobs.none': '没有后台任务。', 'jobs.kill': '停止',
    'jobs.running': '运行中', 'jobs.stopping': '正在停止', 'jobs.completed': '已完成',
    'jobs.killed': '已停止', 'jobs.failed': '失败', 'jobs.start.acp-probe': '探测所有引擎',
    'card.exit': '退出码', 'card.query': '查询', 'card.noHits': '没有结果',
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
    branches: '{n} 个分支', delete: '删除', branchTitle: '{name} — 第 {turn} 轮，版本 {variant}', branchShort: '第 {turn} 轮 · 版本 {variant}',
    modelFailed: '模型未能回答',
    actRegenerate: '重新生成（新的版本）', actEdit: '编辑', actRollback: '回退到这里',
    actDelete: '删除这一轮', cannotDeleteFirst: '第一轮不能删除；请开始新的故事。',
    prevVariant: '上一个版本', nextVariant: '下一个版本', newVariant: '生成新的版本', save: '保存', cancel: '取消',
    rpContinue: '继续写这条回复', rpImpersonate: '替我写一句',
    routeChats: '会话', routeCharacters: '角色',
    hitRelevance: '{p}%', hitScore: '搜索得分 {s}（全文检索排名，随时间衰减）；最相关的一条为 100%',
    'rp.gallery': '角色', 'rp.search': '搜索名字、标签、作者、简介',
    'rp.import': '导入角色卡', 'rp.count': '{total} 个中的 {n} 个', 'rp.none': '还没有角色。导入一张角色卡（PNG、JSON 或 CHARX）开始吧。',
    'rp.noMatch': '没有符合搜索的角色。', 'rp.by': '作者：{name}', 'rp.version': '版本 {v}',
    'rp.greetingsN': '{n} 条开场白', 'rp.bookN': '世界书：{n} 条',
    'rp.bookTitle': '这张卡自带世界书', 'rp.bookBody': '其中有 {n} 条条目。要和角色卡一起导入吗？',
    'rp.bookImport': '连同世界书导入', 'rp.bookDiscard': '不导入世界书', 'rp.imported': '已导入 {name}。',
    'rp.back': '全部角色', 'rp.start': '开始故事', 'rp.greetings': '开场白',
    'rp.firstMessage': '第一条消息', 'rp.alternate': '备选开场白 {n}', 'rp.noGreeting': '（没有开场白）',
    'rp.persona': '扮演', 'rp.noPersona': '你自己（不用人设）', 'rp.begin': '开始这个故事',
    'rp.description': '简介', 'rp.personality': '性格', 'rp.scenario': '场景',
    'rp.book': '世界书“{name}”（{n} 条）', 'rp.noKeys': '（没有关键词）', 'rp.constant': '常驻',
    'rp.disabled': '已停用', 'rp.creatorNotes': '作者的话', 'rp.examples': '对话示例',
    'fix.MISSING_CREDENTIAL': '请设置 DEEPSEEK_API_KEY（或用 CDSH_BASE_URL 与 CDSH_MODEL 指定其他服务），然后重启 cdsh web。',
    'fix.INVALID_CREDENTIAL': '服务拒绝了密钥：请检查 DEEPSEEK_API_KEY / CDSH_API_KEY，然后重启 cdsh web。',
    'fix.QUOTA': '账户余额或额度已用完：请充值或换用其他服务。',
    'fix.RATE_LIMIT': '请求过于频繁：请稍等片刻再发送。',
    'fix.CONTEXT_WINDOW_EXCEEDED': '对话超出了模型的上下文长度：请回退几轮、开一个分支，或在设置中调低回复长度。',
    'fix.TIMEOUT': '服务未能及时回答：请确认它在运行，然后重新发送。',
    'fix.LLM_STREAM_IDLE_TIMEOUT': '回复中途停止：请重新发送，或检查服务。',
    'fix.TRANSPORT': '无法连接到服务：请检查 CDSH_BASE_URL 和网络。',
    'fix.SERVER': '服务自身出错：请稍后重新发送。',
    'fix.INVALID_REQUEST': '服务拒绝了请求：请检查模型名（CDSH_MODEL）和设置。',
    'fix.BAD_RESPONSE': '服务返回的不是对话回复：请检查 CDSH_BASE_URL。',
    'fix.EMPTY_RESPONSE': '模型返回了空回复：请重新发送。',
    'fix.REPLY_TOO_LARGE': '回复过大：请在设置中调低回复长度。',
    'fix.INVALID_CONFIG': '模型设置无效：请检查 CDSH_BASE_URL 与 CDSH_MODEL。',
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
