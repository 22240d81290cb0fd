/* playbook.h — the body of the `xiangqi-mate-playbook` skill (seed §5):
 * notation rules, opening principles, piece values, when to call
 * xiangqi_hint. Static text. */
#ifndef CDSH_XQ_PLAYBOOK_H
#define CDSH_XQ_PLAYBOOK_H

extern const char cdsh_xq_playbook_text[];

#endif
