/* The cosines recall by meaning ranks with, in C: every stored float16 vector against the query's.
 *
 * A fresh `memory recall` ranks 10,000 memories once; numpy's import alone costs it some 55 ms of
 * CPU and a Python loop over 2.5 million products some 80 ms. This reads the vectors as the derived
 * index and the vector file store them (little-endian IEEE 754 binary16, unit length) and writes one
 * cosine per row, with the GIL released. Optional: where it is not built, memory/cosines.py does
 * the same with numpy (the same rules; tests/memory/test_cosines.py compares the two).
 *
 * similarities(vectors, heads, query, w_head, sim, near[, portable]) -> None
 *   vectors  buffer: n rows of d float16 values (n = len(sim) / 8, d = len(query) / 8)
 *   heads    buffer of the same size (the vectors of name and description), or None
 *   query    buffer: d float64 values, the query's unit vector
 *   w_head   float: the head vector's weight
 *   sim      writable buffer: n float64 values, each row's cosine with the query, clipped to [-1, 1]
 *   near     writable buffer: n float64 values, (sim + w_head * head cosine) / (1 + w_head) for a
 *            row whose head vector is not all zeros, else sim (heads None: sim)
 * A row holding a value that is not finite (its five exponent bits all set: put there by hand)
 * counts as a zero vector: cosine 0, no head. Sizes that do not agree raise ValueError. On an x86-64
 * processor with F16C the values are converted 8 at a time, to the bit the same result as the portable
 * loop (``portable`` true: that loop, whatever the processor; the tests compare the two).
 *
 * Every buffer may be of any alignment (float64 values are read and written with memcpy).
 *
 * scores(near, lexical, factors, salience, updated, horizon, now, constants, relevance, score) -> None
 *   the rest of the formula (specs/memory.md, "Recall by meaning"; memory/bymeaning.py, _scores, is the
 *   same in Python), over n float64 values each (lexical and factors may be None: zeros, ones):
 *     relevance = (near - min) * span if near > min else 0, plus w_lexical * lexical, times factors
 *     age       = max(now - updated, 0); standing = salience * 2^(-age / half_life)
 *                 * (2^(-(age - horizon) / half_life) when horizon >= 0 and age > horizon)
 *     score     = relevance * (floor + (1 - floor) * standing), 0 when relevance is 0
 *   constants: the tuple (min, span, w_lexical, floor, half_life).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A binary16 value as a float: its sign, exponent and fraction moved into a binary32 (sign 16 bits left,
 * the rest 13) and scaled by 2^112, exact for normal and subnormal values alike (the exponent biases
 * differ by 112). Branch-free, so the loops below vectorize. Not finite values are found apart. */
static inline float half_to_float(uint16_t h) {
    uint32_t bits = ((uint32_t)(h & 0x8000u) << 16) | ((uint32_t)(h & 0x7FFFu) << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f * 5.192296858534828e+33f; /* 2^112 */
}

#define LANES 8

/* The i-th float64 of a buffer, and a store to it, by memcpy: a buffer of any alignment (a memoryview sliced at an
 * odd byte is a valid buffer; a double load from it is undefined behaviour, and vectorized code may assume 8-byte
 * alignment). A fixed-size memcpy compiles to one unaligned move. */
static inline double load_double(const void *base, Py_ssize_t i) {
    double value;
    memcpy(&value, (const unsigned char *)base + (size_t)i * sizeof value, sizeof value);
    return value;
}

static inline void store_double(void *base, Py_ssize_t i, double value) {
    memcpy((unsigned char *)base + (size_t)i * sizeof value, &value, sizeof value);
}

/* The dot product of one stored row (d little-endian binary16 values) with q, through the scratch
 * buffer ``wide`` (d floats); *usable 0 when the row holds a value that is not finite, *nonzero 1 when
 * some value is not zero. */
static double row_dot(const unsigned char *row, const float *q, Py_ssize_t d, int *usable, int *nonzero) {
    float *wide = (float *)q + d; /* the scratch after the query (similarities allocates both) */
    uint32_t broken = 0, any = 0;
    for (Py_ssize_t j = 0; j < d; j++) {
        uint16_t h = (uint16_t)(row[2 * j] | (row[2 * j + 1] << 8));
        broken |= ((uint32_t)(h & 0x7C00u) + 0x0400u) & 0x8000u; /* exponent bits all set */
        any |= h & 0x7FFFu;
        wide[j] = half_to_float(h);
    }
    float acc[LANES] = {0};
    Py_ssize_t j = 0;
    for (; j + LANES <= d; j += LANES) {
        for (int k = 0; k < LANES; k++) {
            acc[k] += wide[j + k] * q[j + k];
        }
    }
    double total = 0.0;
    for (; j < d; j++) {
        total += (double)(wide[j] * q[j]);
    }
    for (int k = 0; k < LANES; k++) {
        total += acc[k];
    }
    *usable = broken == 0;
    *nonzero = any != 0;
    return total;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_F16C 1

/* row_dot with the F16C conversion of 8 values per instruction (x86-64 processors since 2012; asked of the
 * processor at run time): the same lanes, the same products and sums in the same order, so the same result
 * to the bit as the portable loop. */
__attribute__((target("avx,f16c"))) static double row_dot_f16c(const unsigned char *row, const float *q,
                                                                Py_ssize_t d, int *usable, int *nonzero) {
    __m256 acc = _mm256_setzero_ps();
    __m128i broken = _mm_setzero_si128(), any = _mm_setzero_si128();
    const __m128i exponent = _mm_set1_epi16(0x7C00), one = _mm_set1_epi16(0x0400);
    const __m128i sign = _mm_set1_epi16((short)0x8000), magnitude = _mm_set1_epi16(0x7FFF);
    Py_ssize_t j = 0;
    for (; j + LANES <= d; j += LANES) {
        __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * j)); /* little-endian, as stored */
        broken = _mm_or_si128(broken, _mm_and_si128(_mm_add_epi16(_mm_and_si128(h, exponent), one), sign));
        any = _mm_or_si128(any, _mm_and_si128(h, magnitude));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_loadu_ps(q + j)));
    }
    float lanes[LANES];
    _mm256_storeu_ps(lanes, acc);
    double total = 0.0;
    uint32_t tail_broken = 0, tail_any = 0;
    for (; j < d; j++) {
        uint16_t h = (uint16_t)(row[2 * j] | (row[2 * j + 1] << 8));
        tail_broken |= ((uint32_t)(h & 0x7C00u) + 0x0400u) & 0x8000u;
        tail_any |= h & 0x7FFFu;
        total += (double)(half_to_float(h) * q[j]);
    }
    for (int k = 0; k < LANES; k++) {
        total += lanes[k];
    }
    *usable = _mm_testz_si128(broken, broken) && tail_broken == 0;
    *nonzero = !_mm_testz_si128(any, any) || tail_any != 0;
    return total;
}
#endif

typedef double (*RowDot)(const unsigned char *, const float *, Py_ssize_t, int *, int *);

static double clip(double x) {
    return x > 1.0 ? 1.0 : x < -1.0 ? -1.0 : x;
}

static PyObject *similarities(PyObject *self, PyObject *args) {
    Py_buffer vectors, query, sim, near, heads = {0};
    PyObject *heads_obj;
    double w_head;
    int portable = 0;
    if (!PyArg_ParseTuple(args, "y*Oy*dw*w*|p", &vectors, &heads_obj, &query, &w_head, &sim, &near, &portable)) {
        return NULL;
    }
    int have_heads = heads_obj != Py_None;
    PyObject *result = NULL;
    float *q = NULL;
    if (have_heads && PyObject_GetBuffer(heads_obj, &heads, PyBUF_SIMPLE) < 0) {
        goto done_noheads;
    }
    Py_ssize_t d = query.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t n = sim.len / (Py_ssize_t)sizeof(double);
    if (d < 1 || query.len % (Py_ssize_t)sizeof(double) || sim.len % (Py_ssize_t)sizeof(double) || near.len != sim.len
        || vectors.len != n * d * 2 || (have_heads && heads.len != vectors.len)) {
        PyErr_SetString(PyExc_ValueError, "the vectors, heads, query and outputs are not of agreeing sizes");
        goto done;
    }
    q = PyMem_Malloc((size_t)d * 2 * sizeof(float)); /* the query, then a row's floats */
    if (q == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < d; j++) {
        q[j] = (float)load_double(query.buf, j);
    }
    const unsigned char *rows = (const unsigned char *)vectors.buf;
    const unsigned char *head_rows = have_heads ? (const unsigned char *)heads.buf : NULL;
    void *sim_out = sim.buf, *near_out = near.buf;
    RowDot dot = row_dot;
#ifdef HAVE_F16C
    __builtin_cpu_init();
    if (!portable && __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c")) {
        dot = row_dot_f16c;
    }
#endif
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int usable, nonzero;
        double s = dot(rows + (size_t)i * (size_t)d * 2, q, d, &usable, &nonzero);
        s = usable ? clip(s) : 0.0;
        double mixed = s;
        if (head_rows != NULL) {
            double h = dot(head_rows + (size_t)i * (size_t)d * 2, q, d, &usable, &nonzero);
            if (usable && nonzero) {
                mixed = (s + w_head * clip(h)) / (1.0 + w_head);
            }
        }
        store_double(sim_out, i, s);
        store_double(near_out, i, mixed);
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(q);
    if (have_heads) {
        PyBuffer_Release(&heads);
    }
done_noheads:
    PyBuffer_Release(&vectors);
    PyBuffer_Release(&query);
    PyBuffer_Release(&sim);
    PyBuffer_Release(&near);
    return result;
}

/* A float64 view of ``obj`` (None: none), n values long, or -1 with ValueError set. */
static int doubles(PyObject *obj, Py_buffer *view, Py_ssize_t n, int writable) {
    if (obj == Py_None) {
        view->buf = NULL;
        view->obj = NULL;
        return 0;
    }
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view->len != n * (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(view);
        view->obj = NULL;
        view->buf = NULL;
        PyErr_SetString(PyExc_ValueError, "the columns are not of agreeing sizes");
        return -1;
    }
    return 0;
}

static PyObject *scores(PyObject *self, PyObject *args) {
    PyObject *objs[6], *rel_obj, *score_obj;
    double now, min, span, w_lexical, floor_, half_life;
    if (!PyArg_ParseTuple(args, "OOOOOOd(ddddd)OO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &now,
                          &min, &span, &w_lexical, &floor_, &half_life, &rel_obj, &score_obj)) {
        return NULL;
    }
    if (objs[0] == Py_None || objs[3] == Py_None || objs[4] == Py_None || objs[5] == Py_None || rel_obj == Py_None
        || score_obj == Py_None) {
        PyErr_SetString(PyExc_TypeError, "only lexical and factors may be None");
        return NULL;
    }
    Py_buffer views[8];
    memset(views, 0, sizeof views);
    Py_ssize_t n = 0;
    {
        Py_buffer first;
        if (PyObject_GetBuffer(objs[0], &first, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        n = first.len / (Py_ssize_t)sizeof(double);
        PyBuffer_Release(&first);
    }
    int got = 0;
    PyObject *result = NULL;
    for (; got < 8; got++) {
        PyObject *obj = got < 6 ? objs[got] : got == 6 ? rel_obj : score_obj;
        if (doubles(obj, &views[got], n, got >= 6) < 0) {
            goto done;
        }
    }
    {
        const void *near = views[0].buf, *lexical = views[1].buf, *factors = views[2].buf;
        const void *salience = views[3].buf, *updated = views[4].buf, *horizon = views[5].buf;
        void *relevance = views[6].buf, *score = views[7].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            double near_i = load_double(near, i);
            double rel = near_i > min ? (near_i - min) * span : 0.0;
            if (lexical != NULL) {
                rel += w_lexical * load_double(lexical, i);
            }
            if (factors != NULL) {
                rel *= load_double(factors, i);
            }
            store_double(relevance, i, rel);
            if (rel == 0.0) {
                store_double(score, i, 0.0);
                continue;
            }
            double age = now - load_double(updated, i);
            if (age < 0.0) {
                age = 0.0;
            }
            double standing = load_double(salience, i) * exp2(-age / half_life);
            double horizon_i = load_double(horizon, i);
            if (horizon_i >= 0.0 && age > horizon_i) {
                standing *= exp2(-(age - horizon_i) / half_life);
            }
            store_double(score, i, rel * (floor_ + (1.0 - floor_) * standing));
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < got; k++) {
        if (views[k].obj != NULL) {
            PyBuffer_Release(&views[k]);
        }
    }
    return result;
}

static PyMethodDef methods[] = {
    {"scores", scores, METH_VARARGS,
     "scores(near, lexical, factors, salience, updated, horizon, now, constants, relevance, score): the rest "
     "of the formula of recall by meaning into relevance and score."},
    {"similarities", similarities, METH_VARARGS,
     "similarities(vectors, heads, query, w_head, sim, near): each float16 row's cosine with the query "
     "(and the head-weighted one) into sim and near."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cosine", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cosine(void) {
    return PyModule_Create(&module);
}
