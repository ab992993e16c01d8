/* The first reading's fast paths in C: the lexer's tokens (the same as `lexer.scan_regex`,
 * without a Python string per token) and the pairing of delimiters (`Reading._walk`).
 *
 * Why C: a big file's first reading was mostly these two (issue 24: a structural call on a
 * 270 KB file seen for the first time). `re.findall` costs about 200 ns a token however
 * simple the pattern, most of it making one string per token; this loop makes none.
 *
 * It knows only the plain tokens: blanks, single-character delimiters, plain atoms, strings
 * and `;` comments, as a 128-entry table of character classes that lexer.py builds from the
 * same character sets as its regexes. Every other token (each `#` dispatch, prefix, character,
 * `|symbol|`, an unterminated string) is matched by the dialect's own regex, called from
 * here: its rules live in one place, lexer.py. The differential tests (tests/test_lexer_fast.py)
 * hold this loop to the regex on every Lisp source Debian installs and on random text.
 *
 *   scan(text, classes, match, codes, stops) -> (codes, starts, ends, stopped)
 *   pair(codes) -> (partner, bad, unclosed)        the reading's pairing of delimiters
 *
 * classes  bytes[128]: the class of each ASCII character (see below); a character above
 *          ASCII is a blank when str.isspace() says so, else a plain atom character
 * match    the dialect's `pattern.match` (blanks, then one group per alternative)
 * codes    group index -> one-character token code, as `_Compiled.codes`
 * stops    group index -> True where the regex path must take over (a nesting `#|`)
 * stopped  the offset of the token where it stopped for `stops`, else -1
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum {
    BLANK = 0,   /* \s, and Clojure's comma */
    ATOM = 1,    /* starts and continues a plain atom */
    INNER = 2,   /* continues an atom, starts no plain token (the regex decides: # ' in Clojure) */
    DELIM = 3,   /* a one-character token whose code is the character: ( ) [ ] { } */
    COMMENT = 4, /* ; to the end of the line */
    STRING = 5,  /* " ... " with \ escapes */
    OTHER = 6,   /* ends an atom; the token it starts is the regex's */
    ESCAPE = 7,  /* continues an atom by rules of its own (CL \x and |...|): the regex's */
};

static int
regex_token(PyObject *match, PyObject *text, Py_ssize_t pos, PyObject *codes,
            PyObject *stops, Py_ssize_t *end, Py_UCS4 *code, int *stop)
{
    PyObject *m = PyObject_CallFunction(match, "On", text, pos);
    if (m == NULL)
        return -1;
    PyObject *last = m == Py_None ? NULL : PyObject_GetAttrString(m, "lastindex");
    if (last == NULL || last == Py_None) {
        /* cannot happen: the patterns end in a catch-all \S */
        Py_XDECREF(last);
        Py_DECREF(m);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_RuntimeError, "no token at offset %zd", pos);
        return -1;
    }
    Py_ssize_t i = PyLong_AsSsize_t(last);
    Py_DECREF(last);
    PyObject *e = PyObject_CallMethod(m, "end", NULL);
    Py_DECREF(m);
    if (e == NULL || i < 0)
        return -1;
    *end = PyLong_AsSsize_t(e);
    Py_DECREF(e);
    PyObject *c = PySequence_GetItem(codes, i);
    PyObject *s = c ? PySequence_GetItem(stops, i) : NULL;
    if (s == NULL) {
        Py_XDECREF(c);
        return -1;
    }
    *code = PyUnicode_ReadChar(c, 0);
    *stop = PyObject_IsTrue(s);
    Py_DECREF(c);
    Py_DECREF(s);
    return (*code == (Py_UCS4)-1 || *stop < 0) ? -1 : 0;
}

static int
append_offset(PyObject *list, Py_ssize_t value)
{
    PyObject *v = PyLong_FromSsize_t(value);
    if (v == NULL)
        return -1;
    int rc = PyList_Append(list, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *
scan(PyObject *self, PyObject *args)
{
    PyObject *text, *match, *codes, *stops;
    Py_buffer classes;
    if (!PyArg_ParseTuple(args, "Uy*OOO", &text, &classes, &match, &codes, &stops))
        return NULL;
    if (classes.len != 128) {
        PyBuffer_Release(&classes);
        PyErr_SetString(PyExc_ValueError, "classes must be 128 bytes");
        return NULL;
    }
    const unsigned char *cls = classes.buf;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) {    /* a legacy string (3.11): made canonical first */
        PyBuffer_Release(&classes);
        return NULL;
    }
#endif
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *starts = PyList_New(0), *ends = PyList_New(0);
    char *out = PyMem_Malloc(n > 0 ? n : 1);   /* at most one token per character */
    Py_ssize_t count = 0, pos = 0, stopped = -1;
    if (starts == NULL || ends == NULL || out == NULL)
        goto fail;

#define CLASS(ch) ((ch) < 128 ? cls[ch] : (Py_UNICODE_ISSPACE(ch) ? BLANK : ATOM))
    while (pos < n) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, pos);
        int c = CLASS(ch);
        if (c == BLANK) {
            pos++;
            continue;
        }
        Py_ssize_t start = pos, end = -1;
        Py_UCS4 code = 0;
        switch (c) {
        case DELIM:
            end = pos + 1;
            code = ch;
            break;
        case ATOM:
            end = pos + 1;
            while (end < n) {
                int k = CLASS(PyUnicode_READ(kind, data, end));
                if (k != ATOM && k != INNER)
                    break;
                end++;
            }
            if (end < n && CLASS(PyUnicode_READ(kind, data, end)) == ESCAPE)
                end = -1;           /* an atom with \ or |...| inside: the regex's */
            else
                code = 'a';
            break;
        case COMMENT:
            end = pos + 1;
            while (end < n && PyUnicode_READ(kind, data, end) != '\n')
                end++;
            code = ';';
            break;
        case STRING:
            for (end = pos + 1; end < n; end++) {
                Py_UCS4 s = PyUnicode_READ(kind, data, end);
                if (s == '\\')
                    end++;
                else if (s == '"')
                    break;
            }
            if (end < n) {
                end++;
                code = 's';
            } else {
                end = -1;           /* never closes: the regex's string_open */
            }
            break;
        }
        if (end < 0) {
            int stop = 0;
            if (regex_token(match, text, pos, codes, stops, &end, &code, &stop) < 0)
                goto fail;
            if (stop) {
                stopped = start;
                break;
            }
            if (end <= start) {
                PyErr_Format(PyExc_RuntimeError, "empty token at offset %zd", start);
                goto fail;
            }
        }
        if (append_offset(starts, start) < 0 || append_offset(ends, end) < 0)
            goto fail;
        out[count++] = (char)code;
        pos = end;
    }
#undef CLASS

    PyBuffer_Release(&classes);
    PyObject *codes_str = PyUnicode_DecodeASCII(out, count, NULL);
    PyMem_Free(out);
    if (codes_str == NULL) {
        Py_DECREF(starts);
        Py_DECREF(ends);
        return NULL;
    }
    return Py_BuildValue("(NNNn)", codes_str, starts, ends, stopped);

fail:
    PyBuffer_Release(&classes);
    PyMem_Free(out);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    return NULL;
}

/* pair(codes) -> (partner, bad, unclosed): `Reading._walk`'s pairing of delimiters, the same
 * lists its Python loop makes (reading.py says how closers pair). */
static PyObject *
pair(PyObject *self, PyObject *args)
{
    PyObject *codes;
    if (!PyArg_ParseTuple(args, "U", &codes))
        return NULL;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(codes) < 0)
        return NULL;
#endif
    int kind = PyUnicode_KIND(codes);
    const void *data = PyUnicode_DATA(codes);
    Py_ssize_t n = PyUnicode_GET_LENGTH(codes), depth = 0;
    Py_ssize_t *stack = PyMem_Malloc(sizeof(Py_ssize_t) * (n > 0 ? n : 1));
    PyObject *partner = PyList_New(n), *bad = PyList_New(0), *unclosed = NULL;
    PyObject *none = PyLong_FromLong(-1);
    if (stack == NULL || partner == NULL || bad == NULL || none == NULL)
        goto fail;
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_INCREF(none);
        PyList_SET_ITEM(partner, j, none);
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, j);
        if (c == '(' || c == '[' || c == '{') {
            stack[depth++] = j;
            continue;
        }
        if (c != ')' && c != ']' && c != '}')
            continue;
        PyObject *item = NULL;
        if (depth == 0) {
            item = Py_BuildValue("(nisO)", j, 1, "UNMATCHED_CLOSE", Py_None);
        } else {
            Py_ssize_t o = stack[--depth];
            PyObject *po = PyLong_FromSsize_t(o), *pj = PyLong_FromSsize_t(j);
            if (po == NULL || pj == NULL) {
                Py_XDECREF(po);
                Py_XDECREF(pj);
                goto fail;
            }
            Py_SETREF(((PyListObject *)partner)->ob_item[o], pj);
            Py_SETREF(((PyListObject *)partner)->ob_item[j], po);
            Py_UCS4 opener = PyUnicode_READ(kind, data, o);
            if ((c == ')') != (opener == '(') || (c == ']') != (opener == '['))
                item = Py_BuildValue("(nisn)", j, 1, "MISMATCH", o);
        }
        if (item != NULL) {
            int rc = PyList_Append(bad, item);
            Py_DECREF(item);
            if (rc < 0)
                goto fail;
        } else if (PyErr_Occurred()) {
            goto fail;
        }
    }
    unclosed = PyList_New(depth);
    if (unclosed == NULL)
        goto fail;
    for (Py_ssize_t k = 0; k < depth; k++) {
        PyObject *v = PyLong_FromSsize_t(stack[k]);
        if (v == NULL)
            goto fail;
        PyList_SET_ITEM(unclosed, k, v);
    }
    PyMem_Free(stack);
    Py_DECREF(none);
    return Py_BuildValue("(NNN)", partner, bad, unclosed);

fail:
    PyMem_Free(stack);
    Py_XDECREF(none);
    Py_XDECREF(partner);
    Py_XDECREF(bad);
    Py_XDECREF(unclosed);
    return NULL;
}

static PyMethodDef methods[] = {
    {"pair", pair, METH_VARARGS, "pair(codes) -> (partner, bad, unclosed)"},
    {"scan", scan, METH_VARARGS,
     "scan(text, classes, match, codes, stops) -> (codes, starts, ends, stopped)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "The lexer's fast path (see lexer.py; the regex path is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&module);
}
