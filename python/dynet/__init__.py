"""dynet: DyNet's Python API on a modern C++ engine (`import dynet as dy`).

The op functions (dy.tanh, dy.pickneglogsoftmax, ...) are generated at import from the API entries next
to each op's C++ definition (src/ops/api.h); the rest of the module is here and in python/src.
"""
import os as _os
import pickle as _pickle
import sys as _sys
import warnings as _warnings

import dynet_config as _dynet_config

from . import _dynet
from ._dynet import *  # noqa: F401,F403  (the op functions, Expression, trainers, builders, ...)
from ._dynet import Expression, LookupParameters, ParameterCollection, Parameters, PyInitializer

__version__ = "2.1"

# ---------------------------------------------------------------------------------------------
# Initialization: dynet_config.set(...) before import, else --dynet-* flags in sys.argv (consumed).
_initialized = None
_explicitly_initialized = False
# Whether the first explicit init() may still replace the settings of the import: true when the program
# imported DyNet as `_dynet` (the original's compiled module, which initialized nothing until asked).
_import_init_replaceable = False


class DynetParams:
    """DyNet's settings object: set them, then init() (once per process)."""

    def __init__(self):
        self.mem, self.random_seed, self.autobatch, self.profiling = "512", 0, 0, 0
        self.weight_decay, self.shared_parameters, self.requested_gpus, self.gpu_mask = 0.0, False, 0, []
        self.devices = ""    # --dynet-devices, e.g. "CPU,GPU:0"
        self.gpu = False     # --dynet-gpu / dynet_config.set_gpu(): one GPU unless others are named

    def from_args(self, shared_parameters=None):
        args = _sys.argv
        keep = [args[0]] if args else []
        i = 1
        names = {"--dynet-mem": "mem", "--dynet-seed": "random_seed", "--dynet-autobatch": "autobatch",
                 "--dynet-profiling": "profiling", "--dynet-weight-decay": "weight_decay",
                 "--dynet-gpus": "requested_gpus", "--dynet-devices": "devices", "--dynet-gpu-ids": "gpu_ids"}
        while i < len(args):
            a = args[i]
            key, value = a, None
            if "=" in a:
                key, value = a.split("=", 1)
            norm = key.replace("_", "-")
            if norm in ("--dynet-gpu", "--dynet-viz"):
                self.gpu = self.gpu or norm == "--dynet-gpu"
                i += 1
                continue
            if norm in names:
                if value is None:
                    if i + 1 >= len(args):
                        raise ValueError("%s needs a value" % key)
                    value = args[i + 1]
                    i += 1
                attr = names[norm]
                if attr in ("mem", "devices"):
                    setattr(self, attr, value)
                elif attr == "gpu_ids":
                    ids = [int(v) for v in value.split(",") if v.strip()]
                    if any(v < 0 for v in ids):
                        raise ValueError("--dynet-gpu-ids: GPU ids must be >= 0, got %r" % value)
                    self.gpu_mask = [int(k in ids) for k in range(max(ids) + 1)] if ids else []
                elif attr == "weight_decay":
                    self.weight_decay = float(value)
                elif attr is not None:
                    setattr(self, attr, int(value))
                i += 1
                continue
            keep.append(a)
            i += 1
        _sys.argv[:] = keep
        if shared_parameters is not None:
            self.shared_parameters = bool(shared_parameters)

    def from_config(self, conf):
        self.mem = conf.get("mem", self.mem)
        self.random_seed = conf.get("seed", self.random_seed)
        self.autobatch = conf.get("autobatch", self.autobatch)
        self.profiling = conf.get("profiling", self.profiling)
        self.weight_decay = conf.get("weight_decay", self.weight_decay)
        self.shared_parameters = conf.get("shared_params", self.shared_parameters)
        self.requested_gpus = conf.get("requested_gpus", self.requested_gpus)
        self.gpu_mask = conf.get("gpu_mask", self.gpu_mask)
        self.gpu = bool(_dynet_config.gpu())

    def set_mem(self, mem): self.mem = mem
    def set_random_seed(self, random_seed): self.random_seed = random_seed
    def set_autobatch(self, autobatch): self.autobatch = autobatch
    def set_profiling(self, profiling): self.profiling = profiling
    def set_weight_decay(self, weight_decay): self.weight_decay = weight_decay
    def set_shared_parameters(self, shared_parameters): self.shared_parameters = shared_parameters
    def set_requested_gpus(self, requested_gpus): self.requested_gpus = requested_gpus
    def set_gpu_mask(self, gpu_mask): self.gpu_mask = list(gpu_mask)
    def set_cpu_mode(self): self.requested_gpus = 0

    def _device_flags(self):
        """The device request as the C++ flags it stands for (which refuse more than one kind of request)."""
        flags = []
        if self.devices:
            flags += ["--dynet-devices", str(self.devices)]
        if any(self.gpu_mask):
            flags += ["--dynet-gpu-ids", ",".join(str(k) for k, m in enumerate(self.gpu_mask) if m)]
        if int(self.requested_gpus) > 0:
            flags += ["--dynet-gpus", str(int(self.requested_gpus))]
        if self.gpu and not flags:
            flags = ["--dynet-gpus", "1"]
        return flags

    def _key(self):
        return (str(self.mem), int(self.random_seed), int(self.autobatch), int(self.profiling),
                float(self.weight_decay), tuple(self._device_flags()))

    def init(self):
        """Initializes DyNet with these settings; once initialized, later calls are ignored (with a warning
        when their settings differ), as in the original."""
        global _explicitly_initialized, _import_init_replaceable
        replace = _import_init_replaceable
        _explicitly_initialized, _import_init_replaceable = True, False
        self._init(replace)

    def _init(self, replace=False):
        global _initialized
        key = self._key()
        if _initialized is not None and not (replace and _initialized != key):
            if _initialized != key:
                _sys.stderr.write("[dynet] already initialized; these settings are ignored: %r\n" % (key,))
            return
        mem = str(self.mem)
        _dynet._initialize(list(key[-1]), int(self.random_seed), "" if mem == "512" else mem, float(self.weight_decay),
                           int(self.autobatch), int(self.profiling))
        _initialized = key


def init(shared_parameters=None):
    """Initializes from sys.argv's --dynet-* flags (DyNet's dy.init)."""
    p = DynetParams()
    p.from_args(shared_parameters)
    p.init()


def init_from_params(params):
    params.init()


# ---------------------------------------------------------------------------------------------
Model = ParameterCollection


HAVE_CUDA = _dynet._have_cuda()
ERRMSG = "This build of dynet has no GPU support (CPU only)."


_parameter_warned = False


def parameter(*args):
    """Deprecated (as in DyNet 2.1): Parameters are expressions of the current graph wherever one is
    expected, so this returns its arguments (and warns once)."""
    global _parameter_warned
    if not _parameter_warned:
        _parameter_warned = True
        _warnings.warn("dy.parameter(...) is deprecated: parameters are added to the graph automatically",
                       DeprecationWarning, stacklevel=2)
    return args[0] if len(args) == 1 else list(args)


def const_parameter(*args):
    """The parameters as constants of the current graph (no gradient flows into them)."""
    for p in args:
        if not isinstance(p, (Parameters, LookupParameters)):
            raise TypeError("const_parameter: expected Parameters or LookupParameters, got %s" % type(p).__name__)
    result = [p.expr(False) for p in args]
    return result[0] if len(result) == 1 else result


def print_graphviz(**kwargs):
    """The current graph in graphviz dot format, on sys.stdout (DyNet's print_graphviz; dy.cg().graphviz()
    returns the text)."""
    print_text_graphviz()


# ---- initializers: PyInitializer subclasses, as in DyNet (isinstance checks work) ----
class NormalInitializer(PyInitializer):
    def __init__(self, mean=0, var=1):
        super().__init__()
        _dynet._init_normal(self, mean, var)


class UniformInitializer(PyInitializer):
    def __init__(self, scale):
        super().__init__()
        _dynet._init_uniform(self, scale)


class ConstInitializer(PyInitializer):
    def __init__(self, c):
        super().__init__()
        _dynet._init_const(self, c)


class IdentityInitializer(PyInitializer):
    def __init__(self):
        super().__init__()
        _dynet._init_identity(self)


class GlorotInitializer(PyInitializer):
    def __init__(self, is_lookup=False, gain=1.0):
        super().__init__()
        _dynet._init_glorot(self, is_lookup, gain)


class SaxeInitializer(PyInitializer):
    def __init__(self, scale=1.0):
        super().__init__()
        _dynet._init_saxe(self, scale)


class FromFileInitializer(PyInitializer):
    def __init__(self, fname):
        super().__init__()
        _dynet._init_fromfile(self, fname)


class NumpyInitializer(PyInitializer):
    def __init__(self, array):
        super().__init__()
        _dynet._init_vector(self, array)


# ---- value holders of DyNet's Python module (plain containers here) ----
def _unsigned(v):
    if int(v) < 0:
        raise ValueError("expected an unsigned value, got %r" % (v,))
    return int(v)


class FloatValue:
    _convert = staticmethod(float)

    def __init__(self, val=0):
        self.set(val)

    def set(self, val):
        self.val = self._convert(val)

    def get(self):
        return self.val


class UnsignedValue(FloatValue):
    _convert = staticmethod(_unsigned)


class FloatVectorValue:
    _convert = staticmethod(float)

    def __init__(self, val=()):
        self.set(val)

    def set(self, newval):
        self.val = [self._convert(x) for x in newval]

    def get(self):
        return list(self.val)

    def size(self):
        return len(self.val)


class UnsignedVectorValue(FloatVectorValue):
    _convert = staticmethod(_unsigned)


def values(exps, recalculate=False):
    """The values of several expressions (one forward up to the last of them)."""
    forward(exps, recalculate)
    return [e.value() for e in exps]


def npvalues(exps, recalculate=False):
    forward(exps, recalculate)
    return [e.npvalue() for e in exps]


def from_dlpack(tensor, batched=False):
    """An input expression from any DLPack tensor (torch, numpy, ...): dims as its shape, the last axis the
    batch when batched (values are copied into the graph, as inputTensor does)."""
    import numpy as np
    if not hasattr(tensor, "__dlpack__"):
        raise TypeError("from_dlpack: expected an object with __dlpack__ (a DLPack tensor), got %s"
                        % type(tensor).__name__)
    try:
        array = np.from_dlpack(tensor)
    except BufferError as e:
        raise TypeError("from_dlpack: %s" % e) from e
    return inputTensor(array, batched=batched)


class DeviceInfo:
    def __init__(self, name, id, dtype):
        self.name, self.id, self.dtype = name, id, dtype


def available_devices():
    """Names of the devices this process set up: the CPU, then the GPUs asked for at initialization."""
    return [name for name, _, _ in _dynet._devices()]


def get_device_info(name):
    for dev_name, dev_id, dev_type in _dynet._devices():
        if name == dev_name or (name in ("cpu", "") and dev_name == "CPU"):
            return DeviceInfo(dev_name, dev_id, dev_type)
    raise ValueError("get_device_info: no device named %r (this process has %s; GPUs are asked for with "
                     "--dynet-gpus, --dynet-devices or dynet_config.set(requested_gpus=...))"
                     % (name, ", ".join(available_devices())))


# ---------------------------------------------------------------------------------------------
# RNN states: (builder, state index) pairs over the C++ builder's state machine.
class RNNState:
    def __init__(self, builder, state_idx=-1, prev_state=None, out=None):
        self.builder, self.state_idx, self._prev, self._out = builder, state_idx, prev_state, out

    def add_input(self, x):
        idx, out = self.builder._add_input(self.state_idx, x)
        return RNNState(self.builder, idx, self, out)

    def add_inputs(self, xs):
        states, cur = [], self
        for x in xs:
            cur = cur.add_input(x)
            states.append(cur)
        return states

    def transduce(self, xs):
        return [s.output() for s in self.add_inputs(xs)]

    def output(self):
        return self._out

    def h(self):
        return tuple(self.builder._get_h(self.state_idx))

    def s(self):
        return tuple(self.builder._get_s(self.state_idx))

    def prev(self):
        return self._prev

    def b(self):
        return self.builder

    def set_h(self, es=None):
        idx, out = self.builder._set_h(self.state_idx, list(es or []))
        return RNNState(self.builder, idx, self, out)

    def set_s(self, es=None):
        idx, out = self.builder._set_s(self.state_idx, list(es or []))
        return RNNState(self.builder, idx, self, out)


class StackedRNNState:
    """The states of several RNN builders stacked by hand: each one reads the output of the one below."""

    def __init__(self, states, prev=None):
        self.states, self._prev = list(states), prev

    def add_input(self, x):
        next_states = []
        for s in self.states:
            next_states.append(s.add_input(x))
            x = next_states[-1].output()
        return StackedRNNState(next_states, self)

    def add_inputs(self, xs):
        states, cur = [], self
        for x in xs:
            cur = cur.add_input(x)
            states.append(cur)
        return states

    def output(self):
        return self.states[-1].output()

    def prev(self):
        return self._prev

    def h(self):
        return [s.h() for s in self.states]

    def s(self):
        return [s.s() for s in self.states]


def _spec_sequence(who, spec):
    """A builder's spec (what dy.save wrote: a tuple, or a list once read back) as a tuple."""
    if not isinstance(spec, (tuple, list)):
        raise TypeError("%s.from_spec: the spec must be a tuple or list of constructor arguments, got %s"
                        % (who, type(spec).__name__))
    return tuple(spec)


class _StateMethods:
    """initial_state & co. of every RNN builder (the states are RNNState objects above), and the spec
    that dy.save writes: (layers, input_dim, hidden_dim, the other constructor arguments)."""

    _spec_params = ()  # (name, default) of the constructor arguments after `model` that the spec records

    def __init__(self, layers, input_dim, hidden_dim, model, *args, **kwargs):
        super().__init__(layers, input_dim, hidden_dim, model, *args, **kwargs)
        extra = list(args) + [kwargs.get(name, default) for name, default in self._spec_params[len(args):]]
        self.spec = (layers, input_dim, hidden_dim) + tuple(extra[:len(self._spec_params)])

    @classmethod
    def from_spec(cls, spec, model):
        spec = _spec_sequence(cls.__name__, spec)
        return cls(*spec[:3], model, *spec[3:])

    def initial_state(self, vecs=None, update=True):
        self._new_graph(update)
        return RNNState(self, self._start(list(vecs) if vecs is not None else []))

    def initial_state_from_raw_vectors(self, vecs, update=True):
        return self.initial_state([inputTensor(v) for v in vecs], update)

    def whoami(self):
        return type(self).__name__


class SimpleRNNBuilder(_StateMethods, _dynet.SimpleRNNBuilder):
    pass


class VanillaLSTMBuilder(_StateMethods, _dynet.VanillaLSTMBuilder):
    _spec_params = (("ln_lstm", False), ("forget_bias", 1.0))


class CoupledLSTMBuilder(_StateMethods, _dynet.CoupledLSTMBuilder):
    pass


class CompactVanillaLSTMBuilder(_StateMethods, _dynet.CompactVanillaLSTMBuilder):
    pass


class GRUBuilder(_StateMethods, _dynet.GRUBuilder):
    pass


class SparseLSTMBuilder(_StateMethods, _dynet.SparseLSTMBuilder):
    _spec_params = (("ln_lstm", False), ("forget_bias", 1.0))


class FastLSTMBuilder(_StateMethods, _dynet.FastLSTMBuilder):
    pass


class StandardSoftmaxBuilder(_dynet.StandardSoftmaxBuilder):
    def __init__(self, input_dim, num_classes, pc, bias=True):
        super().__init__(input_dim, num_classes, pc, bias)
        self.spec = (input_dim, num_classes, bias)

    @classmethod
    def from_spec(cls, spec, model):
        spec = _spec_sequence(cls.__name__, spec)
        if len(spec) < 2:
            raise ValueError("StandardSoftmaxBuilder.from_spec: the spec needs (input_dim, num_classes[, bias]), got %r"
                             % (spec,))
        return cls(spec[0], spec[1], model, *spec[2:])



LSTMBuilder = VanillaLSTMBuilder


class BiRNNBuilder:
    """Stacked bidirectional RNNs over any builder class (DyNet's pure-Python BiRNNBuilder); its
    parameters live in the subcollection "birnn"."""

    def __init__(self, num_layers, input_dim, hidden_dim, model, rnn_builder_factory, builder_layers=None):
        if num_layers <= 0:
            raise ValueError("BiRNNBuilder: num_layers must be positive, got %r" % (num_layers,))
        if hidden_dim % 2:
            raise ValueError("BiRNNBuilder: hidden_dim must be even (half per direction), got %r" % (hidden_dim,))
        model = self.model = model.add_subcollection("birnn")
        self.spec = (num_layers, input_dim, hidden_dim, rnn_builder_factory, builder_layers)
        if builder_layers is None:
            builder_layers = []
            for layer in range(num_layers):
                in_dim = input_dim if layer == 0 else hidden_dim
                builder_layers.append((rnn_builder_factory(1, in_dim, hidden_dim // 2, model),
                                       rnn_builder_factory(1, in_dim, hidden_dim // 2, model)))
        self.builder_layers = builder_layers

    @staticmethod
    def from_spec(spec, model):
        spec = _spec_sequence("BiRNNBuilder", spec)
        return BiRNNBuilder(*spec[:3], model, *spec[3:])

    def param_collection(self):
        return self.model

    def whoami(self):
        return "BiRNNBuilder"

    def set_dropout(self, p):
        for fb, bb in self.builder_layers:
            fb.set_dropout(p)
            bb.set_dropout(p)

    def disable_dropout(self):
        for fb, bb in self.builder_layers:
            fb.disable_dropout()
            bb.disable_dropout()

    def add_inputs(self, es):
        for fb, bb in self.builder_layers[:-1]:
            fs = fb.initial_state().transduce(es)
            bs = bb.initial_state().transduce(reversed(es))
            es = [concatenate([f, b]) for f, b in zip(fs, reversed(bs))]
        fb, bb = self.builder_layers[-1]
        fs = fb.initial_state().add_inputs(es)
        bs = bb.initial_state().add_inputs(reversed(es))
        return [(f, b) for f, b in zip(fs, reversed(bs))]

    def transduce(self, es):
        for fb, bb in self.builder_layers:
            fs = fb.initial_state().transduce(es)
            bs = bb.initial_state().transduce(list(reversed(es)))
            es = [concatenate([f, b]) for f, b in zip(fs, reversed(bs))]
        return es


# ---------------------------------------------------------------------------------------------
# Model files: DyNet's basename.data (text records) + basename.meta (a sequence of pickles).
def save(basename, objects):
    """Writes basename.data (text records) and basename.meta (one pickle per object), as DyNet does."""
    data, meta = basename + ".data", basename + ".meta"
    if _os.path.exists(data):
        _os.remove(data)
    with open(meta, "wb") as mf:
        for obj in objects:
            if isinstance(obj, Parameters):
                obj.save(data, append=True)
                _pickle.dump(("Parameters", obj.name()), mf)
            elif isinstance(obj, LookupParameters):
                obj.save(data, append=True)
                _pickle.dump(("LookupParameters", obj.name()), mf)
            elif hasattr(obj, "spec") and hasattr(obj, "param_collection"):
                pc = obj.param_collection()
                pc.save(data, append=True)
                _pickle.dump((type(obj), obj.spec, pc.name()), mf)
            else:
                raise TypeError("dy.save: cannot save %r" % (obj,))


class _MetaUnpickler(_pickle.Unpickler):
    """Reads .meta files of the original DyNet, whose classes live in its `_dynet` module."""

    def find_class(self, module, name):
        if module in ("_dynet", "dynet", "dynet._dynet"):
            return globals()[name]
        return super().find_class(module, name)


def load_generator(basename, params):
    data, meta = basename + ".data", basename + ".meta"
    with open(meta, "rb") as mf:
        while True:
            # An unpickler per entry: each entry is a pickle of its own, whose memo indices start at 0 (one
            # unpickler's memo would go on from the previous entry's, so a reference to an earlier object,
            # such as the builder class in a BiRNNBuilder's spec, would find the wrong one).
            try:
                entry = _MetaUnpickler(mf).load()
            except EOFError:
                return
            kind, name = entry[0], entry[-1]
            if kind == "Parameters":
                yield params.load_param(data, name)
            elif kind == "LookupParameters":
                yield params.load_lookup_param(data, name)
            else:
                builder = kind.from_spec(entry[1], params)
                builder.param_collection().populate(data, name.rstrip("/"))
                yield builder


def load(basename, params):
    return list(load_generator(basename, params))


# ---------------------------------------------------------------------------------------------
def _init_at_import():
    conf = _dynet_config.get()
    p = DynetParams()
    if conf is None:
        p.from_args()
    else:
        p.from_config(conf)
    p._init()


_init_at_import()
