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
 *
 * parse_walk(body, max_block) -> (root, sizes, links): a block store's pin walk record (its body after the magic
 * line, without its digest) read as blockstore.py's ``_parse_walk`` reads it with the interpreter's loops (~8 ms at
 * 11,000 blocks, each writer round of issue 37; this ~1 ms): the root's CID after its length in one byte, then per
 * block its CID after its length in one byte, its size and its number of links (four bytes each, big-endian) and
 * each link as the four-byte index of its block in the record. ``sizes`` maps each CID to its size, ``links`` each
 * CID with links to the CIDs they index. ValueError where ``_parse_walk`` raises ValueError or IndexError: a record
 * cut short, a size over ``max_block``, no root, a link to no block or to one at or before the block linking it (a
 * block named twice: its last place). tests/gateway/test_walk_record_parse.py compares the two.
 *
 * pack_walk(cids, sizes, links, index) -> bytes: the block entries of such a record as blockstore.py's
 * ``_pack_walk_py`` lays them out (~5 ms of each sync round's pin at 11,000 blocks; this ~0.5 ms): for each CID of the
 * list ``cids`` (bytes of at most 255), its length in one byte, itself, its size from the dict ``sizes`` and the
 * number of its links from the dict ``links`` (CID -> list of CIDs; none when absent) in four bytes each, big-endian,
 * then the four-byte index of each link from the dict ``index``. TypeError for a CID that is not bytes or a links
 * value that is not a list, ValueError for a CID over 255 bytes or a size or index that is no four-byte number,
 * KeyError for a CID without a size or a link without an index. The list and the links are laid out as they are
 * when it is called: a lookup can run code (a dict key's ``==``), which may change them, so both are copied first.
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

static PyObject *cut_short(void) {
    PyErr_SetString(PyExc_ValueError, "a walk record cut short");
    return NULL;
}

/* The links of each linked block: ``linked`` holds (cid, offset of its indexes, count) as parsed. */
static PyObject *walk_links(const unsigned char *data, PyObject *order, PyObject *linked) {
    Py_ssize_t blocks = PyList_GET_SIZE(order);
    PyObject *position = PyDict_New(), *links = PyDict_New();
    if (position == NULL || links == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < blocks; i++) { /* a CID named twice: its last place, as a dict comprehension keeps */
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyDict_SetItem(position, PyList_GET_ITEM(order, i), index) < 0) {
            Py_XDECREF(index);
            goto fail;
        }
        Py_DECREF(index);
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(linked); i++) {
        PyObject *entry = PyList_GET_ITEM(linked, i), *cid = PyTuple_GET_ITEM(entry, 0);
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
        Py_ssize_t count = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 2));
        Py_ssize_t own = PyLong_AsSsize_t(PyDict_GetItem(position, cid));
        PyObject *children = PyList_New(count);
        if (children == NULL) {
            goto fail;
        }
        uint64_t lowest = UINT64_MAX;
        for (Py_ssize_t k = 0; k < count; k++) {
            uint64_t index = big_endian(data + at + 4 * k, 4);
            lowest = index < lowest ? index : lowest;
        }
        if (lowest <= (uint64_t)own) {
            Py_DECREF(children);
            PyErr_SetString(PyExc_ValueError, "a walk record with a link to a block before the one linking it");
            goto fail;
        }
        for (Py_ssize_t k = 0; k < count; k++) {
            uint64_t index = big_endian(data + at + 4 * k, 4);
            if (index >= (uint64_t)blocks) {
                Py_DECREF(children);
                PyErr_SetString(PyExc_ValueError, "a walk record with a link to no block of it");
                goto fail;
            }
            PyObject *child = PyList_GET_ITEM(order, (Py_ssize_t)index);
            Py_INCREF(child);
            PyList_SET_ITEM(children, k, child);
        }
        int failed = PyDict_SetItem(links, cid, children);
        Py_DECREF(children);
        if (failed < 0) {
            goto fail;
        }
    }
    Py_DECREF(position);
    return links;
fail:
    Py_XDECREF(position);
    Py_XDECREF(links);
    return NULL;
}

/* One block's entry at ``*at`` (the walk's loop): its CID into ``sizes`` and ``order``, into ``linked`` when it links. */
static int walk_entry(const unsigned char *data, Py_ssize_t total, Py_ssize_t *at, uint64_t max_block,
                      PyObject *sizes, PyObject *order, PyObject *linked) {
    Py_ssize_t start = *at + 1, end = start + data[*at];
    if (end + 8 > total) {
        cut_short();
        return -1;
    }
    uint64_t size = big_endian(data + end, 4), count = big_endian(data + end + 4, 4);
    if (size > max_block) {
        PyErr_SetString(PyExc_ValueError, "a walk record naming a block larger than any block");
        return -1;
    }
    PyObject *cid = PyBytes_FromStringAndSize((const char *)data + start, end - start);
    PyObject *value = PyLong_FromUnsignedLongLong(size);
    int failed = cid == NULL || value == NULL;
    end += 8;
    if (!failed && count) {
        if ((uint64_t)(total - end) < 4 * count) {
            cut_short();
            failed = 1;
        } else {
            PyObject *entry = Py_BuildValue("(Onn)", cid, end, (Py_ssize_t)count);
            failed = entry == NULL || PyList_Append(linked, entry) < 0;
            Py_XDECREF(entry);
            end += (Py_ssize_t)(4 * count);
        }
    }
    failed = failed || PyDict_SetItem(sizes, cid, value) < 0 || PyList_Append(order, cid) < 0;
    Py_XDECREF(cid);
    Py_XDECREF(value);
    *at = end;
    return failed ? -1 : 0;
}

static PyObject *parse_walk(PyObject *module, PyObject *args) {
    Py_buffer body;
    long long max_block;
    PyObject *root = NULL, *sizes = NULL, *order = NULL, *linked = NULL, *links = NULL, *result = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*L", &body, &max_block)) {
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)body.buf;
    Py_ssize_t total = body.len, at;
    if (total < 1 || max_block < 0) {
        PyErr_SetString(PyExc_ValueError, "a walk record without its root");
        goto done;
    }
    at = 1 + data[0];
    root = PyBytes_FromStringAndSize((const char *)data + 1, (at < total ? at : total) - 1);
    sizes = PyDict_New();
    order = PyList_New(0);
    linked = PyList_New(0);
    if (root == NULL || sizes == NULL || order == NULL || linked == NULL) {
        goto done;
    }
    while (at < total) {
        if (walk_entry(data, total, &at, (uint64_t)max_block, sizes, order, linked) < 0) {
            goto done;
        }
    }
    if (PyBytes_GET_SIZE(root) == 0) {
        PyErr_SetString(PyExc_ValueError, "a walk record without its root");
        goto done;
    }
    links = walk_links(data, order, linked);
    if (links != NULL) {
        result = PyTuple_Pack(3, root, sizes, links);
    }
done:
    PyBuffer_Release(&body);
    Py_XDECREF(root);
    Py_XDECREF(sizes);
    Py_XDECREF(order);
    Py_XDECREF(linked);
    Py_XDECREF(links);
    return result;
}

static void put_big_endian(unsigned char *at, uint64_t value) {
    at[0] = (unsigned char)(value >> 24);
    at[1] = (unsigned char)(value >> 16);
    at[2] = (unsigned char)(value >> 8);
    at[3] = (unsigned char)value;
}

/* ``key``'s value in ``dict`` as a four-byte number (-1: an error set: KeyError, or ValueError past four bytes). */
static long long four_bytes(PyObject *dict, PyObject *key) {
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetObject(PyExc_KeyError, key);
        }
        return -1;
    }
    unsigned long long number = PyLong_AsUnsignedLongLong(value);
    if (PyErr_Occurred() || number > 0xFFFFFFFFULL) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "a walk record number that is no four-byte number");
        return -1;
    }
    return (long long)number;
}

/* The links of ``cid`` (a borrowed list, or NULL with no error when it has none; NULL with an error set). */
static PyObject *links_of(PyObject *links, PyObject *cid) {
    PyObject *children = PyDict_GetItemWithError(links, cid);
    if (children != NULL && !PyList_Check(children)) {
        PyErr_SetString(PyExc_TypeError, "a walk record's links are lists of CIDs");
        return NULL;
    }
    return children;
}

/* The CIDs of ``list`` (a tuple of them) and each one's links (a tuple, or None), taken before any lookup that may run
 * code (a key's ``==``: one changing the lists must not make the layout read or write past what was counted), and the
 * bytes their entries take; NULL with an error set for a CID that is not bytes or over 255 bytes, or links that are
 * no list or over four bytes' count. */
static PyObject *walk_snapshot(PyObject *list, PyObject *links, PyObject **kids, Py_ssize_t *length) {
    PyObject *cids = PyList_AsTuple(list);
    Py_ssize_t count = cids == NULL ? 0 : PyTuple_GET_SIZE(cids);
    *kids = cids == NULL ? NULL : PyTuple_New(count);
    *length = 0;
    if (*kids == NULL) {
        Py_XDECREF(cids);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *cid = PyTuple_GET_ITEM(cids, i), *children, *taken;
        if (!PyBytes_Check(cid)) {
            PyErr_SetString(PyExc_TypeError, "a walk record's CIDs are bytes");
            goto fail;
        }
        if (PyBytes_GET_SIZE(cid) > 255) {
            PyErr_SetString(PyExc_ValueError, "a walk record CID over 255 bytes");
            goto fail;
        }
        children = links_of(links, cid);
        if (children == NULL && PyErr_Occurred()) {
            goto fail;
        }
        taken = children == NULL ? Py_NewRef(Py_None) : PyList_AsTuple(children);
        if (taken == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(*kids, i, taken);
        if (taken != Py_None && PyTuple_GET_SIZE(taken) > 0xFFFFFFFFLL) {
            PyErr_SetString(PyExc_ValueError, "a walk record number that is no four-byte number");
            goto fail;
        }
        *length += 9 + PyBytes_GET_SIZE(cid) + (taken == Py_None ? 0 : 4 * PyTuple_GET_SIZE(taken));
    }
    return cids;
fail:
    Py_CLEAR(*kids);
    Py_DECREF(cids);
    return NULL;
}

static PyObject *pack_walk(PyObject *module, PyObject *args) {
    PyObject *list, *sizes, *links, *index, *kids, *cids, *out = NULL;
    Py_ssize_t length;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &list, &PyDict_Type, &sizes, &PyDict_Type, &links,
                          &PyDict_Type, &index)) {
        return NULL;
    }
    cids = walk_snapshot(list, links, &kids, &length);
    if (cids == NULL) {
        return NULL;
    }
    out = PyBytes_FromStringAndSize(NULL, length);
    if (out == NULL) {
        goto done;
    }
    unsigned char *at = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cids); i++) { /* only the snapshot is read: its sizes are fixed */
        PyObject *cid = PyTuple_GET_ITEM(cids, i), *children = PyTuple_GET_ITEM(kids, i);
        Py_ssize_t size = PyBytes_GET_SIZE(cid), linked = children == Py_None ? 0 : PyTuple_GET_SIZE(children);
        long long block = four_bytes(sizes, cid);
        if (block < 0) {
            Py_CLEAR(out);
            goto done;
        }
        *at++ = (unsigned char)size;
        memcpy(at, PyBytes_AS_STRING(cid), (size_t)size);
        at += size;
        put_big_endian(at, (uint64_t)block);
        put_big_endian(at + 4, (uint64_t)linked);
        at += 8;
        for (Py_ssize_t k = 0; k < linked; k++) {
            long long position = four_bytes(index, PyTuple_GET_ITEM(children, k));
            if (position < 0) {
                Py_CLEAR(out);
                goto done;
            }
            put_big_endian(at, (uint64_t)position);
            at += 4;
        }
    }
done:
    Py_DECREF(cids);
    Py_DECREF(kids);
    return out;
}

static PyMethodDef methods[] = {
    {"check", check, METH_VARARGS, "check(body, pack_size, max_block) -> bool: whether a pack index passes its rules."},
    {"parse_walk", parse_walk, METH_VARARGS,
     "parse_walk(body, max_block) -> (root, sizes, links): a pin walk record's body read (blockstore._parse_walk)."},
    {"pack_walk", pack_walk, METH_VARARGS,
     "pack_walk(cids, sizes, links, index) -> bytes: a pin walk record's block entries (blockstore._pack_walk_py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_packscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__packscan(void) {
    return PyModule_Create(&module);
}
