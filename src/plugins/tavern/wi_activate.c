/* wi_activate.c — world-info activation as SillyTavern's checkWorldInfo does
 * it (see wi_activate.h). Entries are read once into C structs; the scan
 * loop, groups, probability and budget work on those. Output strings and the
 * trigger log are built as JSON at the end. Prompt assembly is elsewhere. */
#include "plugins/tavern/wi_activate.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/utf8.h"
#include "plugins/tavern/wi_keys.h"
#include "plugins/tavern/wi_settings.h"
#include "plugins/tavern/seed.h"
#include "plugins/tavern/tokens.h"

#define MAX_SCAN_DEPTH 1000
#define DEFAULT_DEPTH 4
#define DEFAULT_WEIGHT 100

enum { ST_NONE = 0, ST_INITIAL = 1, ST_RECURSION = 2, ST_MIN_ACTIVATIONS = 3 };

typedef cdsh_tavern_wi_key pkey;

typedef struct wi_entry {
    const json_t *src;
    const char *book;
    json_int_t uid;
    char id[192]; /* "book.uid" (book names are at most 159 bytes) */
    const char *comment;
    char *content; /* decorators stripped; macro-expanded when activated */
    bool content_owned;
    const json_t *keys, *keys2;
    int logic, order, position, depth, role, weight;
    int delay_rec;                             /* delayUntilRecursion level, 0 = off */
    int scan_depth, case_sens, whole, scoring; /* -1: use the global setting */
    int sticky, cooldown, delay;
    double probability;
    bool selective, constant, disable, exclude_rec, prevent_rec, use_prob, group_override;
    bool ignore_budget, dec_activate, dec_dont, has_match_flags;
    char **groups;
    size_t ngroups;
    const char *group_raw, *outlet;
    const json_t *char_filter;
    const json_t *triggers; /* generation types it applies to; empty: all */
    pkey *pk[2];
    size_t npk[2];
    bool pk_ready, pk_dynamic;
    uint32_t hash;
    size_t index;
    /* Run state. */
    bool is_sticky, is_cooldown, is_delay;
    bool activated, failed_prob, truncated, turn_local;
    char reason[160];
} wi_entry;

/* The haystack of one scan, raw and lowercased. */
typedef cdsh_tavern_wi_hay hay;

typedef struct scan_cache {
    int depth;
    char *raw, *low;
    hay h;
} scan_cache;

typedef struct run {
    const cdsh_tavern_wi_input *in;
    const cdsh_tavern_wi_settings *s;
    wi_entry *e;
    size_t n;
    char **msgs; /* newest first, "Name: text", trimmed */
    size_t nmsgs;
    cdsh_strbuf recurse; /* joined recursion buffer (each piece prefixed by JOINER) */
    bool has_recurse;
    int skew;
    scan_cache *cache;
    size_t ncache;
    cdsh_tavern_wi_matcher *keys; /* compiled regex keys of this call */
    cdsh_tavern_rng rng;
    json_t *timed;        /* the state worked on */
    wi_entry **activated; /* activation order */
    size_t nactivated;
} run;

void cdsh_tavern_wi_settings_default(cdsh_tavern_wi_settings *s)
{
    memset(s, 0, sizeof *s);
    s->scan_depth = 2;
    s->context_percent = 25;
    s->max_context = 128000;
    s->recursive = true;
    s->match_whole_words = true;
    s->include_names = true;
    s->character_strategy = CDSH_TAVERN_WI_CHARACTER_FIRST;
}

/* ---- small helpers ---------------------------------------------------- */

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int vint(const json_t *v, int dflt);

static int jint(const json_t *o, const char *k, int dflt)
{
    return vint(json_object_get(o, k), dflt);
}

static bool jbool(const json_t *o, const char *k)
{
    return json_is_true(json_object_get(o, k));
}

static void reason(wi_entry *e, bool fired, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reason(wi_entry *e, bool fired, const char *fmt, ...)
{
    (void)fired;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
}

/* ---- entries ----------------------------------------------------------- */

static void split_groups(wi_entry *e)
{
    const char *g = e->group_raw;
    if (!g || !*g)
        return;
    /* Groups are comma-separated; ", " and "," both separate (ST: /,\s*​/). */
    char *copy = strdup(g);
    if (!copy)
        return;
    for (char *tok = copy, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next) {
            *next++ = 0;
            while (*next && isspace((unsigned char)*next))
                next++;
        }
        if (!*tok)
            continue;
        char **gs = realloc(e->groups, (e->ngroups + 1) * sizeof *gs);
        if (!gs)
            break;
        e->groups = gs;
        e->groups[e->ngroups++] = strdup(tok);
    }
    free(copy);
}

/* parseDecorators: leading lines starting with "@@" are decorators ("@@@"
 * escapes one); the content starts at the first other line (content made
 * of decorators only is kept whole, as SillyTavern keeps it). A line is a
 * known decorator when it starts with one, but only the exact line
 * "@@activate" / "@@dont_activate" acts (ST's decorators.includes): a
 * trailing space or "\r" makes it inert. */
static char *strip_decorators(const char *content, wi_entry *e)
{
    if (strncmp(content, "@@", 2))
        return strdup(content);
    const char *line = content;
    bool fallback = false;
    for (;;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (strncmp(line, "@@", 2))
            return strdup(line);
        if (!strncmp(line, "@@@", 3) && !fallback) {
            /* escaped: skipped */
        } else {
            const char *d = !strncmp(line, "@@@", 3) ? line + 1 : line;
            size_t dl = len - (size_t)(d - line);
            if (!strncmp(d, "@@activate", 10)) {
                e->dec_activate |= dl == 10;
                fallback = false;
            } else if (!strncmp(d, "@@dont_activate", 15)) {
                e->dec_dont |= dl == 15;
                fallback = false;
            } else {
                fallback = true;
            }
        }
        if (!nl)
            return strdup(content);
        line = nl + 1;
    }
}

enum {
    F_UID,
    F_COMMENT,
    F_CONTENT,
    F_KEY,
    F_KEY2,
    F_STICKY,
    F_COOLDOWN,
    F_DELAY,
    F_ORDER,
    F_POSITION, /* the fields above feed the hash, in this order */
    F_LOGIC,
    F_DEPTH,
    F_ROLE,
    F_WEIGHT,
    F_DELAY_REC,
    F_SCAN_DEPTH,
    F_CASE,
    F_WHOLE,
    F_SCORING,
    F_PROBABILITY,
    F_SELECTIVE,
    F_CONSTANT,
    F_DISABLE,
    F_EXCLUDE_REC,
    F_PREVENT_REC,
    F_USE_PROB,
    F_GROUP_OVERRIDE,
    F_IGNORE_BUDGET,
    F_GROUP,
    F_OUTLET,
    F_CHAR_FILTER,
    F_MATCH_FLAG,
    F_TRIGGERS,
    F_COUNT
};

/* Entry field names, sorted for bsearch. */
static const struct field_name {
    const char *name;
    int id;
} FIELD_NAMES[] = {
    {"caseSensitive", F_CASE},
    {"characterFilter", F_CHAR_FILTER},
    {"comment", F_COMMENT},
    {"constant", F_CONSTANT},
    {"content", F_CONTENT},
    {"cooldown", F_COOLDOWN},
    {"delay", F_DELAY},
    {"delayUntilRecursion", F_DELAY_REC},
    {"depth", F_DEPTH},
    {"disable", F_DISABLE},
    {"excludeRecursion", F_EXCLUDE_REC},
    {"group", F_GROUP},
    {"groupOverride", F_GROUP_OVERRIDE},
    {"groupWeight", F_WEIGHT},
    {"ignoreBudget", F_IGNORE_BUDGET},
    {"key", F_KEY},
    {"keysecondary", F_KEY2},
    {"matchCharacterDepthPrompt", F_MATCH_FLAG},
    {"matchCharacterDescription", F_MATCH_FLAG},
    {"matchCharacterPersonality", F_MATCH_FLAG},
    {"matchCreatorNotes", F_MATCH_FLAG},
    {"matchPersonaDescription", F_MATCH_FLAG},
    {"matchScenario", F_MATCH_FLAG},
    {"matchWholeWords", F_WHOLE},
    {"order", F_ORDER},
    {"outletName", F_OUTLET},
    {"position", F_POSITION},
    {"preventRecursion", F_PREVENT_REC},
    {"probability", F_PROBABILITY},
    {"role", F_ROLE},
    {"scanDepth", F_SCAN_DEPTH},
    {"selective", F_SELECTIVE},
    {"selectiveLogic", F_LOGIC},
    {"sticky", F_STICKY},
    {"triggers", F_TRIGGERS},
    {"uid", F_UID},
    {"useGroupScoring", F_SCORING},
    {"useProbability", F_USE_PROB},
};

static int cmp_field(const void *k, const void *e)
{
    return strcmp(k, ((const struct field_name *)e)->name);
}

static int vint(const json_t *v, int dflt)
{
    if (json_is_integer(v))
        return (int)json_integer_value(v);
    if (json_is_real(v))
        return (int)json_real_value(v);
    if (json_is_string(v) && *json_string_value(v)) {
        char *end;
        long l = strtol(json_string_value(v), &end, 10);
        return *end ? dflt : (int)l;
    }
    return dflt;
}

static int vtri(const json_t *v)
{
    return json_is_boolean(v) ? json_is_true(v) : -1;
}

static const char *vstr(const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? s : "";
}

/* The content hash timed effects are keyed on: the fields that define the
 * entry, in a fixed order (ST hashes the whole entry JSON; a hand-picked
 * set avoids serialising a thousand entries every turn). */
static uint32_t entry_hash(const json_t *const *f, const char *book)
{
    uint32_t h = cdsh_tavern_seed_fnv1a_str(CDSH_TAVERN_FNV_BASIS, book);
    for (int i = 0; i <= F_POSITION; i++) {
        const json_t *v = f[i];
        h = cdsh_tavern_seed_fnv1a(h, "|", 1);
        if (json_is_string(v)) {
            h = cdsh_tavern_seed_fnv1a(h, json_string_value(v), json_string_length(v));
        } else if (json_is_integer(v)) {
            json_int_t x = json_integer_value(v);
            h = cdsh_tavern_seed_fnv1a(h, &x, sizeof x);
        } else if (json_is_array(v)) {
            size_t k;
            json_t *it;
            json_array_foreach(v, k, it) {
                h = cdsh_tavern_seed_fnv1a(h, ",", 1);
                if (json_is_string(it))
                    h = cdsh_tavern_seed_fnv1a(h, json_string_value(it), json_string_length(it));
            }
        }
    }
    return h;
}

/* Reads an entry in one pass over its keys (lookups by name would hash
 * every field name of every entry on every turn). */
static int load_entry(wi_entry *e, const json_t *src, const char *book, size_t index)
{
    memset(e, 0, sizeof *e);
    const json_t *f[F_COUNT] = {0};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v) {
        const struct field_name *fn =
            bsearch(k, FIELD_NAMES, sizeof FIELD_NAMES / sizeof FIELD_NAMES[0],
                    sizeof FIELD_NAMES[0], cmp_field);
        if (!fn)
            continue;
        if (fn->id == F_MATCH_FLAG)
            e->has_match_flags |= json_is_true(v);
        else
            f[fn->id] = v;
    }
    e->src = src;
    e->book = book;
    e->uid = json_is_integer(f[F_UID]) ? json_integer_value(f[F_UID]) : (json_int_t)index;
    {
        /* "book.uid" without snprintf: this runs for every entry of every turn. */
        size_t bl = strlen(book);
        char digits[24];
        size_t nd = 0;
        unsigned long long u =
            e->uid < 0 ? (unsigned long long)(-e->uid) : (unsigned long long)e->uid;
        do {
            digits[nd++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (e->uid < 0)
            digits[nd++] = '-';
        memcpy(e->id, book, bl);
        e->id[bl] = '.';
        for (size_t q = 0; q < nd; q++)
            e->id[bl + 1 + q] = digits[nd - 1 - q];
        e->id[bl + 1 + nd] = 0;
    }
    e->comment = vstr(f[F_COMMENT]);
    const char *raw_content = vstr(f[F_CONTENT]);
    if (!strncmp(raw_content, "@@", 2)) {
        if (!(e->content = strip_decorators(raw_content, e)))
            return CDSH_ENOMEM;
        e->content_owned = true;
    } else {
        e->content = (char *)raw_content; /* borrowed from the book until expanded */
    }
    e->keys = f[F_KEY];
    e->keys2 = f[F_KEY2];
    e->logic = vint(f[F_LOGIC], 0);
    e->order = vint(f[F_ORDER], 100);
    e->position = vint(f[F_POSITION], 0);
    e->depth = vint(f[F_DEPTH], DEFAULT_DEPTH);
    e->role = vint(f[F_ROLE], 0);
    e->weight = vint(f[F_WEIGHT], DEFAULT_WEIGHT);
    const json_t *dr = f[F_DELAY_REC];
    e->delay_rec = json_is_true(dr) ? 1 : json_is_number(dr) ? (int)json_number_value(dr) : 0;
    e->scan_depth = json_is_number(f[F_SCAN_DEPTH]) ? vint(f[F_SCAN_DEPTH], -1) : -1;
    e->case_sens = vtri(f[F_CASE]);
    e->whole = vtri(f[F_WHOLE]);
    e->scoring = vtri(f[F_SCORING]);
    e->sticky = vint(f[F_STICKY], 0);
    e->cooldown = vint(f[F_COOLDOWN], 0);
    e->delay = vint(f[F_DELAY], 0);
    e->probability = json_is_number(f[F_PROBABILITY]) ? json_number_value(f[F_PROBABILITY]) : 100;
    e->selective = f[F_SELECTIVE] ? json_is_true(f[F_SELECTIVE]) : true;
    e->constant = json_is_true(f[F_CONSTANT]);
    e->disable = json_is_true(f[F_DISABLE]);
    e->exclude_rec = json_is_true(f[F_EXCLUDE_REC]);
    e->prevent_rec = json_is_true(f[F_PREVENT_REC]);
    e->use_prob = f[F_USE_PROB] ? json_is_true(f[F_USE_PROB]) : true;
    e->group_override = json_is_true(f[F_GROUP_OVERRIDE]);
    e->ignore_budget = json_is_true(f[F_IGNORE_BUDGET]);
    e->group_raw = vstr(f[F_GROUP]);
    e->outlet = vstr(f[F_OUTLET]);
    e->triggers = json_is_array(f[F_TRIGGERS]) ? f[F_TRIGGERS] : NULL;
    e->char_filter = json_is_object(f[F_CHAR_FILTER]) ? f[F_CHAR_FILTER] : NULL;
    e->hash = entry_hash(f, book);
    e->index = index;
    split_groups(e);
    strcpy(e->reason, "not matched");
    return 0;
}

static void free_keys(wi_entry *e);

static void free_entry(wi_entry *e)
{
    free_keys(e);
    if (e->content_owned)
        free(e->content);
    for (size_t i = 0; i < e->ngroups; i++)
        free(e->groups[i]);
    free(e->groups);
}

/* ---- sources ----------------------------------------------------------- */

typedef struct srcbuf {
    const json_t **entries;
    const char **books;
    size_t n, cap;
} srcbuf;

static int src_push(srcbuf *b, const json_t *ent, const char *book)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        const json_t **e = realloc(b->entries, cap * sizeof *e);
        if (!e)
            return CDSH_ENOMEM;
        b->entries = e;
        const char **k = realloc(b->books, cap * sizeof *k);
        if (!k)
            return CDSH_ENOMEM;
        b->books = k;
        b->cap = cap;
    }
    b->entries[b->n] = ent;
    b->books[b->n++] = book;
    return 0;
}

static const char *book_name(const json_t *book, char *buf, size_t bn, const char *fallback,
                             size_t i)
{
    const char *nm = json_string_value(json_object_get(book, "name"));
    if (nm && *nm)
        return nm;
    snprintf(buf, bn, "%s%zu", fallback, i);
    return buf;
}

typedef struct book_ref {
    const json_t *book;
    char name[160];
} book_ref;

/* Entries of one list of books, each sorted by order descending (stable). */
static int add_books(srcbuf *b, book_ref *books, size_t nb)
{
    for (size_t i = 0; i < nb; i++) {
        const json_t *entries = json_object_get(books[i].book, "entries");
        if (json_is_object(entries)) {
            const char *k;
            json_t *v;
            json_object_foreach((json_t *)entries, k, v) {
                if (json_is_object(v) && src_push(b, v, books[i].name) < 0)
                    return CDSH_ENOMEM;
            }
        } else if (json_is_array(entries)) {
            size_t j;
            json_t *v;
            json_array_foreach(entries, j, v) {
                if (json_is_object(v) && src_push(b, v, books[i].name) < 0)
                    return CDSH_ENOMEM;
            }
        }
    }
    return 0;
}

typedef struct sortitem {
    const json_t *ent;
    const char *book;
    size_t seq;
    int order;
} sortitem;

static int cmp_order_desc(const void *a, const void *b)
{
    const sortitem *x = a, *y = b;
    if (x->order != y->order)
        return y->order - x->order;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts b[from..) by order descending, stable. */
static void sort_range(srcbuf *b, size_t from)
{
    size_t n = b->n - from;
    if (n < 2)
        return;
    sortitem *it = malloc(n * sizeof *it);
    if (!it)
        return;
    for (size_t i = 0; i < n; i++)
        it[i] = (sortitem){b->entries[from + i], b->books[from + i], i,
                           jint(b->entries[from + i], "order", 100)};
    qsort(it, n, sizeof *it, cmp_order_desc);
    for (size_t i = 0; i < n; i++) {
        b->entries[from + i] = it[i].ent;
        b->books[from + i] = it[i].book;
    }
    free(it);
}

static bool name_taken(book_ref *all, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(all[i].name, name))
            return true;
    return false;
}

/* getSortedEntries: chat book, persona book, then global + character books
 * combined by strategy. A book name already loaded is not loaded again. */
static int collect(const cdsh_tavern_wi_input *in, srcbuf *b, book_ref **refs_out)
{
    size_t ng = json_array_size(in->global_books), nc = json_array_size(in->character_books);
    book_ref *refs = calloc(ng + nc + 2, sizeof *refs);
    if (!refs)
        return CDSH_ENOMEM;
    *refs_out = refs;
    size_t nr = 0;
    book_ref *chat = NULL, *persona = NULL, *glob, *chr;
    size_t nglob = 0, nchr = 0;
    char buf[160];
    /* Global books win over the same name elsewhere; register them first. */
    glob = refs;
    for (size_t i = 0; i < ng; i++) {
        const json_t *bk = json_array_get(in->global_books, i);
        const char *nm = book_name(bk, buf, sizeof buf, "global", i);
        if (name_taken(refs, nr, nm))
            continue;
        refs[nr].book = bk;
        snprintf(refs[nr].name, sizeof refs[nr].name, "%s", nm);
        nr++, nglob++;
    }
    if (in->chat_book) {
        const char *nm = book_name(in->chat_book, buf, sizeof buf, "chat", 0);
        if (!name_taken(refs, nr, nm)) {
            chat = &refs[nr];
            chat->book = in->chat_book;
            snprintf(chat->name, sizeof chat->name, "%s", nm);
            nr++;
        }
    }
    if (in->persona_book) {
        const char *nm = book_name(in->persona_book, buf, sizeof buf, "persona", 0);
        if (!name_taken(refs, nr, nm)) {
            persona = &refs[nr];
            persona->book = in->persona_book;
            snprintf(persona->name, sizeof persona->name, "%s", nm);
            nr++;
        }
    }
    chr = &refs[nr];
    for (size_t i = 0; i < nc; i++) {
        const json_t *bk = json_array_get(in->character_books, i);
        const char *nm = book_name(bk, buf, sizeof buf, "character", i);
        if (name_taken(refs, nr, nm))
            continue;
        refs[nr].book = bk;
        snprintf(refs[nr].name, sizeof refs[nr].name, "%s", nm);
        nr++, nchr++;
    }
    int rc = 0;
    size_t mark = b->n;
    if (chat && (rc = add_books(b, chat, 1)) < 0)
        return rc;
    sort_range(b, mark);
    mark = b->n;
    if (persona && (rc = add_books(b, persona, 1)) < 0)
        return rc;
    sort_range(b, mark);
    mark = b->n;
    switch (in->settings.character_strategy) {
    case CDSH_TAVERN_WI_CHARACTER_FIRST:
        if ((rc = add_books(b, chr, nchr)) < 0)
            return rc;
        sort_range(b, mark);
        mark = b->n;
        if ((rc = add_books(b, glob, nglob)) < 0)
            return rc;
        sort_range(b, mark);
        break;
    case CDSH_TAVERN_WI_GLOBAL_FIRST:
        if ((rc = add_books(b, glob, nglob)) < 0)
            return rc;
        sort_range(b, mark);
        mark = b->n;
        if ((rc = add_books(b, chr, nchr)) < 0)
            return rc;
        sort_range(b, mark);
        break;
    default: /* evenly */
        if ((rc = add_books(b, glob, nglob)) < 0 || (rc = add_books(b, chr, nchr)) < 0)
            return rc;
        sort_range(b, mark);
        break;
    }
    return 0;
}

/* ---- scan buffer -------------------------------------------------------- */

static void append_global_scan(const run *r, const wi_entry *e, cdsh_strbuf *sb)
{
    static const char *const MF[][2] = {{"matchPersonaDescription", "personaDescription"},
                                        {"matchCharacterDescription", "characterDescription"},
                                        {"matchCharacterPersonality", "characterPersonality"},
                                        {"matchCharacterDepthPrompt", "characterDepthPrompt"},
                                        {"matchScenario", "scenario"},
                                        {"matchCreatorNotes", "creatorNotes"}};
    for (size_t i = 0; i < 6; i++) {
        const char *v = jstr(r->in->scan_data, MF[i][1]);
        if (jbool(e->src, MF[i][0]) && *v) {
            cdsh_strbuf_append_str(sb, "\n\x01");
            cdsh_strbuf_append_str(sb, v);
        }
    }
}

/* WorldInfoBuffer.get: messages up to depth joined with "\n\x01" and
 * prefixed "\x01", then entry-selected scan data, inject, recursion. A depth
 * of 0 (an entry's own scanDepth) gives '' as in ST: nothing at all is
 * scanned, not even the scan data, inject or recursion buffer. */
static char *build_scan(const run *r, const wi_entry *e, int depth, int state)
{
    if (depth <= 0)
        return strdup("");
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_char(&sb, '\x01');
    if (depth > MAX_SCAN_DEPTH)
        depth = MAX_SCAN_DEPTH;
    for (int i = 0; i < depth && (size_t)i < r->nmsgs; i++) {
        if (i)
            cdsh_strbuf_append_str(&sb, "\n\x01");
        cdsh_strbuf_append_str(&sb, r->msgs[i]);
    }
    if (e && e->has_match_flags)
        append_global_scan(r, e, &sb);
    for (size_t i = 0; i < r->in->n_inject; i++) {
        cdsh_strbuf_append_str(&sb, "\n\x01");
        cdsh_strbuf_append_str(&sb, r->in->inject[i]);
    }
    if (r->has_recurse && state != ST_MIN_ACTIVATIONS)
        cdsh_strbuf_append(&sb, r->recurse.data, r->recurse.len);
    return cdsh_strbuf_take(&sb, NULL);
}

static int entry_depth(const run *r, const wi_entry *e)
{
    return e->scan_depth >= 0 ? e->scan_depth : r->s->scan_depth + r->skew;
}

/* The scan text for an entry (raw and lowercased), cached per depth for
 * entries without per-entry scan data. Borrowed, or owned via *own. */
static int scan_text(run *r, const wi_entry *e, int state, hay *h, char **own_raw, char **own_low)
{
    int depth = entry_depth(r, e);
    *own_raw = *own_low = NULL;
    if (e->has_match_flags) {
        *own_raw = build_scan(r, e, depth, state);
        *own_low = *own_raw ? cdsh_tavern_wi_lower_dup(*own_raw, strlen(*own_raw)) : NULL;
        if (!*own_raw || !*own_low)
            return CDSH_ENOMEM;
        *h = (hay){*own_raw, *own_low, strlen(*own_raw), strlen(*own_low)};
        return 0;
    }
    for (size_t i = 0; i < r->ncache; i++)
        if (r->cache[i].depth == depth) {
            *h = r->cache[i].h;
            return 0;
        }
    scan_cache *c = realloc(r->cache, (r->ncache + 1) * sizeof *c);
    if (!c)
        return CDSH_ENOMEM;
    r->cache = c;
    scan_cache *n = &c[r->ncache];
    n->depth = depth;
    n->raw = build_scan(r, NULL, depth, state);
    n->low = n->raw ? cdsh_tavern_wi_lower_dup(n->raw, strlen(n->raw)) : NULL;
    if (!n->raw || !n->low) {
        free(n->raw);
        free(n->low);
        return CDSH_ENOMEM;
    }
    n->h = (hay){n->raw, n->low, strlen(n->raw), strlen(n->low)};
    r->ncache++;
    *h = n->h;
    return 0;
}

static void cache_clear(run *r)
{
    for (size_t i = 0; i < r->ncache; i++) {
        free(r->cache[i].raw);
        free(r->cache[i].low);
    }
    r->ncache = 0;
}

/* ---- key matching ------------------------------------------------------- */

/* Prepared keys of an entry (list 0 primary, 1 secondary), built once per
 * call; entries whose keys hold macros are prepared on every use instead. */
static int prepare_keys(run *r, wi_entry *e)
{
    if (e->pk_ready)
        return 0;
    const json_t *lists[2] = {e->keys, e->keys2};
    for (int l = 0; l < 2; l++) {
        size_t n = json_array_size(lists[l]);
        e->pk[l] = calloc(n + 1, sizeof *e->pk[l]);
        if (!e->pk[l])
            return CDSH_ENOMEM;
        for (size_t i = 0; i < n; i++) {
            const char *k = json_string_value(json_array_get(lists[l], i));
            if (!k)
                continue;
            if (cdsh_tavern_wi_key_has_macro(k))
                e->pk_dynamic = true;
            if (cdsh_tavern_wi_key_init(k, r->in->macros, &e->pk[l][e->npk[l]]) < 0)
                return CDSH_ENOMEM;
            e->npk[l]++;
        }
    }
    e->pk_ready = true;
    return 0;
}

static void free_keys(wi_entry *e)
{
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < e->npk[l]; i++)
            cdsh_tavern_wi_key_deinit(&e->pk[l][i]);
        free(e->pk[l]);
        e->pk[l] = NULL;
        e->npk[l] = 0;
    }
    e->pk_ready = false;
}

/* matchKeys for one prepared key, with the entry's case and whole-word
 * overrides of the global settings. */
static bool match_key(run *r, const wi_entry *e, const hay *h, const pkey *k)
{
    bool cs = e->case_sens >= 0 ? e->case_sens : r->s->case_sensitive;
    bool whole = e->whole >= 0 ? e->whole : r->s->match_whole_words;
    return cdsh_tavern_wi_key_match(r->keys, k, h, cs, whole);
}

/* Does key i of list l match? (Macro keys are re-expanded each time.) On a
 * hit, name (cap bytes, may be NULL) gets the key text that matched: for a
 * key whose macros draw anew ({{random}}) that is this use's draw. */
static bool key_hit(run *r, wi_entry *e, int l, size_t i, const hay *h, char *name, size_t cap)
{
    if (!e->pk_dynamic) {
        bool hit = match_key(r, e, h, &e->pk[l][i]);
        if (hit && name)
            snprintf(name, cap, "%s", e->pk[l][i].key ? e->pk[l][i].key : "");
        return hit;
    }
    const json_t *list = l ? e->keys2 : e->keys;
    const char *k = json_string_value(json_array_get(list, i));
    pkey pk;
    if (!k || cdsh_tavern_wi_key_init(k, r->in->macros, &pk) < 0)
        return false;
    bool hit = match_key(r, e, h, &pk);
    if (hit && name)
        snprintf(name, cap, "%s", pk.key ? pk.key : "");
    cdsh_tavern_wi_key_deinit(&pk);
    return hit;
}

/* ---- timed effects ------------------------------------------------------ */

static wi_entry *find_by_hash(run *r, json_t *hash)
{
    if (!json_is_integer(hash))
        return NULL;
    uint32_t h = (uint32_t)json_integer_value(hash);
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].hash == h)
            return &r->e[i];
    return NULL;
}

static json_t *effect_new(const run *r, const wi_entry *e, int len, bool prot)
{
    return json_pack("{s:I, s:I, s:I, s:b}", "hash", (json_int_t)e->hash, "start",
                     (json_int_t)r->in->n_messages, "end",
                     (json_int_t)(r->in->n_messages + (size_t)len), "protected", prot);
}

static json_t *timed_map(json_t *timed, const char *type)
{
    json_t *m = json_object_get(timed, type);
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(timed, type, m);
    }
    return m;
}

static void check_timed_type(run *r, const char *type)
{
    json_t *m = timed_map(r->timed, type);
    bool sticky = !strcmp(type, "sticky");
    size_t chat = r->in->n_messages;
    void *it = json_object_iter(m);
    while (it) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        void *next = json_object_iter_next(m, it);
        if (!json_is_object(v)) {
            json_object_del(m, key);
            it = next;
            continue;
        }
        double start = json_number_value(json_object_get(v, "start"));
        double end = json_number_value(json_object_get(v, "end"));
        bool prot = json_is_true(json_object_get(v, "protected"));
        wi_entry *e = find_by_hash(r, json_object_get(v, "hash"));
        int len = e ? (sticky ? e->sticky : e->cooldown) : 0;
        if ((double)chat <= start && !prot) {
            json_object_del(m, key); /* the chat did not advance (swipe / regenerate) */
        } else if (!e) {
            if ((double)chat >= end)
                json_object_del(m, key);
        } else if (!len) {
            json_object_del(m, key);
        } else if ((double)chat >= end) {
            json_object_del(m, key);
            if (sticky && e->cooldown) {
                /* Sticky ended: a protected cooldown starts now. */
                json_object_set_new(timed_map(r->timed, "cooldown"), e->id,
                                    effect_new(r, e, e->cooldown, true));
                e->is_cooldown = true;
            }
        } else if (sticky) {
            e->is_sticky = true;
        } else {
            e->is_cooldown = true;
        }
        it = next;
    }
}

static void check_timed(run *r)
{
    check_timed_type(r, "sticky");
    check_timed_type(r, "cooldown");
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].delay && r->in->n_messages < (size_t)r->e[i].delay)
            r->e[i].is_delay = true;
}

static void set_str(json_t *obj, const char *key, const char *v);

/* {book, uid, comment, content} of an entry, as the render hook sees it. */
static json_t *entry_json(const wi_entry *e)
{
    json_t *x = json_object();
    if (x) {
        set_str(x, "book", e->book);
        json_object_set_new_nocheck(x, "uid", json_integer(e->uid));
        set_str(x, "comment", e->comment);
        set_str(x, "content", e->content);
    }
    return x;
}

static json_t *active_list(const run *r)
{
    json_t *active = json_array();
    for (size_t i = 0; active && i < r->nactivated; i++)
        json_array_append_new(active, entry_json(r->activated[i]));
    return active;
}

/* Evaluates templates of activated entries (see render in wi_activate.h).
 * A failed entry leaves the activated list; *tokens follows the new text. */
static int render_templates(run *r, size_t *tokens, json_t *failures)
{
    size_t keep = 0;
    json_t *active = NULL;
    int rc = 0;
    for (size_t i = 0; i < r->nactivated; i++) {
        wi_entry *e = r->activated[i];
        if (!strstr(e->content, "<%")) {
            r->activated[keep++] = e;
            continue;
        }
        if (!active && !(active = active_list(r))) {
            rc = CDSH_ENOMEM;
            break;
        }
        json_t *x = entry_json(e);
        if (!x) {
            rc = CDSH_ENOMEM;
            break;
        }
        json_object_set_new_nocheck(x, "keys",
                                    e->keys ? json_incref((json_t *)e->keys) : json_array());
        json_object_set_new_nocheck(x, "position", json_integer(e->position));
        json_object_set_new_nocheck(x, "order", json_integer(e->order));
        json_object_set_new_nocheck(x, "depth", json_integer(e->depth));
        char *out = NULL;
        cdsh_error err = {0};
        rc = r->in->render(r->in->render_ud, x, active, &out, &err);
        json_decref(x);
        if (rc == CDSH_ENOMEM) {
            free(out);
            break;
        }
        size_t old = cdsh_tavern_tokens_count_str(e->content);
        if (rc < 0 || !out) {
            free(out);
            e->activated = false;
            const char *code = *err.code ? err.code : "TEMPLATE_ERROR";
            reason(e, false, "template failed (%s): %s", code, err.message);
            json_array_append_new(failures,
                                  json_pack("{s:s, s:I, s:s, s:s, s:s}", "book", e->book, "uid",
                                            (json_int_t)e->uid, "comment", e->comment, "code", code,
                                            "message", err.message));
            *tokens = *tokens > old ? *tokens - old : 0;
            continue;
        }
        *tokens = (*tokens > old ? *tokens - old : 0) + cdsh_tavern_tokens_count_str(out);
        if (e->content_owned)
            free(e->content);
        e->content = out;
        e->content_owned = true;
        /* Template output is per turn (clock, randomness, variables). */
        e->turn_local = true;
        r->activated[keep++] = e;
    }
    json_decref(active);
    if (rc == CDSH_ENOMEM)
        return rc;
    r->nactivated = keep;
    return 0;
}

static void set_timed(run *r)
{
    for (size_t i = 0; i < r->nactivated; i++) {
        wi_entry *e = r->activated[i];
        if (e->sticky && !json_object_get(timed_map(r->timed, "sticky"), e->id))
            json_object_set_new(timed_map(r->timed, "sticky"), e->id,
                                effect_new(r, e, e->sticky, false));
        if (e->cooldown && !json_object_get(timed_map(r->timed, "cooldown"), e->id))
            json_object_set_new(timed_map(r->timed, "cooldown"), e->id,
                                effect_new(r, e, e->cooldown, false));
    }
}

/* ---- the scan loop ------------------------------------------------------ */

static bool char_filtered(const run *r, const wi_entry *e)
{
    const json_t *cf = e->char_filter;
    if (!cf)
        return false;
    bool exclude = jbool(cf, "isExclude");
    json_t *names = json_object_get(cf, "names"), *tags = json_object_get(cf, "tags");
    if (json_array_size(names)) {
        bool inc = false;
        size_t i;
        json_t *v;
        json_array_foreach(names, i, v) {
            if (r->in->char_filename &&
                !strcmp(json_string_value(v) ? json_string_value(v) : "", r->in->char_filename))
                inc = true;
        }
        if (exclude ? inc : !inc)
            return true;
    }
    if (json_array_size(tags) && json_is_array(r->in->char_tags)) {
        bool inc = false;
        size_t i, j;
        json_t *v, *w;
        json_array_foreach(tags, i, v) {
            json_array_foreach(r->in->char_tags, j, w) {
                if (json_equal(v, w))
                    inc = true;
            }
        }
        if (exclude ? inc : !inc)
            return true;
    }
    return false;
}

static bool forced(const run *r, const wi_entry *e)
{
    size_t i;
    json_t *v;
    json_array_foreach(r->in->forced, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), e->id))
            return true;
    }
    return false;
}

static const char *const LOGIC_NAMES[] = {"AND_ANY", "NOT_ALL", "NOT_ANY", "AND_ALL"};

/* Decides whether e activates in this pass. */
static bool consider(run *r, wi_entry *e, int state, int level)
{
    if (e->disable) {
        reason(e, false, "disabled");
        return false;
    }
    if (json_array_size(e->triggers)) {
        const char *gen = r->in->generation_type ? r->in->generation_type : "normal";
        bool hit = false;
        size_t i;
        const json_t *t;
        json_array_foreach(e->triggers, i, t)
            hit |= json_is_string(t) && !strcmp(json_string_value(t), gen);
        if (!hit) {
            reason(e, false, "skipped by generation type trigger filter (%s)", gen);
            return false;
        }
    }
    if (char_filtered(r, e)) {
        reason(e, false, "filtered out by character filter");
        return false;
    }
    if (e->is_delay) {
        reason(e, false, "suppressed by delay (%d messages)", e->delay);
        return false;
    }
    if (e->is_cooldown && !e->is_sticky) {
        reason(e, false, "suppressed by cooldown");
        return false;
    }
    if (state != ST_RECURSION && e->delay_rec && !e->is_sticky) {
        reason(e, false, "delayed until recursion");
        return false;
    }
    if (state == ST_RECURSION && e->delay_rec > level && !e->is_sticky) {
        reason(e, false, "delayed until recursion level %d (now %d)", e->delay_rec, level);
        return false;
    }
    if (state == ST_RECURSION && r->s->recursive && e->exclude_rec && !e->is_sticky) {
        reason(e, false, "excluded from recursion");
        return false;
    }
    if (e->dec_activate) {
        reason(e, true, "activated by @@activate");
        return true;
    }
    if (e->dec_dont) {
        reason(e, false, "suppressed by @@dont_activate");
        return false;
    }
    if (forced(r, e)) {
        reason(e, true, "externally activated");
        return true;
    }
    if (e->constant) {
        reason(e, true, "constant");
        return true;
    }
    if (e->is_sticky) {
        reason(e, true, "sticky");
        return true;
    }
    if (!json_array_size(e->keys)) {
        reason(e, false, "no primary keys");
        return false;
    }
    hay h;
    char *oraw, *olow;
    if (prepare_keys(r, e) < 0 || scan_text(r, e, state, &h, &oraw, &olow) < 0)
        return false;
    char matched[64];
    const char *primary = NULL;
    for (size_t i = 0; i < e->npk[0]; i++)
        if (key_hit(r, e, 0, i, &h, matched, sizeof matched)) {
            primary = matched;
            break;
        }
    bool ok = false;
    if (!primary) {
        reason(e, false, "no primary key matched");
    } else if (!e->selective || !e->npk[1]) {
        reason(e, true, "primary key '%.60s'", primary);
        ok = true;
    } else {
        int logic = e->logic >= 0 && e->logic <= 3 ? e->logic : 0;
        bool any = false, all = true;
        for (size_t i = 0; i < e->npk[1]; i++) {
            bool hit = key_hit(r, e, 1, i, &h, NULL, 0);
            any |= hit;
            all &= hit;
            if (logic == CDSH_TAVERN_LOGIC_AND_ANY && hit)
                break;
            if (logic == CDSH_TAVERN_LOGIC_NOT_ALL && !hit)
                break;
        }
        ok = (logic == CDSH_TAVERN_LOGIC_AND_ANY && any) ||
             (logic == CDSH_TAVERN_LOGIC_NOT_ALL && !all) ||
             (logic == CDSH_TAVERN_LOGIC_NOT_ANY && !any) ||
             (logic == CDSH_TAVERN_LOGIC_AND_ALL && all);
        if (ok)
            reason(e, true, "primary key '%.60s' and secondary keys (%s)", primary,
                   LOGIC_NAMES[logic]);
        else
            reason(e, false, "primary key '%.60s' matched but secondary keys failed %s", primary,
                   LOGIC_NAMES[logic]);
    }
    free(oraw);
    free(olow);
    return ok;
}

static int score(run *r, wi_entry *e, int state)
{
    hay h;
    char *oraw, *olow;
    if (!json_array_size(e->keys) || prepare_keys(r, e) < 0 ||
        scan_text(r, e, state, &h, &oraw, &olow) < 0)
        return 0;
    int p = 0, s2 = 0;
    for (size_t i = 0; i < e->npk[0]; i++)
        p += key_hit(r, e, 0, i, &h, NULL, 0);
    size_t n2 = e->npk[1];
    for (size_t i = 0; i < n2; i++)
        s2 += key_hit(r, e, 1, i, &h, NULL, 0);
    free(oraw);
    free(olow);
    if (n2) {
        if (e->logic == CDSH_TAVERN_LOGIC_AND_ANY)
            return p + s2;
        if (e->logic == CDSH_TAVERN_LOGIC_AND_ALL)
            return (size_t)s2 == n2 ? p + s2 : p;
    }
    return p;
}

static bool in_group(const wi_entry *e, const char *g)
{
    for (size_t i = 0; i < e->ngroups; i++)
        if (!strcmp(e->groups[i], g))
            return true;
    return false;
}

/* Long by design: ST's filterByInclusionGroups step by step (overrides,
 * scoring, weighted pick), kept in ST's order to be checked against it. */
/* filterByInclusionGroups over cand[0..*n) (entries with alive = true). */
static void inclusion_groups(run *r, wi_entry **cand, bool *alive, size_t n, int state)
{
    /* Distinct group names in order of first appearance. */
    const char **names = NULL;
    size_t nn = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t g = 0; g < cand[i]->ngroups; g++) {
            bool seen = false;
            for (size_t j = 0; j < nn; j++)
                seen |= !strcmp(names[j], cand[i]->groups[g]);
            if (seen)
                continue;
            const char **nm = realloc(names, (nn + 1) * sizeof *nm);
            if (!nm)
                goto done;
            names = nm;
            names[nn++] = cand[i]->groups[g];
        }
    if (!nn)
        goto done;
    bool *has_sticky = calloc(nn, sizeof *has_sticky);
    if (!has_sticky)
        goto done;
    /* (a) timed effects: sticky members win; cooldown / delay members go. */
    for (size_t g = 0; g < nn; g++) {
        bool any = false;
        for (size_t i = 0; i < n; i++)
            any |= alive[i] && in_group(cand[i], names[g]) && cand[i]->is_sticky;
        has_sticky[g] = any;
        for (size_t i = 0; i < n; i++) {
            if (!alive[i] || !in_group(cand[i], names[g]))
                continue;
            if ((any && !cand[i]->is_sticky) || cand[i]->is_cooldown || cand[i]->is_delay) {
                alive[i] = false;
                reason(cand[i], false, "non-sticky loser of inclusion group '%.40s'", names[g]);
            }
        }
    }
    /* (b) group scoring. */
    for (size_t g = 0; g < nn; g++) {
        if (has_sticky[g])
            continue;
        bool enabled = r->s->use_group_scoring;
        for (size_t i = 0; i < n; i++)
            enabled |= alive[i] && in_group(cand[i], names[g]) && cand[i]->scoring == 1;
        if (!enabled)
            continue;
        int *sc = calloc(n, sizeof *sc), max = 0;
        if (!sc)
            continue;
        for (size_t i = 0; i < n; i++)
            if (alive[i] && in_group(cand[i], names[g])) {
                sc[i] = score(r, cand[i], state);
                if (sc[i] > max)
                    max = sc[i];
            }
        for (size_t i = 0; i < n; i++) {
            if (!alive[i] || !in_group(cand[i], names[g]))
                continue;
            bool scored = cand[i]->scoring >= 0 ? cand[i]->scoring : r->s->use_group_scoring;
            if (scored && sc[i] < max) {
                alive[i] = false;
                reason(cand[i], false, "scored %d < %d in inclusion group '%.40s'", sc[i], max,
                       names[g]);
            }
        }
        free(sc);
    }
    /* (c)–(f) per group. */
    for (size_t g = 0; g < nn; g++) {
        if (has_sticky[g])
            continue;
        /* As ST: an earlier activation blocks the group only when its whole
         * group field is this one name (`x.group === key`), so an entry of
         * "g1, g2" does not block a later "g2" member. */
        bool already = false;
        for (size_t a = 0; a < r->nactivated; a++)
            already |= !strcmp(r->activated[a]->group_raw, names[g]);
        size_t members = 0;
        for (size_t i = 0; i < n; i++)
            members += alive[i] && in_group(cand[i], names[g]);
        if (already) {
            for (size_t i = 0; i < n; i++)
                if (alive[i] && in_group(cand[i], names[g])) {
                    alive[i] = false;
                    reason(cand[i], false, "inclusion group '%.40s' already activated", names[g]);
                }
            continue;
        }
        if (members <= 1)
            continue;
        wi_entry *winner = NULL;
        for (size_t i = 0; i < n; i++)
            if (alive[i] && in_group(cand[i], names[g]) && cand[i]->group_override &&
                (!winner || cand[i]->order > winner->order))
                winner = cand[i];
        bool by_override = winner != NULL;
        if (!winner) {
            double total = 0;
            for (size_t i = 0; i < n; i++)
                if (alive[i] && in_group(cand[i], names[g]))
                    total += cand[i]->weight;
            double roll = cdsh_tavern_rng_next(&r->rng) * total, cur = 0;
            for (size_t i = 0; i < n && !winner; i++)
                if (alive[i] && in_group(cand[i], names[g])) {
                    cur += cand[i]->weight;
                    if (roll <= cur)
                        winner = cand[i];
                }
        }
        if (!winner)
            continue;
        for (size_t i = 0; i < n; i++)
            if (alive[i] && in_group(cand[i], names[g]) && cand[i] != winner) {
                alive[i] = false;
                reason(cand[i], false, "lost inclusion group '%.40s' to %s", names[g], winner->id);
            }
        (void)by_override;
    }
    free(has_sticky);
done:
    free(names);
}

static int cmp_candidates(const void *a, const void *b)
{
    const wi_entry *x = *(wi_entry *const *)a, *y = *(wi_entry *const *)b;
    if (x->is_sticky != y->is_sticky)
        return y->is_sticky - x->is_sticky;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int compute_budget(const cdsh_tavern_wi_settings *s)
{
    return cdsh_tavern_wi_settings_budget(s);
}

static char *expand_content(run *r, wi_entry *e)
{
    if (!r->in->macros)
        return strdup(e->content);
    uint32_t before = r->in->macros->flags;
    r->in->macros->flags = 0;
    char *s = cdsh_tavern_macros_expand_dup(e->content, r->in->macros);
    e->turn_local = (r->in->macros->flags & CDSH_TAVERN_MACRO_TURN_LOCAL) != 0;
    r->in->macros->flags |= before;
    return s;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ST's checkWorldInfo scan loop, kept whole so its steps (timed effects,
 * candidates, groups, probability, budget, recursion) read in ST's order;
 * each step is a named helper above. */
static int scan(run *r, int budget, bool *overflow_out, int *loops_out, size_t *tokens_out)
{
    /* Delay-until-recursion levels, ascending; the first is preset. */
    int *levels = calloc(r->n + 1, sizeof *levels);
    wi_entry **cand = calloc(r->n + 1, sizeof *cand);
    bool *alive = calloc(r->n + 1, sizeof *alive);
    if (!levels || !cand || !alive) {
        free(levels);
        free(cand);
        free(alive);
        return CDSH_ENOMEM;
    }
    size_t nl = 0;
    for (size_t i = 0; i < r->n; i++) {
        int l = r->e[i].delay_rec;
        bool seen = false;
        for (size_t j = 0; j < nl; j++)
            seen |= levels[j] == l;
        if (l && !seen)
            levels[nl++] = l;
    }
    qsort(levels, nl, sizeof *levels, cmp_int);
    size_t li = 0;
    int level = nl ? levels[li++] : 0;
    int state = ST_INITIAL, count = 0, rc = 0;
    bool overflow = false;
    cdsh_strbuf all_text; /* allActivatedText: recursion texts, newest first */
    cdsh_strbuf_init(&all_text);
    while (state) {
        if (r->s->max_recursion_steps && r->s->max_recursion_steps <= count)
            break;
        count++;
        cache_clear(r);
        int next = ST_NONE;
        size_t nc = 0;
        for (size_t i = 0; i < r->n; i++) {
            wi_entry *e = &r->e[i];
            if (e->failed_prob || e->activated)
                continue;
            if (consider(r, e, state, level))
                cand[nc++] = e;
        }
        qsort(cand, nc, sizeof *cand, cmp_candidates);
        for (size_t i = 0; i < nc; i++)
            alive[i] = true;
        inclusion_groups(r, cand, alive, nc, state);
        size_t base = cdsh_tavern_tokens_count(all_text.data, all_text.len);
        cdsh_tavern_tokens_tally pass = {0};
        size_t first_new = r->nactivated;
        for (size_t i = 0; i < nc; i++) {
            wi_entry *e = cand[i];
            if (!alive[i])
                continue;
            if (overflow && !e->ignore_budget) {
                e->truncated = true;
                reason(e, false, "budget overflow (%d tokens)", budget);
                continue;
            }
            if (e->use_prob && e->probability != 100 && !e->is_sticky) {
                double roll = cdsh_tavern_rng_next(&r->rng) * 100.0;
                if (!(roll <= e->probability)) {
                    e->failed_prob = true;
                    reason(e, false, "failed probability %g%% (rolled %.1f)", e->probability, roll);
                    continue;
                }
            }
            char *content = expand_content(r, e);
            if (!content) {
                rc = CDSH_ENOMEM;
                state = ST_NONE;
                break;
            }
            if (e->content_owned)
                free(e->content);
            e->content = content;
            e->content_owned = true;
            cdsh_tavern_tokens_add(&pass, content, strlen(content));
            cdsh_tavern_tokens_add(&pass, "\n", 1);
            if (!e->ignore_budget && base + cdsh_tavern_tokens_total(&pass) >= (size_t)budget) {
                overflow = true;
                e->truncated = true;
                reason(e, false, "budget overflow (%d tokens)", budget);
                bool later_ignore = false;
                for (size_t j = i + 1; j < nc; j++)
                    later_ignore |= alive[j] && cand[j]->ignore_budget;
                if (!later_ignore) {
                    for (size_t j = i + 1; j < nc; j++)
                        if (alive[j]) {
                            cand[j]->truncated = true;
                            reason(cand[j], false, "budget overflow (%d tokens)", budget);
                        }
                    break;
                }
                continue;
            }
            e->activated = true;
            r->activated[r->nactivated++] = e;
        }
        /* Recursion text: this pass's activations that allow recursion. */
        cdsh_strbuf text;
        cdsh_strbuf_init(&text);
        size_t for_rec = 0;
        for (size_t a = first_new; a < r->nactivated; a++) {
            wi_entry *e = r->activated[a];
            if (e->prevent_rec)
                continue;
            if (for_rec++)
                cdsh_strbuf_append_char(&text, '\n');
            cdsh_strbuf_append_str(&text, e->content);
        }
        if (r->s->recursive && !overflow && for_rec)
            next = ST_RECURSION;
        if (r->s->recursive && !overflow && state == ST_MIN_ACTIVATIONS && r->has_recurse)
            next = ST_RECURSION;
        if (rc < 0) {
            cdsh_strbuf_deinit(&text);
            break;
        }
        bool min_unmet = r->s->min_activations > 0 && r->nactivated < (size_t)r->s->min_activations;
        if (!next && !overflow && min_unmet) {
            int depth = r->s->scan_depth + r->skew;
            bool over =
                (r->s->min_activations_depth_max > 0 && depth > r->s->min_activations_depth_max) ||
                (size_t)depth > r->in->n_messages;
            if (!over) {
                next = ST_MIN_ACTIVATIONS;
                r->skew++;
            }
        }
        if (!next && li < nl) {
            next = ST_RECURSION;
            level = levels[li++];
        }
        state = next;
        if (state && text.len) {
            cdsh_strbuf_append_str(&r->recurse, "\n\x01");
            cdsh_strbuf_append(&r->recurse, text.data, text.len);
            r->has_recurse = true;
            /* allActivatedText = text + "\n" + allActivatedText */
            cdsh_strbuf nt;
            cdsh_strbuf_init(&nt);
            cdsh_strbuf_append(&nt, text.data, text.len);
            cdsh_strbuf_append_char(&nt, '\n');
            cdsh_strbuf_append(&nt, all_text.data, all_text.len);
            cdsh_strbuf_deinit(&all_text);
            all_text = nt;
        }
        cdsh_strbuf_deinit(&text);
    }
    size_t used = 0;
    for (size_t a = 0; a < r->nactivated; a++)
        used += cdsh_tavern_tokens_count_str(r->activated[a]->content);
    *tokens_out = used;
    *overflow_out = overflow;
    *loops_out = count;
    cdsh_strbuf_deinit(&all_text);
    free(levels);
    free(cand);
    free(alive);
    return rc;
}

/* ---- output ------------------------------------------------------------- */

static int cmp_order_entries(const void *a, const void *b)
{
    const wi_entry *x = *(wi_entry *const *)a, *y = *(wi_entry *const *)b;
    return y->order - x->order; /* stability comes from the seq tie-break below */
}

typedef struct ordered {
    wi_entry *e;
    size_t seq;
} ordered;

static int cmp_ordered(const void *a, const void *b)
{
    const ordered *x = a, *y = b;
    int c = cmp_order_entries(&x->e, &y->e);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool standing_safe(const wi_entry *e)
{
    return e->constant && !e->turn_local && !cdsh_tavern_macros_turn_local(e->content) &&
           (!e->use_prob || e->probability >= 100) && !e->ngroups && !e->sticky && !e->cooldown &&
           !e->delay && !e->delay_rec && e->position != CDSH_TAVERN_WI_POS_AN_TOP &&
           e->position != CDSH_TAVERN_WI_POS_AN_BOTTOM && e->position != CDSH_TAVERN_WI_POS_OUTLET;
}

/* Sets key to an already valid UTF-8 string (contents come from JSON). */
static void set_str(json_t *obj, const char *key, const char *v)
{
    json_object_set_new_nocheck(obj, key, json_stringn_nocheck(v, strlen(v)));
}

static void join_piece(cdsh_strbuf *sb, const char *content)
{
    if (sb->len)
        cdsh_strbuf_append_char(sb, '\n');
    cdsh_strbuf_append_str(sb, content);
}

typedef struct outgroup {
    int depth, role;
    const char *outlet;
    cdsh_strbuf text;
} outgroup;

static outgroup *group_for(outgroup **gs, size_t *n, int depth, int role, const char *outlet)
{
    for (size_t i = 0; i < *n; i++)
        if ((*gs)[i].depth == depth && (*gs)[i].role == role &&
            ((!outlet && !(*gs)[i].outlet) ||
             (outlet && (*gs)[i].outlet && !strcmp(outlet, (*gs)[i].outlet))))
            return &(*gs)[i];
    outgroup *g = realloc(*gs, (*n + 1) * sizeof *g);
    if (!g)
        return NULL;
    *gs = g;
    g[*n] = (outgroup){depth, role, outlet, {0}};
    cdsh_strbuf_init(&g[*n].text);
    return &g[(*n)++];
}

/* Long by design: one pass over the activated entries that fills every
 * output position (world_info_position) and the trigger log together. */
static json_t *build_output(run *r, int budget, bool overflow, int loops, size_t tokens,
                            bool want_log)
{
    json_t *out = json_object();
    json_t *examples = json_array(), *an_top = json_array(), *an_bottom = json_array();
    json_t *depth = json_array(), *outlets = json_object(), *activated = json_array();
    size_t n = r->nactivated;
    ordered *o = calloc(n + 1, sizeof *o);
    char **content = calloc(n + 1, sizeof *content);
    outgroup *groups = NULL;
    size_t ngroups = 0;
    cdsh_strbuf before, after;
    cdsh_strbuf_init(&before);
    cdsh_strbuf_init(&after);
    if (!o || !content)
        n = 0;
    for (size_t i = 0; i < n; i++)
        o[i] = (ordered){r->activated[i], i};
    if (n > 1)
        qsort(o, n, sizeof *o, cmp_ordered); /* o may be NULL when n is 0 */
    /* Sorted by order descending; SillyTavern then unshifts each entry, so
     * the lists end up ascending with ties reversed: walk backwards. Depth
     * and outlet groups are created in the descending walk's order. */
    for (size_t i = 0; i < n; i++) {
        wi_entry *e = o[i].e;
        int rdepth = e->position == CDSH_TAVERN_WI_POS_AT_DEPTH ? e->depth : -1;
        if (r->in->regex)
            cdsh_tavern_rxset_apply(r->in->regex, e->content, "prompt", "assemble", NULL, rdepth,
                                    r->in->macros, &content[i], NULL, NULL);
        if (!content[i])
            content[i] = strdup(e->content);
        if (!content[i] || !*content[i])
            continue;
        if (e->position == CDSH_TAVERN_WI_POS_AT_DEPTH)
            group_for(&groups, &ngroups, e->depth, e->role, NULL);
        else if (e->position == CDSH_TAVERN_WI_POS_OUTLET && *e->outlet)
            group_for(&groups, &ngroups, -1, -1, e->outlet);
    }
    for (size_t i = n; i-- > 0;) {
        wi_entry *e = o[i].e;
        const char *c = content[i];
        if (!c || !*c)
            continue;
        outgroup *g;
        switch (e->position) {
        case CDSH_TAVERN_WI_POS_BEFORE: join_piece(&before, c); break;
        case CDSH_TAVERN_WI_POS_AFTER: join_piece(&after, c); break;
        case CDSH_TAVERN_WI_POS_EM_TOP:
        case CDSH_TAVERN_WI_POS_EM_BOTTOM: {
            json_t *x = json_object();
            set_str(x, "position", e->position == CDSH_TAVERN_WI_POS_EM_TOP ? "before" : "after");
            set_str(x, "content", c);
            json_array_append_new(examples, x);
            break;
        }
        case CDSH_TAVERN_WI_POS_AN_TOP:
            json_array_append_new(an_top, json_stringn_nocheck(c, strlen(c)));
            break;
        case CDSH_TAVERN_WI_POS_AN_BOTTOM:
            json_array_append_new(an_bottom, json_stringn_nocheck(c, strlen(c)));
            break;
        case CDSH_TAVERN_WI_POS_AT_DEPTH:
            if ((g = group_for(&groups, &ngroups, e->depth, e->role, NULL)))
                join_piece(&g->text, c);
            break;
        default: break; /* outlets: below */
        }
    }
    /* Outlets are pushed in the descending walk (order high first), so they
     * join in that order, unlike the unshifted lists above. */
    for (size_t i = 0; i < n; i++) {
        wi_entry *e = o[i].e;
        outgroup *g;
        if (e->position == CDSH_TAVERN_WI_POS_OUTLET && content[i] && *content[i] && *e->outlet &&
            (g = group_for(&groups, &ngroups, -1, -1, e->outlet)))
            join_piece(&g->text, content[i]);
    }
    for (size_t i = 0; i < ngroups; i++) {
        if (groups[i].outlet) {
            set_str(outlets, groups[i].outlet, groups[i].text.data);
        } else {
            json_t *x = json_object();
            json_object_set_new_nocheck(x, "depth", json_integer(groups[i].depth));
            json_object_set_new_nocheck(x, "role", json_integer(groups[i].role));
            set_str(x, "content", groups[i].text.data);
            json_array_append_new(depth, x);
        }
        cdsh_strbuf_deinit(&groups[i].text);
    }
    free(groups);
    for (size_t i = 0; i < n; i++)
        free(content[i]);
    free(content);
    free(o);
    for (size_t i = 0; i < r->nactivated; i++) {
        wi_entry *e = r->activated[i];
        json_t *x = json_object();
        set_str(x, "book", e->book);
        json_object_set_new_nocheck(x, "uid", json_integer(e->uid));
        set_str(x, "comment", e->comment);
        json_object_set_new_nocheck(x, "position", json_integer(e->position));
        json_object_set_new_nocheck(x, "order", json_integer(e->order));
        json_object_set_new_nocheck(x, "depth", json_integer(e->depth));
        json_object_set_new_nocheck(x, "role", json_integer(e->role));
        set_str(x, "content", e->content);
        json_object_set_new_nocheck(
            x, "tokens", json_integer((json_int_t)cdsh_tavern_tokens_count_str(e->content)));
        json_object_set_new_nocheck(
            x, "turnLocal",
            json_boolean(e->turn_local || cdsh_tavern_macros_turn_local(e->content)));
        json_object_set_new_nocheck(x, "standingSafe", json_boolean(standing_safe(e)));
        json_array_append_new(activated, x);
    }
    json_t *truncated = json_array(), *log = want_log ? json_array() : json_null();
    for (size_t i = 0; i < r->n; i++) {
        wi_entry *e = &r->e[i];
        if (e->truncated && !e->activated) {
            json_t *x = json_object();
            set_str(x, "book", e->book);
            json_object_set_new_nocheck(x, "uid", json_integer(e->uid));
            set_str(x, "comment", e->comment);
            json_array_append_new(truncated, x);
        }
        if (!want_log)
            continue;
        json_t *x = json_object();
        set_str(x, "book", e->book);
        json_object_set_new_nocheck(x, "uid", json_integer(e->uid));
        set_str(x, "comment", e->comment);
        json_object_set_new_nocheck(x, "fired", json_boolean(e->activated));
        json_object_set_new_nocheck(x, "reason", json_string(e->reason));
        json_array_append_new(log, x);
    }
    json_object_set_new(out, "before", json_stringn(before.data, before.len));
    json_object_set_new(out, "after", json_stringn(after.data, after.len));
    cdsh_strbuf_deinit(&before);
    cdsh_strbuf_deinit(&after);
    json_object_set_new(out, "examples", examples);
    json_object_set_new(out, "anTop", an_top);
    json_object_set_new(out, "anBottom", an_bottom);
    json_object_set_new(out, "depth", depth);
    json_object_set_new(out, "outlets", outlets);
    json_object_set_new(out, "activated", activated);
    json_object_set_new(out, "truncated", truncated);
    json_object_set_new(out, "log", log);
    json_object_set_new(out, "budget", json_integer(budget));
    json_object_set_new(out, "tokens", json_integer((json_int_t)tokens));
    json_object_set_new(out, "overflow", json_boolean(overflow));
    json_object_set_new(out, "loops", json_integer(loops));
    return out;
}

/* ---- entry point -------------------------------------------------------- */

static char *format_message(const cdsh_tavern_wi_message *m, bool names)
{
    const char *t = m->text ? m->text : "";
    while (isspace((unsigned char)*t))
        t++;
    size_t l = strlen(t);
    while (l && isspace((unsigned char)t[l - 1]))
        l--;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    if (names && m->name && *m->name) {
        cdsh_strbuf_append_str(&sb, m->name);
        cdsh_strbuf_append_str(&sb, ": ");
    }
    cdsh_strbuf_append(&sb, t, l);
    return cdsh_strbuf_take(&sb, NULL);
}

int cdsh_tavern_wi_activate(const cdsh_tavern_wi_input *in, json_t **out, cdsh_error *err)
{
    if (!in || !out || (in->n_messages && !in->messages) || (in->n_inject && !in->inject))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "wi_activate: bad arguments");
    *out = NULL;
    run r = {.in = in, .s = &in->settings};
    srcbuf b = {0};
    book_ref *refs = NULL;
    int rc = 0;
    cdsh_strbuf_init(&r.recurse);
    cdsh_tavern_rng_init(&r.rng, in->seed);
    r.keys = cdsh_tavern_wi_matcher_new();
    r.timed = in->timed ? (in->dry_run ? json_deep_copy(in->timed) : json_incref(in->timed))
                        : json_object();
    if (!r.keys || !r.timed || (rc = collect(in, &b, &refs)) < 0)
        goto nomem;
    r.e = calloc(b.n + 1, sizeof *r.e);
    r.activated = calloc(b.n + 1, sizeof *r.activated);
    r.msgs = calloc(in->n_messages + 1, sizeof *r.msgs);
    if (!r.e || !r.activated || !r.msgs)
        goto nomem;
    for (size_t i = 0; i < b.n; i++, r.n++)
        if (load_entry(&r.e[i], b.entries[i], b.books[i], i) < 0) {
            r.n++;
            goto nomem;
        }
    for (size_t i = 0; i < in->n_messages; i++, r.nmsgs++)
        if (!(r.msgs[i] = format_message(&in->messages[in->n_messages - 1 - i],
                                         in->settings.include_names)))
            goto nomem;
    check_timed(&r);
    int budget = compute_budget(&in->settings);
    bool overflow = false;
    int loops = 0;
    size_t tokens = 0;
    if (r.n && (rc = scan(&r, budget, &overflow, &loops, &tokens)) < 0)
        goto nomem;
    json_t *failures = json_array();
    if (!failures || (in->render && render_templates(&r, &tokens, failures) < 0)) {
        json_decref(failures);
        goto nomem;
    }
    set_timed(&r);
    *out = build_output(&r, budget, overflow, loops, tokens, !in->no_log);
    if (!*out) {
        json_decref(failures);
        goto nomem;
    }
    json_object_set_new(*out, "templateFailures", failures);
    /* A dry run reports the timed-effect state this turn would leave (the
     * caller's is untouched): a preview can be chained turn after turn. */
    if (in->dry_run && json_object_set(*out, "timedAfter", r.timed) < 0) {
        json_decref(*out);
        *out = NULL;
        goto nomem;
    }
    rc = 0;
    goto cleanup;
nomem:
    rc = cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
cleanup:
    cache_clear(&r);
    free(r.cache);
    for (size_t i = 0; i < r.n; i++)
        free_entry(&r.e[i]);
    free(r.e);
    free(r.activated);
    for (size_t i = 0; i < r.nmsgs; i++)
        free(r.msgs[i]);
    free(r.msgs);
    cdsh_tavern_wi_matcher_free(r.keys);
    json_decref(r.timed);
    cdsh_strbuf_deinit(&r.recurse);
    free(b.entries);
    free(b.books);
    free(refs);
    return rc;
}
