"""dynet: DyNet's Python API on a modern C++ engine (`import dynet as dy`).

The op functions (dy.tanh, dy.pickneglogsoftmax, ...) are generated at import from the API entries next
to each op's C++ definition (src/ops/api.h); the rest of the module is here and in python/src.
"""
import copyreg as _copyreg
import os as _os
import pickle as _pickle
import sys as _sys
import warnings as _warnings


def _refuse_original_dynet_beside_us():
    """Raises ImportError where the original DyNet (PyPI's dyNET or dyNET38) is installed where this package
    is, or shadows it: both install `dynet_config.py`, and the original's compiled `_dynet` module takes
    precedence over our `_dynet.py`, so a program would silently run parts of each."""
    import importlib.machinery
    import importlib.util
    site = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    try:
        names = _os.listdir(site)
    except OSError:
        names = []
    clashes = [_os.path.join(site, n) for n in names
               if n == "dynet.py" or (n.startswith("_dynet.") and n.endswith(suffixes))
               or (n.lower().startswith(("dynet-", "dynet38-")) and n.endswith(".dist-info"))]
    spec = importlib.util.find_spec("_dynet") if "_dynet" not in _sys.modules else None
    if spec is not None and spec.origin and spec.origin.endswith(suffixes) and spec.origin not in clashes:
        clashes.append(spec.origin)
    if clashes:
        raise ImportError(
            "dynet-ng: the original DyNet is installed beside it (%s). Both provide `import dynet` and "
            "`dynet_config`, and the original's compiled `_dynet` would be mixed with this package. Uninstall "
            "one of them (`pip uninstall dyNET dyNET38`, then `pip install --force-reinstall dynet-ng` to restore "
            "the shared files), or use separate virtual environments." % ", ".join(sorted(clashes)))


_refuse_original_dynet_beside_us()

import dynet_config as _dynet_config  # noqa: E402

from . import _dynet  # noqa: E402
from ._dynet import *  # noqa: F401,F403,E402  (the op functions, Expression, trainers, builders, ...)
from ._dynet import Expression, LookupParameters, ParameterCollection, Parameters, PyInitializer  # noqa: E402
from ._version import __version__  # noqa: E402,F401  (the project's version; DyNet's API is 2.1's)
from . import mpi  # noqa: E402  (pure Python: it loads the MPI extension, and libmpi, on first use)

# ---------------------------------------------------------------------------------------------
# Initialization: dynet_config.set(...) before import, else --dynet-* flags in sys.argv (consumed).
_initialized = None
_explicitly_initialized = False
# Whether the first explicit init() may still replace the settings of the import: true when the program
# imported DyNet as `_dynet` (the original's compiled module, which initialized nothing until asked).
_import_init_replaceable = False


class DynetParams:
    """DyNet's settings object: set them, then init() (once per process).

    The attributes mem, random_seed, autobatch, profiling, weight_decay, shared_parameters, requested_gpus, gpu_mask and devices hold the settings.
    """

    def __init__(self):
        self.mem, self.random_seed, self.autobatch, self.profiling = "512", 0, 0, 0
        self.weight_decay, self.shared_parameters, self.requested_gpus, self.gpu_mask = 0.0, False, 0, []
        self.devices = ""    # --dynet-devices, e.g. "CPU,GPU:0"
        self.gpu = False     # --dynet-gpu / dynet_config.set_gpu(): one GPU unless others are named

    def from_args(self, shared_parameters=None):
        """Reads the --dynet-* flags from sys.argv (and removes them from it).

        Args:
            shared_parameters (bool | None): Overrides shared_parameters when not None. Defaults to None.

        Returns:
            None
        """
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
        """Reads the settings from a dynet_config dictionary.

        Args:
            conf (dict): What dynet_config.get() returns.

        Returns:
            None
        """
        self.mem = conf.get("mem", self.mem)
        self.random_seed = conf.get("seed", self.random_seed)
        self.autobatch = conf.get("autobatch", self.autobatch)
        self.profiling = conf.get("profiling", self.profiling)
        self.weight_decay = conf.get("weight_decay", self.weight_decay)
        self.shared_parameters = conf.get("shared_params", self.shared_parameters)
        self.requested_gpus = conf.get("requested_gpus", self.requested_gpus)
        self.gpu_mask = conf.get("gpu_mask", self.gpu_mask)
        self.gpu = bool(_dynet_config.gpu())

    def set_mem(self, mem):
        """Sets the memory setting (accepted; pools grow on demand).

        Args:
            mem (int | str): Megabytes, or DyNet's 'forward,backward,params' form.

        Returns:
            None
        """
        self.mem = mem
    def set_random_seed(self, random_seed):
        """Sets the random seed (0: from the clock).

        Args:
            random_seed (int): The seed.

        Returns:
            None
        """
        self.random_seed = random_seed
    def set_autobatch(self, autobatch):
        """Sets automatic batching.

        Args:
            autobatch (int): 0 off, 1 on (2: the alternative strategy).

        Returns:
            None
        """
        self.autobatch = autobatch
    def set_profiling(self, profiling):
        """Sets the profiling level.

        Args:
            profiling (int): 0 off, 1 or more on.

        Returns:
            None
        """
        self.profiling = profiling
    def set_weight_decay(self, weight_decay):
        """Sets the default L2 weight decay λ of parameter collections.

        Args:
            weight_decay (float): λ, in [0, 1).

        Returns:
            None
        """
        self.weight_decay = weight_decay
    def set_shared_parameters(self, shared_parameters):
        """Sets whether parameters are shared across processes (accepted for compatibility).

        Args:
            shared_parameters (bool): The setting.

        Returns:
            None
        """
        self.shared_parameters = shared_parameters
    def set_requested_gpus(self, requested_gpus):
        """Sets how many GPUs to use.

        Args:
            requested_gpus (int): The number of GPUs.

        Returns:
            None
        """
        self.requested_gpus = requested_gpus
    def set_gpu_mask(self, gpu_mask):
        """Sets which GPUs to use.

        Args:
            gpu_mask (list[int]): 1 at the ids of the GPUs to use, else 0.

        Returns:
            None
        """
        self.gpu_mask = list(gpu_mask)
    def set_cpu_mode(self):
        """Uses no GPU.

        Sets requested_gpus to 0.

        Returns:
            None
        """
        self.requested_gpus = 0

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
        """Initializes DyNet with these settings.

        Once initialized, later calls are ignored (with a warning when their settings differ), as in the original.

        Returns:
            None
        """
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
    """Initializes DyNet from sys.argv's --dynet-* flags (DyNet's dy.init).

    Args:
        shared_parameters (bool | None): Overrides the shared_parameters setting when not None. Defaults to None.

    Returns:
        None
    """
    p = DynetParams()
    p.from_args(shared_parameters)
    p.init()


def init_from_params(params):
    """Initializes DyNet from a settings object.

    Args:
        params (DynetParams): The settings.

    Returns:
        None
    """
    params.init()


# ---------------------------------------------------------------------------------------------
Model = ParameterCollection


HAVE_CUDA = _dynet._have_cuda()
ERRMSG = "This build of dynet has no GPU support (CPU only)."


_parameter_warned = False


def parameter(*args):
    """Deprecated (as in DyNet 2.1): returns its arguments.

    Parameters are expressions of the current graph wherever one is expected; this warns once.

    Args:
        args (Parameters | LookupParameters): The parameters.

    Returns:
        Parameters | list: the argument, or the list of them.
    """
    global _parameter_warned
    if not _parameter_warned:
        _parameter_warned = True
        _warnings.warn("dy.parameter(...) is deprecated: parameters are added to the graph automatically",
                       DeprecationWarning, stacklevel=2)
    return args[0] if len(args) == 1 else list(args)


def const_parameter(*args):
    """The parameters as constants of the current graph (no gradient flows into them).

    Args:
        args (Parameters | LookupParameters): The parameters.

    Returns:
        Expression | list[Expression]: one expression per argument.
    """
    for p in args:
        if not isinstance(p, (Parameters, LookupParameters)):
            raise TypeError("const_parameter: expected Parameters or LookupParameters, got %s" % type(p).__name__)
    result = [p.expr(False) for p in args]
    return result[0] if len(result) == 1 else result


def print_graphviz(**kwargs):
    """Prints the current graph in graphviz dot format on sys.stdout (DyNet's print_graphviz;
    dy.cg().graphviz() returns the text).

    Args:
        kwargs: Accepted for compatibility and ignored.

    Returns:
        None
    """
    print_text_graphviz()


# ---- initializers: PyInitializer subclasses, as in DyNet (isinstance checks work) ----
class NormalInitializer(PyInitializer):
    """Initializes with values drawn from N(mean, var).

    Args:
        mean (float): The mean. Defaults to 0.
        var (float): The variance. Defaults to 1.
    """
    def __init__(self, mean=0, var=1):
        super().__init__()
        _dynet._init_normal(self, mean, var)


class UniformInitializer(PyInitializer):
    """Initializes with values drawn from U(-scale, scale).

    Args:
        scale (float): The bound.
    """
    def __init__(self, scale):
        super().__init__()
        _dynet._init_uniform(self, scale)


class ConstInitializer(PyInitializer):
    """Initializes every value to a constant.

    Args:
        c (float): The constant.
    """
    def __init__(self, c):
        super().__init__()
        _dynet._init_const(self, c)


class IdentityInitializer(PyInitializer):
    """Initializes a square matrix to the identity.

    Only for square matrices.
    """
    def __init__(self):
        super().__init__()
        _dynet._init_identity(self)


class GlorotInitializer(PyInitializer):
    """Glorot (Xavier) initialization: U(-s, s), s = gain · √(6 / (rows + cols)).

    Args:
        is_lookup (bool): Whether it initializes a lookup table (per row). Defaults to False.
        gain (float): The gain. Defaults to 1.0.
    """
    def __init__(self, is_lookup=False, gain=1.0):
        super().__init__()
        _dynet._init_glorot(self, is_lookup, gain)


class SaxeInitializer(PyInitializer):
    """Initializes with a random orthogonal matrix (Saxe et al., 2014).

    Args:
        scale (float): A factor applied to it. Defaults to 1.0.
    """
    def __init__(self, scale=1.0):
        super().__init__()
        _dynet._init_saxe(self, scale)


class FromFileInitializer(PyInitializer):
    """Initializes from a text file of values.

    Args:
        fname (str): The file.
    """
    def __init__(self, fname):
        super().__init__()
        _dynet._init_fromfile(self, fname)


class NumpyInitializer(PyInitializer):
    """Initializes from the values of a numpy array (not for lookup tables: use lookup_parameters_from_numpy).

    Args:
        array (numpy.ndarray): The values, with the parameter's dims.
    """
    def __init__(self, array):
        super().__init__()
        _dynet._init_vector(self, array)


# ---- value holders of DyNet's Python module (plain containers here) ----
def _unsigned(v):
    if int(v) < 0:
        raise ValueError("expected an unsigned value, got %r" % (v,))
    return int(v)


class FloatValue:
    """A holder of one float (DyNet's FloatValue).

    Args:
        val (float): The initial value. Defaults to 0.
    """
    _convert = staticmethod(float)

    def __init__(self, val=0):
        self.set(val)

    def set(self, val):
        """Sets the value.

        Args:
            val (float): The new value.

        Returns:
            None
        """
        self.val = self._convert(val)

    def get(self):
        """The value.

        Returns:
            float: the value.
        """
        return self.val


class UnsignedValue(FloatValue):
    """A holder of one unsigned int (DyNet's UnsignedValue).

    Args:
        val (int): The initial value, at least 0. Defaults to 0.
    """
    _convert = staticmethod(_unsigned)


class FloatVectorValue:
    """A holder of a list of floats (DyNet's FloatVectorValue).

    Args:
        val (list[float]): The initial values. Defaults to ().
    """
    _convert = staticmethod(float)

    def __init__(self, val=()):
        self.set(val)

    def set(self, newval):
        """Sets the values.

        Args:
            newval (list[float]): The new values.

        Returns:
            None
        """
        self.val = [self._convert(x) for x in newval]

    def get(self):
        """The values.

        Returns:
            list: a copy of the values.
        """
        return list(self.val)

    def size(self):
        """The number of values.

        Returns:
            int: the count.
        """
        return len(self.val)


class UnsignedVectorValue(FloatVectorValue):
    """A holder of a list of unsigned ints (DyNet's UnsignedVectorValue).

    Args:
        val (list[int]): The initial values, each at least 0. Defaults to ().
    """
    _convert = staticmethod(_unsigned)


def values(exps, recalculate=False):
    """The values of several expressions (one forward up to the last of them).

    Args:
        exps (list[Expression]): The expressions.
        recalculate (bool): Run forward from scratch. Defaults to False.

    Returns:
        list: each expression's value().
    """
    forward(exps, recalculate)
    return [e.value() for e in exps]


def npvalues(exps, recalculate=False):
    """The values of several expressions as numpy arrays (one forward up to the last of them).

    Args:
        exps (list[Expression]): The expressions.
        recalculate (bool): Run forward from scratch. Defaults to False.

    Returns:
        list[numpy.ndarray]: each expression's npvalue().
    """
    forward(exps, recalculate)
    return [e.npvalue() for e in exps]


def from_dlpack(tensor, batched=False):
    """An input expression from any DLPack tensor (torch, numpy, ...).

    Its dims are the tensor's shape; the values are copied into the graph, as inputTensor does.

    Args:
        tensor (object): An object with __dlpack__.
        batched (bool): Whether the last axis is the batch. Defaults to False.

    Returns:
        Expression: the input.
    """
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
    """A device's name, id and type (what get_device_info returns).

    Args:
        name (str): The device's name, e.g. 'CPU' or 'GPU:0'.
        id (int): Its id among the devices of its type.
        dtype (str): 'CPU' or 'GPU'.
    """
    def __init__(self, name, id, dtype):
        self.name, self.id, self.dtype = name, id, dtype


def available_devices():
    """The devices this process set up: the CPU, then the GPUs asked for at initialization.

    Returns:
        list[str]: their names.
    """
    return [name for name, _, _ in _dynet._devices()]


def get_device_info(name):
    """Describes a device.

    Args:
        name (str): The device's name ('cpu' or '' : the CPU).

    Returns:
        DeviceInfo: the device.

    Raises:
        ValueError: when this process has no such device.
    """
    for dev_name, dev_id, dev_type in _dynet._devices():
        if name == dev_name or (name in ("cpu", "") and dev_name == "CPU"):
            return DeviceInfo(dev_name, dev_id, dev_type)
    raise ValueError("get_device_info: no device named %r (this process has %s; GPUs are asked for with "
                     "--dynet-gpus, --dynet-devices or dynet_config.set(requested_gpus=...))"
                     % (name, ", ".join(available_devices())))


# ---------------------------------------------------------------------------------------------
# RNN states: (builder, state index) pairs over the C++ builder's state machine.
class RNNState:
    """A state of an RNN builder: the point a sequence has reached (from builder.initial_state()).

    States are immutable: add_input returns a new one, so several continuations of one prefix may coexist.

    Args:
        builder (builder): The RNN builder.
        state_idx (int): The builder's index of this state. Defaults to -1.
        prev_state (RNNState | None): The state before. Defaults to None.
        out (Expression | None): The output at this state. Defaults to None.
    """
    def __init__(self, builder, state_idx=-1, prev_state=None, out=None):
        self.builder, self.state_idx, self._prev, self._out = builder, state_idx, prev_state, out

    def add_input(self, x):
        """Feeds one input.

        Args:
            x (Expression): The input vector.

        Returns:
            RNNState: the next state.
        """
        idx, out = self.builder._add_input(self.state_idx, x)
        return RNNState(self.builder, idx, self, out)

    def add_inputs(self, xs):
        """Feeds a sequence of inputs.

        Args:
            xs (list[Expression]): The inputs.

        Returns:
            list[RNNState]: the state after each input.
        """
        states, cur = [], self
        for x in xs:
            cur = cur.add_input(x)
            states.append(cur)
        return states

    def transduce(self, xs):
        """Feeds a sequence of inputs and returns the outputs.

        Args:
            xs (list[Expression]): The inputs.

        Returns:
            list[Expression]: the output after each input.
        """
        return [s.output() for s in self.add_inputs(xs)]

    def output(self):
        """The output at this state (the top layer's h).

        Returns:
            Expression: the output (None at the initial state).
        """
        return self._out

    def h(self):
        """The hidden states of every layer.

        Returns:
            tuple[Expression, ...]: one per layer.
        """
        return tuple(self.builder._get_h(self.state_idx))

    def s(self):
        """The full states of every layer (for LSTMs: the cells, then the hidden states).

        Returns:
            tuple[Expression, ...]: the state vectors.
        """
        return tuple(self.builder._get_s(self.state_idx))

    def prev(self):
        """The state before this one.

        Returns:
            RNNState | None: it.
        """
        return self._prev

    def b(self):
        """The builder of this state.

        Returns:
            builder: the RNN builder.
        """
        return self.builder

    def set_h(self, es=None):
        """A new state with the given hidden states (the cells, for LSTMs, are kept).

        Args:
            es (list[Expression] | None): One hidden state per layer. Defaults to None.

        Returns:
            RNNState: the new state.
        """
        idx, out = self.builder._set_h(self.state_idx, list(es or []))
        return RNNState(self.builder, idx, self, out)

    def set_s(self, es=None):
        """A new state with the given full states.

        Args:
            es (list[Expression] | None): The state vectors (for LSTMs: cells, then hidden states). Defaults to None.

        Returns:
            RNNState: the new state.
        """
        idx, out = self.builder._set_s(self.state_idx, list(es or []))
        return RNNState(self.builder, idx, self, out)


class StackedRNNState:
    """The states of several RNN builders stacked by hand: each one reads the output of the one below.

    Args:
        states (list[RNNState]): The states, bottom first.
        prev (StackedRNNState | None): The state before. Defaults to None.
    """

    def __init__(self, states, prev=None):
        self.states, self._prev = list(states), prev

    def add_input(self, x):
        """Feeds one input to the bottom state.

        Args:
            x (Expression): The input.

        Returns:
            StackedRNNState: the next state.
        """
        next_states = []
        for s in self.states:
            next_states.append(s.add_input(x))
            x = next_states[-1].output()
        return StackedRNNState(next_states, self)

    def add_inputs(self, xs):
        """Feeds a sequence of inputs.

        Args:
            xs (list[Expression]): The inputs.

        Returns:
            list[StackedRNNState]: the state after each input.
        """
        states, cur = [], self
        for x in xs:
            cur = cur.add_input(x)
            states.append(cur)
        return states

    def output(self):
        """The top state's output.

        Returns:
            Expression: the output.
        """
        return self.states[-1].output()

    def prev(self):
        """The state before this one.

        Returns:
            StackedRNNState | None: it.
        """
        return self._prev

    def h(self):
        """The hidden states of every stacked state.

        Returns:
            list[tuple[Expression, ...]]: one tuple per state.
        """
        return [s.h() for s in self.states]

    def s(self):
        """The full states of every stacked state.

        Returns:
            list[tuple[Expression, ...]]: one tuple per state.
        """
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
        self.spec = (int(layers), int(input_dim), int(hidden_dim)) + tuple(extra[:len(self._spec_params)])

    @classmethod
    def from_spec(cls, spec, model):
        """Makes the builder again from the spec dy.save wrote (dy.load calls this).

        Args:
            spec (tuple): (layers, input_dim, hidden_dim, further constructor arguments).
            model (ParameterCollection): Where the parameters go.

        Returns:
            builder: the new builder.
        """
        spec = _spec_sequence(cls.__name__, spec)
        return cls(*spec[:3], model, *spec[3:])

    def initial_state(self, vecs=None, update=True):
        """Starts a sequence in the current graph.

        Args:
            vecs (list[Expression] | None): Initial state vectors (as for set_s); None: zeros. Defaults to None.
            update (bool): Whether the trainer updates the builder's parameters from this sequence. Defaults to True.

        Returns:
            RNNState: the initial state.
        """
        self._new_graph(update)
        return RNNState(self, self._start(list(vecs) if vecs is not None else []))

    def initial_state_from_raw_vectors(self, vecs, update=True):
        """Starts a sequence from initial state vectors given as arrays.

        Args:
            vecs (list[numpy.ndarray]): The state vectors.
            update (bool): Whether the trainer updates the builder's parameters. Defaults to True.

        Returns:
            RNNState: the initial state.
        """
        return self.initial_state([inputTensor(v) for v in vecs], update)

    def whoami(self):
        """The builder's class name.

        Returns:
            str: e.g. 'VanillaLSTMBuilder'.
        """
        return type(self).__name__


class SimpleRNNBuilder(_StateMethods, _dynet.SimpleRNNBuilder):
    """An Elman RNN: h_t = tanh(W_x x_t + W_h h_{t-1} + b).

    Args:
        layers (int): The number of stacked layers.
        input_dim (int): The size of the input vectors.
        hidden_dim (int): The size of the hidden state.
        model (ParameterCollection): Where the parameters go.
        support_lags (bool): Accepted for compatibility with DyNet. Defaults to False.
    """


class VanillaLSTMBuilder(_StateMethods, _dynet.VanillaLSTMBuilder):
    """An LSTM (alias LSTMBuilder): i, f, o = σ(W [x; h] + b), c_t = f ⊙ c_{t-1} + i ⊙ tanh(W_g [x; h] + b_g), h_t = o ⊙ tanh(c_t).

    Args:
        layers (int): The number of stacked layers.
        input_dim (int): The size of the input vectors.
        hidden_dim (int): The size of the hidden state.
        model (ParameterCollection): Where the parameters go.
        ln_lstm (bool): Layer normalization of the gates. Defaults to False.
        forget_bias (float): Added to the forget gate's bias. Defaults to 1.0.
    """
    _spec_params = (("ln_lstm", False), ("forget_bias", 1.0))


class CoupledLSTMBuilder(_StateMethods, _dynet.CoupledLSTMBuilder):
    """An LSTM with peephole connections whose input gate is 1 - forget gate.

    Args:
        layers (int): The number of stacked layers.
        input_dim (int): The size of the input vectors.
        hidden_dim (int): The size of the hidden state.
        model (ParameterCollection): Where the parameters go.
    """


class CompactVanillaLSTMBuilder(_StateMethods, _dynet.CompactVanillaLSTMBuilder):
    """An LSTM with the gates computed in one fused operation (vanilla_lstm_gates).

    Args:
        layers (int): The number of stacked layers.
        input_dim (int): The size of the input vectors.
        hidden_dim (int): The size of the hidden state.
        model (ParameterCollection): Where the parameters go.
    """


class GRUBuilder(_StateMethods, _dynet.GRUBuilder):
    """A gated recurrent unit: z, r = σ(W [x; h] + b), h_t = (1-z) ⊙ h_{t-1} + z ⊙ tanh(W_h [x; r ⊙ h] + b_h).

    Args:
        layers (int): The number of stacked layers.
        input_dim (int): The size of the input vectors.
        hidden_dim (int): The size of the hidden state.
        model (ParameterCollection): Where the parameters go.
    """


class SparseLSTMBuilder(_StateMethods, _dynet.SparseLSTMBuilder):
    """An LSTM whose weights are masked to a given sparsity (set_sparsity).

    Args:
        layers (int): The number of stacked layers.
        input_dim (int): The size of the input vectors.
        hidden_dim (int): The size of the hidden state.
        model (ParameterCollection): Where the parameters go.
        ln_lstm (bool): Layer normalization of the gates. Defaults to False.
        forget_bias (float): Added to the forget gate's bias. Defaults to 1.0.
    """
    _spec_params = (("ln_lstm", False), ("forget_bias", 1.0))


class FastLSTMBuilder(_StateMethods, _dynet.FastLSTMBuilder):
    """An LSTM with peephole connections (DyNet's FastLSTMBuilder).

    Args:
        layers (int): The number of stacked layers.
        input_dim (int): The size of the input vectors.
        hidden_dim (int): The size of the hidden state.
        model (ParameterCollection): Where the parameters go.
    """


class StandardSoftmaxBuilder(_dynet.StandardSoftmaxBuilder):
    """A softmax output layer: p(c | x) = softmax(W x + b).

    Args:
        input_dim (int): The size of the hidden state.
        num_classes (int): The number of classes.
        pc (ParameterCollection): Where the parameters go.
        bias (bool): Whether the layer has a bias. Defaults to True.
    """
    def __init__(self, input_dim, num_classes, pc, bias=True):
        super().__init__(input_dim, num_classes, pc, bias)
        self.spec = (int(input_dim), int(num_classes), bias)

    @classmethod
    def from_spec(cls, spec, model):
        """Makes the builder again from the spec dy.save wrote.

        Args:
            spec (tuple): (input_dim, num_classes[, bias]).
            model (ParameterCollection): Where the parameters go.

        Returns:
            StandardSoftmaxBuilder: the new builder.
        """
        spec = _spec_sequence(cls.__name__, spec)
        if len(spec) < 2:
            raise ValueError("StandardSoftmaxBuilder.from_spec: the spec needs (input_dim, num_classes[, bias]), got %r"
                             % (spec,))
        return cls(spec[0], spec[1], model, *spec[2:])



LSTMBuilder = VanillaLSTMBuilder


class BiRNNBuilder:
    """Stacked bidirectional RNNs over any builder class (DyNet's pure-Python BiRNNBuilder).

    Its parameters live in the subcollection 'birnn'; each layer's output is the concatenation of the forward and the backward builder's outputs.

    Args:
        num_layers (int): The number of bidirectional layers.
        input_dim (int): The size of the inputs.
        hidden_dim (int): The size of each output (even: half per direction).
        model (ParameterCollection): Where the parameters go.
        rnn_builder_factory (type): The builder class, e.g. dy.VanillaLSTMBuilder.
        builder_layers (list | None): (forward, backward) builder pairs to use instead. Defaults to None.
    """

    def __init__(self, num_layers, input_dim, hidden_dim, model, rnn_builder_factory, builder_layers=None):
        # ints, as the original's typed arguments made them (a float truncated: hidden_dim=256/2)
        num_layers, input_dim, hidden_dim = int(num_layers), int(input_dim), int(hidden_dim)
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
        """Makes the builder again from the spec dy.save wrote.

        Args:
            spec (tuple): The constructor arguments other than the model.
            model (ParameterCollection): Where the parameters go.

        Returns:
            BiRNNBuilder: the new builder.
        """
        spec = _spec_sequence("BiRNNBuilder", spec)
        return BiRNNBuilder(*spec[:3], model, *spec[3:])

    def param_collection(self):
        """The collection holding the builder's parameters.

        Returns:
            ParameterCollection: the 'birnn' subcollection.
        """
        return self.model

    def whoami(self):
        """The builder's class name.

        Returns:
            str: 'BiRNNBuilder'.
        """
        return "BiRNNBuilder"

    def set_dropout(self, p):
        """Sets the dropout rate of every builder.

        Args:
            p (float): The probability of dropping each value.

        Returns:
            None
        """
        for fb, bb in self.builder_layers:
            fb.set_dropout(p)
            bb.set_dropout(p)

    def disable_dropout(self):
        """Turns dropout off in every builder.

        For evaluation.

        Returns:
            None
        """
        for fb, bb in self.builder_layers:
            fb.disable_dropout()
            bb.disable_dropout()

    def add_inputs(self, es):
        """Runs the layers over a sequence; the last layer's states are returned as (forward, backward) pairs.

        Args:
            es (list[Expression]): The inputs.

        Returns:
            list[tuple[RNNState, RNNState]]: one pair per input.
        """
        for fb, bb in self.builder_layers[:-1]:
            fs = fb.initial_state().transduce(es)
            bs = bb.initial_state().transduce(reversed(es))
            es = [concatenate([f, b]) for f, b in zip(fs, reversed(bs))]
        fb, bb = self.builder_layers[-1]
        fs = fb.initial_state().add_inputs(es)
        bs = bb.initial_state().add_inputs(reversed(es))
        return [(f, b) for f, b in zip(fs, reversed(bs))]

    def transduce(self, es):
        """Runs the layers over a sequence.

        Args:
            es (list[Expression]): The inputs.

        Returns:
            list[Expression]: one output per input (forward and backward concatenated).
        """
        for fb, bb in self.builder_layers:
            fs = fb.initial_state().transduce(es)
            bs = bb.initial_state().transduce(list(reversed(es)))
            es = [concatenate([f, b]) for f, b in zip(fs, reversed(bs))]
        return es


# ---------------------------------------------------------------------------------------------
# Model files: DyNet's basename.data (text records) + basename.meta (a sequence of pickles).
def save(basename, objects):
    """Writes objects to basename.data (text records) and basename.meta (one pickle per object), as DyNet does.

    Args:
        basename (str): The path without extension.
        objects (list): Parameters, LookupParameters and builders (anything with spec and param_collection()).

    Returns:
        None
    """
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
    """Reads what save() wrote, one object at a time, into a collection.

    Args:
        basename (str): The path without extension.
        params (ParameterCollection): Where the parameters go.

    Returns:
        generator: the objects, in the order they were saved.
    """
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
    """Reads what save() wrote into a collection.

    Args:
        basename (str): The path without extension.
        params (ParameterCollection): Where the parameters go.

    Returns:
        list: the objects, in the order they were saved.
    """
    return list(load_generator(basename, params))


# ---------------------------------------------------------------------------------------------
# pickle and copy.deepcopy take the compiled functions and methods by qualified name, as the original's
# (programs keep dy.tanh or dy.renew_cg in pickled options); the op objects do it themselves (__reduce__).
# nanobind's function types are shared with other nanobind modules: theirs stay unpicklable, as before.
def _reduce_by_name(f):
    module, name = getattr(f, "__module__", None) or "", getattr(f, "__qualname__", "")
    if module == "dynet" or module.startswith("dynet."):
        target = _sys.modules.get(module)
        for part in name.split("."):
            target = getattr(target, part, None)
        if target is f:
            return name
    raise TypeError("cannot pickle %s.%s objects" % (type(f).__module__, type(f).__name__))


for _t in {type(_dynet.renew_cg), type(ParameterCollection.add_parameters)}:
    _copyreg.pickle(_t, _reduce_by_name)
del _t


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


# ---------------------------------------------------------------------------------------------
# inspect.signature for the compiled functions (Jupyter's `?`, IDEs, Sphinx): nanobind's functions and the
# op objects carry their signatures as text (__nb_signature__, which stubgen reads); this makes an
# inspect.Signature of it. For a name with several overloads, the parameters are the union of theirs (in
# order of first appearance), each annotated with the union of its types and given its first default.
def _annotation(text, namespace):
    try:
        return eval(text, namespace)  # noqa: S307 (our own signature text: types and module names)
    except Exception:
        return text


def _nb_signature(f):
    import ast
    import collections.abc
    import typing
    if not str(getattr(f, "__module__", "")).startswith("dynet"):
        return None  # another nanobind module's function: leave inspect as it was
    sigs = f.__nb_signature__
    if isinstance(sigs, str):  # op objects: stub lines, one per overload
        sigs = [(line, None, ()) for line in sigs.split("\n") if line.startswith("def ")]
    namespace = dict(vars(_dynet), collections=collections, typing=typing, dynet=_sys.modules[__name__])
    params, order, returns = {}, [], None
    inspect = _inspect
    inspect_empty = inspect.Parameter.empty
    for text, _, defaults in sigs:
        text = text.rstrip(". ").rstrip(":")
        text = _re_default.sub(lambda m: "__default_%s__" % m.group(1), text)
        tree = ast.parse(text + ": pass").body[0]
        a = tree.args
        positional = a.posonlyargs + a.args
        first_default = len(positional) - len(a.defaults)
        kinds = ([inspect.Parameter.POSITIONAL_ONLY] * len(a.posonlyargs) +
                 [inspect.Parameter.POSITIONAL_OR_KEYWORD] * len(a.args))
        entries = [(arg, kinds[k], a.defaults[k - first_default] if k >= first_default else None)
                   for k, arg in enumerate(positional)]
        if a.vararg:
            entries.append((a.vararg, inspect.Parameter.VAR_POSITIONAL, None))
        entries += [(arg, inspect.Parameter.KEYWORD_ONLY, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
        if a.kwarg:
            entries.append((a.kwarg, inspect.Parameter.VAR_KEYWORD, None))
        for arg, kind, default in entries:
            if default is None:
                value = inspect_empty
            elif isinstance(default, ast.Name) and default.id.startswith("__default_"):
                value = defaults[int(default.id[len("__default_"):-2])]
            else:
                value = ast.literal_eval(default)
            ann = ast.unparse(arg.annotation) if arg.annotation is not None else None
            if arg.arg not in params:
                order.append(arg.arg)
                params[arg.arg] = [kind, [], value]
            entry = params[arg.arg]
            if ann and ann not in entry[1]:
                entry[1].append(ann)
            if entry[2] is inspect_empty:
                entry[2] = value
        if returns is None and tree.returns is not None:
            returns = ast.unparse(tree.returns)
    out = []
    for name in order:
        kind, anns, default = params[name]
        ann = _annotation(" | ".join(anns), namespace) if anns else inspect_empty
        out.append(inspect.Parameter(name, kind, default=default, annotation=ann))
    ret = _annotation(returns, namespace) if returns else inspect.Signature.empty
    return inspect.Signature(out, return_annotation=ret)


def _nb_bound_signature(m):
    sig = _nb_signature(m.__func__)
    if sig is None:
        return None
    return sig.replace(parameters=list(sig.parameters.values())[1:])


import inspect as _inspect  # noqa: E402
import re as _re  # noqa: E402

_re_default = _re.compile(r"\\(\d+)")  # nanobind's placeholder \N for the N-th default value
_dynet._install_signatures(property(_nb_signature), property(_nb_bound_signature))
type(pick).__signature__ = property(_nb_signature)
StaleExpressionError.__signature__ = _inspect.Signature(
    [_inspect.Parameter("args", _inspect.Parameter.VAR_POSITIONAL)])

# The Python builder classes take their compiled base's constructor arguments (through *args).
for _cls in (SimpleRNNBuilder, VanillaLSTMBuilder, CoupledLSTMBuilder, CompactVanillaLSTMBuilder, GRUBuilder,
             SparseLSTMBuilder, FastLSTMBuilder):
    _sig = _nb_signature(_cls.__mro__[2].__init__)  # the compiled base, after _StateMethods
    _cls.__signature__ = _sig.replace(parameters=list(_sig.parameters.values())[1:],
                                      return_annotation=_inspect.Signature.empty)
    _cls.__repr__ = lambda self: "%s(layers=%r, input_dim=%r, hidden_dim=%r)" % ((type(self).__name__,) + tuple(self.spec[:3]))
StandardSoftmaxBuilder.__repr__ = lambda self: "StandardSoftmaxBuilder(input_dim=%r, num_classes=%r, bias=%r)" % self.spec
BiRNNBuilder.__repr__ = lambda self: "BiRNNBuilder(num_layers=%r, input_dim=%r, hidden_dim=%r, %s)" % (
    self.spec[:3] + (getattr(self.spec[3], "__name__", self.spec[3]),))
del _cls, _sig
# Classes Python code does not construct (made by ParameterCollection, tensor_value(), the ops, ...): an empty
# signature, so that inspect.signature answers for every public name.
_class_signatures = {}
for _name, _obj in list(vars(_dynet).items()):
    if isinstance(_obj, type) and not _name.startswith("_"):
        try:
            _sig = _inspect.signature(_obj)
        except (ValueError, TypeError):
            _sig = _inspect.Signature()
        _class_signatures[_obj] = _sig.replace(return_annotation=_inspect.Signature.empty)
for _obj, _sig in _class_signatures.items():  # on each class: a base's would be inherited
    _obj.__signature__ = _sig
del _name, _obj, _sig, _class_signatures
