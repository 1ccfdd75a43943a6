/* The lexical legs' summing step in one call: per document, the sum of its postings' weighted
 * scores, list after list, then the best k documents (BM25) or those near the k-th best (keyword).
 *
 * numpy does the same in a dozen array operations a term (retrieval/bm25.py, keyword.py); at 100k
 * memories their fixed costs and passes were most of a hybrid search's lexical legs. Every sum is
 * added in the order numpy adds it (list by list, a posting's score as `weight * value`, from 0.0)
 * and the build turns floating-point contraction off, so both give the same floats
 * (tests/test_postings_kernel.py compares them). The sums run without the GIL, so the vector leg's
 * worker thread goes on meanwhile. Also here: join_rows, a term's stored segment rows joined into
 * its arrays with store/lexicon.py's checks (tests/test_segment_join.py compares it with numpy's
 * join). Optional: where it cannot be compiled, retrieval/lexical.py keeps numpy's path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SPARE 16 /* slots past the end that postings outside the candidates add to */
#define WORDS(n) (((n) + 63) / 64)

static int
take(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *kinds, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (view->itemsize != itemsize || strchr(kinds, *f) == NULL || f[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s: expected %zd-byte items of kind '%s', got '%s'", what, itemsize,
                     kinds, view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the lists and the work arrays */

typedef struct {
    Py_buffer ids, values;
    double weight;
    int essential;
    double *saturated; /* with a saturation: the values made from the term frequencies */
} List;

/* BM25's saturation of a term frequency, for lists that hold term frequencies (int32), made the
 * way numpy makes it (retrieval/bm25.py search_once): the same operations in the same order. */
typedef struct {
    Py_buffer doc_len;
    double avg_len, k1, b;
    int given;
} Saturation;

typedef struct {
    PyObject *seq;
    List *lists;
    Py_ssize_t n_lists, taken, size;
    const uint8_t *allowed; /* NULL: every document is allowed */
    Py_buffer allowed_view;
    int have_allowed, counting, owned;
    /* the work arrays: the candidates as a bitmap, each one's total and how many lists hold it, the
     * candidates in first-seen order, and room for what a call hands back */
    uint64_t *bits;
    double *total, *out_totals;
    uint16_t *holding;
    int64_t *found, *out_ids;
    Py_ssize_t m;
    int64_t bad; /* a lexid outside the index, found without the GIL; -1 when none */
} Sums;

/* The work arrays, kept between calls: allocating ~2 MB a call cost more than the sums (the heap
 * handed the pages back every time). One call uses them at a time (it marks them busy while it
 * holds the GIL); a call that finds them busy, on another thread, allocates its own. */
static struct {
    uint64_t *bits;
    double *total, *out_totals;
    uint16_t *holding;
    int64_t *found, *out_ids;
    Py_ssize_t capacity;
    int busy;
} kept;

static void
free_arrays(uint64_t *bits, double *total, double *out_totals, uint16_t *holding, int64_t *found,
            int64_t *out_ids)
{
    PyMem_Free(bits);
    PyMem_Free(total);
    PyMem_Free(out_totals);
    PyMem_Free(holding);
    PyMem_Free(found);
    PyMem_Free(out_ids);
}

static int
work_arrays(Sums *s)
{
    Py_ssize_t need = s->size + SPARE;
    if (!kept.busy && kept.capacity < need) {
        free_arrays(kept.bits, kept.total, kept.out_totals, kept.holding, kept.found, kept.out_ids);
        kept.bits = PyMem_Malloc(WORDS(need) * sizeof(uint64_t));
        kept.total = PyMem_Malloc(need * sizeof(double));
        kept.out_totals = PyMem_Malloc(2 * need * sizeof(double));
        kept.holding = PyMem_Malloc(need * sizeof(uint16_t));
        kept.found = PyMem_Malloc(need * sizeof(int64_t));
        kept.out_ids = PyMem_Malloc(2 * need * sizeof(int64_t));
        int all = kept.bits && kept.total && kept.out_totals && kept.holding && kept.found && kept.out_ids;
        kept.capacity = all ? need : 0;
    }
    if (!kept.busy && kept.capacity >= need) {
        kept.busy = 1;
        s->bits = kept.bits;
        s->total = kept.total;
        s->out_totals = kept.out_totals;
        s->holding = kept.holding;
        s->found = kept.found;
        s->out_ids = kept.out_ids;
    } else {
        s->owned = 1;
        s->bits = PyMem_Malloc(WORDS(need) * sizeof(uint64_t));
        s->total = PyMem_Malloc(need * sizeof(double));
        s->out_totals = PyMem_Malloc(2 * need * sizeof(double));
        s->holding = PyMem_Malloc(need * sizeof(uint16_t));
        s->found = PyMem_Malloc(need * sizeof(int64_t));
        s->out_ids = PyMem_Malloc(2 * need * sizeof(int64_t));
        if (!(s->bits && s->total && s->out_totals && s->holding && s->found && s->out_ids)) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

static void
release(Sums *s)
{
    for (Py_ssize_t t = 0; t < s->taken; t++) {
        PyBuffer_Release(&s->lists[t].ids);
        PyBuffer_Release(&s->lists[t].values);
        PyMem_Free(s->lists[t].saturated);
    }
    if (s->have_allowed)
        PyBuffer_Release(&s->allowed_view);
    PyMem_Free(s->lists);
    if (s->owned)
        free_arrays(s->bits, s->total, s->out_totals, s->holding, s->found, s->out_ids);
    else if (s->bits != NULL)
        kept.busy = 0;
    Py_XDECREF(s->seq);
}

/* Hold the lists ((lexids, values, weight[, essential]) each), the mask and the work arrays: 0 on
 * success, else -1 with an exception set (release() lets go of whatever was held). */
static int
hold(Sums *s, PyObject *lists_obj, Py_ssize_t size, PyObject *allowed_obj, int flagged, int counting,
     const Saturation *sat)
{
    memset(s, 0, sizeof(*s));
    s->size = size;
    s->counting = counting;
    s->bad = -1;
    if ((s->seq = PySequence_Fast(lists_obj, "lists must be a sequence")) == NULL)
        return -1;
    s->n_lists = PySequence_Fast_GET_SIZE(s->seq);
    if (counting && s->n_lists > UINT16_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many lists");
        return -1;
    }
    if ((s->lists = PyMem_Calloc(s->n_lists ? s->n_lists : 1, sizeof(List))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (allowed_obj != Py_None) {
        if (take(allowed_obj, &s->allowed_view, 1, "?Bb", "allowed") < 0)
            return -1;
        s->have_allowed = 1;
        s->allowed = s->allowed_view.buf;
        if (s->allowed_view.len < size) {
            PyErr_SetString(PyExc_ValueError, "allowed is shorter than the index");
            return -1;
        }
    }
    while (s->taken < s->n_lists) {
        PyObject *item = PySequence_Fast_GET_ITEM(s->seq, s->taken), *ids, *values, *essential = Py_True;
        List *l = &s->lists[s->taken];
        if (flagged ? !PyArg_ParseTuple(item, "OOdO:a list", &ids, &values, &l->weight, &essential)
                    : !PyArg_ParseTuple(item, "OOd:a list", &ids, &values, &l->weight))
            return -1;
        if ((l->essential = PyObject_IsTrue(essential)) < 0)
            return -1;
        if (take(ids, &l->ids, 8, "lq", "lexids") < 0)
            return -1;
        if (sat ? take(values, &l->values, 4, "i", "term frequencies") < 0
                : take(values, &l->values, 8, "d", "values") < 0) {
            PyBuffer_Release(&l->ids);
            return -1;
        }
        s->taken++; /* both buffers held: release() lets them go */
        Py_ssize_t n = l->ids.len / 8;
        if (n != l->values.len / l->values.itemsize) {
            PyErr_SetString(PyExc_ValueError, "a list's lexids and values differ in length");
            return -1;
        }
        if (sat) {
            const int64_t *id = l->ids.buf;
            const int32_t *tf = l->values.buf;
            const double *len = sat->doc_len.buf;
            Py_ssize_t lens = sat->doc_len.len / 8;
            if ((l->saturated = PyMem_Malloc((n ? n : 1) * sizeof(double))) == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                if ((uint64_t)id[i] >= (uint64_t)lens) {
                    PyErr_Format(PyExc_ValueError, "lexid %lld has no length", (long long)id[i]);
                    return -1;
                }
                double f = (double)tf[i];
                double norm = sat->k1 * ((1.0 - sat->b) + (sat->b * len[id[i]]) / sat->avg_len);
                l->saturated[i] = (f * (sat->k1 + 1.0)) / (f + norm);
            }
        }
    }
    return work_arrays(s);
}

static inline int
inside(const Sums *s, int64_t d)
{
    return (int)((s->bits[d >> 6] >> (d & 63)) & 1);
}

/* Sum every list into the candidates (the documents of the essential lists that the mask allows),
 * list by list. No Python: it runs without the GIL. -1 (with s->bad) for a lexid outside the index. */
static int
sum(Sums *s)
{
    Py_ssize_t size = s->size, m = 0;
    uint64_t *bits = s->bits;
    int64_t *found = s->found;
    double *total = s->total;
    uint16_t *holding = s->counting ? s->holding : NULL;
    memset(bits, 0, WORDS(size) * sizeof(uint64_t));
    for (int j = 0; j < SPARE; j++) {
        total[size + j] = 0.0;
        s->holding[size + j] = 0;
    }
    for (Py_ssize_t t = 0; t < s->n_lists; t++) { /* the candidates first */
        if (!s->lists[t].essential)
            continue;
        const int64_t *id = s->lists[t].ids.buf;
        for (Py_ssize_t i = 0, n = s->lists[t].ids.len / 8; i < n; i++) {
            int64_t d = id[i];
            if ((uint64_t)d >= (uint64_t)size) {
                s->bad = d;
                return -1;
            }
            if (s->allowed != NULL && !s->allowed[d])
                continue;
            uint64_t bit = (uint64_t)1 << (d & 63);
            found[m] = d; /* kept only the first time, with no branch to mispredict */
            m += !(bits[d >> 6] & bit);
            bits[d >> 6] |= bit;
        }
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        total[found[i]] = 0.0; /* numpy's sums start at 0.0 too: 0.0 + x is x */
        if (holding)
            holding[found[i]] = 0;
    }
    for (Py_ssize_t t = 0; t < s->n_lists; t++) { /* then the sums, list by list */
        const int64_t *id = s->lists[t].ids.buf;
        const double *value = s->lists[t].saturated ? s->lists[t].saturated : s->lists[t].values.buf;
        const double weight = s->lists[t].weight;
        /* a posting outside the candidates adds to a spare slot instead of branching (the slot
         * rotates, so those adds do not wait on each other) */
        for (Py_ssize_t i = 0, n = s->lists[t].ids.len / 8; i < n; i++) {
            int64_t d = id[i];
            if ((uint64_t)d >= (uint64_t)size) {
                s->bad = d;
                return -1;
            }
            int64_t spare = size + (i & (SPARE - 1));
            int64_t at = spare ^ ((d ^ spare) & -(int64_t)inside(s, d));
            total[at] += weight * value[i];
            if (holding)
                holding[at]++;
        }
    }
    s->m = m;
    return 0;
}

static int
outside(const Sums *s)
{
    PyErr_Format(PyExc_ValueError, "lexid %lld is outside the index (%zd)", (long long)s->bad, s->size);
    return -1;
}

/* ---------------------------------------------------------------- top_sums: BM25's best k */

/* a ranks before b: higher total, then lower key (lower lexid without keys) */
static inline int
before(const double *total, const int64_t *key, int64_t a, int64_t b)
{
    return total[a] > total[b] || (total[a] == total[b] && (key ? key[a] < key[b] : a < b));
}

/* heap[0] is the one that ranks last */
static void
sift_down(const double *total, const int64_t *key, int64_t *heap, Py_ssize_t n, Py_ssize_t i)
{
    for (;;) {
        Py_ssize_t last = i, l = 2 * i + 1, r = l + 1;
        if (l < n && before(total, key, heap[last], heap[l]))
            last = l;
        if (r < n && before(total, key, heap[last], heap[r]))
            last = r;
        if (last == i)
            return;
        int64_t t = heap[i];
        heap[i] = heap[last];
        heap[last] = t;
        i = last;
    }
}

static void
sift_up(const double *total, const int64_t *key, int64_t *heap, Py_ssize_t i)
{
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!before(total, key, heap[parent], heap[i]))
            return;
        int64_t t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

/* The best k of the m ids into heap[0..kept), the one that ranks last on top (heap may be ids
 * itself: it is written only below the id being read). */
static Py_ssize_t
heap_of_best(const double *total, const int64_t *key, int64_t *heap, const int64_t *ids, Py_ssize_t m,
             Py_ssize_t k)
{
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (kept < k) {
            heap[kept] = ids[i];
            sift_up(total, key, heap, kept++);
        } else if (before(total, key, ids[i], heap[0])) {
            heap[0] = ids[i];
            sift_down(total, key, heap, kept, 0);
        }
    }
    return kept;
}

/* the best k of the candidates into s->found[0..kept), best first */
static Py_ssize_t
best_k(Sums *s, const int64_t *key, Py_ssize_t k, int bounded, double bound, int *unbounded)
{
    int64_t *heap = s->found;
    const double *total = s->total;
    Py_ssize_t kept = heap_of_best(total, key, heap, heap, s->m, k);
    /* the k-th best must clear what a document outside could reach (numpy's rounding slack) */
    if (bounded && (kept < k || !(bound * (1.0 + 1e-9) + 1e-12 < total[heap[0]]))) {
        *unbounded = 1;
        return 0;
    }
    for (Py_ssize_t n = kept; n > 1; n--) { /* heapsort: the last-ranked goes to the end */
        int64_t t = heap[0];
        heap[0] = heap[n - 1];
        heap[n - 1] = t;
        sift_down(total, key, heap, n - 1, 0);
    }
    return kept;
}

PyDoc_STRVAR(top_sums_doc,
"top_sums(lists, doc_key, k, allowed=None, bound=None, saturate=None) -> list[(key, total)] | None\n\n"
"lists: (lexids int64, values float64, weight, essential) per term, in the order their scores add.\n"
"A document is a candidate when an essential list holds it (and ``allowed``, a bool mask over\n"
"lexids, allows it); every list adds ``weight * value`` to the candidates it holds. The best k\n"
"candidates by (total desc, key asc), keys from ``doc_key``. With ``bound`` (the most the\n"
"documents outside the candidates can score): None when fewer than k candidates exist or the\n"
"k-th best total does not clear the bound, the cases the caller answers by a full pass. With\n"
"``saturate`` (doc_len float64, avg_len, k1, b) the lists hold int32 term frequencies, and each\n"
"value is BM25's saturation of one (what bm25.search_once computes).");

static PyObject *
top_sums(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"lists", "doc_key", "k", "allowed", "bound", "saturate", NULL};
    PyObject *lists_obj, *key_obj, *allowed_obj = Py_None, *bound_obj = Py_None, *sat_obj = Py_None, *out = NULL;
    Py_ssize_t k;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOn|OOO:top_sums", names, &lists_obj, &key_obj, &k,
                                     &allowed_obj, &bound_obj, &sat_obj))
        return NULL;
    if (k <= 0)
        return PyList_New(0);
    Saturation sat = {0};
    if (sat_obj != Py_None) {
        PyObject *lens;
        if (!PyArg_ParseTuple(sat_obj, "Oddd:saturate", &lens, &sat.avg_len, &sat.k1, &sat.b))
            return NULL;
        if (take(lens, &sat.doc_len, 8, "d", "doc_len") < 0)
            return NULL;
        sat.given = 1;
    }
    double bound = 0.0;
    int bounded = bound_obj != Py_None, unbounded = 0, failed;
    if (bounded && (bound = PyFloat_AsDouble(bound_obj)) == -1.0 && PyErr_Occurred())
        return NULL;
    Py_buffer keys;
    if (take(key_obj, &keys, 8, "lq", "doc_key") < 0) {
        if (sat.given)
            PyBuffer_Release(&sat.doc_len);
        return NULL;
    }
    const int64_t *key = keys.buf;
    Sums s;
    Py_ssize_t kept = 0;
    if (hold(&s, lists_obj, keys.len / 8, allowed_obj, 1, 0, sat.given ? &sat : NULL) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    failed = sum(&s) < 0;
    if (!failed)
        kept = best_k(&s, key, k, bounded, bound, &unbounded);
    Py_END_ALLOW_THREADS
    if (failed) {
        outside(&s);
        goto done;
    }
    if (unbounded) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if ((out = PyList_New(kept)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < kept; i++) {
        PyObject *pair = Py_BuildValue("(Ld)", (long long)key[s.found[i]], s.total[s.found[i]]);
        if (pair == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, pair);
    }
done:
    release(&s);
    PyBuffer_Release(&keys);
    if (sat.given)
        PyBuffer_Release(&sat.doc_len);
    return out;
}

/* ---------------------------------------------------------------- near_top: the keyword leg's cut */

static int
ascending(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

enum { PICK_NEAR, PICK_EVERY };

static inline int
picked(const Sums *s, int64_t d, int which, double cut)
{
    return which == PICK_NEAR ? s->total[d] >= cut : s->holding[d] == (uint16_t)s->n_lists;
}

/* The candidates at or above ``cut`` (near) or held by every list, ascending, with their totals,
 * into ids / totals: the few are sorted, the many read off the bitmap in lexid order. */
static Py_ssize_t
pick(const Sums *s, int64_t *ids, double *totals, int which, double cut)
{
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < s->m; i++)
        n += picked(s, s->found[i], which, cut);
    if (n * 32 < s->size) {
        n = 0;
        for (Py_ssize_t i = 0; i < s->m; i++)
            if (picked(s, s->found[i], which, cut))
                ids[n++] = s->found[i];
        qsort(ids, n, sizeof(int64_t), ascending);
    } else {
        n = 0;
        for (Py_ssize_t w = 0; w < WORDS(s->size); w++)
            for (uint64_t x = s->bits[w]; x; x &= x - 1) {
                int64_t d = (int64_t)w * 64 + __builtin_ctzll(x);
                if (picked(s, d, which, cut))
                    ids[n++] = d;
            }
    }
    for (Py_ssize_t i = 0; i < n; i++)
        totals[i] = s->total[ids[i]];
    return n;
}

PyDoc_STRVAR(near_top_doc,
"near_top(lists, size, k, margin, allowed=None) -> (ids, totals, full_ids, full_totals)\n\n"
"lists: (lexids int64, values float64, weight) per term, over lexids below ``size``. The documents\n"
"whose summed ``weight * value`` is at least the k-th best total minus ``margin`` (all of them when\n"
"fewer than k), and the documents every list holds, each as int64 lexids ascending and float64\n"
"totals, in bytes (numpy.frombuffer reads them).");

static PyObject *
near_top(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"lists", "size", "k", "margin", "allowed", NULL};
    PyObject *lists_obj, *allowed_obj = Py_None, *out = NULL;
    Py_ssize_t size, k, n_near = 0, n_full = 0;
    double margin;
    int failed;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Onnd|O:near_top", names, &lists_obj, &size, &k, &margin,
                                     &allowed_obj))
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "size must not be negative");
        return NULL;
    }
    Sums s;
    if (hold(&s, lists_obj, size, allowed_obj, 0, 1, NULL) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    failed = sum(&s) < 0;
    if (!failed) {
        /* near and full each hold at most the m candidates: near from the start, full after it */
        double cut = -HUGE_VAL;
        if (k > 0 && s.m >= k) { /* the k-th best total, found in the output's room (pick rewrites it) */
            heap_of_best(s.total, NULL, s.out_ids, s.found, s.m, k);
            cut = s.total[s.out_ids[0]] - margin;
        }
        n_near = pick(&s, s.out_ids, s.out_totals, PICK_NEAR, cut);
        n_full = pick(&s, s.out_ids + n_near, s.out_totals + n_near, PICK_EVERY, 0.0);
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        outside(&s);
        goto done;
    }
    out = Py_BuildValue("(y#y#y#y#)", (const char *)s.out_ids, n_near * 8, (const char *)s.out_totals, n_near * 8,
                        (const char *)(s.out_ids + n_near), n_full * 8,
                        (const char *)(s.out_totals + n_near), n_full * 8);
done:
    release(&s);
    return out;
}

/* ---------------------------------------------------------------- join_rows: stored segments per term */

PyDoc_STRVAR(join_rows_doc,
"join_rows(rows, segment_docs) -> (ids, tfs, spans, damaged)\n\n"
"Stored posting rows (term, seg, blob), ordered by term then seg, each blob its int32 lexids then\n"
"their int32 term frequencies, joined per term with store/lexicon.py's checks (_checked_postings):\n"
"a row that is not a non-empty blob of whole postings, or whose first or last lexid lies outside\n"
"its segment, is skipped and its term is damaged; a term whose joined lexids do not strictly\n"
"ascend, or with a frequency below 1, is damaged and left out whole. ids (int64) and tfs (int32)\n"
"hold the kept terms' postings one term after another; spans lists (term, start, end) of each;\n"
"damaged lists the damaged terms.");

/* The row's segment as a C integer, or 0 when it is not an int or is out of any int64 range (then
 * no lexid can lie inside it). */
static int
segment_of(PyObject *seg, long long *out)
{
    if (!PyLong_Check(seg))
        return 0;
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(seg, &overflow);
    if (overflow || (value == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = value;
    return 1;
}

static PyObject *
join_rows(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *rows_obj, *seq = NULL, *spans = NULL, *damaged = NULL, *ids_out = NULL, *tfs_out = NULL, *out = NULL;
    PyObject *term = NULL; /* the term of the group being joined (borrowed from its first row) */
    long long segment_docs;
    int64_t *ids = NULL;
    int32_t *tfs = NULL;
    if (!PyArg_ParseTuple(args, "OL:join_rows", &rows_obj, &segment_docs))
        return NULL;
    if (segment_docs <= 0 || segment_docs > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "segment_docs must be between 1 and 2**31 - 1");
        return NULL;
    }
    /* a tuple of the rows: what the group's borrowed term points into stays alive and unchanged
     * whatever a comparison's Python code does to the caller's list */
    if ((seq = PySequence_Tuple(rows_obj)) == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* room for every posting of the rows that are blobs */
        PyObject *row = PyTuple_GET_ITEM(seq, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 3) {
            PyErr_SetString(PyExc_TypeError, "each row must be a (term, seg, blob) tuple");
            goto done;
        }
        PyObject *blob = PyTuple_GET_ITEM(row, 2);
        if (PyBytes_Check(blob))
            total += PyBytes_GET_SIZE(blob) / 8;
    }
    ids = PyMem_Malloc((total ? total : 1) * sizeof(int64_t));
    tfs = PyMem_Malloc((total ? total : 1) * sizeof(int32_t));
    if (ids == NULL || tfs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if ((spans = PyList_New(0)) == NULL || (damaged = PyList_New(0)) == NULL)
        goto done;
    Py_ssize_t pos = 0, start = 0;
    int skipped = 0, bad = 0; /* the group lost a row / fails the order or frequency check */
    for (Py_ssize_t i = 0; i <= n; i++) {
        PyObject *row = i < n ? PyTuple_GET_ITEM(seq, i) : NULL;
        int same = 0;
        if (row != NULL && term != NULL &&
            (same = PyObject_RichCompareBool(PyTuple_GET_ITEM(row, 0), term, Py_EQ)) < 0)
            goto done;
        if (term != NULL && !same) { /* the group of `term` ends here */
            if (bad)
                pos = start;
            if ((bad || skipped) && PyList_Append(damaged, term) < 0)
                goto done;
            if (pos > start) {
                PyObject *span = Py_BuildValue("(Onn)", term, start, pos);
                if (span == NULL || PyList_Append(spans, span) < 0) {
                    Py_XDECREF(span);
                    goto done;
                }
                Py_DECREF(span);
            }
            term = NULL;
        }
        if (row == NULL)
            break;
        if (term == NULL) {
            term = PyTuple_GET_ITEM(row, 0);
            start = pos;
            skipped = bad = 0;
        }
        PyObject *blob = PyTuple_GET_ITEM(row, 2);
        long long seg;
        Py_ssize_t size = PyBytes_Check(blob) ? PyBytes_GET_SIZE(blob) : 0;
        if (size == 0 || size % 8 || !segment_of(PyTuple_GET_ITEM(row, 1), &seg)) {
            skipped = 1;
            continue;
        }
        Py_ssize_t count = size / 8;
        const char *data = PyBytes_AS_STRING(blob);
        int32_t first, last;
        memcpy(&first, data, 4);
        memcpy(&last, data + 4 * (count - 1), 4);
        /* low = seg * segment_docs, compared without overflowing: lexids are int32 */
        if (seg < (long long)INT32_MIN / segment_docs - 1 || seg > (long long)INT32_MAX / segment_docs + 1) {
            skipped = 1;
            continue;
        }
        long long low = seg * segment_docs;
        if (!(low <= first && first <= last && last < low + segment_docs)) {
            skipped = 1;
            continue;
        }
        if (bad)
            continue;
        for (Py_ssize_t j = 0; j < count; j++) {
            int32_t id, tf;
            memcpy(&id, data + 4 * j, 4);
            memcpy(&tf, data + 4 * (count + j), 4);
            if ((pos > start && id <= ids[pos - 1]) || tf <= 0) {
                bad = 1;
                break;
            }
            ids[pos] = id;
            tfs[pos] = tf;
            pos++;
        }
    }
    if ((ids_out = PyByteArray_FromStringAndSize((const char *)ids, pos * 8)) == NULL ||
        (tfs_out = PyByteArray_FromStringAndSize((const char *)tfs, pos * 4)) == NULL)
        goto done;
    out = PyTuple_Pack(4, ids_out, tfs_out, spans, damaged);
done:
    PyMem_Free(ids);
    PyMem_Free(tfs);
    Py_XDECREF(ids_out);
    Py_XDECREF(tfs_out);
    Py_XDECREF(spans);
    Py_XDECREF(damaged);
    Py_DECREF(seq);
    return out;
}

static PyMethodDef methods[] = {
    {"top_sums", (PyCFunction)(void (*)(void))top_sums, METH_VARARGS | METH_KEYWORDS, top_sums_doc},
    {"near_top", (PyCFunction)(void (*)(void))near_top, METH_VARARGS | METH_KEYWORDS, near_top_doc},
    {"join_rows", (PyCFunction)join_rows, METH_VARARGS, join_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kenning.retrieval._postings",
    "The lexical legs' summing step in C (optional; retrieval/lexical.py falls back to numpy).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__postings(void)
{
    return PyModule_Create(&module);
}
