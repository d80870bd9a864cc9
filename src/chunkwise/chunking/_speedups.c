/*
 * Compiled versions of the per-chunk loops of chunkwise.chunking.
 *
 * A chunker does a little Python work per chunk: find the cut, trim, reach back for the overlap, and
 * build a frozen Chunk with its id. At 256-character chunks that per-chunk work, not the text, is
 * what costs, and in pure Python it stays above what the fastest splitters take for a whole run
 * (bench/chunk_speed.py). These functions do the same work in C. Each one is the exact counterpart
 * of a Python function that remains the reference and the fallback, and tests/chunking checks on
 * arbitrary Unicode that both give identical results:
 *
 *   pack_chars      enforce._pack_into with a CharMeasure (levels described by enforce._native_levels)
 *   overlap_chars   enforce.add_overlap with a CharMeasure
 *   id_keys         chunk.id_keys (numpy), reading the string's buffer in place
 *   chunk_ids       chunk.chunk_ids (numpy)
 *   build_chunks    the loop of chunk.ChunkBuilder.build_all
 *
 * Whitespace is Py_UNICODE_ISSPACE, which is both str.isspace() and what the re module's \s means
 * for str patterns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>

/* ------------------------------------------------------------------------------------------------ */
/* Text access                                                                                      */

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} Text;

static int text_init(Text *t, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "text must be a str");
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) {
        return -1;
    }
#endif
    t->kind = PyUnicode_KIND(text);
    t->data = PyUnicode_DATA(text);
    t->length = PyUnicode_GET_LENGTH(text);
    return 0;
}

#define CHAR(t, i) PyUnicode_READ((t)->kind, (t)->data, (i))
#define SPACE(t, i) Py_UNICODE_ISSPACE(CHAR(t, i))

/* The last index of `ch` in [start, limit), or -1. Line breaks are searched in every window of every
 * chunk, so the scan goes by blocks whose "any match?" test has no early exit and compiles to vector
 * compares; only the block holding the match is scanned one by one. */
#define BLOCK 32
#define LAST_INDEX(TYPE)                                                                                   \
    {                                                                                                      \
        const TYPE *data = t->data;                                                                        \
        Py_ssize_t i = limit;                                                                              \
        while (i - start >= BLOCK) {                                                                       \
            int any = 0;                                                                                   \
            for (int j = 1; j <= BLOCK; j++) {                                                             \
                any |= data[i - j] == ch;                                                                  \
            }                                                                                              \
            if (any) {                                                                                     \
                break;                                                                                     \
            }                                                                                              \
            i -= BLOCK;                                                                                    \
        }                                                                                                  \
        while (--i >= start) {                                                                             \
            if (data[i] == ch) {                                                                           \
                return i;                                                                                  \
            }                                                                                              \
        }                                                                                                  \
        return -1;                                                                                         \
    }

static Py_ssize_t last_index(const Text *t, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t limit) {
    switch (t->kind) {
    case PyUnicode_1BYTE_KIND:
        LAST_INDEX(Py_UCS1)
    case PyUnicode_2BYTE_KIND:
        LAST_INDEX(Py_UCS2)
    default:
        LAST_INDEX(Py_UCS4)
    }
}

/* Whether text[i] ends a line: '\n', or a '\r' that no '\n' follows (chunking/lines.py). */
static int is_break(const Text *t, Py_ssize_t i) {
    Py_UCS4 ch = CHAR(t, i);
    return ch == '\n' || (ch == '\r' && (i + 1 >= t->length || CHAR(t, i + 1) != '\n'));
}

/* lines.last_break: the last line break character in [start, limit), or -1. After the last '\n' at most
 * one '\r' is followed by a '\n' (the one just before limit). */
static Py_ssize_t last_break(const Text *t, Py_ssize_t start, Py_ssize_t limit) {
    Py_ssize_t found = last_index(t, '\n', start, limit);
    Py_ssize_t low = found + 1 > start ? found + 1 : start;
    Py_ssize_t r = last_index(t, '\r', low, limit);
    while (r >= 0 && !is_break(t, r)) {
        r = last_index(t, '\r', low, r);
    }
    return r > found ? r : found;
}

/* First non-space offset in [pos, end), or end. */
static Py_ssize_t skip_space(const Text *t, Py_ssize_t pos, Py_ssize_t end) {
    while (pos < end && SPACE(t, pos)) {
        pos++;
    }
    return pos;
}

/* ------------------------------------------------------------------------------------------------ */
/* Boundary levels: each returns the largest cut in (start, limit], or -1 for none.                 */

enum { LEVEL_CUTS, LEVEL_BLANK_LINE, LEVEL_LINE, LEVEL_PUNCTUATION, LEVEL_SPACE, LEVEL_CALL };

typedef struct {
    int kind;
    PyObject *spaced;      /* LEVEL_PUNCTUATION: marks that need whitespace after them */
    PyObject *unspaced;    /* LEVEL_PUNCTUATION: marks that end a clause alone */
    PyObject *call;        /* LEVEL_CALL: last_cut(text, start, limit) -> int | None */
    Py_ssize_t *cuts;      /* LEVEL_CUTS: sorted cuts */
    Py_ssize_t ncuts;
} Level;

static int contains(PyObject *marks, Py_UCS4 ch) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(marks);
    int kind = PyUnicode_KIND(marks);
    const void *data = PyUnicode_DATA(marks);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyUnicode_READ(kind, data, i) == ch) {
            return 1;
        }
    }
    return 0;
}

/* boundaries.CutsLevel.last_cut: bisect_right(cuts, limit) - 1, if above start. */
static Py_ssize_t cuts_last(const Level *lv, Py_ssize_t start, Py_ssize_t limit) {
    Py_ssize_t lo = 0, hi = lv->ncuts;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (limit < lv->cuts[mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return (lo > 0 && lv->cuts[lo - 1] > start) ? lv->cuts[lo - 1] : -1;
}

/* True when the line [line, stop) is a Markdown heading: one to six '#', then a space or a tab. */
static int is_heading(const Text *t, Py_ssize_t line, Py_ssize_t stop) {
    Py_ssize_t n = 0;
    while (line + n < stop && CHAR(t, line + n) == '#') {
        n++;
    }
    if (n < 1 || n > 6 || line + n >= stop) {
        return 0;
    }
    Py_UCS4 after = CHAR(t, line + n);
    return after == ' ' || after == '\t';
}

/* BlankLineLevel: the end of the last blank line (a line break, whitespace inside the line, a line break)
 * inside [start, limit] whose preceding line is not a heading starting at or after `first` (the packing
 * range's start, where the Python level's scan begins). Scans the window backwards, so it costs nothing
 * where a window has no line break. */
static Py_ssize_t blank_line_last(const Text *t, Py_ssize_t first, Py_ssize_t start, Py_ssize_t limit) {
    Py_ssize_t i = last_break(t, start + 1, limit);
    while (i > start) {
        Py_ssize_t k = i - 1;
        while (k >= start && !is_break(t, k) && SPACE(t, k)) {
            k--;
        }
        if (k >= start && is_break(t, k)) {
            Py_ssize_t line = last_break(t, 0, k) + 1;
            if (line < first || !is_heading(t, line, k)) {
                return i + 1;
            }
            i = k; /* after a heading: the next candidate ends at k or before */
            continue;
        }
        /* No line break between k and i: the next candidate lies below k. */
        i = last_break(t, start + 1, k < start ? start : k);
    }
    return -1;
}

/* LineLevel: just after the last line break in [start, limit). */
static Py_ssize_t line_last(const Text *t, Py_ssize_t start, Py_ssize_t limit) {
    Py_ssize_t i = last_break(t, start, limit);
    return i < 0 ? -1 : i + 1;
}

/* PunctuationLevel.last_cut: the regex \s[spaced]|[unspaced] searched in the reversed window
 * text[start:min(len, limit + 1)]. The first hit from the right decides; out of range means none. */
static Py_ssize_t punctuation_last(const Text *t, const Level *lv, Py_ssize_t start, Py_ssize_t limit) {
    Py_ssize_t stop = limit + 1 < t->length ? limit + 1 : t->length;
    for (Py_ssize_t p = stop - 1; p >= start; p--) {
        Py_UCS4 ch = CHAR(t, p);
        Py_ssize_t cut = -1;
        if (p - 1 >= start && Py_UNICODE_ISSPACE(ch) && contains(lv->spaced, CHAR(t, p - 1))) {
            cut = p;
        } else if (contains(lv->unspaced, ch)) {
            cut = p + 1;
        } else {
            continue;
        }
        return (start < cut && cut <= limit) ? cut : -1;
    }
    return -1;
}

/* RegexLevel("word", r"\s"): just after the last whitespace character in [start, limit). */
static Py_ssize_t space_last(const Text *t, Py_ssize_t start, Py_ssize_t limit) {
    for (Py_ssize_t i = limit - 1; i >= start; i--) {
        if (SPACE(t, i)) {
            return i + 1;
        }
    }
    return -1;
}

/* Any other level: its Python last_cut. Returns -2 on error. */
static Py_ssize_t call_last(PyObject *call, PyObject *text, Py_ssize_t start, Py_ssize_t limit) {
    PyObject *found = PyObject_CallFunction(call, "Onn", text, start, limit);
    if (found == NULL) {
        return -2;
    }
    Py_ssize_t cut = found == Py_None ? -1 : PyLong_AsSsize_t(found);
    Py_DECREF(found);
    if (cut == -1 && PyErr_Occurred()) {
        return -2;
    }
    return cut;
}

static void levels_free(Level *levels, Py_ssize_t n) {
    if (levels == NULL) {
        return;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyMem_Free(levels[i].cuts);
    }
    PyMem_Free(levels);
}

/* Parse the level descriptions built by enforce._native_levels: ("cuts", list[int]),
 * ("blank_line",), ("line",), ("punctuation", spaced, unspaced), ("space",), ("call", fn). */
static Level *levels_parse(PyObject *specs, Py_ssize_t *count) {
    PyObject *seq = PySequence_Fast(specs, "levels must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Level *levels = PyMem_Calloc(n > 0 ? n : 1, sizeof(Level));
    if (levels == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *spec = PySequence_Fast_GET_ITEM(seq, i);
        const char *name;
        PyObject *a = NULL, *b = NULL;
        if (!PyArg_ParseTuple(spec, "s|OO", &name, &a, &b)) {
            goto fail;
        }
        Level *lv = &levels[i];
        if (strcmp(name, "cuts") == 0 && a != NULL && PyList_Check(a)) {
            lv->kind = LEVEL_CUTS;
            lv->ncuts = PyList_GET_SIZE(a);
            lv->cuts = PyMem_Malloc((lv->ncuts > 0 ? lv->ncuts : 1) * sizeof(Py_ssize_t));
            if (lv->cuts == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            for (Py_ssize_t j = 0; j < lv->ncuts; j++) {
                lv->cuts[j] = PyLong_AsSsize_t(PyList_GET_ITEM(a, j));
                if (lv->cuts[j] == -1 && PyErr_Occurred()) {
                    goto fail;
                }
            }
        } else if (strcmp(name, "blank_line") == 0) {
            lv->kind = LEVEL_BLANK_LINE;
        } else if (strcmp(name, "line") == 0) {
            lv->kind = LEVEL_LINE;
        } else if (strcmp(name, "punctuation") == 0 && a != NULL && b != NULL && PyUnicode_Check(a) &&
                   PyUnicode_Check(b)) {
            lv->kind = LEVEL_PUNCTUATION;
            lv->spaced = a;
            lv->unspaced = b;
        } else if (strcmp(name, "space") == 0) {
            lv->kind = LEVEL_SPACE;
        } else if (strcmp(name, "call") == 0 && a != NULL && PyCallable_Check(a)) {
            lv->kind = LEVEL_CALL;
            lv->call = a;
        } else {
            PyErr_Format(PyExc_ValueError, "unknown level description %R", spec);
            goto fail;
        }
    }
    /* The borrowed strings and callables stay alive: the caller holds `specs`. */
    Py_DECREF(seq);
    *count = n;
    return levels;
fail:
    levels_free(levels, n);
    Py_DECREF(seq);
    return NULL;
}

static int append_index(PyObject *list, Py_ssize_t value) {
    PyObject *item = PyLong_FromSsize_t(value);
    if (item == NULL) {
        return -1;
    }
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

/* pack_chars(text, start, end, budget, levels, starts, ends): enforce._pack_into for a character
 * budget, appending to the lists `starts` and `ends`. */
static PyObject *pack_chars(PyObject *self, PyObject *args) {
    PyObject *text, *specs, *starts, *ends;
    Py_ssize_t start, end, budget;
    if (!PyArg_ParseTuple(args, "UnnnOO!O!", &text, &start, &end, &budget, &specs, &PyList_Type, &starts,
                          &PyList_Type, &ends)) {
        return NULL;
    }
    Text t;
    if (text_init(&t, text) < 0) {
        return NULL;
    }
    if (start < 0 || end > t.length || budget < 1) {
        PyErr_SetString(PyExc_ValueError, "pack_chars: span outside the text or budget below 1");
        return NULL;
    }
    Py_ssize_t nlevels = 0;
    Level *levels = levels_parse(specs, &nlevels);
    if (levels == NULL) {
        return NULL;
    }
    Py_ssize_t pos = skip_space(&t, start, end);
    const Py_ssize_t first = pos;
    while (pos < end) {
        Py_ssize_t limit = pos + budget, cut = -1;
        if (limit >= end) {
            cut = end;
        } else {
            for (Py_ssize_t i = 0; i < nlevels && cut < 0; i++) {
                const Level *lv = &levels[i];
                switch (lv->kind) {
                case LEVEL_CUTS:
                    cut = cuts_last(lv, pos, limit);
                    break;
                case LEVEL_BLANK_LINE:
                    cut = blank_line_last(&t, first, pos, limit);
                    break;
                case LEVEL_LINE:
                    cut = line_last(&t, pos, limit);
                    break;
                case LEVEL_PUNCTUATION:
                    cut = punctuation_last(&t, lv, pos, limit);
                    break;
                case LEVEL_SPACE:
                    cut = space_last(&t, pos, limit);
                    break;
                default:
                    cut = call_last(lv->call, text, pos, limit);
                    if (cut == -2) {
                        goto fail;
                    }
                }
            }
            if (cut < 0) {
                cut = limit > pos ? limit : pos + 1;
            }
        }
        Py_ssize_t stop = cut;
        while (SPACE(&t, stop - 1)) {
            stop--;
        }
        if (append_index(starts, pos) < 0 || append_index(ends, stop) < 0) {
            goto fail;
        }
        if (cut >= end) {
            break;
        }
        pos = skip_space(&t, cut, end);
    }
    levels_free(levels, nlevels);
    Py_RETURN_NONE;
fail:
    levels_free(levels, nlevels);
    return NULL;
}

/* Item i of a list of ints, as Py_ssize_t (-1 with an exception set on error). */
static Py_ssize_t list_index(PyObject *list, Py_ssize_t i) {
    return PyLong_AsSsize_t(PyList_GET_ITEM(list, i));
}

/* overlap_chars(text, starts, groups, overlap, snap_to_words) -> new starts: enforce.add_overlap. */
static PyObject *overlap_chars(PyObject *self, PyObject *args) {
    PyObject *text, *starts, *groups;
    Py_ssize_t overlap;
    int snap;
    if (!PyArg_ParseTuple(args, "UO!O!np", &text, &PyList_Type, &starts, &PyList_Type, &groups, &overlap,
                          &snap)) {
        return NULL;
    }
    Text t;
    if (text_init(&t, text) < 0) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(starts);
    if (PyList_GET_SIZE(groups) != n) {
        PyErr_SetString(PyExc_ValueError, "overlap_chars: starts and groups differ in length");
        return NULL;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t start = list_index(starts, i);
        if (start == -1 && PyErr_Occurred()) {
            goto fail;
        }
        if (start < 0 || start >= t.length) {
            PyErr_SetString(PyExc_ValueError, "overlap_chars: a start outside the text");
            goto fail;
        }
        Py_ssize_t result = start;
        if (i > 0) {
            int same = PyObject_RichCompareBool(PyList_GET_ITEM(groups, i), PyList_GET_ITEM(groups, i - 1), Py_EQ);
            Py_ssize_t prev = list_index(starts, i - 1);
            if (same < 0 || (prev == -1 && PyErr_Occurred())) {
                goto fail;
            }
            if (same) {
                Py_ssize_t reach = start - overlap > prev + 1 ? start - overlap : prev + 1;
                /* The first non-space from the reach on; with snapping, the first one after a
                 * whitespace character (the word start), or the reach itself inside one word. */
                Py_ssize_t p = reach;
                if (snap) {
                    for (p = reach - 1; p < start && !SPACE(&t, p); p++) {
                    }
                }
                p = skip_space(&t, p, start);
                result = snap && p == start && !SPACE(&t, start - 1) ? reach : p;
            }
        }
        PyObject *item = PyLong_FromSsize_t(result);
        if (item == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------ */
/* Chunk ids and chunk objects                                                                      */

#define ID_DIGITS 20

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

#define GOLDEN 0x9E3779B97F4A7C15ULL

/* id_keys(text) -> (int, int): chunk.id_keys over the string's own buffer. CPython stores a string
 * in the narrowest width that holds its largest code point, so the buffer is exactly the code units
 * chunk.id_keys encodes; on a big-endian machine the words are assembled from the code units. */
static PyObject *id_keys(PyObject *self, PyObject *text) {
    Text t;
    if (text_init(&t, text) < 0) {
        return NULL;
    }
    const unsigned char *bytes = t.data;
    Py_ssize_t nbytes = t.length * t.kind, nwords = (nbytes + 7) / 8, per_word = 8 / t.kind;
    uint64_t total = 0;
    for (Py_ssize_t i = 0; i < nwords; i++) {
        uint64_t word = 0;
#if PY_LITTLE_ENDIAN
        Py_ssize_t size = nbytes - 8 * i < 8 ? nbytes - 8 * i : 8;
        memcpy(&word, bytes + 8 * i, (size_t)size);
#else
        for (Py_ssize_t j = 0; j < per_word && i * per_word + j < t.length; j++) {
            word |= (uint64_t)CHAR(&t, i * per_word + j) << (8 * t.kind * j);
        }
#endif
        total += mix64(word ^ ((uint64_t)(i + 1) * GOLDEN));
    }
    (void)per_word;
    uint64_t base = total ^ mix64((uint64_t)nbytes * 4 + (uint64_t)t.kind);
    return Py_BuildValue("(KK)", (unsigned long long)mix64(base ^ GOLDEN),
                         (unsigned long long)mix64(base ^ (2 * GOLDEN)));
}

/* chunk.chunk_ids: 64 bits of mix64(start << 32 | end ^ key0), then the top 16 of the key1 lane. */
static PyObject *make_id(uint64_t key0, uint64_t key1, Py_ssize_t start, Py_ssize_t end) {
    static const char hex[] = "0123456789abcdef";
    uint64_t packed = ((uint64_t)start << 32) | (uint64_t)end;
    uint64_t lane0 = mix64(packed ^ key0), lane1 = mix64(packed ^ key1) >> 48;
    PyObject *id = PyUnicode_New(ID_DIGITS, 127);
    if (id == NULL) {
        return NULL;
    }
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(id);
    for (int i = 0; i < 16; i++) {
        out[i] = hex[(lane0 >> (60 - 4 * i)) & 15];
    }
    for (int i = 0; i < 4; i++) {
        out[16 + i] = hex[(lane1 >> (12 - 4 * i)) & 15];
    }
    return id;
}

/* chunk_ids(key0, key1, starts, ends) -> list[str] */
static PyObject *chunk_ids(PyObject *self, PyObject *args) {
    unsigned long long key0, key1;
    PyObject *starts, *ends;
    if (!PyArg_ParseTuple(args, "KKO!O!", &key0, &key1, &PyList_Type, &starts, &PyList_Type, &ends)) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(starts);
    if (PyList_GET_SIZE(ends) != n) {
        PyErr_SetString(PyExc_ValueError, "chunk_ids: starts and ends differ in length");
        return NULL;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t start = list_index(starts, i), end = list_index(ends, i);
        if ((start == -1 || end == -1) && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        PyObject *id = make_id(key0, key1, start, end);
        if (id == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, id);
    }
    return out;
}

/* The field order of build_chunks' values, whatever the class declares. */
enum { F_ID, F_DOC_ID, F_START, F_END, F_TEXT, F_UNIT_IDS, F_SECTION, F_TOKENS, F_PAGES, F_CONTEXT, NFIELDS };
static const char *FIELD_NAMES[NFIELDS] = {"id",       "doc_id",  "start",  "end",   "text",
                                           "unit_ids", "section", "tokens", "pages", "context"};

/* Byte offsets of the fields in instances of `type`, from its slot member descriptors. Every slot
 * of the class and its bases must be one of the fields, so that no slot is left unset. */
static int field_offsets(PyTypeObject *type, Py_ssize_t offsets[NFIELDS]) {
    Py_ssize_t slots = 0;
    PyObject *mro = type->tp_mro;
    for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (base->tp_flags & Py_TPFLAGS_HEAPTYPE) {
            PyObject *own = ((PyHeapTypeObject *)base)->ht_slots;
            slots += own == NULL ? 0 : PyTuple_GET_SIZE(own);
        }
    }
    if (slots != NFIELDS || type->tp_dictoffset != 0) {
        PyErr_Format(PyExc_TypeError, "build_chunks: %s does not have exactly the ten chunk slots", type->tp_name);
        return -1;
    }
    for (int f = 0; f < NFIELDS; f++) {
        PyObject *descr = PyObject_GetAttrString((PyObject *)type, FIELD_NAMES[f]);
        if (descr == NULL) {
            return -1;
        }
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX;
        if (ok) {
            offsets[f] = ((PyMemberDescrObject *)descr)->d_member->offset;
        }
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "build_chunks: %s.%s is not a slot", type->tp_name, FIELD_NAMES[f]);
            return -1;
        }
    }
    return 0;
}

/* Item i of an optional list, or the default. A new reference. */
static PyObject *item_or(PyObject *list, Py_ssize_t i, PyObject *fallback) {
    PyObject *item = list == Py_None ? fallback : PyList_GET_ITEM(list, i);
    Py_INCREF(item);
    return item;
}

static int optional_list(PyObject *obj, Py_ssize_t n, const char *name) {
    if (obj != Py_None && (!PyList_Check(obj) || PyList_GET_SIZE(obj) != n)) {
        PyErr_Format(PyExc_ValueError, "build_chunks: %s must be None or a list of one item per chunk", name);
        return -1;
    }
    return 0;
}

/* build_chunks(cls, key0, key1, doc_id, text, starts, ends, tokens, contexts, unit_ids, sections,
 *              pages) -> list[cls]: the loop of ChunkBuilder.build_all. Each object is allocated and
 * its slots filled directly, as the frozen dataclass constructor would fill them; optional lists
 * are None for their defaults ("", (), (), None). The objects are not tracked by the garbage
 * collector: they hold only strings, ints and tuples of those, so they can never be in a cycle. */
static PyObject *build_chunks(PyObject *self, PyObject *args) {
    PyTypeObject *type;
    unsigned long long key0, key1;
    PyObject *doc_id, *text, *starts, *ends, *tokens, *contexts, *unit_ids, *sections, *pages;
    if (!PyArg_ParseTuple(args, "O!KKUUO!O!O!OOOO", &PyType_Type, &type, &key0, &key1, &doc_id, &text,
                          &PyList_Type, &starts, &PyList_Type, &ends, &PyList_Type, &tokens, &contexts,
                          &unit_ids, &sections, &pages)) {
        return NULL;
    }
    Py_ssize_t offsets[NFIELDS];
    if (field_offsets(type, offsets) < 0) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(starts), length = PyUnicode_GET_LENGTH(text);
    if (PyList_GET_SIZE(ends) != n || PyList_GET_SIZE(tokens) != n || optional_list(contexts, n, "contexts") < 0 ||
        optional_list(unit_ids, n, "unit_ids") < 0 || optional_list(sections, n, "sections") < 0 ||
        optional_list(pages, n, "pages") < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "build_chunks: starts, ends and tokens differ in length");
        }
        return NULL;
    }
    PyObject *empty_text = PyUnicode_New(0, 0), *empty_tuple = PyTuple_New(0);
    PyObject *out = PyList_New(n);
    if (empty_text == NULL || empty_tuple == NULL || out == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t start = list_index(starts, i), end = list_index(ends, i);
        if ((start == -1 || end == -1) && PyErr_Occurred()) {
            goto fail;
        }
        if (start < 0 || end < start || end > length) {
            PyErr_SetString(PyExc_ValueError, "build_chunks: a span outside the text");
            goto fail;
        }
        PyObject *id = make_id(key0, key1, start, end);
        PyObject *slice = id == NULL ? NULL : PyUnicode_Substring(text, start, end);
        PyObject *obj = slice == NULL ? NULL : type->tp_alloc(type, 0);
        if (obj == NULL) {
            Py_XDECREF(id);
            Py_XDECREF(slice);
            goto fail;
        }
        PyList_SET_ITEM(out, i, obj);
        /* New references, stored into the zeroed slots; nothing below can fail. */
        PyObject *values[NFIELDS] = {
            id,
            Py_NewRef(doc_id),
            Py_NewRef(PyList_GET_ITEM(starts, i)),
            Py_NewRef(PyList_GET_ITEM(ends, i)),
            slice,
            item_or(unit_ids, i, empty_tuple),
            item_or(sections, i, empty_tuple),
            Py_NewRef(PyList_GET_ITEM(tokens, i)),
            item_or(pages, i, Py_None),
            item_or(contexts, i, empty_text),
        };
        for (int f = 0; f < NFIELDS; f++) {
            *(PyObject **)((char *)obj + offsets[f]) = values[f];
        }
        if (PyObject_IS_GC(obj)) {
            PyObject_GC_UnTrack(obj);
        }
    }
    Py_DECREF(empty_text);
    Py_DECREF(empty_tuple);
    return out;
fail:
    Py_XDECREF(empty_text);
    Py_XDECREF(empty_tuple);
    Py_XDECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"pack_chars", pack_chars, METH_VARARGS, "enforce._pack_into for a character budget."},
    {"overlap_chars", overlap_chars, METH_VARARGS, "enforce.add_overlap for a character budget."},
    {"id_keys", id_keys, METH_O, "chunk.id_keys of a text."},
    {"chunk_ids", chunk_ids, METH_VARARGS, "chunk.chunk_ids from the two keys."},
    {"build_chunks", build_chunks, METH_VARARGS, "The chunk objects of ChunkBuilder.build_all."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_speedups",
    .m_doc = "Compiled per-chunk loops of chunkwise.chunking.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
