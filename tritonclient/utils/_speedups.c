/*
 * Optional C accelerator for the BYTES tensor wire format.
 *
 * Wire form of a BYTES tensor: for each element in row-major order, a uint32
 * little-endian byte count followed by that many bytes.  No padding, no terminator.
 *
 * pack_bytes(items)            list of bytes/str -> bytes in wire form
 * unpack_bytes(buffer)        wire form -> list of bytes
 *
 * Both are thin loops around memcpy; all policy (which numpy dtypes are accepted,
 * which exception type the user sees) lives in tritonclient/utils/_bytes_codec.py,
 * which also holds the pure numpy fallback used when this module is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline void put_u32le(char *dst, uint32_t v)
{
    dst[0] = (char)(v & 0xff);
    dst[1] = (char)((v >> 8) & 0xff);
    dst[2] = (char)((v >> 16) & 0xff);
    dst[3] = (char)((v >> 24) & 0xff);
}

static inline uint32_t get_u32le(const unsigned char *src)
{
    return (uint32_t)src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16) |
           ((uint32_t)src[3] << 24);
}

/* Borrow the bytes of one element: bytes (or subclass) as is, str as UTF-8. */
static int element_view(PyObject *item, Py_ssize_t index, const char **data, Py_ssize_t *size)
{
    if (PyBytes_Check(item)) {
        *data = PyBytes_AS_STRING(item);
        *size = PyBytes_GET_SIZE(item);
        return 0;
    }
    if (PyUnicode_Check(item)) {
        *data = PyUnicode_AsUTF8AndSize(item, size);
        if (*data == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError,
                             "element %zd of the BYTES tensor is a str that cannot be encoded "
                             "as UTF-8 (it holds a lone surrogate)",
                             index);
            }
            return -1;
        }
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "element %zd of the BYTES tensor is of type '%.200s'; expected bytes or str",
                 index, Py_TYPE(item)->tp_name);
    return -1;
}

static PyObject *pack_bytes(PyObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "pack_bytes expects a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t total = 0;
    const char *data;
    Py_ssize_t size;

    for (Py_ssize_t i = 0; i < n; i++) {
        if (element_view(items[i], i, &data, &size) < 0) {
            goto fail;
        }
        if ((uint64_t)size > UINT32_MAX) {
            PyErr_Format(PyExc_OverflowError,
                         "element %zd of the BYTES tensor is %zd bytes; the wire format "
                         "limits an element to 4294967295 bytes",
                         i, size);
            goto fail;
        }
        if (total > PY_SSIZE_T_MAX - 4 - size) {
            PyErr_SetString(PyExc_OverflowError, "serialized BYTES tensor is too large");
            goto fail;
        }
        total += 4 + size;
    }

    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) {
        goto fail;
    }
    char *dst = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        /* Cannot fail: every element was checked above and str keeps its UTF-8 cache. */
        element_view(items[i], i, &data, &size);
        put_u32le(dst, (uint32_t)size);
        memcpy(dst + 4, data, (size_t)size);
        dst += 4 + size;
    }
    Py_DECREF(seq);
    return out;

fail:
    Py_DECREF(seq);
    return NULL;
}

/* Walk the length prefixes once: count the elements and validate every boundary. */
static Py_ssize_t count_elements(const unsigned char *buf, Py_ssize_t len)
{
    Py_ssize_t offset = 0;
    Py_ssize_t index = 0;
    while (offset < len) {
        if (len - offset < 4) {
            PyErr_Format(PyExc_ValueError,
                         "truncated BYTES tensor: element %zd at byte offset %zd needs a 4-byte "
                         "length prefix but only %zd byte(s) remain",
                         index, offset, len - offset);
            return -1;
        }
        uint32_t size = get_u32le(buf + offset);
        if ((uint64_t)size > (uint64_t)(len - offset - 4)) {
            PyErr_Format(PyExc_ValueError,
                         "truncated BYTES tensor: element %zd at byte offset %zd declares %lu "
                         "byte(s) but only %zd remain",
                         index, offset, (unsigned long)size, len - offset - 4);
            return -1;
        }
        offset += 4 + (Py_ssize_t)size;
        index++;
    }
    return index;
}

static PyObject *unpack_bytes(PyObject *self, PyObject *args)
{
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*:unpack_bytes", &view)) {
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    PyObject *result = NULL;
    Py_ssize_t count = count_elements(buf, view.len);
    if (count < 0 || (result = PyList_New(count)) == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t offset = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t size = get_u32le(buf + offset);
        PyObject *item = PyBytes_FromStringAndSize((const char *)buf + offset + 4, size);
        if (item == NULL) {
            Py_DECREF(result);
            PyBuffer_Release(&view);
            return NULL;
        }
        PyList_SET_ITEM(result, i, item);
        offset += 4 + (Py_ssize_t)size;
    }
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef speedups_methods[] = {
    {"pack_bytes", pack_bytes, METH_O,
     "pack_bytes(items) -> bytes: length-prefix and concatenate bytes/str items."},
    {"unpack_bytes", unpack_bytes, METH_VARARGS,
     "unpack_bytes(buffer) -> list[bytes]: split length-prefixed elements."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "_speedups", "C accelerator for the BYTES tensor codec.", -1,
    speedups_methods,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    return PyModule_Create(&speedups_module);
}
