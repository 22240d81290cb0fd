/* utf8.h — strict UTF-8 validation and decoding (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF) and terminal display width.
 * Widths follow Unicode East Asian Width (W/F = 2) with an emoji table and
 * zero for controls, combining marks and zero-width characters; they are an
 * approximation of what terminals do, not a grapheme-cluster engine.
 * All functions are pure and thread-safe; none of them reads past n bytes. */
#ifndef CDSH_BASE_UTF8_H
#define CDSH_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CDSH_UTF8_REPLACEMENT 0xFFFDu

/* Decodes the code point at s[0..n). Returns 0 with *cp and *len (1..4) set;
 * CDSH_EINVAL for an invalid sequence with *cp = U+FFFD and *len = the length
 * of its maximal invalid subpart (>= 1; skip that many bytes to resync, as
 * the Unicode standard recommends); CDSH_EINVAL with *len = 0 when n == 0.
 * NUL is a valid code point here. cp and len may not be NULL. */
int cdsh_utf8_decode(const char *s, size_t n, uint32_t *cp, size_t *len);

/* Writes the UTF-8 form of cp into out (4 bytes of room) and returns its
 * length 1..4; returns 0 (writing nothing) for surrogates and cp > 0x10FFFF. */
size_t cdsh_utf8_encode(uint32_t cp, char out[4]);

/* True if s[0..n) is entirely valid UTF-8 (embedded NULs allowed). */
bool cdsh_utf8_valid(const char *s, size_t n);

/* Byte length of the longest valid prefix of s[0..n). */
size_t cdsh_utf8_valid_prefix(const char *s, size_t n);

/* Number of code points; each invalid subpart counts as one (as U+FFFD). */
size_t cdsh_utf8_count(const char *s, size_t n);

/* Display columns of one code point: 0, 1 or 2. Controls (C0, DEL, C1),
 * combining marks, zero-width characters, variation selectors and emoji
 * skin-tone modifiers are 0; East Asian Wide/Fullwidth (CJK, Hangul
 * syllables, kana, fullwidth forms) and emoji are 2; everything else 1.
 * keep-public: display widths for terminals; test_utf8 and fuzz_utf8 check them. */
int cdsh_utf8_cp_width(uint32_t cp);

/* Sum of cdsh_utf8_cp_width over s[0..n); invalid subparts count 1 each.
 * keep-public: display widths for terminals; test_utf8 and fuzz_utf8 check them. */
size_t cdsh_utf8_width(const char *s, size_t n);

/* Byte length of the longest prefix of s[0..n) whose display width is at
 * most max_width, never cutting a code point (or an invalid subpart).
 * Zero-width code points right after the last one that fits are kept with
 * it (so a combining accent stays on its letter). *width_out (if non-NULL)
 * receives the prefix's width. A valid input gives a valid prefix.
 * keep-public: display widths for terminals; test_utf8 and fuzz_utf8 check them. */
size_t cdsh_utf8_truncate_width(const char *s, size_t n, size_t max_width, size_t *width_out);

/* Owned copy of s[0..n) with each invalid subpart replaced by U+FFFD;
 * *out_len (if non-NULL) gets the length. NULL on ENOMEM. */
char *cdsh_utf8_sanitize_dup(const char *s, size_t n, size_t *out_len);

#endif
