/* The cosines recall by meaning ranks with, in C: every stored float16 vector against the query's.
 *
 * A fresh `memory recall` ranks 10,000 memories once; numpy's import alone costs it some 55 ms of
 * CPU and a Python loop over 2.5 million products some 80 ms. This reads the vectors as the derived
 * index and the vector file store them (little-endian IEEE 754 binary16, unit length) and writes one
 * cosine per row, with the GIL released. Optional: where it is not built, memory/cosines.py does
 * the same with numpy (the same rules; tests/memory/test_cosines.py compares the two).
 *
 * similarities(vectors, heads, query, w_head, sim, near) -> None
 *   vectors  buffer: n rows of d float16 values (n = len(sim) / 8, d = len(query) / 8)
 *   heads    buffer of the same size (the vectors of name and description), or None
 *   query    buffer: d float64 values, the query's unit vector
 *   w_head   float: the head vector's weight
 *   sim      writable buffer: n float64 values, each row's cosine with the query, clipped to [-1, 1]
 *   near     writable buffer: n float64 values, (sim + w_head * head cosine) / (1 + w_head) for a
 *            row whose head vector is not all zeros, else sim (heads None: sim)
 * A row holding a value that is not finite (its five exponent bits all set: put there by hand)
 * counts as a zero vector: cosine 0, no head. Sizes that do not agree raise ValueError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

/* The dot product of one stored row (d little-endian binary16 values) with q, through the scratch
 * buffer ``wide`` (d floats); *usable 0 when the row holds a value that is not finite, *nonzero 1 when
 * some value is not zero. */
static double row_dot(const unsigned char *row, const float *q, float *wide, Py_ssize_t d, int *usable, int *nonzero) {
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

static double clip(double x) {
    return x > 1.0 ? 1.0 : x < -1.0 ? -1.0 : x;
}

static PyObject *similarities(PyObject *self, PyObject *args) {
    Py_buffer vectors, query, sim, near, heads = {0};
    PyObject *heads_obj;
    double w_head;
    if (!PyArg_ParseTuple(args, "y*Oy*dw*w*", &vectors, &heads_obj, &query, &w_head, &sim, &near)) {
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
    const double *query_values = (const double *)query.buf;
    for (Py_ssize_t j = 0; j < d; j++) {
        q[j] = (float)query_values[j];
    }
    const unsigned char *rows = (const unsigned char *)vectors.buf;
    const unsigned char *head_rows = have_heads ? (const unsigned char *)heads.buf : NULL;
    double *sim_out = (double *)sim.buf, *near_out = (double *)near.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int usable, nonzero;
        double s = row_dot(rows + (size_t)i * (size_t)d * 2, q, q + d, d, &usable, &nonzero);
        s = usable ? clip(s) : 0.0;
        double mixed = s;
        if (head_rows != NULL) {
            double h = row_dot(head_rows + (size_t)i * (size_t)d * 2, q, q + d, d, &usable, &nonzero);
            if (usable && nonzero) {
                mixed = (s + w_head * clip(h)) / (1.0 + w_head);
            }
        }
        sim_out[i] = s;
        near_out[i] = mixed;
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

static PyMethodDef methods[] = {
    {"similarities", similarities, METH_VARARGS,
     "similarities(vectors, heads, query, w_head, sim, near): each float16 row's cosine with the query "
     "(and the head-weighted one) into sim and near."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cosine", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cosine(void) {
    return PyModule_Create(&module);
}
