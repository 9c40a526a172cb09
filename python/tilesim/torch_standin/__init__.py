"""A torch for tracing: the modules a kernel file's torch wrapper imports (``torch``,
``torch.npu``, ``torch._dynamo``, ``torch.library``, ``torch.nn``, ``torch_npu``), whose tensors
carry a shape, a dtype and a device and no data. Front ends that run a user's kernel file under
tilesim (tilesim.pypto, and the Triton front end) install it while the file runs:

    with torch_standin.installed():
        exec(kernel_file)              # `import torch, torch_npu` get the stand-in

What it answers: tensor creation (empty, zeros, ones, full, randn, rand, randint, arange, tensor,
from_numpy and their _like forms), dtypes, devices, a tensor's shape / size() / stride() /
numel() / element_size() / dtype / device / is_contiguous(), view / reshape of contiguous
tensors, unsqueeze / squeeze / expand / permute / transpose / cat / stack / pad and the
elementwise and reduction functions as shapes. Registrations (``torch._dynamo.allow_in_graph``,
``torch.library.custom_op`` / ``Library`` / ``impl`` / ``register_fake``) are accepted and do
nothing but remember the NPU implementation, which ``torch.ops.NS.NAME(...)`` then calls, as on a
board. Device calls (``torch.npu.synchronize``, ``set_device``) do nothing. A call that needs
tensor values (``item``, ``allclose``, ``torch_npu.npu_*`` golden ops) raises NeedsValues, unless
a front end answers the scalar reads (``item()``, ``float(t)``) through ``SCALAR_ANSWER``.

The stand-in replaces an installed torch only while the kernel file runs (sys.modules is
restored after): a traced kernel needs no values, a CPU torch has no ``torch.npu``, and tensors
of a model's shapes would take their memory for nothing.
"""
import contextlib
import importlib.abc
import importlib.machinery
import math
import sys
import types

from . import _tensor as _t
from ._tensor import (SCALAR_ANSWER, NeedsValues, Size, StandInError, Tensor, broadcast_shapes,
                      device, dtype, elementwise)

__all__ = ["NeedsValues", "SCALAR_ANSWER", "StandInError", "Tensor", "dtype_named", "installed",
           "modules"]

# tilesim's program dtype names (model/dtype.cpp) as torch's
_PROGRAM_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int8": "int8",
                   "int32": "int32"}


def dtype_named(name):
    """The torch dtype of a tilesim program dtype ("fp16") or of a torch name ("float16")."""
    return _t.DTYPES[_PROGRAM_DTYPES.get(name, name)]

# The NPU implementations registered through torch.library: "ns::name" -> callable.
_registry = {}
# Device keys whose implementation runs on the NPU (what torch.ops calls on a board).
_NPU_KEYS = ("npu", "privateuse1", "PrivateUse1", "NPU")


def _module(name, doc):
    m = types.ModuleType(name, doc)
    m.__file__ = __file__
    return m


def _creation_dtype(kw, like=None):
    if kw.get("dtype") is not None:
        return _t.as_dtype(kw["dtype"], "torch tensor creation")
    return like.dtype if like is not None else _t.default_dtype()


def _new(*size, **kw):
    return Tensor(_t._dims(size, "torch tensor creation"), _creation_dtype(kw),
                  kw.get("device"))


def _like(x, **kw):
    return Tensor(x.shape, _creation_dtype(kw, x), kw.get("device") or x.device)


def _full(size, fill_value=None, **kw):
    return _new(size, **kw)


def _randint(*args, size=None, **kw):
    if size is None:
        size = args[-1]
    kw.setdefault("dtype", _t.DTYPES["int64"])
    return _new(size, **kw)


def _arange(*args, **kw):
    numbers = [a for a in args if isinstance(a, (int, float))]
    start, stop, step = (0, numbers[0], 1) if len(numbers) == 1 else (list(numbers) + [1])[:3]
    kw.setdefault("dtype", _t.DTYPES["int64"] if all(isinstance(a, int) for a in numbers)
                  else _t.default_dtype())
    return _new(max(0, math.ceil((stop - start) / step)), **kw)


def _nested_shape(data):
    shape = []
    while isinstance(data, (list, tuple)):
        shape.append(len(data))
        data = data[0] if data else None
    return shape, data


def _tensor_from(data, **kw):
    if isinstance(data, Tensor):
        return _like(data, **kw)
    shape, first = _nested_shape(data)
    if kw.get("dtype") is None:
        kw["dtype"] = (_t.DTYPES["bool"] if isinstance(first, bool) else _t.DTYPES["int64"]
                       if isinstance(first, int) else _t.default_dtype())
    return _new(shape, **kw)


def _from_numpy(array):
    return Tensor(tuple(array.shape), _t.as_dtype(str(array.dtype), "torch.from_numpy"))


def _cat(tensors, dim=0, **kw):
    tensors = [t for t in tensors if t.numel() or t.dim() > 1]
    if not tensors:
        raise StandInError("torch.cat", "no tensors")
    d = _t._index(dim, tensors[0].dim(), "torch.cat")
    base = list(tensors[0].shape)
    for t in tensors[1:]:
        if t.dim() != len(base) or any(a != b for i, (a, b) in enumerate(zip(t.shape, base))
                                       if i != d):
            raise StandInError("torch.cat", f"shapes {[list(x.shape) for x in tensors]} differ "
                               f"outside dim {d}")
    base[d] = sum(t.shape[d] for t in tensors)
    return Tensor(base, tensors[0].dtype, tensors[0].device)


def _stack(tensors, dim=0, **kw):
    return _cat([t.unsqueeze(dim) for t in tensors], dim)


def _pad(x, pad, mode="constant", value=None):
    if len(pad) % 2 or len(pad) // 2 > x.dim():
        raise StandInError("torch.nn.functional.pad", f"pad {list(pad)}: pairs for the last dims")
    shape = list(x.shape)
    for i in range(len(pad) // 2):
        shape[-1 - i] += pad[2 * i] + pad[2 * i + 1]
    return Tensor(shape, x.dtype, x.device)


def _where(cond, x=None, y=None):
    if x is None:
        raise NeedsValues("torch.where(cond) (the indices of true elements)")
    return elementwise(*[v for v in (x, y, cond) if isinstance(v, Tensor)],
                       dtype=(x if isinstance(x, Tensor) else y).dtype)


def _unary_fn(name):
    def fn(x, *args, **kwargs):
        return x._like()
    fn.__name__ = name
    return fn


def _binary_fn(name):
    def fn(a, b, *args, **kwargs):
        return elementwise(a, b)
    fn.__name__ = name
    return fn


def _norm(x, normalized_shape=None, weight=None, bias=None, eps=None, **kw):
    return x._like()


class _NoGrad(contextlib.ContextDecorator):
    """no_grad, inference_mode, amp.autocast(...): a context or decorator with no effect."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _no_op(*args, **kwargs):
    return None


def _first_or_decorator(fn=None, *args, **kwargs):
    """allow_in_graph(fn) / disable(fn) / disable(recursive=False)(fn): fn itself."""
    return fn if callable(fn) else (lambda f: f)


class _Namespace:
    """An object whose every attribute may be set and read (torch._dynamo.config ...)."""

    def __init__(self, name):
        self.__dict__["_name"] = name

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        return None

    def __setattr__(self, key, value):
        self.__dict__[key] = value


class _Stream:
    """torch.npu's Stream and Event: ordering calls do nothing (no device); a board's timing
    (elapsed_time) needs values."""

    npu_stream = cuda_stream = 0

    def __init__(self, *args, **kwargs):
        pass

    def synchronize(self, *args, **kwargs):
        return None

    wait_stream = wait_event = record_event = record = wait = synchronize

    def query(self):
        return True

    def elapsed_time(self, *args):
        raise NeedsValues("an event's elapsed_time (a board's timing)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _CustomOp:
    """What torch.library.custom_op returns: callable as the op, with register_* accepted."""

    def __init__(self, qualname, fn, device_types):
        self._qualname, self._fn = qualname, fn
        self.__name__ = getattr(fn, "__name__", qualname)
        if fn is not None:
            _registry.setdefault(qualname, fn)
        self._device_types = device_types

    def __call__(self, *args, **kwargs):
        return _ops_call(self._qualname)(*args, **kwargs)

    def register_fake(self, fn):
        return fn

    register_autograd = register_torch_dispatch = register_vmap = _no_op

    def register_kernel(self, device_types, fn=None):
        def reg(f):
            if _npu_device(device_types):
                _registry[self._qualname] = f
            return f
        return reg(fn) if fn is not None else reg


def _npu_device(keys):
    keys = [keys] if isinstance(keys, str) or keys is None else list(keys)
    return any(k is None or str(k) in _NPU_KEYS or str(k).lower() in _NPU_KEYS for k in keys)


def _qualname(name, lib=None):
    if "::" in name or lib is None:
        return name
    return f"{lib.ns}::{name}"


def _custom_op(name, fn=None, *, mutates_args=(), device_types=None, schema=None, **kw):
    def make(f):
        return _CustomOp(name, f, device_types)
    return make(fn) if fn is not None else make


def _impl(qualname, types=None, func=None, *, lib=None, **kw):  # noqa: A002
    if isinstance(qualname, _Library):
        # torch.library.impl(lib, "op", "Key"): the older spelling, the library first
        return qualname.impl(types, func if callable(func) else None,
                             func if isinstance(func, str) else kw.get("dispatch_key", ""))

    def reg(f):
        if _npu_device(types):
            _registry[_qualname(qualname, lib)] = f
        return f
    return reg(func) if func is not None else reg


def _register_fake(qualname, fn=None, *, lib=None, **kw):
    return fn if fn is not None else (lambda f: f)


class _Library:
    """torch.library.Library(ns, kind): define() is accepted, impl() remembers the NPU one."""

    def __init__(self, ns, kind="DEF", dispatch_key=""):
        self.ns = ns

    def define(self, schema, *args, **kwargs):
        return schema.split("(")[0]

    def impl(self, name, fn=None, dispatch_key="", **kwargs):
        qual = _qualname(getattr(name, "__name__", name), self)
        if fn is None:
            return lambda f: self.impl(name, f, dispatch_key)
        if not dispatch_key or _npu_device(dispatch_key):
            _registry[qual] = fn
        return fn

    def _destroy(self):
        pass


def _ops_call(qualname):
    def call(*args, **kwargs):
        fn = _registry.get(qualname)
        if fn is None:
            raise StandInError(f"torch.ops.{qualname.replace('::', '.')}",
                               "no NPU implementation is registered for this op",
                               "register one (torch.library.impl(..., \"npu\") or "
                               "Library.impl(..., \"PrivateUse1\")) before calling it")
        return fn(*args, **kwargs)
    return call


class _OpsNamespace:
    def __init__(self, ns=None):
        self._ns = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if self._ns is None:
            return _OpsNamespace(name)
        call = _ops_call(f"{self._ns}::{name}")
        call.default = call
        return call


def _refusing_getattr(module_name, what):
    def getattr_(name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name.startswith("npu_"):
            raise NeedsValues(f"{module_name}.{name}")
        if name[:1].isupper():  # a type (an annotation, a base class): refused where made
            return _absent(f"{module_name}.{name}")
        raise _t.MissingAttribute(f"{module_name}.{name}",
                                f"not in tilesim's torch stand-in ({what})",
                                "the stand-in serves a kernel's wrapper: tensor creation, "
                                "shapes, dtypes and registrations")
    return getattr_


def _ntuple(n):
    """torch.nn.modules.utils._pair and its kin: an iterable as a tuple, else n copies."""
    def parse(x):
        try:
            return tuple(iter(x))
        except TypeError:
            return (x,) * n
    return parse


def _custom_fwd(fwd=None, **kwargs):
    """torch.amp.custom_fwd / custom_bwd: the function itself (no autocast when tracing)."""
    return fwd if fwd is not None else (lambda f: f)


def modules():
    """Fresh stand-in modules by name: torch, its submodules and torch_npu."""
    torch = _module("torch", __doc__)
    npu = _module("torch.npu", "Device calls: accepted, no effect on the traced kernel.")
    dynamo = _module("torch._dynamo", "Graph-capture hints: accepted, no effect.")
    library = _module("torch.library", "Custom-op registration: the NPU implementation is kept "
                      "for torch.ops.")
    nn = _module("torch.nn", "torch.nn: Module and Parameter as plain Python.")
    functional = _module("torch.nn.functional", "Shapes of torch.nn.functional's results.")
    testing = _module("torch.testing", "Checks of values: NeedsValues.")
    torch_npu = _module("torch_npu", "torch_npu: device calls accepted; npu_* ops need values.")
    subclasses = _module("torch._subclasses", "Tensor subclasses: the fake tensor's class only.")
    fake_tensor = _module("torch._subclasses.fake_tensor", "FakeTensor: a class no stand-in "
                          "tensor is an instance of (a wrapper's fake-tensor branch is skipped).")
    for name, d in _t.DTYPES.items():
        setattr(torch, name, d)
    torch.__version__ = "0.0.0+tilesim.standin"
    torch.Tensor, torch.Size, torch.dtype, torch.device = Tensor, Size, dtype, device
    torch.FloatTensor = torch.HalfTensor = Tensor
    for name in ("empty", "zeros", "ones", "randn", "rand"):
        setattr(torch, name, _new)
        setattr(torch, f"{name}_like", _like)
    torch.full = torch.empty_strided = _full
    torch.full_like = lambda x, fill_value=None, **kw: _like(x, **kw)
    torch.randint, torch.randint_like = _randint, lambda x, *a, **kw: _like(x, **kw)
    torch.arange, torch.tensor, torch.as_tensor = _arange, _tensor_from, _tensor_from
    torch.from_numpy = _from_numpy
    torch.cat = torch.concat = torch.concatenate = _cat
    torch.stack, torch.broadcast_shapes = _stack, broadcast_shapes
    torch.matmul = torch.mm = torch.bmm = _t.matmul
    torch.where = _where
    torch.is_tensor = lambda x: isinstance(x, Tensor)
    torch.get_default_dtype, torch.set_default_dtype = _t.default_dtype, _t.set_default_dtype
    torch.manual_seed = torch.seed = torch.set_printoptions = _no_op
    torch.use_deterministic_algorithms = torch.set_num_threads = _no_op
    torch.no_grad = torch.inference_mode = torch.enable_grad = _NoGrad
    torch.compile = _first_or_decorator
    for name in _t.UNARY:
        setattr(torch, name, _unary_fn(name))
        setattr(functional, name, _unary_fn(name))
    for name in _t.BINARY:
        setattr(torch, name, _binary_fn(name))
    for name in _t.COMPARE:
        setattr(torch, name, lambda a, b, *x, **k: elementwise(a, b, dtype=_t.DTYPES["bool"]))
    for name in ("sum", "mean", "amax", "amin", "prod", "var", "std", "logsumexp", "argmax",
                 "argmin", "max", "min", "softmax", "log_softmax", "cumsum", "clamp", "clip",
                 "unsqueeze", "squeeze", "flatten", "reshape", "transpose", "permute", "chunk",
                 "split", "masked_fill"):
        setattr(torch, name, (lambda n: lambda x, *a, **k: getattr(x, n)(*a, **k))(name))
    torch.any = torch.all = lambda x, dim=None, keepdim=False: _t.reduced(
        x, dim, keepdim, _t.DTYPES["bool"], "torch.any")
    torch.allclose = torch.equal = lambda *a, **k: _t._needs_values("torch.allclose")
    torch.finfo = torch.iinfo = lambda d=None: _Namespace("finfo")
    torch.npu = npu
    torch.cuda = npu
    torch._dynamo = dynamo
    fake_tensor.FakeTensor = subclasses.FakeTensor = _FakeTensor
    subclasses.fake_tensor = fake_tensor
    torch._subclasses = subclasses
    torch.library = library
    torch.nn = nn
    modules_ = _module("torch.nn.modules", "torch.nn.modules: its utils only.")
    nn_utils = _module("torch.nn.modules.utils", "The tuple helpers (_pair, ...).")
    for n, k in (("_single", 1), ("_pair", 2), ("_triple", 3), ("_quadruple", 4)):
        setattr(nn_utils, n, _ntuple(k))
    nn.modules, modules_.utils = modules_, nn_utils
    amp = _module("torch.amp", "Autocast decorators and contexts: accepted, no effect.")
    amp.custom_fwd = amp.custom_bwd = _custom_fwd
    amp.autocast = _NoGrad
    torch.amp = npu.amp = amp
    torch.testing = testing
    torch.ops = _OpsNamespace()
    torch.__getattr__ = _refusing_getattr("torch", "a torch function the wrappers do not need")

    for name in ("synchronize", "set_device", "empty_cache", "reset_peak_memory_stats",
                 "manual_seed", "manual_seed_all", "set_compile_mode", "init"):
        setattr(npu, name, _no_op)
    npu.is_available = lambda: True
    npu.device_count = lambda: 1
    npu.current_device = lambda: 0
    npu.current_stream = npu.default_stream = npu.Stream = npu.Event = _Stream
    npu.__getattr__ = _refusing_getattr("torch.npu", "a device call the wrappers do not need")

    dynamo.allow_in_graph = dynamo.disable = dynamo.assume_constant_result = _first_or_decorator
    dynamo.mark_dynamic = dynamo.mark_static = dynamo.reset = _no_op
    dynamo.config = _Namespace("torch._dynamo.config")

    library.custom_op, library.impl, library.register_fake = _custom_op, _impl, _register_fake
    library.register_kernel = lambda qualname, device_types, fn=None, **kw: _impl(
        qualname, device_types, fn)
    library.impl_abstract = library.register_autograd = _register_fake
    library.Library = _Library
    library.define = lambda qualname, schema, **kw: qualname

    nn.Module = _ModuleBase
    nn.Softmax = nn.LogSoftmax = _Softmax
    nn.Parameter = lambda data=None, requires_grad=True: data
    nn.functional = functional
    functional.pad = _pad
    functional.softmax = functional.log_softmax = lambda x, dim=-1, **k: x._like()
    functional.rms_norm = functional.layer_norm = functional.group_norm = _norm
    functional.linear = lambda x, w, b=None: _t.matmul(x, w.T)
    functional.dropout = lambda x, *a, **k: x
    testing.assert_close = testing.assert_allclose = (
        lambda *a, **k: _t._needs_values("torch.testing.assert_close"))

    distributed = _module("torch.distributed", "One process: rank 0 of 1.")
    distributed.is_available, distributed.is_initialized = (lambda: True), (lambda: False)
    distributed.get_rank, distributed.get_world_size = (lambda *a, **k: 0), (lambda *a, **k: 1)
    distributed.barrier = _no_op
    distributed.__getattr__ = _refusing_getattr("torch.distributed", "collectives need values")
    torch.distributed = distributed
    autograd = _module("torch.autograd", "torch.autograd: Function runs its forward.")
    autograd.Function = _AutogradFunction
    autograd.grad = lambda outputs, inputs, *a, **k: tuple(
        x._like() for x in (inputs if isinstance(inputs, (list, tuple)) else [inputs]))
    torch.autograd = autograd
    torch.Generator = lambda *a, **k: _Namespace("generator")

    torch_npu.npu = npu
    torch_npu.__version__ = torch.__version__
    torch_npu.__getattr__ = _refusing_getattr("torch_npu", "a torch_npu call")
    return {"torch": torch, "torch.npu": npu, "torch._dynamo": dynamo, "torch.library": library,
            "torch.nn": nn, "torch.nn.functional": functional, "torch.testing": testing,
            "torch.amp": amp, "torch.npu.amp": amp, "torch.nn.modules": modules_,
            "torch.nn.modules.utils": nn_utils,
            "torch.cuda": npu, "torch_npu": torch_npu, "torch_npu.npu": npu,
            "torch.distributed": distributed, "torch.autograd": autograd,
            "torch._subclasses": subclasses, "torch._subclasses.fake_tensor": fake_tensor}


class _FakeTensor:
    """torch._subclasses.fake_tensor.FakeTensor: the stand-in's tensors are never fake ones."""


class _AutogradFunction:
    """torch.autograd.Function: ``F.apply(*args)`` runs ``F.forward(ctx, *args)``."""

    @classmethod
    def apply(cls, *args, **kwargs):
        return cls.forward(_Namespace("ctx"), *args, **kwargs)


class _ModuleBase:
    """torch.nn.Module: __call__ runs forward; nothing else."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def to(self, *args, **kwargs):
        return self

    npu = cuda = eval = train = to

    def parameters(self):
        return iter(())


class _Softmax(_ModuleBase):
    """torch.nn.Softmax / LogSoftmax (a reference a kernel's test computes): its input's shape."""

    def forward(self, x):
        return x._like()


class _Absent(type):
    """A name the stand-in does not have, imported from a torch module a kernel file's package
    reaches at import time (``from torch.distributed.distributed_c10d import _get_default_group``,
    a type in an annotation or a base class): importing it, naming it in a signature and reading
    its attributes work; calling it or making one is the refusal, where it is used."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _absent(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args, **kwargs):
        raise _t.MissingAttribute(cls.__qualname__, "not in tilesim's torch stand-in",
                                  "the stand-in serves a kernel's wrapper: tensor creation, "
                                  "shapes, dtypes and registrations")


def _absent(qualname):
    return _Absent(qualname.rsplit(".", 1)[-1], (), {"__qualname__": qualname,
                                                      "__module__": qualname.rsplit(".", 1)[0]})


class SubmoduleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A submodule a stand-in does not define (torch.distributed.tensor,
    triton.language.core, ...), below `prefixes`: a module whose names are `absent(qualname)`,
    so that a package whose other modules import it still imports; what its kernel's wrapper
    calls from it is refused at the call."""

    def __init__(self, prefixes, absent):
        self.prefixes, self.absent = tuple(prefixes), absent

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(self.prefixes):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _module(spec.name, "Not in tilesim's stand-ins: its names are absent.")
        m.__path__ = []

        def absent(name):
            if name.startswith("__"):
                raise AttributeError(name)
            return self.absent(f"{spec.name}.{name}")
        m.__getattr__ = absent
        return m

    def exec_module(self, module):
        pass


@contextlib.contextmanager
def submodules(modules, prefixes, absent):
    """While the block runs, `modules` (a stand-in's, by name) are packages and their other
    submodules below `prefixes` come from a SubmoduleFinder of `absent` names."""
    for m in modules.values():
        if not hasattr(m, "__path__"):
            m.__path__ = []
    finder = SubmoduleFinder(prefixes, absent)
    sys.meta_path.append(finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


@contextlib.contextmanager
def installed():
    """While the block runs, ``import torch`` (and torch_npu, ...) give the stand-in; the
    modules sys.modules held before (a real torch, or none) come back after."""
    fresh = modules()
    _registry.clear()
    shadowed = {k: v for k, v in sys.modules.items()
                if k in fresh or k.startswith(("torch.", "torch_npu."))}
    for k in shadowed:
        del sys.modules[k]
    sys.modules.update(fresh)
    try:
        with submodules(fresh, ("torch.", "torch_npu."), _absent):
            yield fresh["torch"]
    finally:
        for k in [k for k in sys.modules if k in fresh or k.startswith(("torch.", "torch_npu."))]:
            del sys.modules[k]
        sys.modules.update(shadowed)
        _registry.clear()
