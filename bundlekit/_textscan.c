/* The marks a text holds, found in one pass in C: what the output checks (bundlekit/_marks.py) ask of a text
 * before they run a rule over it.
 *
 * A `memory list` of 100,000 memories is one string of 15 MB. The secret guard, the terminal escaping and the
 * output redaction each first ask whether the text holds a character or a literal their rules need ("@" for a
 * URL's password, "k-" for an "sk-" key, a control character for an escape, ...): eight regular-expression
 * trigger searches and a dozen substring searches, each a pass over the whole string (~150 ms together). This
 * answers all of them in one pass. It decides nothing itself: where a mark is found, the Python rules run
 * exactly as before; where it is not, no rule of that mark can match. bundlekit/_marks.py holds the same
 * answers in Python (used where this is not built) and the tests compare the two on random and adversarial
 * text (tests/cli/test_marks.py).
 *
 * marks(text) -> (bits, newlines):
 *   bits      int: bit 0 "@", 1 "=", 2 '"' then ":" (whitespace between allowed, as \s* allows it in
 *             bundlekit/_redact.py's _QUERY_SECRET_JSON: Py_UNICODE_ISSPACE, what re's \s matches), 3 "%", 4 "\\", 5 "[withheld]", 6 "[withheld]\\", 7 a character
 *             bundlekit/_terminal.py escapes or a CR (its _MAYBE_UNPRINTABLE), 8 ESC, 9 U+2028 or U+2029 (a line
 *             break to str.splitlines, which printable leaves as it is); bit 16 + i: the i-th secret
 *             trigger of bundlekit/_marks.py (TRIGGERS) matches somewhere
 *   newlines  int: how many "\n" the text holds
 * Code points are compared as code points, whatever the string's width (lone surrogates included).
 *
 * marks_utf8(data) -> (bits, newlines, characters) or None: the same marks of the text whose UTF-8 bytes are
 * `data` (any bytes-like object), and how many characters it holds; None when `data` is not UTF-8 as Python's
 * strict decoder reads it (an overlong form, a surrogate, past U+10FFFF, a cut sequence). So a listing kept as
 * bytes is checked without being decoded into a str (bundlekit/_marks.py, marks_utf8): the bits are those
 * marks() gives for data.decode("utf-8").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum {
    M_AT = 1 << 0,
    M_EQ = 1 << 1,
    M_JSON_KEY = 1 << 2,
    M_PERCENT = 1 << 3,
    M_BACKSLASH = 1 << 4,
    M_WITHHELD = 1 << 5,
    M_WITHHELD_ESCAPED = 1 << 6,
    M_CONTROL = 1 << 7,
    M_ESC = 1 << 8,
    M_LINE_SEP = 1 << 9,
    T_AWS = 1 << 16,        /* A[KS]IA */
    T_GITHUB = 1 << 17,     /* g(?:h[pousr]_|ithub_pat_) */
    T_SK = 1 << 18,         /* k- */
    T_SLACK = 1 << 19,      /* xox */
    T_STRIPE = 1 << 20,     /* k_(?:live|test|prod)_ */
    T_GOOGLE = 1 << 21,     /* AIza */
    T_PEM = 1 << 22,        /* "-----BEGIN " */
    T_JWT = 1 << 23,        /* yJ */
};

/* The literal `lit` (ASCII) at position `at` of the text. */
#define HAS(lit) has_at(kind, data, length, at, lit)

static int has_at(int kind, const void *data, Py_ssize_t length, Py_ssize_t at, const char *lit) {
    for (Py_ssize_t k = 0; lit[k]; k++) {
        if (at + k >= length || PyUnicode_READ(kind, data, at + k) != (Py_UCS4)(unsigned char)lit[k]) {
            return 0;
        }
    }
    return 1;
}

/* A '"' at `at` followed by whitespace (any re's \s matches) then ':': what _QUERY_SECRET_JSON needs. Linear over
 * the text: a run of whitespace is walked from the one quote before it. */
static int json_key_at(int kind, const void *data, Py_ssize_t length, Py_ssize_t at) {
    for (Py_ssize_t k = at + 1; k < length; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        if (c == ':') {
            return 1;
        }
        if (!Py_UNICODE_ISSPACE(c)) {
            return 0;
        }
    }
    return 0;
}

/* The marks of a character at or above 0x80 (no longer mark starts with one). */
static long wide_marks(Py_UCS4 c);

/* A character bundlekit/_terminal.py's printable escapes (its _CONTROLS), or a CR. */
static int is_control(Py_UCS4 c) {
    if (c < 0x20) {
        return c != '\t' && c != '\n';
    }
    if (c < 0x7f) {
        return 0;
    }
    return c <= 0x9f || c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069);
}

/* The marks starting at `at`, whose character is `c` (one of those the table below marks). */
static long marks_at(int kind, const void *data, Py_ssize_t length, Py_ssize_t at, Py_UCS4 c) {
    switch (c) {
    case '@': return M_AT;
    case '=': return M_EQ;
    case '"': return json_key_at(kind, data, length, at) ? M_JSON_KEY : 0;
    case '%': return M_PERCENT;
    case '\\': return M_BACKSLASH;
    case '[':
        if (!HAS("[withheld]")) {
            return 0;
        }
        return M_WITHHELD | (HAS("[withheld]\\") ? M_WITHHELD_ESCAPED : 0);
    case 'A': return (HAS("AKIA") || HAS("ASIA") ? T_AWS : 0) | (HAS("AIza") ? T_GOOGLE : 0);
    case 'g':
        return HAS("ghp_") || HAS("gho_") || HAS("ghu_") || HAS("ghs_") || HAS("ghr_") || HAS("github_pat_") ? T_GITHUB : 0;
    case 'k':
        return (HAS("k-") ? T_SK : 0) | (HAS("k_live_") || HAS("k_test_") || HAS("k_prod_") ? T_STRIPE : 0);
    case 'x': return HAS("xox") ? T_SLACK : 0;
    case '-': return HAS("-----BEGIN ") ? T_PEM : 0;
    case 'y': return HAS("yJ") ? T_JWT : 0;
    case 0x1b: return M_CONTROL | M_ESC;
    default: return wide_marks(c);
    }
}

static long wide_marks(Py_UCS4 c) {
    return (is_control(c) ? M_CONTROL : 0) | (c == 0x2028 || c == 0x2029 ? M_LINE_SEP : 0);
}

/* Whether `next` can follow `c` in a mark that `c` starts (a quick filter before marks_at). */
static inline int may_follow(Py_UCS4 c, Py_UCS4 next) {
    switch (c) {
    case '"': return next == ':' || Py_UNICODE_ISSPACE(next);
    case '[': return next == 'w';
    case 'A': return next == 'K' || next == 'S' || next == 'I';
    case 'g': return next == 'h' || next == 'i';
    case 'k': return next == '-' || next == '_';
    case 'x': return next == 'o';
    case 'y': return next == 'J';
    case '-': return next == '-';
    default: return 1;
    }
}

/* Which ASCII characters can start a mark (the rest are looked at only when at or above 0x7f): 1 one that is a
 * mark alone, 2 a newline (counted), 3 one that leads a longer mark (looked at when may_follow). */
static unsigned char starts[128];

static void init_starts(void) {
    const char *chars = "@=%\\";
    for (const char *p = chars; *p; p++) {
        starts[(unsigned char)*p] = 1;
    }
    const char *led = "\"[Agkxy-"; /* a mark of two characters or more: looked at when the next one fits */
    for (const char *p = led; *p; p++) {
        starts[(unsigned char)*p] = 3;
    }
    for (int c = 0; c < 0x20; c++) {
        starts[c] = (c != '\t' && c != '\n');
    }
    starts[0x7f] = 1; /* DEL */
    starts['\n'] = 2;
}

static PyObject *marks(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "marks() takes a str");
        return NULL;
    }
    if (PyUnicode_READY(text) < 0) {
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    long bits = 0;
    Py_ssize_t newlines = 0;
    Py_BEGIN_ALLOW_THREADS
#define SCAN(T)                                                         \
    for (Py_ssize_t at = 0; at < length; at++) {                        \
        Py_UCS4 c = ((const T *)data)[at];                              \
        if (c < 128) {                                                  \
            unsigned char what = starts[c];                             \
            if (what == 0) {                                            \
                continue;                                               \
            }                                                           \
            if (what == 2) {                                            \
                newlines++;                                             \
                continue;                                               \
            }                                                           \
            if (what == 3 && (at + 1 >= length ||                       \
                              !may_follow(c, ((const T *)data)[at + 1]))) { \
                continue;                                               \
            }                                                           \
        }                                                               \
        bits |= marks_at(kind, data, length, at, c);                    \
    }
    if (kind == PyUnicode_1BYTE_KIND) {
        SCAN(Py_UCS1)
    } else if (kind == PyUnicode_2BYTE_KIND) {
        SCAN(Py_UCS2)
    } else {
        SCAN(Py_UCS4)
    }
#undef SCAN
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(ln)", bits, newlines);
}

/* The code point of the UTF-8 sequence at data[*at] (whose first byte, `lead`, is 0x80 or above), advancing *at
 * past it; -1 when it is not a sequence Python's strict decoder takes. */
static long utf8_next(const unsigned char *data, Py_ssize_t length, Py_ssize_t *at, unsigned char lead) {
    int more;
    long c;
    unsigned char low = 0x80, high = 0xbf; /* the second byte's range: narrower after E0, ED, F0, F4 */
    if (lead >= 0xc2 && lead <= 0xdf) {
        more = 1, c = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        more = 2, c = lead & 0x0f;
        low = lead == 0xe0 ? 0xa0 : 0x80, high = lead == 0xed ? 0x9f : 0xbf;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        more = 3, c = lead & 0x07;
        low = lead == 0xf0 ? 0x90 : 0x80, high = lead == 0xf4 ? 0x8f : 0xbf;
    } else {
        return -1;
    }
    Py_ssize_t k = *at + 1;
    if (k + more > length || data[k] < low || data[k] > high) {
        return -1;
    }
    for (int i = 0; i < more; i++, k++) {
        if ((data[k] & 0xc0) != 0x80) {
            return -1;
        }
        c = (c << 6) | (data[k] & 0x3f);
    }
    *at = k;
    return c;
}

/* json_key_at for UTF-8: whitespace (decoded, as Py_UNICODE_ISSPACE reads it) then ':' after the quote at `at`. */
static int json_key_at_utf8(const unsigned char *data, Py_ssize_t length, Py_ssize_t at) {
    Py_ssize_t k = at + 1;
    while (k < length) {
        long c = data[k];
        if (c < 0x80) {
            k++;
        } else if ((c = utf8_next(data, length, &k, data[k])) < 0) {
            return 0; /* the scan refuses the text at that byte anyway */
        }
        if (c == ':') {
            return 1;
        }
        if (!Py_UNICODE_ISSPACE((Py_UCS4)c)) {
            return 0;
        }
    }
    return 0;
}

/* The marks starting at ASCII byte `at`, whose character is `c`: marks_at reading the bytes as one-byte code
 * points, exact for every literal (all ASCII; an ASCII byte of UTF-8 is always that character), but for the
 * whitespace after a '"', which may be a longer sequence (decoded by json_key_at_utf8). */
static long marks_at_utf8(const unsigned char *data, Py_ssize_t length, Py_ssize_t at, unsigned char c) {
    if (c == '"') {
        return json_key_at_utf8(data, length, at) ? M_JSON_KEY : 0;
    }
    return marks_at(PyUnicode_1BYTE_KIND, data, length, at, c);
}

static PyObject *marks_utf8(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)view.buf;
    Py_ssize_t length = view.len, continued = 0, newlines = 0, at = 0;
    long bits = 0;
    int valid = 1;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        while (at < length && data[at] < 0x80 && starts[data[at]] == 0) {
            at++; /* the common case: an ASCII character no mark starts with */
        }
        if (at >= length) {
            break;
        }
        unsigned char c = data[at];
        if (c >= 0x80) {
            Py_ssize_t start = at;
            long code = utf8_next(data, length, &at, c);
            if (code < 0) {
                valid = 0;
                break;
            }
            continued += at - start - 1;
            bits |= wide_marks((Py_UCS4)code);
            continue;
        }
        unsigned char what = starts[c];
        if (what == 2) {
            newlines++;
        } else if (what != 3 || (at + 1 < length && (data[at + 1] >= 0x80 ? c == '"' : may_follow(c, data[at + 1])))) {
            /* A leader's next character: an ASCII byte as itself; a longer sequence matters only after '"' (a
             * non-ASCII space), whose json_key_at_utf8 decodes it. */
            bits |= marks_at_utf8(data, length, at, c);
        }
        at++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!valid) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(lnn)", bits, newlines, length - continued);
}

static PyMethodDef methods[] = {
    {"marks", marks, METH_O, "marks(text) -> (bits, newlines): the marks text holds (bundlekit/_marks.py)."},
    {"marks_utf8", marks_utf8, METH_O,
     "marks_utf8(data) -> (bits, newlines, characters) or None: marks() of UTF-8 bytes, None if not UTF-8."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_textscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__textscan(void) {
    init_starts();
    return PyModule_Create(&module);
}
