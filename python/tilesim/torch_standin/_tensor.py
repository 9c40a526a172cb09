"""The stand-in's tensors: a shape, a dtype and a device, never data. What a kernel's torch
wrapper reads from them (shape, size, stride, numel, element_size, ...) is answered exactly; what
needs values (item, allclose, printing the data) raises NeedsValues."""
import math

from .._refusal import Refusal


class StandInError(Refusal):
    """A torch call the stand-in does not answer: names the call, the file and line, and why
    (the front ends' one refusal format, tilesim/_refusal.py)."""

    def __init__(self, call, what, instead=None):
        super().__init__(call, what, instead)


class MissingAttribute(StandInError, AttributeError):
    """An attribute the stand-in does not have: the refusal where it is used, and an
    AttributeError to a probe (hasattr(torch.npu, "amp"), getattr(..., None)) that has a
    fallback."""


class NeedsValues(StandInError):
    """The call needs tensor values (a golden check, item(), printing data): the stand-in's
    tensors carry shapes only. A tracer stops the file here once its kernels are traced."""

    def __init__(self, call):
        super().__init__(call, "needs tensor values; tilesim's torch stand-in carries shapes "
                         "and dtypes only (no data)",
                         "the kernel is traced from the shapes; checks of its results need a "
                         "board")


class dtype:  # noqa: N801 - torch's name
    """torch.float16 ...: a name and a size in bytes."""

    def __init__(self, name, itemsize, floating):
        self.name, self.itemsize, self.is_floating_point = name, itemsize, floating

    def __repr__(self):
        return f"torch.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (_dtype_named, (self.name,))


_DTYPES = {}


def _dtype_named(name):
    return _DTYPES[name]


for _name, _size, _float in (("float32", 4, True), ("float16", 2, True), ("bfloat16", 2, True),
                             ("float64", 8, True), ("int8", 1, False), ("uint8", 1, False),
                             ("int16", 2, False), ("int32", 4, False), ("int64", 8, False),
                             ("bool", 1, False), ("uint16", 2, False), ("uint32", 4, False),
                             ("uint64", 8, False), ("float8_e4m3fn", 1, True),
                             ("float8_e5m2", 1, True), ("complex64", 8, False)):
    _DTYPES[_name] = dtype(_name, _size, _float)
# torch's other spellings of the same dtypes
ALIASES = {"float": "float32", "half": "float16", "double": "float64", "short": "int16",
           "int": "int32", "long": "int64"}
DTYPES = dict(_DTYPES, **{a: _DTYPES[n] for a, n in ALIASES.items()})
_default_dtype = [_DTYPES["float32"]]


def default_dtype():
    return _default_dtype[0]


def set_default_dtype(d):
    _default_dtype[0] = as_dtype(d, "torch.set_default_dtype")


def as_dtype(value, call):
    if isinstance(value, dtype):
        return value
    name = str(value).removeprefix("torch.")
    if name in DTYPES:
        return DTYPES[name]
    # numpy dtypes and pypto dtypes name themselves
    name = getattr(value, "name", name)
    if name in DTYPES:
        return DTYPES[name]
    raise StandInError(call, f"dtype {value!r} is not one the stand-in knows",
                       f"give one of torch.{', torch.'.join(_DTYPES)}")


class device:  # noqa: N801
    """torch.device("npu:0"): a type and an index."""

    def __init__(self, type="cpu", index=None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int):
            type, index = "npu", type
        elif ":" in str(type):
            type, _, i = str(type).partition(":")
            index = int(i)
        self.type, self.index = str(type), index

    def __repr__(self):
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not
                                                  None else ")")

    def __str__(self):
        return self.type + (f":{self.index}" if self.index is not None else "")

    def __eq__(self, other):
        return str(self) == str(device(other)) if isinstance(other, (str, device)) else False

    def __hash__(self):
        return hash(str(self))


class Size(tuple):
    """torch.Size: a tuple of dims."""

    def numel(self):
        return math.prod(self)

    def __repr__(self):
        return f"torch.Size({list(self)})"


def _dims(args, call):
    """The dims of torch.empty(2, 3) / torch.empty((2, 3)) / torch.empty([2, 3])."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    dims = []
    for d in args:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            d = getattr(d, "__index__", lambda: None)()
            if d is None or d < 0:
                raise StandInError(call, f"size {list(args)}: dims are integers >= 0")
        dims.append(int(d))
    return Size(dims)


def _index(dim, rank, call):
    if isinstance(dim, bool) or not isinstance(dim, int) or not -max(rank, 1) <= dim < max(rank, 1):
        raise StandInError(call, f"dim {dim!r} for a tensor of rank {rank}")
    return dim % max(rank, 1)


def broadcast_shapes(*shapes):
    out = []
    for i in range(1, max((len(s) for s in shapes), default=0) + 1):
        dims = {s[-i] for s in shapes if i <= len(s)} - {1}
        if len(dims) > 1:
            raise StandInError("torch.broadcast_shapes",
                               f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return Size(out[::-1])


def _contiguous_strides(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


class Tensor:
    """A stand-in torch tensor: shape, dtype, device; no data."""

    def __init__(self, shape, dtype=None, device=None, strides=None, requires_grad=False):  # noqa: A002
        self._shape = Size(shape)
        self._dtype = dtype or default_dtype()
        self._device = _as_device(device)
        self._strides = tuple(strides) if strides is not None else _contiguous_strides(shape)
        self.requires_grad = requires_grad

    # -- what wrappers read
    @property
    def shape(self):
        return self._shape

    def size(self, dim=None):
        return self._shape if dim is None else self._shape[_index(dim, self.dim(), "size")]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def is_npu(self):
        return self._device.type == "npu"

    def dim(self):
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self):
        return self.dim()

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[_index(dim, self.dim(), "stride")]

    def numel(self):
        return self._shape.numel()

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self._dtype.itemsize

    def is_contiguous(self, memory_format=None):
        return self._strides == _contiguous_strides(self._shape)

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return self._dtype.name.startswith("complex")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise MissingAttribute(f"Tensor.{name}", "not in tilesim's torch stand-in",
                               "the stand-in's tensors have shapes, strides and dtypes: what a "
                               "kernel's wrapper reads of them")

    def data_ptr(self):
        return id(self)

    def storage_offset(self):
        return 0

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __repr__(self):
        return (f"<tilesim torch stand-in tensor {list(self._shape)} {self._dtype} on "
                f"{self._device}>")

    # -- copies, moves and casts: a new tensor of the same shape
    def _like(self, shape=None, dtype=None, device=None, strides=None):  # noqa: A002
        return Tensor(self._shape if shape is None else shape, dtype or self._dtype,
                      device or self._device, strides)

    def contiguous(self, memory_format=None):
        return self._like()

    def clone(self, memory_format=None):
        return self._like(strides=self._strides)

    def detach(self):
        return self

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):  # noqa: A002
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif _is_dtype(a):
                dtype = a
            else:
                device = a
        return self._like(dtype=as_dtype(dtype, "Tensor.to") if dtype is not None else None,
                          device=device)

    def npu(self, *args, **kwargs):
        return self._like(device="npu")

    def cuda(self, *args, **kwargs):
        return self._like(device="npu")

    def cpu(self):
        return self._like(device="cpu")

    def type_as(self, other):
        return self._like(dtype=other.dtype)

    # -- new tensors on the same device: x.new_empty(shape), ...
    def new_empty(self, *size, dtype=None, device=None, **kwargs):  # noqa: A002
        return Tensor(_dims(size, "Tensor.new_empty"),
                      as_dtype(dtype, "Tensor.new_empty") if dtype is not None else self._dtype,
                      device or self._device)

    new_zeros = new_ones = new_empty

    def new_full(self, size, fill_value=None, **kwargs):
        return self.new_empty(size, **kwargs)

    # -- in-place fills: the data is not kept
    def _fill(self, *args, **kwargs):
        return self

    fill_ = zero_ = normal_ = uniform_ = random_ = copy_ = bernoulli_ = _fill
    exponential_ = clamp_ = mul_ = add_ = sub_ = div_ = _fill

    # -- shapes
    def view(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
            return self.to(shape[0])
        return self._reshape(shape, "Tensor.view", must_be_contiguous=True)

    def reshape(self, *shape):
        return self._reshape(shape, "Tensor.reshape")

    def _reshape(self, shape, call, must_be_contiguous=False):
        if must_be_contiguous and not self.is_contiguous():
            raise StandInError(call, f"a view of a non-contiguous {list(self._shape)} tensor",
                               "call .contiguous() first, as torch requires")
        dims = list(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) \
            else list(shape)
        if dims.count(-1) > 1:
            raise StandInError(call, f"shape {dims}: at most one -1")
        known = math.prod(d for d in dims if d != -1)
        if -1 in dims:
            if known == 0 or self.numel() % known:
                raise StandInError(call, f"shape {dims} for {self.numel()} elements")
            dims[dims.index(-1)] = self.numel() // known
        if math.prod(dims) != self.numel():
            raise StandInError(call, f"shape {dims} ({math.prod(dims)} elements) for a "
                               f"{list(self._shape)} tensor ({self.numel()} elements)")
        return self._like(shape=_dims(dims, call))

    def view_as(self, other):
        return self.view(other.shape)

    reshape_as = view_as

    def flatten(self, start_dim=0, end_dim=-1):
        n = self.dim()
        if n == 0:
            return self._like(shape=(1,))
        s, e = _index(start_dim, n, "flatten"), _index(end_dim, n, "flatten")
        dims = list(self._shape[:s]) + [math.prod(self._shape[s:e + 1])] + list(self._shape[e + 1:])
        return self.reshape(dims)

    def unsqueeze(self, dim):
        d = _index(dim, self.dim() + 1, "unsqueeze")
        return self.reshape(list(self._shape[:d]) + [1] + list(self._shape[d:]))

    def squeeze(self, dim=None):
        if dim is None:
            return self.reshape([d for d in self._shape if d != 1])
        d = _index(dim, self.dim(), "squeeze")
        if self._shape[d] != 1:
            return self
        return self.reshape(list(self._shape[:d]) + list(self._shape[d + 1:]))

    def expand(self, *sizes):
        dims = list(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) \
            else list(sizes)
        pad = len(dims) - self.dim()
        if pad < 0:
            raise StandInError("Tensor.expand", f"{dims} has fewer dims than {list(self._shape)}")
        src = [1] * pad + list(self._shape)
        out = []
        for d, (want, have) in enumerate(zip(dims, src)):
            if want == -1:
                want = have
            if have not in (1, want):
                raise StandInError("Tensor.expand",
                                   f"dim {d} of size {have} cannot expand to {want}")
            out.append(want)
        strides = [0 if have == 1 and want != 1 else s for want, have, s in
                   zip(out, src, [0] * pad + list(self._strides))]
        return self._like(shape=out, strides=strides)

    def expand_as(self, other):
        return self.expand(other.shape)

    def repeat(self, *sizes):
        dims = list(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) \
            else list(sizes)
        src = [1] * (len(dims) - self.dim()) + list(self._shape)
        return self._like(shape=[a * b for a, b in zip(src, dims)], strides=None)

    def transpose(self, dim0, dim1):
        n = self.dim()
        a, b = _index(dim0, n, "transpose"), _index(dim1, n, "transpose")
        order = list(range(n))
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    def permute(self, *dims):
        order = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) \
            else list(dims)
        order = [_index(d, self.dim(), "permute") for d in order]
        if sorted(order) != list(range(self.dim())):
            raise StandInError("Tensor.permute", f"{order} is not a permutation of the dims")
        return self._like(shape=[self._shape[d] for d in order],
                          strides=[self._strides[d] for d in order])

    @property
    def T(self):  # noqa: N802
        return self.permute(list(reversed(range(self.dim()))))

    def t(self):
        return self.transpose(0, 1) if self.dim() == 2 else self

    def chunk(self, chunks, dim=0):
        d = _index(dim, self.dim(), "chunk")
        size = -(-self._shape[d] // chunks)
        return self.split(size, d)

    def split(self, split_size, dim=0):
        d = _index(dim, self.dim(), "split")
        n = self._shape[d]
        sizes = list(split_size) if isinstance(split_size, (list, tuple)) else \
            [min(split_size, n - o) for o in range(0, n, split_size)]
        return tuple(self._like(shape=self._shape[:d] + (s,) + self._shape[d + 1:],
                                strides=self._strides) for s in sizes)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if Ellipsis in key:
            i = key.index(Ellipsis)
            rest = len([k for k in key if k is not None and k is not Ellipsis])
            key = key[:i] + (slice(None),) * (self.dim() - rest) + key[i + 1:]
        dims, strides, d = [], [], 0
        for k in key:
            if k is None:
                dims.append(1)
                strides.append(0)
                continue
            if d >= self.dim():
                raise StandInError("Tensor[...]", f"too many indices for a rank-{self.dim()} "
                                   "tensor")
            n = self._shape[d]
            if isinstance(k, slice):
                dims.append(len(range(*k.indices(n))))
                strides.append(self._strides[d] * (k.step or 1))
            elif isinstance(k, int) and not isinstance(k, bool):
                if not -n <= k < n:
                    raise StandInError("Tensor[...]", f"index {k} on dim {d} of size {n}")
            else:
                raise StandInError("Tensor[...]", f"index {k!r}: the stand-in takes integers "
                                   "and slices (no tensor indexing: it has no values)")
            d += 1
        dims += list(self._shape[d:])
        strides += list(self._strides[d:])
        return self._like(shape=dims, strides=strides)

    def __setitem__(self, key, value):
        self[key]  # checks the index; the data is not kept

    # -- arithmetic: the result's shape and dtype
    def _binary(self, other, dtype=None):  # noqa: A002
        shape = broadcast_shapes(self._shape, other.shape) if isinstance(other, Tensor) \
            else self._shape
        return Tensor(shape, dtype or self._dtype, self._device)

    def _compare(self, other):
        return self._binary(other, DTYPES["bool"])

    def __neg__(self):
        return self._like()

    __pos__ = __abs__ = __invert__ = __neg__

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    __hash__ = object.__hash__

    def __format__(self, spec):
        return repr(self)


def _is_dtype(value):
    """A dtype or a dtype's name (Tensor.to("float16")), not a device."""
    return isinstance(value, dtype) or (isinstance(value, str) and
                                        value.removeprefix("torch.") in DTYPES)


def _as_device(value):
    return value if isinstance(value, device) else device(value if value is not None else "cpu")


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
    setattr(Tensor, f"__{_op}__", lambda a, b: a._binary(b))
    setattr(Tensor, f"__r{_op}__", lambda a, b: a._binary(b))
    setattr(Tensor, f"__i{_op}__", lambda a, b: a._binary(b))
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Tensor, f"__{_op}__", lambda a, b: a._compare(b))

# Elementwise functions: the shape of the broadcast operands, the dtype of the first.
UNARY = ["exp", "log", "sqrt", "rsqrt", "abs", "neg", "sin", "cos", "tanh", "sigmoid", "relu",
         "reciprocal", "square", "sign", "floor", "ceil", "round", "erf", "exp2", "log2",
         "log1p", "expm1", "trunc", "silu", "gelu"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "fmod", "remainder",
          "atan2", "true_divide", "floor_divide"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge", "isclose"]


def elementwise(*tensors, dtype=None):  # noqa: A002
    ts = [t for t in tensors if isinstance(t, Tensor)]
    if not ts:
        raise StandInError("an elementwise torch call", "no tensor operand")
    shape = broadcast_shapes(*[t.shape for t in ts])
    return Tensor(shape, dtype or ts[0].dtype, ts[0].device)


def reduced(x, dim=None, keepdim=False, dtype=None, call="a reduction"):  # noqa: A002
    if dim is None:
        return Tensor((), dtype or x.dtype, x.device)
    dims = {_index(d, x.dim(), call) for d in (dim if isinstance(dim, (list, tuple)) else [dim])}
    shape = [1 if i in dims else n for i, n in enumerate(x.shape) if keepdim or i not in dims]
    return Tensor(shape, dtype or x.dtype, x.device)


def matmul(a, b):
    if a.dim() < 1 or b.dim() < 1:
        raise StandInError("torch.matmul", "0-d operands")
    sa = list(a.shape) if a.dim() > 1 else [1] + list(a.shape)
    sb = list(b.shape) if b.dim() > 1 else list(b.shape) + [1]
    if sa[-1] != sb[-2]:
        raise StandInError("torch.matmul", f"shapes {list(a.shape)} and {list(b.shape)}: k is "
                           f"{sa[-1]} and {sb[-2]}")
    shape = list(broadcast_shapes(sa[:-2], sb[:-2])) + [sa[-2], sb[-1]]
    if a.dim() == 1:
        shape.pop(-2)
    if b.dim() == 1:
        shape.pop(-1)
    return Tensor(shape, a.dtype, a.device)


def _method(name, fn):
    setattr(Tensor, name, fn)


# the casts by name: x.float(), x.half(), ...
for _n, _dt in (("float", "float32"), ("half", "float16"), ("bfloat16", "bfloat16"),
                ("double", "float64"), ("int", "int32"), ("long", "int64"), ("bool", "bool")):
    _method(_n, lambda self, _dt=_dt: self._like(dtype=DTYPES[_dt]))
for _n in UNARY:
    _method(_n, lambda self, *a, **k: self._like())
for _n in BINARY:
    _method(_n, lambda self, other, *a, **k: self._binary(other))
for _n in COMPARE:
    _method(_n, lambda self, other, *a, **k: self._compare(other))
for _n in ("sum", "mean", "amax", "amin", "prod", "var", "std", "norm", "logsumexp"):
    _method(_n, lambda self, dim=None, keepdim=False, *a, dtype=None, **k:  # noqa: A002
            reduced(self, dim, keepdim, dtype))
_method("softmax", lambda self, dim=-1, dtype=None, **k: self._like(dtype=dtype))  # noqa: A002
_method("log_softmax", lambda self, dim=-1, dtype=None, **k: self._like(dtype=dtype))  # noqa: A002
_method("cumsum", lambda self, dim, dtype=None, **k: self._like(dtype=dtype))  # noqa: A002
_method("clamp", lambda self, *a, **k: self._like())
_method("clip", Tensor.clamp)
_method("masked_fill", lambda self, mask, value: self._binary(mask))
_method("matmul", matmul)
_method("mm", matmul)
_method("bmm", matmul)
_method("argmax", lambda self, dim=None, keepdim=False: reduced(self, dim, keepdim,
                                                                 DTYPES["int64"]))
_method("argmin", Tensor.argmax)
_method("max", lambda self, dim=None, keepdim=False: _minmax(self, dim, keepdim, "max"))
_method("min", lambda self, dim=None, keepdim=False: _minmax(self, dim, keepdim, "min"))
# what needs the values a stand-in tensor does not have
for _n, _what in (("__bool__", "bool(tensor)"), ("__float__", "float(tensor)"),
                  ("__int__", "int(tensor)"), ("__iter__", "iterating over a tensor"),
                  ("item", "Tensor.item"), ("tolist", "Tensor.tolist"),
                  ("numpy", "Tensor.numpy"), ("allclose", "Tensor.allclose"),
                  ("equal", "Tensor.equal")):
    _method(_n, lambda self, *a, _what=_what, **k: _needs_values(_what, self))


# A front end may answer the scalar reads (Tensor.item, float(tensor)) that its kernels'
# work does not depend on: SCALAR_ANSWER[0](call) returns the float to answer with, or None
# to raise NeedsValues as before. None here: every front end that sets nothing is unchanged.
SCALAR_ANSWER = [None]


def _needs_values(call, tensor=None):
    if call in ("Tensor.item", "float(tensor)") and SCALAR_ANSWER[0] is not None:
        if tensor is not None and tensor.numel() != 1:
            raise StandInError(call, f"a tensor of {tensor.numel()} elements is no scalar",
                               "index one element first (x[0].item())")
        value = SCALAR_ANSWER[0](call)
        if value is not None:
            return value
    raise NeedsValues(call)


def _minmax(x, dim, keepdim, name):
    if isinstance(dim, Tensor):
        return elementwise(x, dim)
    if dim is None:
        return reduced(x)
    return (reduced(x, dim, keepdim), reduced(x, dim, keepdim, DTYPES["int64"]))


del _n, _op, _name, _size, _float, _dt, _what
