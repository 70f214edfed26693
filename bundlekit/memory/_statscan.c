/* One listing of a memory tree's directory with every memory file's stat signature, in C.
 *
 * The pure-Python listing (bundlekit/memory/backend.py, DirectoryBackend._listed) spends about
 * half its time making an os.stat_result per file; this does the same readdir(3) and fstatat(2)
 * calls with the GIL released and returns the signatures packed, as the derived index stores
 * them (specs/memory.md, "Derived index"). It decides exactly what _listed decides, and the
 * tests compare the two on random trees (tests/memory/test_statscan.py). Optional: where it is
 * not built, backend.py lists in Python.
 *
 * scan(dir_fd, threads=0, limit=-1) -> None when a number does not fit a signed 64-bit integer (the caller lists in
 * Python), else (names, numbers, count, index, hidden, link), and with a ``limit`` of 0 or more a seventh, contents:
 *   names    bytes: the memory files' names (not MEMORY.md), sorted bytewise (UTF-8 names: code-point
 *            order), NUL between; the order the derived index keeps its signatures in
 *   numbers  bytes: per name its inode, mtime in ns and size, native-endian signed 64-bit integers
 *   count    int: how many names
 *   index    (inode, mtime_ns, size) of MEMORY.md when it is a regular file, else None
 *   hidden   list[str]: names that begin with "." ("." and ".." left out)
 *   link     str: the first *.md or "timeline" entry that is a symbolic link (the listing stops
 *            there: the caller refuses the tree), else None
 *   contents list: per name (in the names' order) its bytes as read_files reads them with ``limit`` (an int for
 *            one over it), or None for one not read here, which the caller reads itself (read_files then names
 *            any failure): an entry readdir did not call a regular file, or whose open, fstat or read failed
 *            (it is then stat'ed as without a limit). A regular file is opened, fstat'ed and read in place of the
 *            lstat: its signature is the fstat's, of the very bytes read (a whole-tree read: one system call a
 *            file fewer than a listing and a read_files of it). MEMORY.md is never read.
 * An entry removed between the listing and its stat is skipped; any other failure raises OSError.
 * The directory is read whole first, then its entries are stat'ed by several threads (git's core.preloadIndex,
 * preload-index.c in git/git: at least 500 lstat calls a thread, at most 20; here also no more than the
 * processors online, and one when the load average is at their number or above; the entries are taken 256 at a
 * time, so a thread started late finds its share done; ``threads`` > 0 sets the count, 1 stats on the calling
 * thread alone), and only then
 * decided on in readdir's order, as one thread that stats as it reads decides: the first link, failure or number
 * past 64 bits stops the listing whatever was stat'ed after it, so the result is the same for any thread count
 * (tests/memory/test_statscan.py compares them). The wall time of 100,000 stats on two cores about halves; the
 * processor time stays (one system call a file).
 *
 * read_files(dir_fd, names, limit) -> list: each file of ``names`` (bytes, NUL between) read whole, with the
 * GIL released: its bytes, None when it is gone, or an int for a file of more than ``limit`` bytes, never
 * read whole (its size as fstat gave it before the read, or -1 when it grew past ``limit`` during the read,
 * which stops after limit + 1 bytes: bundlekit/memory/filesize.py). Opened with O_NOFOLLOW; a link (ELOOP), a file
 * that is not a regular file (EISDIR) and any other failure raise OSError naming the file. Output
 * reads every memory file it shows (list, export, build): one call instead of three system calls
 * made from Python per file.
 *
 * listing_matches(text, names) -> bool: whether ``text`` (a str, or its UTF-8 bytes; lines with a newline
 * between) is a listing of
 * exactly the files of ``names`` (bytes: UTF-8 names, NUL between, as scan lists them), in key order: line for
 * line, the line starts with a key and a tab, the key is ASCII, not empty, and that key with ".md" is the name
 * at the same place, the keys strictly increase (bytewise), and there are as many lines as names. So each key
 * a kept `memory list` (bundlekit/memory/listfile.py) shows is its file's, every file is listed once, and the
 * lines are in the order the listing is printed in (the names' order is then the keys' order).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char *data;
    size_t used;
    size_t size;
} Buffer;

/* One listed memory file: where its name starts in the names buffer (set once the buffer stops
 * growing: ``text``), and its signature. */
typedef struct {
    size_t name;
    const char *text;
    int64_t sig[3];
    size_t seen; /* its place among the entries readdir gave (where a read's bytes are) */
} Entry;

static int by_name(const void *a, const void *b) {
    return strcmp(((const Entry *)a)->text, ((const Entry *)b)->text);
}

/* Append n bytes; 0 on success, -1 when memory ran out (called without the GIL: plain malloc). */
static int buffer_add(Buffer *buf, const void *bytes, size_t n) {
    if (buf->used + n > buf->size) {
        size_t size = buf->size ? buf->size : 4096;
        while (size < buf->used + n) {
            size *= 2;
        }
        char *grown = realloc(buf->data, size);
        if (grown == NULL) {
            return -1;
        }
        buf->data = grown;
        buf->size = size;
    }
    memcpy(buf->data + buf->used, bytes, n);
    buf->used += n;
    return 0;
}

/* Copy a name into a NAME_MAX + 1 buffer (readdir never gives a longer one; cut, never overrun, if it did). */
static void copy_name(char out[NAME_MAX + 1], const char *name, size_t len) {
    if (len > NAME_MAX) {
        len = NAME_MAX;
    }
    memcpy(out, name, len);
    out[len] = '\0';
}

#ifdef __APPLE__
#define MTIME(st) ((st)->st_mtimespec)
#else
#define MTIME(st) ((st)->st_mtim)
#endif

/* The signature's numbers, or 0 when one does not fit a signed 64-bit integer. */
static int signature_of(const struct stat *st, int64_t out[3]) {
    int64_t ns;
    if ((uint64_t)st->st_ino > (uint64_t)INT64_MAX) {
        return 0;
    }
    if (__builtin_mul_overflow((int64_t)MTIME(st).tv_sec, (int64_t)1000000000, &ns) ||
        __builtin_add_overflow(ns, (int64_t)MTIME(st).tv_nsec, &ns)) {
        return 0;
    }
    out[0] = (int64_t)st->st_ino;
    out[1] = ns;
    out[2] = (int64_t)st->st_size;
    return 1;
}

static PyObject *split_names(const Buffer *buf) {
    PyObject *list = PyList_New(0);
    size_t start = 0;
    if (list == NULL) {
        return NULL;
    }
    while (start < buf->used) {
        size_t len = strlen(buf->data + start);
        PyObject *name = PyUnicode_DecodeFSDefaultAndSize(buf->data + start, (Py_ssize_t)len);
        if (name == NULL || PyList_Append(list, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(name);
        start += len + 1;
    }
    return list;
}

/* One entry the listing decides on, in the order readdir gave it: a hidden name, or a *.md or "timeline" entry
 * with what its fstatat found (filled by stat_range, maybe on another thread). */
enum { SEEN_HIDDEN, SEEN_MEMORY, SEEN_TIMELINE };

typedef struct {
    size_t name; /* where its name starts in the names buffer */
    int kind;
    int error;   /* the fstatat's errno, 0 when it succeeded */
    int fits;    /* the signature fits signed 64-bit integers */
    int regular; /* readdir's d_type said a regular file (a read opens nothing else) */
    mode_t mode;
    int64_t sig[3];
    int got;        /* with a limit: 0 not read (the caller reads it), 1 read (data, size), 2 over the limit (size) */
    char *data;
    long long size;
} Seen;

/* What the threads share: the entries of seen to stat, names in the names buffer, relative to dir_fd; ``next``
 * the first entry no thread has taken yet (taken CHUNK at a time, so a thread the scheduler starts late finds
 * the others did its share: the listing never waits on a thread that has no processor). */
#define CHUNK 256

typedef struct {
    int dir_fd;
    Seen *seen;
    const char *names;
    size_t count;
    size_t next;
    long long limit; /* -1: stat only; else each regular *.md file but MEMORY.md is read as read_files reads it */
} StatWork;

static int read_open(int fd, const struct stat *st, size_t limit, char **out, long long *size);

/* With a limit: open the regular memory file ``seen`` and fill its signature, mode and bytes from the descriptor
 * (one open, fstat and read, where a listing and a read of it took an lstat more); 1 when done, 0 when the caller
 * stats it instead (not regular by readdir's word, MEMORY.md, an open or read that failed: the read is left to
 * read_files, which names the failure, and the stat decides as without a limit). */
static int stat_and_read(const StatWork *work, Seen *seen, const char *name) {
    struct stat st;
    if (work->limit < 0 || !seen->regular || strcmp(name, "MEMORY.md") == 0) {
        return 0;
    }
    int fd = openat(work->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return 0;
    }
    if (fstat(fd, &st) != 0) {
        close(fd);
        return 0;
    }
    int failure = S_ISREG(st.st_mode) ? read_open(fd, &st, (size_t)work->limit, &seen->data, &seen->size) : 0;
    close(fd);
    if (failure && failure != EFBIG) {
        return 0;
    }
    seen->mode = st.st_mode;
    seen->fits = signature_of(&st, seen->sig);
    seen->got = !S_ISREG(st.st_mode) ? 0 : failure == EFBIG ? 2 : 1;
    return 1;
}

static void *stat_chunks(void *arg) {
    StatWork *work = (StatWork *)arg;
    for (;;) {
        size_t from = __atomic_fetch_add(&work->next, CHUNK, __ATOMIC_RELAXED);
        if (from >= work->count) {
            return NULL;
        }
        size_t to = from + CHUNK < work->count ? from + CHUNK : work->count;
        for (size_t i = from; i < to; i++) {
            Seen *seen = &work->seen[i];
            struct stat st;
            if (seen->kind == SEEN_HIDDEN) {
                continue;
            }
            if (seen->kind == SEEN_MEMORY && stat_and_read(work, seen, work->names + seen->name)) {
                continue;
            }
            if (fstatat(work->dir_fd, work->names + seen->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                seen->error = errno;
                continue;
            }
            seen->mode = st.st_mode;
            seen->fits = signature_of(&st, seen->sig);
        }
    }
}

/* git's preload-index.c (core.preloadIndex): at least 500 lstat calls a thread, at most 20 threads; and here no
 * more threads than processors online, and one alone when the load average says they are all busy already (a
 * second thread would wait for a processor, and the listing for it). */
#define THREAD_COST 500
#define MAX_PARALLEL 20

/* How many threads stat ``count`` entries when the caller asked for ``wanted`` (0: chosen as above). */
static size_t thread_count(size_t count, long wanted) {
    size_t threads = count / THREAD_COST;
    if (wanted > 0) {
        threads = (size_t)wanted;
    } else if (threads <= 1) {
        return 1; /* too few entries to share: no processor count or load average read */
    } else {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        double load[1];
        if (online > 0 && threads > (size_t)online) {
            threads = (size_t)online;
        }
        if (online > 0 && getloadavg(load, 1) == 1 && load[0] >= (double)online) {
            threads = 1;
        }
    }
    if (threads > MAX_PARALLEL) {
        threads = MAX_PARALLEL;
    }
    if (threads > count) {
        threads = count;
    }
    return threads ? threads : 1;
}

/* Stat every entry of seen with ``threads`` threads (this one among them); a thread that cannot be started
 * leaves its chunks to the others, so the results never depend on how many ran. */
static void stat_all(int dir_fd, Seen *seen, size_t count, const char *names, size_t threads, long long limit) {
    StatWork work = {dir_fd, seen, names, count, 0, limit};
    pthread_t ids[MAX_PARALLEL];
    int started[MAX_PARALLEL] = {0};
    for (size_t t = 1; t < threads; t++) {
        started[t] = pthread_create(&ids[t], NULL, stat_chunks, &work) == 0;
    }
    stat_chunks(&work);
    for (size_t t = 1; t < threads; t++) {
        if (started[t]) {
            pthread_join(ids[t], NULL);
        }
    }
}

/* The listing's decisions over the entries as readdir gave them, in that order (what a loop of readdir and
 * fstatat decides): hidden names kept, an entry removed since the listing skipped, the first failure, link or
 * number past 64 bits stops it, MEMORY.md's signature apart, the other regular *.md files listed. */
static void decide(const Seen *seen, size_t count, const char *names, Buffer *hidden, Buffer *entries,
                   Py_ssize_t *listed, int64_t index[3], int *has_index, int *error, char failed[NAME_MAX + 1],
                   char link[NAME_MAX + 1], int *too_big, int *no_memory) {
    for (size_t i = 0; i < count; i++) {
        const Seen *entry = &seen[i];
        const char *name = names + entry->name;
        size_t len = strlen(name);
        if (entry->kind == SEEN_HIDDEN) {
            if (buffer_add(hidden, name, len + 1) < 0) {
                *no_memory = 1;
                return;
            }
            continue;
        }
        if (entry->error) {
            if (entry->error == ENOENT) { /* removed since the listing */
                continue;
            }
            *error = entry->error;
            copy_name(failed, name, len);
            return;
        }
        if (S_ISLNK(entry->mode)) {
            copy_name(link, name, len);
            return;
        }
        if (entry->kind != SEEN_MEMORY || !S_ISREG(entry->mode)) {
            continue;
        }
        if (!entry->fits) {
            *too_big = 1;
            return;
        }
        if (strcmp(name, "MEMORY.md") == 0) {
            memcpy(index, entry->sig, sizeof(int64_t) * 3);
            *has_index = 1;
            continue;
        }
        Entry found = {entry->name, NULL, {entry->sig[0], entry->sig[1], entry->sig[2]}, i};
        if (buffer_add(entries, &found, sizeof(found)) < 0) {
            *no_memory = 1;
            return;
        }
        (*listed)++;
    }
}

/* Read the directory whole: each hidden name, *.md and "timeline" entry into seen (names into names); 0, or the
 * errno of a failed readdir (the entries read before it are kept, as a loop that stats as it reads saw them). */
static int read_entries(DIR *dir, Buffer *names, Buffer *seen, int *no_memory) {
    for (;;) {
        struct dirent *entry;
        errno = 0;
        entry = readdir(dir);
        if (entry == NULL) {
            return errno;
        }
        const char *name = entry->d_name;
        size_t len = strlen(name);
        int kind;
        if (name[0] == '.') {
            if (len == 1 || (len == 2 && name[1] == '.')) {
                continue;
            }
            kind = SEEN_HIDDEN;
        } else if (len >= 3 && memcmp(name + len - 3, ".md", 3) == 0) {
            kind = SEEN_MEMORY;
        } else if (strcmp(name, "timeline") == 0) {
            kind = SEEN_TIMELINE;
        } else {
            continue;
        }
        Seen found = {names->used, kind, 0, 0, 0, 0, {0, 0, 0}, 0, NULL, 0};
#ifdef DT_REG
        found.regular = entry->d_type == DT_REG;
#endif
        if (buffer_add(names, name, len + 1) < 0 || buffer_add(seen, &found, sizeof(found)) < 0) {
            *no_memory = 1;
            return 0;
        }
    }
}

/* With a limit: per listed name, in the sorted order, its bytes, an int for one over the limit (read_files'
 * meaning), or None for one not read here (the caller reads it: read_files names any failure). */
static PyObject *read_contents(const Buffer *entries, Py_ssize_t count, const Buffer *seen) {
    PyObject *list = PyList_New(count);
    for (Py_ssize_t i = 0; list != NULL && i < count; i++) {
        const Seen *read = &((const Seen *)seen->data)[((const Entry *)entries->data)[i].seen];
        PyObject *item = read->got == 2   ? PyLong_FromLongLong(read->size)
                         : read->got == 1 ? PyBytes_FromStringAndSize(read->data ? read->data : "", (Py_ssize_t)read->size)
                                          : Py_NewRef(Py_None);
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *scan(PyObject *module, PyObject *args) {
    int dir_fd = -1;
    long wanted = 0;
    long long limit = -1;
    Buffer names = {0}, numbers = {0}, hidden = {0}, all_names = {0}, seen = {0}, entries = {0};
    Py_ssize_t count = 0;
    int64_t index[3];
    int has_index = 0, error = 0, no_memory = 0, too_big = 0;
    char failed[NAME_MAX + 1] = "", link[NAME_MAX + 1] = "";
    PyObject *result = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "i|lL", &dir_fd, &wanted, &limit)) {
        return NULL;
    }
    if (limit < -1 || (limit >= 0 && (unsigned long long)limit >= SIZE_MAX / 2)) {
        PyErr_SetString(PyExc_ValueError, "scan() needs a read limit of -1 (no read) or from 0 to the largest size");
        return NULL;
    }
    if (dir_fd < 0 || wanted < 0) {
        PyErr_SetString(PyExc_ValueError, "scan() needs an open directory descriptor (and a thread count of 0 or more)");
        return NULL;
    }

    Py_BEGIN_ALLOW_THREADS
    int own_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0); /* closedir closes it; the caller's stays open */
    DIR *dir = own_fd < 0 ? NULL : fdopendir(own_fd);
    if (dir == NULL) {
        error = errno;
        if (own_fd >= 0) {
            close(own_fd);
        }
    } else {
        rewinddir(dir); /* the duplicate shares the caller's offset: list from the start, and leave it there */
        int read_error = read_entries(dir, &all_names, &seen, &no_memory);
        size_t seen_count = seen.used / sizeof(Seen);
        if (!no_memory && seen_count) {
            stat_all(dirfd(dir), (Seen *)seen.data, seen_count, all_names.data, thread_count(seen_count, wanted),
                     limit);
            decide((Seen *)seen.data, seen_count, all_names.data, &hidden, &entries, &count, index, &has_index, &error,
                   failed, link, &too_big, &no_memory);
        }
        if (!error && !no_memory && !too_big && !link[0]) {
            error = read_error; /* every entry read before the failure passed: the failure is the listing's */
        }
        rewinddir(dir);
        closedir(dir);
    }
    if (!error && !no_memory && !too_big && !link[0] && count) {
        Entry *all = (Entry *)entries.data;
        for (Py_ssize_t i = 0; i < count; i++) {
            all[i].text = all_names.data + all[i].name;
        }
        qsort(all, (size_t)count, sizeof(Entry), by_name);
        for (Py_ssize_t i = 0; i < count && !no_memory; i++) {
            const char *name = all[i].text;
            if ((i && buffer_add(&names, "", 1) < 0) || buffer_add(&names, name, strlen(name)) < 0 ||
                buffer_add(&numbers, all[i].sig, sizeof(all[i].sig)) < 0) {
                no_memory = 1;
            }
        }
    }
    Py_END_ALLOW_THREADS

    if (no_memory) {
        PyErr_NoMemory();
    } else if (error) {
        if (failed[0]) {
            PyObject *filename = PyUnicode_DecodeFSDefault(failed);
            if (filename != NULL) {
                errno = error; /* the calls since the failure may have changed it */
                PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, filename);
                Py_DECREF(filename);
            }
        } else {
            errno = error;
            PyErr_SetFromErrno(PyExc_OSError);
        }
    } else if (too_big) {
        result = Py_NewRef(Py_None);
    } else {
        /* names_blob: the buffer as is (one NUL between names, none after the last) */
        PyObject *hidden_list = NULL, *names_blob = NULL, *numbers_blob = NULL, *index_sig = NULL, *link_name = NULL;
        hidden_list = split_names(&hidden);
        if (hidden_list != NULL) {
            names_blob = PyBytes_FromStringAndSize(names.data ? names.data : "", (Py_ssize_t)names.used);
        }
        if (names_blob != NULL) {
            numbers_blob = PyBytes_FromStringAndSize(numbers.data ? numbers.data : "", (Py_ssize_t)numbers.used);
        }
        if (numbers_blob != NULL) {
            index_sig = has_index ? Py_BuildValue("(LLL)", (long long)index[0], (long long)index[1], (long long)index[2])
                                  : Py_NewRef(Py_None);
        }
        if (index_sig != NULL) {
            link_name = link[0] ? PyUnicode_DecodeFSDefault(link) : Py_NewRef(Py_None);
        }
        PyObject *contents = link_name == NULL || limit < 0 ? NULL : read_contents(&entries, count, &seen);
        if (link_name != NULL && limit < 0) {
            result = Py_BuildValue("(NNnNNN)", names_blob, numbers_blob, count, index_sig, hidden_list, link_name);
        } else if (contents != NULL) {
            result = Py_BuildValue("(NNnNNNN)", names_blob, numbers_blob, count, index_sig, hidden_list, link_name,
                                   contents);
        } else {
            Py_XDECREF(link_name);
            Py_XDECREF(hidden_list);
            Py_XDECREF(names_blob);
            Py_XDECREF(numbers_blob);
            Py_XDECREF(index_sig);
        }
    }
    free(names.data);
    free(numbers.data);
    free(hidden.data);
    free(all_names.data);
    for (size_t i = 0; i < seen.used / sizeof(Seen); i++) {
        free(((Seen *)seen.data)[i].data);
    }
    free(seen.data);
    free(entries.data);
    return result;
}

/* Read one file whole into *out (malloc'd, *size bytes); 0, or an errno value (ENOENT: gone). A file of more
 * than ``limit`` bytes is EFBIG, never read whole: *size is then its size when fstat saw it over the limit,
 * or -1 when it grew past the limit while it was read (the read stops after limit + 1 bytes). */
static int read_one(int dir_fd, const char *name, size_t limit, char **out, long long *size) {
    struct stat st;
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK); /* never waits on a FIFO */
    *out = NULL;
    *size = 0;
    if (fd < 0) {
        return errno;
    }
    if (fstat(fd, &st) != 0) {
        int failure = errno;
        close(fd);
        return failure;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    }
    int failure = read_open(fd, &st, limit, out, size);
    close(fd);
    return failure;
}

/* Read the open regular file ``fd`` (``st`` its fstat) whole into *out, as read_one says; the caller closes it. */
static int read_open(int fd, const struct stat *st, size_t limit, char **out, long long *size) {
    *out = NULL;
    *size = 0;
    if (st->st_size > 0 && (uintmax_t)st->st_size > (uintmax_t)limit) {
        *size = (long long)st->st_size;
        return EFBIG;
    }
    Buffer buf = {0};
    size_t most = limit + 1; /* the most ever held: one byte past the limit tells a file that grew past it */
    size_t want = st->st_size > 0 ? (size_t)st->st_size + 1 : 4096; /* + 1: EOF seen in the same read */
    if (want > most) {
        want = most;
    }
    for (;;) {
        if (buf.used + 1 > buf.size) {
            size_t grown_size = buf.size ? buf.size * 2 : want;
            if (grown_size > most) {
                grown_size = most;
            }
            char *grown = realloc(buf.data, grown_size);
            if (grown == NULL) {
                free(buf.data);
                return ENOMEM;
            }
            buf.data = grown;
            buf.size = grown_size;
        }
        ssize_t got = read(fd, buf.data + buf.used, buf.size - buf.used);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            int failure = errno;
            free(buf.data);
            return failure;
        }
        if (got == 0) {
            break;
        }
        buf.used += (size_t)got;
        if (buf.used > limit) { /* grew past the limit since the fstat: stop here */
            free(buf.data);
            *size = -1;
            return EFBIG;
        }
        if (st->st_size > 0 && buf.used == (size_t)st->st_size && buf.used < buf.size) {
            /* A short read ending where fstat put the end: the file as it was, without a second read that
             * only finds EOF (one system call fewer per file; 10,000 per build of a 10,000-memory tree). */
            break;
        }
    }
    *out = buf.data;
    *size = (long long)buf.used;
    return 0;
}

static PyObject *read_files(PyObject *module, PyObject *args) {
    int dir_fd;
    const char *names;
    Py_ssize_t length, limit;
    (void)module;
    if (!PyArg_ParseTuple(args, "iy#n", &dir_fd, &names, &length, &limit)) {
        return NULL;
    }
    if (limit < 0 || (size_t)limit >= SIZE_MAX) {
        PyErr_SetString(PyExc_ValueError, "read_files() needs a limit from 0 to the largest size");
        return NULL;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        count += names[i] == '\0';
    }
    count += length > 0;
    char **data = calloc((size_t)(count ? count : 1), sizeof(char *));
    long long *sizes = calloc((size_t)(count ? count : 1), sizeof(long long));
    int *errors = calloc((size_t)(count ? count : 1), sizeof(int));
    if (data == NULL || sizes == NULL || errors == NULL) {
        free(data);
        free(sizes);
        free(errors);
        return PyErr_NoMemory();
    }
    /* The names buffer belongs to a bytes object the caller holds: safe to read without the GIL. */
    Py_ssize_t failed = -1;
    Py_BEGIN_ALLOW_THREADS
    const char *name = names;
    for (Py_ssize_t i = 0; i < count; i++) {
        errors[i] = read_one(dir_fd, name, (size_t)limit, &data[i], &sizes[i]);
        if (errors[i] && errors[i] != ENOENT && errors[i] != EFBIG) {
            failed = i;
            break;
        }
        name += strlen(name) + 1;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (failed >= 0) {
        const char *bad = names;
        for (Py_ssize_t i = 0; i < failed; i++) {
            bad += strlen(bad) + 1;
        }
        PyObject *filename = PyUnicode_DecodeFSDefault(bad);
        if (filename != NULL) {
            errno = errors[failed];
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, filename);
            Py_DECREF(filename);
        }
    } else {
        result = PyList_New(count);
        for (Py_ssize_t i = 0; result != NULL && i < count; i++) {
            PyObject *item = errors[i] == EFBIG ? PyLong_FromLongLong(sizes[i])
                             : errors[i]      ? Py_NewRef(Py_None)
                                              : PyBytes_FromStringAndSize(data[i] ? data[i] : "", (Py_ssize_t)sizes[i]);
            if (item == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(result, i, item);
        }
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        free(data[i]);
    }
    free(data);
    free(sizes);
    free(errors);
    return result;
}

/* Each line of `text` against each name of `names` (see the module): 1 they match, 0 not, -1 an error is set.
 * Run with the GIL held (PyUnicode_FindChar). */
/* The next newline at or after `at` of a text (`text` a str), or of UTF-8 bytes (`text` NULL, `data` the
 * bytes, read as kind 1: a 0x0A byte of UTF-8 is always a newline); -1 when there is none, -2 on an error. */
static Py_ssize_t next_newline(PyObject *text, const void *data, Py_ssize_t at, Py_ssize_t length) {
    if (text != NULL) {
        return PyUnicode_FindChar(text, '\n', at, length, 1); /* memchr where the width allows */
    }
    const char *found = memchr((const char *)data + at, '\n', (size_t)(length - at));
    return found == NULL ? -1 : found - (const char *)data;
}

static int lines_match(PyObject *text, int kind, const void *data, Py_ssize_t length, const char *names,
                       Py_ssize_t size) {
    Py_ssize_t at = 0, name = 0, previous = -1, previous_len = 0;
    if (length == 0 || size == 0) {
        return 0;
    }
    for (;;) {
        Py_ssize_t key = at;
        while (at < length) {
            Py_UCS4 c = PyUnicode_READ(kind, data, at);
            if (c == '\t') {
                break;
            }
            if (c == '\n' || c == 0 || c >= 128) {
                return 0;
            }
            at++;
        }
        Py_ssize_t key_len = at - key;
        if (at >= length || key_len == 0) {
            return 0; /* no tab on the line, or no key before it */
        }
        Py_ssize_t end = name;
        while (end < size && names[end] != 0) {
            end++;
        }
        if (end - name != key_len + 3 || memcmp(names + end - 3, ".md", 3) != 0) {
            return 0;
        }
        for (Py_ssize_t i = 0; i < key_len; i++) {
            if ((unsigned char)names[name + i] != PyUnicode_READ(kind, data, key + i)) {
                return 0;
            }
        }
        if (previous >= 0) {
            int order = memcmp(names + previous, names + name, previous_len < key_len ? previous_len : key_len);
            if (order > 0 || (order == 0 && previous_len >= key_len)) {
                return 0; /* not after the key before it */
            }
        }
        previous = name;
        previous_len = key_len;
        at = next_newline(text, data, at, length);
        if (at == -2) {
            return -1;
        }
        if (at < 0) {
            return end == size; /* the last line: the last name too */
        }
        if (end >= size) {
            return 0; /* more lines than names */
        }
        at++;
        name = end + 1;
    }
}

static PyObject *listing_matches(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_buffer names, bytes = {0};
    int matches;
    if (!PyArg_ParseTuple(args, "Oy*", &text, &names)) {
        return NULL;
    }
    if (PyUnicode_Check(text)) {
        matches = lines_match(text, PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                              (const char *)names.buf, names.len);
    } else if (PyObject_GetBuffer(text, &bytes, PyBUF_SIMPLE) == 0) {
        /* UTF-8 bytes: a key is ASCII (a byte of 0x80 or above in one refuses it) and a byte 0x0A is a
         * newline, so the bytes match exactly when their text would. */
        matches = lines_match(NULL, PyUnicode_1BYTE_KIND, bytes.buf, bytes.len, (const char *)names.buf, names.len);
        PyBuffer_Release(&bytes);
    } else {
        matches = -1;
    }
    PyBuffer_Release(&names);
    if (matches < 0) {
        return NULL;
    }
    return PyBool_FromLong(matches);
}

/* racy(names, numbers, floor) -> list of (name, mtime): each row of a signature blob (``names``: NUL between;
 * ``numbers``: inode, mtime in ns and size per name, native signed 64-bit) whose mtime is ``floor`` or later, in
 * the blob's order; None when the two parts count different rows (the caller's own walk decides then). One pass over the mtimes and the names
 * of those rows alone: the index's racy rows (a round's own writes, a few among 100,000) without a Python object
 * made per row (bundlekit/memory/catalog/stat.py, StatCache.compare). */
static PyObject *racy(PyObject *module, PyObject *args) {
    Py_buffer names, numbers;
    long long floor;
    PyObject *result = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*y*L", &names, &numbers, &floor)) {
        return NULL;
    }
    const char *text = (const char *)names.buf;
    Py_ssize_t rows = numbers.len / (Py_ssize_t)(3 * sizeof(int64_t)), listed = 1; /* as bytes.split counts */
    for (Py_ssize_t i = 0; i < names.len; i++) {
        listed += text[i] == '\0';
    }
    if (rows == 0 && names.len == 0) {
        listed = 0;
    }
    if (numbers.len % (Py_ssize_t)(3 * sizeof(int64_t)) || listed != rows) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = PyList_New(0);
    Py_ssize_t start = 0;
    for (Py_ssize_t row = 0; result != NULL && row < rows; row++) {
        const char *end = memchr(text + start, '\0', (size_t)(names.len - start));
        Py_ssize_t stop = end == NULL ? names.len : end - text;
        int64_t mtime;
        memcpy(&mtime, (const char *)numbers.buf + (row * 3 + 1) * (Py_ssize_t)sizeof(int64_t), sizeof(mtime));
        if (mtime >= floor) {
            PyObject *item = Py_BuildValue("(y#L)", text + start, stop - start, (long long)mtime);
            if (item == NULL || PyList_Append(result, item) < 0) {
                Py_XDECREF(item);
                Py_CLEAR(result);
                break;
            }
            Py_DECREF(item);
        }
        start = stop + 1;
    }
done:
    PyBuffer_Release(&names);
    PyBuffer_Release(&numbers);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(dir_fd, threads=0): the memory files' names and packed signatures (see the module)."},
    {"read_files", read_files, METH_VARARGS, "read_files(dir_fd, names): each named file's bytes (see the module)."},
    {"listing_matches", listing_matches, METH_VARARGS,
     "listing_matches(text, names): whether text lists exactly those files, in key order (see the module)."},
    {"racy", racy, METH_VARARGS, "racy(names, numbers, floor): the rows whose mtime is floor or later (see racy)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef statscan_module = {
    PyModuleDef_HEAD_INIT, "_statscan", "A memory tree's listing with stat signatures (see _statscan.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__statscan(void) { return PyModule_Create(&statscan_module); }
