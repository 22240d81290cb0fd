/* jsregex.c — JavaScript regex semantics over PCRE2 (see jsregex.h): flag
 * mapping, compatibility options, bounded matching and JS replacement
 * templates. It knows nothing about lorebooks or regex rules. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "plugins/tavern/jsregex.h"

#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

struct cdsh_tavern_jsre {
    pcre2_code *code;
    bool global, sticky, unicode;
    int ngroups;
};

bool cdsh_tavern_jsre_split_literal(const char *text, char **pattern, char **flags)
{
    if (!text || text[0] != '/')
        return false;
    size_t n = strlen(text);
    size_t end = n;
    while (end > 1 && strchr("dgimsuy", text[end - 1]) && text[end - 1])
        end--;
    if (end < 2 || text[end - 1] != '/')
        return false;
    /* Pattern is text[1 .. end-1); an unescaped '/' inside is not allowed. */
    for (size_t i = 1; i < end - 1; i++) {
        if (text[i] == '\\') {
            i++;
            continue;
        }
        if (text[i] == '/')
            return false;
    }
    if (end - 2 == 0)
        return false;
    if (pattern && !(*pattern = strndup(text + 1, end - 2)))
        return false;
    if (flags && !(*flags = strdup(text + end))) {
        if (pattern) {
            free(*pattern);
            *pattern = NULL;
        }
        return false;
    }
    return true;
}

int cdsh_tavern_jsre_compile(const char *pattern, const char *flags, cdsh_tavern_jsre **out,
                             cdsh_error *err)
{
    if (!pattern || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "jsre_compile: no pattern");
    *out = NULL;
    uint32_t opts = PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_MATCH_UNSET_BACKREF | PCRE2_DOLLAR_ENDONLY |
                    PCRE2_ALLOW_EMPTY_CLASS;
    bool g = false, y = false, u = false;
    char seenbuf[8] = {0};
    for (const char *f = flags ? flags : ""; *f; f++) {
        if (strchr(seenbuf, *f) || strlen(seenbuf) >= 7)
            return cdsh_error_set(err, CDSH_EINVAL, "REGEX_BAD_FLAGS", "repeated regex flag '%c'",
                                  *f);
        seenbuf[strlen(seenbuf)] = *f;
        switch (*f) {
        case 'g': g = true; break;
        case 'i': opts |= PCRE2_CASELESS; break;
        case 'm':
            opts |= PCRE2_MULTILINE;
            opts &= ~(uint32_t)PCRE2_DOLLAR_ENDONLY;
            break;
        case 's': opts |= PCRE2_DOTALL; break;
        case 'u': u = true; break;
        case 'y': y = true; break;
        case 'd': break; /* indices: no effect on matching */
        default:
            return cdsh_error_set(err, CDSH_EINVAL, "REGEX_BAD_FLAGS", "unknown regex flag '%c'",
                                  *f);
        }
    }
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc)
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    /* JavaScript line terminators are \n, \r, U+2028, U+2029. */
    pcre2_set_newline(cc, PCRE2_NEWLINE_ANY);
#ifdef PCRE2_EXTRA_ALT_BSUX
    pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
#endif
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &ec, &eo, cc);
    pcre2_compile_context_free(cc);
    if (!code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return cdsh_error_set(err, CDSH_EINVAL, "REGEX_BAD_PATTERN",
                              "regex /%.80s/ does not compile at offset %zu: %s", pattern,
                              (size_t)eo, (const char *)msg);
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* optional speed-up; falls back silently */
    cdsh_tavern_jsre *re = calloc(1, sizeof *re);
    if (!re) {
        pcre2_code_free(code);
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    }
    uint32_t cap = 0;
    pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &cap);
    re->code = code;
    re->global = g;
    re->sticky = y;
    re->unicode = u;
    re->ngroups = (int)cap;
    *out = re;
    return 0;
}

void cdsh_tavern_jsre_free(cdsh_tavern_jsre *re)
{
    if (!re)
        return;
    pcre2_code_free(re->code);
    free(re);
}

bool cdsh_tavern_jsre_is_global(const cdsh_tavern_jsre *re)
{
    return re && re->global;
}
int cdsh_tavern_jsre_group_count(const cdsh_tavern_jsre *re)
{
    return re ? re->ngroups : 0;
}

int cdsh_tavern_jsre_group_index(const cdsh_tavern_jsre *re, const char *name)
{
    if (!re || !name)
        return -1;
    int n = pcre2_substring_number_from_name(re->code, (PCRE2_SPTR)name);
    return n > 0 ? n : -1;
}

/* One bounded match attempt at `start`. 1 match, 0 none, <0 error. */
static int match_at(const cdsh_tavern_jsre *re, const char *s, size_t n, size_t start,
                    uint32_t mopts, pcre2_match_data *md, pcre2_match_context *mc, int64_t deadline,
                    cdsh_error *err)
{
    if (cdsh_clock_mono_ms() > deadline)
        return cdsh_error_set(err, CDSH_ETIMEDOUT, "REGEX_TIMEOUT",
                              "regex ran out of time (catastrophic pattern?)");
    if (re->sticky)
        mopts |= PCRE2_ANCHORED;
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, start, mopts, md, mc);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT)
        return cdsh_error_set(err, CDSH_ETIMEDOUT, "REGEX_TIMEOUT",
                              "regex exceeded its backtracking limit (catastrophic pattern?)");
    if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)
        return cdsh_error_set(err, CDSH_EINVAL, "REGEX_BAD_SUBJECT", "text is not valid UTF-8");
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(rc, msg, sizeof msg);
    return cdsh_error_set(err, CDSH_EIO, "REGEX_MATCH_FAILED", "regex match failed: %s",
                          (const char *)msg);
}

typedef struct mstate {
    pcre2_match_data *md;
    pcre2_match_context *mc;
    int64_t deadline;
} mstate;

static int mstate_init(mstate *st, const cdsh_tavern_jsre *re, int time_ms, cdsh_error *err)
{
    st->md = pcre2_match_data_create_from_pattern(re->code, NULL);
    st->mc = pcre2_match_context_create(NULL);
    if (!st->md || !st->mc) {
        pcre2_match_data_free(st->md);
        pcre2_match_context_free(st->mc);
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    }
    pcre2_set_match_limit(st->mc, CDSH_TAVERN_JSRE_MATCH_LIMIT);
    pcre2_set_depth_limit(st->mc, CDSH_TAVERN_JSRE_MATCH_LIMIT / 4);
    pcre2_set_heap_limit(st->mc, 64 * 1024); /* KiB */
    st->deadline = cdsh_clock_mono_ms() + (time_ms > 0 ? time_ms : CDSH_TAVERN_JSRE_TIME_MS);
    return 0;
}

static void mstate_deinit(mstate *st)
{
    pcre2_match_data_free(st->md);
    pcre2_match_context_free(st->mc);
}

int cdsh_tavern_jsre_test(const cdsh_tavern_jsre *re, const char *s, size_t n, int time_ms,
                          cdsh_error *err)
{
    if (!re || (!s && n))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "jsre_test: no regex");
    mstate st;
    int rc = mstate_init(&st, re, time_ms, err);
    if (rc < 0)
        return rc;
    rc = match_at(re, s ? s : "", n, 0, 0, st.md, st.mc, st.deadline, err);
    mstate_deinit(&st);
    return rc;
}

static size_t utf8_step(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return i + 1;
    i++;
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

int cdsh_tavern_jsre_replace(const cdsh_tavern_jsre *re, const char *s, size_t n,
                             cdsh_tavern_jsre_replacer fn, void *ud, int time_ms, char **out,
                             size_t *count, cdsh_error *err)
{
    if (!re || !fn || !out || (!s && n))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "jsre_replace: bad arguments");
    *out = NULL;
    if (count)
        *count = 0;
    if (!s)
        s = "";
    mstate st;
    int rc = mstate_init(&st, re, time_ms, err);
    if (rc < 0)
        return rc;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t *ov = calloc(2 * ((size_t)re->ngroups + 1), sizeof *ov);
    if (!ov) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
        goto cleanup;
    }
    size_t pos = 0, copied = 0, matches = 0;
    while (pos <= n) {
        rc = match_at(re, s, n, pos, 0, st.md, st.mc, st.deadline, err);
        if (rc < 0)
            goto cleanup;
        if (rc == 0)
            break;
        PCRE2_SIZE *pv = pcre2_get_ovector_pointer(st.md);
        uint32_t pairs = pcre2_get_ovector_count(st.md);
        for (int k = 0; k <= re->ngroups; k++) {
            bool set = (uint32_t)k < pairs && pv[2 * k] != PCRE2_UNSET;
            ov[2 * k] = set ? pv[2 * k] : SIZE_MAX;
            ov[2 * k + 1] = set ? pv[2 * k + 1] : SIZE_MAX;
        }
        matches++;
        cdsh_strbuf_append(&sb, s + copied, ov[0] - copied);
        rc = fn(ud, s, n, ov, re->ngroups, &sb);
        if (rc < 0)
            goto cleanup;
        copied = ov[1];
        if (!re->global)
            break;
        pos = ov[1] > ov[0] ? ov[1] : utf8_step(s, n, ov[1]);
        if (ov[1] == ov[0] && pos > n)
            break;
    }
    cdsh_strbuf_append(&sb, s + copied, n - copied);
    if (sb.failed) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
        goto cleanup;
    }
    *out = cdsh_strbuf_take(&sb, NULL);
    if (count)
        *count = matches;
    rc = 0;
cleanup:
    free(ov);
    cdsh_strbuf_deinit(&sb);
    mstate_deinit(&st);
    return rc;
}

static void append_group(cdsh_strbuf *out, const char *subject, const size_t *ov, int k)
{
    if (ov[2 * k] != SIZE_MAX)
        cdsh_strbuf_append(out, subject + ov[2 * k], ov[2 * k + 1] - ov[2 * k]);
}

int cdsh_tavern_jsre_expand(const cdsh_tavern_jsre *re, const char *tpl, size_t tpl_len,
                            const char *subject, size_t subject_len, const size_t *ov,
                            cdsh_strbuf *out)
{
    uint32_t namecount = 0;
    pcre2_pattern_info(re->code, PCRE2_INFO_NAMECOUNT, &namecount);
    for (size_t i = 0; i < tpl_len; i++) {
        char c = tpl[i];
        if (c != '$' || i + 1 >= tpl_len) {
            cdsh_strbuf_append_char(out, c);
            continue;
        }
        char d = tpl[i + 1];
        if (d == '$') {
            cdsh_strbuf_append_char(out, '$');
            i++;
        } else if (d == '&') {
            append_group(out, subject, ov, 0);
            i++;
        } else if (d == '`') {
            cdsh_strbuf_append(out, subject, ov[0]);
            i++;
        } else if (d == '\'') {
            cdsh_strbuf_append(out, subject + ov[1], subject_len - ov[1]);
            i++;
        } else if (d >= '0' && d <= '9') {
            int one = d - '0';
            int two = (i + 2 < tpl_len && tpl[i + 2] >= '0' && tpl[i + 2] <= '9')
                          ? one * 10 + (tpl[i + 2] - '0')
                          : -1;
            if (two >= 1 && two <= re->ngroups) {
                append_group(out, subject, ov, two);
                i += 2;
            } else if (one >= 1 && one <= re->ngroups) {
                append_group(out, subject, ov, one);
                i++;
            } else {
                cdsh_strbuf_append_char(out, '$');
            }
        } else if (d == '<' && namecount > 0) {
            const char *close = memchr(tpl + i + 2, '>', tpl_len - i - 2);
            if (!close) {
                cdsh_strbuf_append_char(out, '$');
                continue;
            }
            char name[128];
            size_t nl = (size_t)(close - (tpl + i + 2));
            if (nl < sizeof name) {
                memcpy(name, tpl + i + 2, nl);
                name[nl] = 0;
                int k = cdsh_tavern_jsre_group_index(re, name);
                if (k > 0)
                    append_group(out, subject, ov, k);
            }
            i = (size_t)(close - tpl);
        } else {
            cdsh_strbuf_append_char(out, '$');
        }
    }
    return out->failed ? CDSH_ENOMEM : 0;
}

int cdsh_tavern_jsre_escape(const char *s, size_t n, cdsh_strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (strchr("\\^$.*+?()[]{}|/-", s[i]) && s[i])
            cdsh_strbuf_append_char(out, '\\');
        cdsh_strbuf_append_char(out, s[i]);
    }
    return out->failed ? CDSH_ENOMEM : 0;
}
