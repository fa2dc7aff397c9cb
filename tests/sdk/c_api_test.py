"""The C API (include/torchless/c_api.h) driven from Python ctypes, as a binding would.

Run by tests/sdk/extra.cmake:
    TORCHLESS_LIB=build/lib/libtorchless.so TORCHLESS_SDK_MODELS=build/sdk_models pytest c_api_test.py
Expected numbers are PyTorch's (tests/sdk/gen_models.py).
"""
import ctypes as C
import os
import threading
from pathlib import Path

import numpy as np
import pytest

LIB = C.CDLL(os.environ["TORCHLESS_LIB"])
MODELS = Path(os.environ["TORCHLESS_SDK_MODELS"])

TL_OK, TL_ERROR, TL_ERROR_MODEL, TL_ERROR_UNSUPPORTED, TL_ERROR_INVALID_ARGUMENT = 0, 1, 2, 3, 4
TL_FLOAT32, TL_INT64, TL_FLOAT64 = 6, 4, 7
KIND_NONE, KIND_TENSOR, KIND_DOUBLE, KIND_INT, KIND_BOOL, KIND_STRING, KIND_LIST, KIND_TUPLE, KIND_DICT = range(9)

P = C.c_void_p
PP = C.POINTER(C.c_void_p)
I64P = C.POINTER(C.c_int64)
DELETER = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p)


def sig(name, res, *args):
    f = getattr(LIB, name)
    f.restype = res
    f.argtypes = list(args)
    return f


sig("tl_last_error", C.c_char_p)
sig("tl_version", C.c_char_p)
sig("tl_module_load", C.c_int, C.c_char_p, PP)
sig("tl_module_free", None, P)
sig("tl_module_forward", C.c_int, P, PP, C.c_size_t, PP)
sig("tl_module_run_method", C.c_int, P, C.c_char_p, PP, C.c_size_t, PP)
sig("tl_module_num_methods", C.c_size_t, P)
sig("tl_module_method_name", C.c_char_p, P, C.c_size_t)
sig("tl_module_has_method", C.c_int, P, C.c_char_p)
sig("tl_module_attr", C.c_int, P, C.c_char_p, PP)
sig("tl_module_named_tensors", C.c_int, P, C.c_int, PP)
sig("tl_module_named_attributes", C.c_int, P, C.c_int, PP)
sig("tl_value_to_module", C.c_int, P, PP)
sig("tl_value_is_module", C.c_int, P)
sig("tl_module_to_dtype", C.c_int, P, C.c_int)
sig("tl_module_set_training", C.c_int, P, C.c_int)
sig("tl_module_is_training", C.c_int, P)
sig("tl_tensor_from_buffer", C.c_int, P, C.c_int, I64P, C.c_size_t, I64P, DELETER, P, PP)
sig("tl_tensor_copy_from", C.c_int, P, C.c_int, I64P, C.c_size_t, PP)
sig("tl_tensor_zeros", C.c_int, C.c_int, I64P, C.c_size_t, PP)
sig("tl_tensor_free", None, P)
sig("tl_tensor_dtype", C.c_int, P)
sig("tl_tensor_dim", C.c_size_t, P)
sig("tl_tensor_sizes", I64P, P)
sig("tl_tensor_strides", I64P, P)
sig("tl_tensor_numel", C.c_int64, P)
sig("tl_tensor_data", P, P)
sig("tl_tensor_is_contiguous", C.c_int, P)
sig("tl_tensor_copy_to", C.c_int, P, P, C.c_size_t)
sig("tl_tensor_to_string", C.c_void_p, P)
sig("tl_string_free", None, C.c_void_p)
sig("tl_value_none", P)
sig("tl_value_from_tensor", P, P)
sig("tl_value_from_int", P, C.c_int64)
sig("tl_value_from_double", P, C.c_double)
sig("tl_value_from_string", P, C.c_char_p)
sig("tl_value_tuple", C.c_int, PP, C.c_size_t, PP)
sig("tl_value_list", C.c_int, PP, C.c_size_t, PP)
sig("tl_value_free", None, P)
sig("tl_value_get_kind", C.c_int, P)
sig("tl_value_to_tensor", C.c_int, P, PP)
sig("tl_value_to_int", C.c_int, P, I64P)
sig("tl_value_to_double", C.c_int, P, C.POINTER(C.c_double))
sig("tl_value_to_string", C.c_int, P, C.POINTER(C.c_char_p), C.POINTER(C.c_size_t))
sig("tl_value_length", C.c_int, P, C.POINTER(C.c_size_t))
sig("tl_value_element", C.c_int, P, C.c_size_t, PP)
sig("tl_value_dict_key", C.c_int, P, C.c_size_t, PP)
sig("tl_value_dict_value", C.c_int, P, C.c_size_t, PP)
sig("tl_op_find", C.c_int, C.c_char_p, PP)
sig("tl_op_call", C.c_int, P, PP, C.c_size_t, PP)
sig("tl_op_schema", C.c_char_p, P)


def check(status):
    assert status == TL_OK, LIB.tl_last_error().decode()


def load(name):
    m = P()
    check(LIB.tl_module_load(str(MODELS / name).encode(), C.byref(m)))
    return m


def sizes_arr(shape):
    return (C.c_int64 * len(shape))(*shape)


def borrow(a):
    """A tensor over numpy array `a`'s memory (no copy); `a` must outlive it."""
    t = P()
    dtype = {np.float32: TL_FLOAT32, np.int64: TL_INT64, np.float64: TL_FLOAT64}[a.dtype.type]
    strides = sizes_arr([s // a.itemsize for s in a.strides])
    check(LIB.tl_tensor_from_buffer(a.ctypes.data, dtype, sizes_arr(a.shape), a.ndim, strides,
                                    DELETER(0), None, C.byref(t)))
    return t


def to_numpy(t):
    shape = [LIB.tl_tensor_sizes(t)[i] for i in range(LIB.tl_tensor_dim(t))]
    dtype = {TL_FLOAT32: np.float32, TL_INT64: np.int64, TL_FLOAT64: np.float64}[LIB.tl_tensor_dtype(t)]
    out = np.empty(shape, dtype=dtype)
    check(LIB.tl_tensor_copy_to(t, out.ctypes.data, out.nbytes))
    return out


def value_tensor(v):
    t = P()
    check(LIB.tl_value_to_tensor(v, C.byref(t)))
    a = to_numpy(t)
    LIB.tl_tensor_free(t)
    return a


def forward(m, *values, method=None):
    args = (P * len(values))(*values)
    out = P()
    if method:
        check(LIB.tl_module_run_method(m, method.encode(), args, len(values), C.byref(out)))
    else:
        check(LIB.tl_module_forward(m, args, len(values), C.byref(out)))
    return out


def element(v, i):
    e = P()
    check(LIB.tl_value_element(v, i, C.byref(e)))
    return e


def test_version():
    assert LIB.tl_version().decode().count(".") == 2


def test_forward_matches_pytorch():
    m = load("classifier.pt")
    x = np.load(MODELS / "classifier_in.npy")
    t = borrow(x)
    v = LIB.tl_value_from_tensor(t)
    out = forward(m, v)
    assert LIB.tl_value_get_kind(out) == KIND_TENSOR
    np.testing.assert_allclose(value_tensor(out), np.load(MODELS / "classifier_out.npy"), rtol=1e-4, atol=1e-5)
    for h in (out, v):
        LIB.tl_value_free(h)
    LIB.tl_tensor_free(t)
    LIB.tl_module_free(m)


def test_tuple_list_dict_outputs_attributes_and_methods():
    m = load("multi_out.pt")
    x = np.load(MODELS / "multi_in.npy")
    t = borrow(x)
    v = LIB.tl_value_from_tensor(t)
    out = forward(m, v)
    assert LIB.tl_value_get_kind(out) == KIND_TUPLE
    n = C.c_size_t()
    check(LIB.tl_value_length(out, C.byref(n)))
    assert n.value == 3
    np.testing.assert_allclose(value_tensor(element(out, 0)), np.load(MODELS / "multi_out0.npy"), rtol=1e-5, atol=1e-6)
    parts = element(out, 1)
    assert LIB.tl_value_get_kind(parts) == KIND_LIST
    for i in range(3):
        np.testing.assert_allclose(value_tensor(element(parts, i)), np.load(MODELS / f"multi_parts{i}.npy"),
                                   rtol=1e-5, atol=1e-6)
    d = element(out, 2)
    assert LIB.tl_value_get_kind(d) == KIND_DICT
    check(LIB.tl_value_length(d, C.byref(n)))
    keys = []
    for i in range(n.value):
        k = P()
        check(LIB.tl_value_dict_key(d, i, C.byref(k)))
        s = C.c_char_p()
        check(LIB.tl_value_to_string(k, C.byref(s), None))
        keys.append(s.value.decode())
    assert keys == ["max", "argmax", "mean"]  # insertion order, as PyTorch keeps it
    # An exported method with a float argument.
    k = LIB.tl_value_from_double(2.0)
    scaled = forward(m, v, k, method="scale_by")
    np.testing.assert_allclose(value_tensor(scaled), np.load(MODELS / "multi_scale_by.npy"), rtol=1e-6)
    assert LIB.tl_module_has_method(m, b"scale_by") == 1
    names = [LIB.tl_module_method_name(m, i).decode() for i in range(LIB.tl_module_num_methods(m))]
    assert "forward" in names and "scale_by" in names
    # Attributes.
    a = P()
    check(LIB.tl_module_attr(m, b"steps", C.byref(a)))
    i64 = C.c_int64()
    check(LIB.tl_value_to_int(a, C.byref(i64)))
    assert i64.value == 3
    check(LIB.tl_module_attr(m, b"scale", C.byref(a)))
    dbl = C.c_double()
    check(LIB.tl_value_to_double(a, C.byref(dbl)))
    assert dbl.value == 0.5
    assert LIB.tl_module_attr(m, b"no_such_attr", C.byref(a)) == TL_ERROR
    assert b"no_such_attr" in LIB.tl_last_error()
    # Parameters as named_parameters() names them.
    p = P()
    check(LIB.tl_module_named_tensors(m, 0, C.byref(p)))
    check(LIB.tl_value_length(p, C.byref(n)))
    got = []
    for i in range(n.value):
        s = C.c_char_p()
        check(LIB.tl_value_to_string(element(element(p, i), 0), C.byref(s), None))
        got.append(s.value.decode())
    assert got == ["lin.weight", "lin.bias"]
    LIB.tl_module_free(m)


def test_submodules_training_and_dtype():
    m = load("classifier.pt")
    head = P()
    check(LIB.tl_module_attr(m, b"head", C.byref(head)))
    assert LIB.tl_value_is_module(head) == 1
    sub = P()
    check(LIB.tl_value_to_module(head, C.byref(sub)))
    feats = np.ones((2, 16), dtype=np.float32)
    t = borrow(feats)
    v = LIB.tl_value_from_tensor(t)
    out = forward(sub, v)
    assert value_tensor(out).shape == (2, 10)
    # Not a module: a clear argument error.
    bad = P()
    assert LIB.tl_value_to_module(v, C.byref(bad)) == TL_ERROR_INVALID_ARGUMENT
    assert "expected a module" in LIB.tl_last_error().decode()
    # named_attributes: the root's own first, a submodule then its attributes (dotted).
    attrs = P()
    check(LIB.tl_module_named_attributes(m, 1, C.byref(attrs)))
    n = C.c_size_t()
    check(LIB.tl_value_length(attrs, C.byref(n)))
    names = []
    for i in range(n.value):
        pair = element(attrs, i)
        name = element(pair, 0)
        p, ln = C.c_char_p(), C.c_size_t()
        check(LIB.tl_value_to_string(name, C.byref(p), C.byref(ln)))
        names.append(p.value.decode())
        LIB.tl_value_free(name)
        LIB.tl_value_free(pair)
    assert names[0] == "training" and "head" in names and "head.weight" in names
    assert names.index("head") < names.index("head.weight")
    # train / eval.
    assert LIB.tl_module_is_training(m) == 0  # saved in eval mode
    check(LIB.tl_module_set_training(m, 1))
    assert LIB.tl_module_is_training(m) == 1
    check(LIB.tl_module_set_training(m, 0))
    # to(float64): the forward now wants float64 inputs and gives float64 outputs.
    check(LIB.tl_module_to_dtype(m, TL_FLOAT64))
    x = np.load(MODELS / "classifier_in.npy").astype(np.float64)
    tx = borrow(x)
    vx = LIB.tl_value_from_tensor(tx)
    y = forward(m, vx)
    got = value_tensor(y)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.load(MODELS / "classifier_out.npy"), rtol=1e-4, atol=1e-5)
    for h in (head, v, out, attrs, vx, y):
        LIB.tl_value_free(h)
    for h in (t, tx):
        LIB.tl_tensor_free(h)
    LIB.tl_module_free(sub)
    LIB.tl_module_free(m)


@pytest.mark.parametrize("seed", [0, 12345, 2**40 + 7])
def test_random_ops_give_pytorchs_numbers(seed):
    """torch.manual_seed + rand/randn/randint/randperm/normal_/uniform_/random_/bernoulli in
    TorchScript: bit-exact with PyTorch (gen_models.py)."""
    m = load("random_ops.pt")
    s = LIB.tl_value_from_int(seed)
    out = forward(m, s)
    n = C.c_size_t()
    check(LIB.tl_value_length(out, C.byref(n)))
    expected = sorted(MODELS.glob(f"random_{seed}_*.npy"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    assert n.value == len(expected) > 20
    for i, path in enumerate(expected):
        e = element(out, i)
        t = P()
        check(LIB.tl_value_to_tensor(e, C.byref(t)))
        shape = [LIB.tl_tensor_sizes(t)[k] for k in range(LIB.tl_tensor_dim(t))]
        ref = np.load(path)
        got = np.empty(shape, dtype=ref.dtype)
        check(LIB.tl_tensor_copy_to(t, got.ctypes.data, got.nbytes))
        assert got.shape == ref.shape and got.dtype == ref.dtype, path.name
        assert got.tobytes() == np.ascontiguousarray(ref).tobytes(), f"{path.name}: {got} vs {ref}"
        LIB.tl_tensor_free(t)
        LIB.tl_value_free(e)
    LIB.tl_value_free(out)
    LIB.tl_value_free(s)
    bad = P()
    assert LIB.tl_module_run_method(m, b"bad_normal", None, 0, C.byref(bad)) != TL_OK
    assert "not implemented for 'Long'" in LIB.tl_last_error().decode()
    LIB.tl_module_free(m)


def test_borrowed_buffer_is_shared_and_deleter_runs():
    calls = []

    @DELETER
    def deleter(data, ctx):
        calls.append(ctx)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = P()
    check(LIB.tl_tensor_from_buffer(x.ctypes.data, TL_FLOAT32, sizes_arr([2, 3]), 2, None, deleter, 42, C.byref(t)))
    assert LIB.tl_tensor_data(t) == x.ctypes.data  # not copied
    x[1, 2] = 100.0
    assert to_numpy(t)[1, 2] == 100.0
    v = LIB.tl_value_from_tensor(t)  # shares the tensor
    LIB.tl_tensor_free(t)
    assert calls == []
    LIB.tl_value_free(v)
    assert calls == [42]


def test_copied_tensor_and_strided_views():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = P()
    check(LIB.tl_tensor_copy_from(x.ctypes.data, TL_FLOAT64, sizes_arr([3, 4]), 2, C.byref(t)))
    x[0, 0] = -1
    assert to_numpy(t)[0, 0] == 0  # a copy
    tr = np.ascontiguousarray(np.arange(12, dtype=np.float32).reshape(3, 4)).T  # strided, not contiguous
    bt = borrow(tr)
    assert LIB.tl_tensor_is_contiguous(bt) == 0
    np.testing.assert_array_equal(to_numpy(bt), tr)
    LIB.tl_tensor_free(t)
    LIB.tl_tensor_free(bt)


def test_operators_from_the_op_table():
    op = P()
    check(LIB.tl_op_find(b"aten::softmax.int", C.byref(op)))
    assert LIB.tl_op_schema(op).decode().startswith("aten::softmax.int(Tensor self, int dim")
    x = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    t = borrow(x)
    args = (P * 3)(LIB.tl_value_from_tensor(t), LIB.tl_value_from_int(1), LIB.tl_value_none())
    out = P()
    check(LIB.tl_op_call(op, args, 3, C.byref(out)))
    e = np.exp(x - x.max())
    np.testing.assert_allclose(value_tensor(out), e / e.sum(), rtol=1e-6)
    assert LIB.tl_op_call(op, args, 2, C.byref(out)) == TL_ERROR_INVALID_ARGUMENT
    assert b"takes 3 arguments" in LIB.tl_last_error()
    assert LIB.tl_op_find(b"aten::no_such_op", C.byref(op)) == TL_ERROR
    assert b"aten::no_such_op" in LIB.tl_last_error()


def test_errors_have_codes_and_messages():
    m = P()
    assert LIB.tl_module_load(b"/nonexistent/model.pt", C.byref(m)) == TL_ERROR
    assert b"/nonexistent/model.pt" in LIB.tl_last_error()
    raises = load("raises.pt")
    x = np.ones((2, 2), dtype=np.float32)
    t = borrow(x)
    v = LIB.tl_value_from_tensor(t)
    out = P()
    assert LIB.tl_module_forward(raises, (P * 1)(v), 1, C.byref(out)) == TL_ERROR_MODEL
    assert b"expected a 4-d input" in LIB.tl_last_error()
    assert out.value is None  # nothing written on failure
    assert LIB.tl_module_forward(None, (P * 1)(v), 1, C.byref(out)) == TL_ERROR_INVALID_ARGUMENT
    i64 = C.c_int64()
    assert LIB.tl_value_to_int(v, C.byref(i64)) == TL_ERROR_INVALID_ARGUMENT
    assert b"expected a int value" in LIB.tl_last_error()
    assert LIB.tl_tensor_zeros(99, sizes_arr([1]), 1, C.byref(t)) == TL_ERROR_INVALID_ARGUMENT
    assert LIB.tl_tensor_zeros(TL_FLOAT32, sizes_arr([-1]), 1, C.byref(t)) == TL_ERROR_INVALID_ARGUMENT
    buf = np.zeros(3, dtype=np.float32)
    t2 = borrow(np.ones(4, dtype=np.float32))
    assert LIB.tl_tensor_copy_to(t2, buf.ctypes.data, buf.nbytes) == TL_ERROR_INVALID_ARGUMENT
    LIB.tl_module_free(raises)


def test_error_message_is_per_thread():
    m = P()
    assert LIB.tl_module_load(b"/nonexistent/a.pt", C.byref(m)) == TL_ERROR
    seen = []

    def other():
        assert LIB.tl_module_load(b"/nonexistent/b.pt", C.byref(P())) == TL_ERROR
        seen.append(LIB.tl_last_error())

    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert b"b.pt" in seen[0]
    assert b"a.pt" in LIB.tl_last_error()


def test_one_module_from_several_threads():
    m = load("classifier.pt")
    x = np.load(MODELS / "classifier_in.npy")
    want = np.load(MODELS / "classifier_out.npy")
    errors = []

    def worker():
        try:
            for _ in range(5):
                t = borrow(x)
                v = LIB.tl_value_from_tensor(t)
                out = forward(m, v)
                np.testing.assert_allclose(value_tensor(out), want, rtol=1e-4, atol=1e-5)
                LIB.tl_value_free(out)
                LIB.tl_value_free(v)
                LIB.tl_tensor_free(t)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    LIB.tl_module_free(m)


def test_tensor_prints_as_libtorch():
    x = np.array([[1.5, -2.25], [3.0, 4.0]], dtype=np.float32)
    t = borrow(x)
    p = LIB.tl_tensor_to_string(t)
    s = C.string_at(p).decode()
    LIB.tl_string_free(p)
    assert s == " 1.5000 -2.2500\n 3.0000  4.0000\n[ CPUFloatType{2,2} ]"
