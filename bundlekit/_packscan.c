/* A block store pack index's rules checked in one pass in C (bundlekit/blockstore.py, specs/gateway.md 2.2a).
 *
 * Every process that reads a packed block reads the index of each pack first: 130,000 entries of 48 bytes after a
 * first follow of 100,000 memories. Checking them with the interpreter's own loops (strided slices, map, max) made
 * an object per entry and cost ~35 ms a process; this walks the bytes once (~0.3 ms). It decides exactly what
 * blockstore.py's Python check decides (used where this is not built); the tests compare the two on random and
 * mutated indexes (tests/gateway/test_pack_index_check.py).
 *
 * check(body, pack_size, max_block) -> bool: whether ``body`` (an index without its magic line) is a whole number
 * of 48-byte entries, each a CID of 36 bytes (CIDv1, codec raw 0x55 or dag-pb 0x70, sha2-256 with a 32-byte
 * digest: 01 55|70 12 20), then its block's offset in the pack (8 bytes, big-endian) and length (4 bytes,
 * big-endian), the length at most ``max_block``, the block ending within ``pack_size`` bytes, and the CIDs in
 * strictly increasing byte order (what a binary search needs). ``pack_size`` and ``max_block`` are at least 0
 * (ValueError otherwise).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define ENTRY 48
#define CID 36

static uint64_t big_endian(const unsigned char *at, int width) {
    uint64_t value = 0;
    for (int i = 0; i < width; i++) {
        value = (value << 8) | at[i];
    }
    return value;
}

static int entries_pass(const unsigned char *body, Py_ssize_t size, uint64_t pack_size, uint64_t max_block) {
    for (Py_ssize_t at = 0; at < size; at += ENTRY) {
        const unsigned char *entry = body + at;
        if (entry[0] != 0x01 || (entry[1] != 0x55 && entry[1] != 0x70) || entry[2] != 0x12 || entry[3] != 0x20) {
            return 0;
        }
        uint64_t offset = big_endian(entry + CID, 8), length = big_endian(entry + CID + 8, 4);
        if (length > max_block || length > pack_size || offset > pack_size - length) {
            return 0;
        }
        if (at && memcmp(entry - ENTRY, entry, CID) >= 0) {
            return 0;
        }
    }
    return 1;
}

static PyObject *check(PyObject *module, PyObject *args) {
    Py_buffer body;
    long long pack_size, max_block;
    int passed;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*LL", &body, &pack_size, &max_block)) {
        return NULL;
    }
    if (pack_size < 0 || max_block < 0) {
        PyBuffer_Release(&body);
        PyErr_SetString(PyExc_ValueError, "check() needs a pack size and a block bound of 0 or more");
        return NULL;
    }
    if (body.len % ENTRY) {
        PyBuffer_Release(&body);
        Py_RETURN_FALSE;
    }
    Py_BEGIN_ALLOW_THREADS
    passed = entries_pass((const unsigned char *)body.buf, body.len, (uint64_t)pack_size, (uint64_t)max_block);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&body);
    return PyBool_FromLong(passed);
}

static PyMethodDef methods[] = {
    {"check", check, METH_VARARGS, "check(body, pack_size, max_block) -> bool: whether a pack index passes its rules."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_packscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__packscan(void) {
    return PyModule_Create(&module);
}
