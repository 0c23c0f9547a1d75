/*
 * Optional C accelerator for the BYTES tensor wire format.
 *
 * Wire form of a BYTES tensor: for each element in row-major order, a uint32
 * little-endian byte count followed by that many bytes.  No padding, no terminator.
 *
 * pack_bytes(items, coerce)    list of bytes/str -> bytes in wire form (coerce: other
 *                              objects as str(object), NVIDIA's rule for object arrays)
 * pack_object_array(...)       the same, reading an object array's elements in place
 * unpack_bytes_array(...)      wire form -> a new object array of bytes, in one pass
 * unpack_bytes(buffer)        wire form -> list of bytes
 *
 * Both are thin loops around memcpy; all policy (which numpy dtypes are accepted,
 * which exception type the user sees) lives in tritonclient/utils/_serialize.py,
 * which also holds the pure numpy fallback used when this module is not built.
 *
 * format_json_numbers(buffer, kind) -> bytes
 *     The elements of a C-contiguous numeric buffer as comma-separated JSON number text
 *     (the inside of a JSON array).  See _py_format_json_numbers in _serialize.py for the
 *     exact rules, which the fallback there reproduces text for text.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
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

/* The bytes of one element for pack_bytes: element_view, and with coerce, any other object
 * as str(object) (NVIDIA's rule for object arrays), kept alive in *held. */
static int coerced_view(PyObject *item, Py_ssize_t index, int coerce, PyObject **held,
                        const char **data, Py_ssize_t *size)
{
    *held = NULL;
    if (coerce && !PyBytes_Check(item) && !PyUnicode_Check(item)) {
        *held = PyObject_Str(item);
        if (*held == NULL) {
            return -1;
        }
        item = *held;
    }
    if (element_view(item, index, data, size) < 0) {
        Py_CLEAR(*held);
        return -1;
    }
    return 0;
}

/* Pack n elements: one pass over them (each is touched once, which matters for a million of
 * them), into a bytes object that grows as needed and is cut to size at the end.  The first
 * capacity is guessed from the first elements. */
static PyObject *pack_items(PyObject **items, Py_ssize_t n, int coerce)
{
    const char *data;
    Py_ssize_t size;
    PyObject *held;

    /* Guess: the mean size of the first (up to) 64 elements, plus a quarter. */
    Py_ssize_t sample = n < 64 ? n : 64;
    Py_ssize_t sampled = 0;
    for (Py_ssize_t i = 0; i < sample; i++) {
        if (PyBytes_Check(items[i])) {
            sampled += PyBytes_GET_SIZE(items[i]);
        }
        else if (PyUnicode_Check(items[i])) {
            sampled += PyUnicode_GET_LENGTH(items[i]);
        }
    }
    Py_ssize_t mean = sample ? sampled / sample : 0;
    /* At most 1 GiB at first: a guess from large first elements must not ask for memory
     * that the whole tensor does not need; past it the buffer grows by halves. */
    Py_ssize_t per_element = 4 + mean + mean / 4 + 1;
    Py_ssize_t capacity = (Py_ssize_t)1 << 30;
    if (n < (capacity - 64) / per_element) {
        capacity = n * per_element + 64;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, capacity);
    if (out == NULL) {
        return NULL;
    }
    Py_ssize_t used = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (coerced_view(items[i], i, coerce, &held, &data, &size) < 0) {
            goto fail;
        }
        if ((uint64_t)size > UINT32_MAX) {
            PyErr_Format(PyExc_OverflowError,
                         "element %zd of the BYTES tensor is %zd bytes; the wire format "
                         "limits an element to 4294967295 bytes",
                         i, size);
            Py_XDECREF(held);
            goto fail;
        }
        if (capacity - used < 4 + size) {
            if (used > PY_SSIZE_T_MAX / 2 - 4 - size) {
                PyErr_SetString(PyExc_OverflowError, "serialized BYTES tensor is too large");
                Py_XDECREF(held);
                goto fail;
            }
            Py_ssize_t grown = capacity + capacity / 2;
            if (grown < used + 4 + size) {
                grown = used + 4 + size;
            }
            if (_PyBytes_Resize(&out, grown) < 0) { /* frees out on failure */
                Py_XDECREF(held);
                return NULL;
            }
            capacity = grown;
        }
        char *dst = PyBytes_AS_STRING(out) + used;
        put_u32le(dst, (uint32_t)size);
        memcpy(dst + 4, data, (size_t)size);
        used += 4 + size;
        Py_XDECREF(held);
    }
    if (used != capacity && _PyBytes_Resize(&out, used) < 0) {
        return NULL;
    }
    return out;

fail:
    Py_DECREF(out);
    return NULL;
}

/* pack_bytes(items, coerce=False): the elements of a sequence. */
static PyObject *pack_bytes(PyObject *self, PyObject *args)
{
    PyObject *arg;
    int coerce = 0;
    if (!PyArg_ParseTuple(args, "O|p:pack_bytes", &arg, &coerce)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(arg, "pack_bytes expects a sequence");
    if (seq == NULL) {
        return NULL;
    }
    PyObject *out = pack_items(PySequence_Fast_ITEMS(seq), PySequence_Fast_GET_SIZE(seq), coerce);
    Py_DECREF(seq);
    return out;
}

/* The element pointers of a C-contiguous numpy object array: its data is an array of
 * PyObject * (numpy's documented layout for dtype object).  The caller passes the array
 * (kept alive for the call), the address of its data and its size, and checks the layout. */
static PyObject **object_slots(PyObject *address, Py_ssize_t count)
{
    void *pointer = PyLong_AsVoidPtr(address);
    if (pointer == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (pointer == NULL && count > 0) {
        PyErr_SetString(PyExc_ValueError, "null data address for a non-empty array");
        return NULL;
    }
    return (PyObject **)pointer;
}

/* pack_object_array(array, address, count, coerce): the elements of a C-contiguous object
 * array read in place (no list of a million references made first). */
static PyObject *pack_object_array(PyObject *self, PyObject *args)
{
    PyObject *array, *address;
    Py_ssize_t count;
    int coerce = 0;
    if (!PyArg_ParseTuple(args, "OOn|p:pack_object_array", &array, &address, &count, &coerce)) {
        return NULL;
    }
    PyObject **items = object_slots(address, count);
    if (items == NULL && PyErr_Occurred()) {
        return NULL;
    }
    return pack_items(items, count, coerce);
}

/* The size of element index at offset, its boundaries checked; -1 with ValueError set. */
static Py_ssize_t element_size(const unsigned char *buf, Py_ssize_t len, Py_ssize_t offset,
                               Py_ssize_t index)
{
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
    return (Py_ssize_t)size;
}

/* Walk the length prefixes once: count the elements and validate every boundary. */
static Py_ssize_t count_elements(const unsigned char *buf, Py_ssize_t len)
{
    Py_ssize_t offset = 0;
    Py_ssize_t index = 0;
    while (offset < len) {
        Py_ssize_t size = element_size(buf, len, offset, index);
        if (size < 0) {
            return -1;
        }
        offset += 4 + size;
        index++;
    }
    return index;
}

/* unpack_bytes_array(buffer, make_array) -> array: one pass over the buffer (a million
 * elements' prefixes are read once, not counted first and read again), the new bytes objects
 * gathered in a C array, then moved into the slots of make_array(count), which returns a new
 * C-contiguous object array of count elements (each holding None, released here) and the
 * address of its data. */
static PyObject *unpack_bytes_array(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *make_array;
    if (!PyArg_ParseTuple(args, "y*O:unpack_bytes_array", &view, &make_array)) {
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t len = view.len;
    Py_ssize_t capacity = len / 16 + 16, count = 0, offset = 0;
    PyObject **items = PyMem_Malloc((size_t)capacity * sizeof(PyObject *));
    PyObject *made = NULL, *result = NULL;
    if (items == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    while (offset < len) {
        Py_ssize_t size = element_size(buf, len, offset, count);
        if (size < 0) {
            goto done;
        }
        if (count == capacity) {
            Py_ssize_t grown = capacity + capacity / 2 + 16;
            PyObject **more = PyMem_Realloc(items, (size_t)grown * sizeof(PyObject *));
            if (more == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            items = more;
            capacity = grown;
        }
        PyObject *item = PyBytes_FromStringAndSize((const char *)buf + offset + 4, size);
        if (item == NULL) {
            goto done;
        }
        items[count++] = item;
        offset += 4 + size;
    }
    made = PyObject_CallFunction(make_array, "n", count);
    if (made == NULL) {
        goto done;
    }
    PyObject *array, *address;
    if (!PyArg_ParseTuple(made, "OO:make_array result", &array, &address)) {
        goto done;
    }
    PyObject **slots = object_slots(address, count);
    if (slots == NULL && PyErr_Occurred()) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *old = slots[i];
        slots[i] = items[i]; /* the reference moves to the array */
        Py_XDECREF(old);
    }
    count = 0;
    Py_INCREF(array);
    result = array;

done:
    for (Py_ssize_t i = 0; i < count; i++) { /* not moved: released */
        Py_DECREF(items[i]);
    }
    PyMem_Free(items);
    Py_XDECREF(made);
    PyBuffer_Release(&view);
    return result;
}

/* Each of the count (checked) elements of buf as a new bytes object into slots[i] (the items
 * of a new list, NULL until then). */
static int fill_slots(const unsigned char *buf, Py_ssize_t count, PyObject **slots)
{
    Py_ssize_t offset = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t size = get_u32le(buf + offset);
        PyObject *item = PyBytes_FromStringAndSize((const char *)buf + offset + 4, size);
        if (item == NULL) {
            return -1;
        }
        PyObject *old = slots[i];
        slots[i] = item;
        Py_XDECREF(old);
        offset += 4 + (Py_ssize_t)size;
    }
    return 0;
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
    /* A new list's items are NULL; one left so after a failure is fine to release. */
    int failed = fill_slots(buf, count, PySequence_Fast_ITEMS(result));
    PyBuffer_Release(&view);
    if (failed) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}

/* ---------------------------------------------------------------------------------------
 * JSON number text
 * ------------------------------------------------------------------------------------- */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* v * 10**p as a chain of correctly rounded operations by exact powers of ten (at most
 * 1e22 each, largest steps first); the numpy fallback performs the very same chain. */
static double scale_pow10(double v, int p)
{
    if (p >= 0) {
        while (p > 22) {
            v = v * 1e22;
            p -= 22;
        }
        return v * POW10[p];
    }
    p = -p;
    while (p > 22) {
        v = v / 1e22;
        p -= 22;
    }
    return v / POW10[p];
}

static char *put_uint(char *dst, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    while (n) {
        *dst++ = tmp[--n];
    }
    return dst;
}

/* The integer of ``size`` bytes (1, 2, 4 or 8) at ``item``, widened to 64 bits: one ladder for
   the signed (``int``) and the unsigned (``uint``) kinds, which differ only in their types. */
#define DEFINE_LOAD(name, T)                                   \
    static inline T##64_t name(const char *item, Py_ssize_t size) \
    {                                                          \
        if (size == 1) {                                       \
            T##8_t t;                                          \
            memcpy(&t, item, 1);                               \
            return t;                                          \
        }                                                      \
        if (size == 2) {                                       \
            T##16_t t;                                         \
            memcpy(&t, item, 2);                               \
            return t;                                          \
        }                                                      \
        if (size == 4) {                                       \
            T##32_t t;                                         \
            memcpy(&t, item, 4);                               \
            return t;                                          \
        }                                                      \
        T##64_t t;                                             \
        memcpy(&t, item, 8);                                   \
        return t;                                              \
    }
DEFINE_LOAD(load_int, int)
DEFINE_LOAD(load_uint, uint)
#undef DEFINE_LOAD

static char *put_int(char *dst, int64_t v)
{
    if (v < 0) {
        *dst++ = '-';
        return put_uint(dst, (uint64_t)0 - (uint64_t)v);
    }
    return put_uint(dst, (uint64_t)v);
}

static char *put_special(char *dst, double v)
{
    const char *text = isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
    size_t n = strlen(text);
    memcpy(dst, text, n);
    return dst + n;
}

/* Write digits * 10**exp10 (digits > 0, no trailing zeros) the way Python's float repr
 * lays a number out: positional for a decimal point position in (-4, 16], else
 * d[.ddd]e+XX; integral values in positional form end with ".0". */
static char *put_decimal(char *dst, int negative, uint64_t digits, int exp10)
{
    char ds[20];
    int n = 0;
    char tmp[20];
    do {
        tmp[n++] = (char)('0' + (int)(digits % 10));
        digits /= 10;
    } while (digits);
    for (int i = 0; i < n; i++) {
        ds[i] = tmp[n - 1 - i];
    }
    int decpt = n + exp10; /* value = 0.ds * 10**decpt */
    if (negative) {
        *dst++ = '-';
    }
    if (decpt <= -4 || decpt > 16) {
        *dst++ = ds[0];
        if (n > 1) {
            *dst++ = '.';
            memcpy(dst, ds + 1, (size_t)(n - 1));
            dst += n - 1;
        }
        int e = decpt - 1;
        *dst++ = 'e';
        *dst++ = e < 0 ? '-' : '+';
        if (e < 0) {
            e = -e;
        }
        if (e < 10) {
            *dst++ = '0';
        }
        return put_uint(dst, (uint64_t)e);
    }
    if (decpt <= 0) {
        *dst++ = '0';
        *dst++ = '.';
        for (int i = 0; i < -decpt; i++) {
            *dst++ = '0';
        }
        memcpy(dst, ds, (size_t)n);
        return dst + n;
    }
    if (decpt < n) {
        memcpy(dst, ds, (size_t)decpt);
        dst += decpt;
        *dst++ = '.';
        memcpy(dst, ds + decpt, (size_t)(n - decpt));
        return dst + (n - decpt);
    }
    memcpy(dst, ds, (size_t)n);
    dst += n;
    for (int i = n; i < decpt; i++) {
        *dst++ = '0';
    }
    *dst++ = '.';
    *dst++ = '0';
    return dst;
}

/* Round to nearest, ties to even, for |v| < 2**52 (the default rounding mode's addition;
 * numpy.rint in the fallback gives the same results). */
static inline double round_even(double v)
{
    const double big = 4503599627370496.0; /* 2**52 */
    double t = (v < 0 ? -v : v) + big;
    double r = t - big;
    return v < 0 ? -r : r;
}

static inline double pow2(int n) /* 2**n for -1022 <= n <= 1023 */
{
    uint64_t bits = (uint64_t)(n + 1023) << 52;
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* A float32 as the shortest decimal (at most 9 significant digits) that lies inside its
 * rounding interval with a safety margin, so that parsing the text as float32 -- directly
 * or through a double -- gives the value back bit for bit. */
static char *put_float32(char *dst, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    int negative = (bits >> 31) != 0;
    int biased = (int)((bits >> 23) & 0xff);
    uint32_t mantissa = bits & 0x7fffff;
    if (biased == 0xff) {
        return put_special(dst, (double)f);
    }
    if (biased == 0 && mantissa == 0) {
        memcpy(dst, negative ? "-0.0" : "0.0", negative ? 4 : 3);
        return dst + (negative ? 4 : 3);
    }
    double a = negative ? -(double)f : (double)f;
    int e2;  /* floor(log2(a)) */
    double h; /* half the distance to the nearer float32 neighbour */
    if (biased == 0) {
        e2 = -150;
        for (uint32_t m = mantissa; m; m >>= 1) {
            e2++;
        }
        h = pow2(-150);
    } else {
        e2 = biased - 127;
        h = pow2((mantissa == 0 && biased > 1) ? e2 - 25 : e2 - 24);
    }
    /* k = floor(e2 * log10(2)) = floor(e2 * 78913 / 2**18): floor(log10(a)) or one less
     * (written without shifting a negative number, whose result C leaves to the compiler) */
    int k = e2 >= 0 ? (e2 * 78913) >> 18 : -((-e2 * 78913 + (1 << 18) - 1) >> 18);
    int p = 8 - k;
    double y = scale_pow10(a, p);
    double s = round_even(y);
    if (s >= 1e9) {
        p -= 1;
        y = scale_pow10(a, p);
        s = round_even(y);
    }
    double limit = scale_pow10(h, p) * 0.9990234375;
    double best = s;
    int drop = 0;
    for (int j = 1; j <= 8; j++) {
        double c = round_even(y / POW10[j]);
        if (fabs(c * POW10[j] - y) < limit) {
            best = c;
            drop = j;
        } else {
            break;
        }
    }
    uint64_t digits = (uint64_t)best;
    int exp10 = drop - p;
    while (digits % 10 == 0) {
        digits /= 10;
        exp10++;
    }
    return put_decimal(dst, negative, digits, exp10);
}

/* A double as Python's repr writes it (the shortest text that round-trips). */
static char *put_float64(char *dst, double v)
{
    if (!isfinite(v)) {
        return put_special(dst, v);
    }
    char *text = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (text == NULL) {
        return NULL;
    }
    size_t n = strlen(text);
    memcpy(dst, text, n);
    PyMem_Free(text);
    return dst + n;
}

static PyObject *format_json_numbers(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *obj;
    int kind;
    if (!PyArg_ParseTuple(args, "OC:format_json_numbers", &obj, &kind)) {
        return NULL;
    }
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return NULL;
    }
    Py_ssize_t itemsize = view.itemsize;
    const char *fmt = view.format == NULL ? "B" : view.format;
#if PY_BIG_ENDIAN
    const char native = '>';
#else
    const char native = '<';
#endif
    if (fmt[0] == '@' || fmt[0] == '=' || fmt[0] == native) {
        fmt++;
    }
    int ok;
    Py_ssize_t width; /* most bytes one element can take, comma included */
    switch (kind) {
    case 'b':
        ok = itemsize == 1;
        width = 6;
        break;
    case 'i':
    case 'u':
        ok = itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8;
        width = 21;
        break;
    case 'f':
        ok = itemsize == 4 && fmt[0] == 'f';
        width = 24;
        break;
    case 'd':
        ok = (itemsize == 4 && fmt[0] == 'f') || (itemsize == 8 && fmt[0] == 'd');
        width = 32;
        break;
    default:
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "unknown number kind '%c'", kind);
        return NULL;
    }
    if (!ok || view.len % itemsize != 0) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError,
                     "format_json_numbers: kind '%c' does not take items of format '%s' "
                     "and size %zd",
                     kind, fmt, itemsize);
        return NULL;
    }
    Py_ssize_t count = view.len / itemsize;
    if (count == 0) {
        PyBuffer_Release(&view);
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    if (count > PY_SSIZE_T_MAX / width) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * width);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    char *start = PyBytes_AS_STRING(out);
    char *dst = start;
    const char *src = (const char *)view.buf;

    if (kind == 'd') {
        for (Py_ssize_t i = 0; i < count; i++) {
            double v;
            if (itemsize == 4) {
                float f;
                memcpy(&f, src + i * 4, 4);
                v = (double)f;
            } else {
                memcpy(&v, src + i * 8, 8);
            }
            if (i) {
                *dst++ = ',';
            }
            dst = put_float64(dst, v);
            if (dst == NULL) {
                Py_DECREF(out);
                PyBuffer_Release(&view);
                return NULL;
            }
        }
    } else {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < count; i++) {
            if (i) {
                *dst++ = ',';
            }
            const char *item = src + i * itemsize;
            if (kind == 'b') {
                if (*item) {
                    memcpy(dst, "true", 4);
                    dst += 4;
                } else {
                    memcpy(dst, "false", 5);
                    dst += 5;
                }
            } else if (kind == 'f') {
                float f;
                memcpy(&f, item, 4);
                dst = put_float32(dst, f);
            } else if (kind == 'i') {
                dst = put_int(dst, load_int(item, itemsize));
            } else {
                dst = put_uint(dst, load_uint(item, itemsize));
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&out, dst - start) < 0) {
        return NULL;
    }
    return out;
}

static PyMethodDef speedups_methods[] = {
    {"pack_bytes", pack_bytes, METH_VARARGS,
     "pack_bytes(items, coerce=False) -> bytes: length-prefix and concatenate bytes/str "
     "items (with coerce, any other item as str(item))."},
    {"pack_object_array", pack_object_array, METH_VARARGS,
     "pack_object_array(array, address, count, coerce=False) -> bytes: pack_bytes of the "
     "elements of a C-contiguous object array, read in place."},
    {"unpack_bytes_array", unpack_bytes_array, METH_VARARGS,
     "unpack_bytes_array(buffer, make_array) -> array: split the elements into a new object "
     "array made by make_array(count) -> (array, data address)."},
    {"unpack_bytes", unpack_bytes, METH_VARARGS,
     "unpack_bytes(buffer) -> list[bytes]: split length-prefixed elements."},
    {"format_json_numbers", format_json_numbers, METH_VARARGS,
     "format_json_numbers(buffer, kind) -> bytes: comma-separated JSON number text."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "_speedups", "C accelerator for the BYTES tensor codec and JSON number text.", -1,
    speedups_methods,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    return PyModule_Create(&speedups_module);
}
