from collections.abc import Sequence
import inspect

import numpy
import numpy.typing


import collections.abc
import typing

class Expression:
    """
    A node of a computation graph (DyNet's Expression).

    Made by the op functions (dy.tanh, dy.pick, ...), the operators + - * / ** and indexing; its value is computed lazily by value(), npvalue() or forward().
    """

    def __add__(self, value, /):
        """Return self+value."""

    def __radd__(self, value, /):
        """Return value+self."""

    def __sub__(self, value, /):
        """Return self-value."""

    def __rsub__(self, value, /):
        """Return value-self."""

    def __mul__(self, value, /):
        """Return self*value."""

    def __rmul__(self, value, /):
        """Return value*self."""

    def __pow__(self, value, mod=None, /):
        """Return pow(self, value, mod)."""

    def __rpow__(self, value, mod=None, /):
        """Return pow(value, self, mod)."""

    def __neg__(self, /):
        """-self"""

    def __truediv__(self, value, /):
        """Return self/value."""

    def __rtruediv__(self, value, /):
        """Return value/self."""

    def value(self, recalculate: bool | None = False) -> float | list[float] | numpy.typing.NDArray[numpy.float64]:
        """
        The value: a float for a scalar, a list for a vector, else a numpy array (DyNet's value()).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            float | list[float] | numpy.ndarray: a copy of the value.
        """

    def npvalue(self, recalculate: bool | None = False) -> numpy.typing.NDArray[numpy.float64]:
        """
        The value as a float64 numpy array (the batch, when there is one, is the last axis).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            numpy.ndarray: a copy of the value.
        """

    def scalar_value(self, recalculate: bool | None = False) -> float:
        """
        The value of a one-element expression as a float.

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            float: the value.

        Raises:
            ValueError: when the expression has more than one element.
        """

    def vec_value(self, recalculate: bool | None = False) -> list[float]:
        """
        The values as a flat list (column-major, batch elements last).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            list[float]: a copy of the values.
        """

    def tensor_value(self, recalculate: bool | None = False) -> Tensor:
        """
        The value as a dy.Tensor (which has argmax, topk and categorical_sample_log_prob).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            Tensor: a copy of the value.
        """

    def forward(self, recalculate: bool | None = False) -> None:
        """
        Computes the graph up to this node (the value is then cached).

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            None
        """

    def gradient(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        The gradient of the last backward()'s loss with respect to this node.

        Valid after backward() on an expression that depends on this one.

        Returns:
            numpy.ndarray: a float64 copy of the gradient.
        """

    def backward(self, full: bool | None = False) -> None:
        """
        Backpropagates from this (scalar) node: accumulates gradients into the parameters it depends on.

        Computes the value first if needed; then call a trainer's update().

        Args:
            full (bool): Also compute the gradients of nodes that do not depend on parameters (for gradient()). Defaults to False.

        Returns:
            None
        """

    def dim(self) -> tuple[tuple, int]:
        """
        The dims of the expression and its batch size.

        Does not compute the value.

        Returns:
            tuple[tuple[int, ...], int]: (dims, batch size).
        """

    def __repr__(self) -> str: ...

    __array_ufunc__: None = None

    def __array__(self, dtype: object | None = None, copy: object | None = None) -> numpy.typing.NDArray[numpy.float64]: ...

    def set(self, x: object) -> None:
        """
        Gives an input, lookup or pick new values or indices; the graph is recomputed on the next forward.

        The number of values (or indices) must stay the same.

        Args:
            x (float | list | numpy.ndarray): The new values (inputs) or indices (lookups, picks).

        Returns:
            None
        """

    def set_index(self, i: object) -> None:
        """
        Gives a lookup or pick a new index (or one per batch element); the graph is recomputed on the next forward.

        Args:
            i (int | list[int]): The new index, or indices.

        Returns:
            None
        """

    def __dlpack__(self, **kwargs) -> object: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...

    def __getitem__(self, arg: object, /) -> Expression: ...

    __signature__: inspect.Signature = ...

class StaleExpressionError(ValueError, RuntimeError):
    """
    An Expression used after renew_cg() or after its graph was destroyed.

    A ValueError, as in the original DyNet, and a RuntimeError.

    Args:
        args: The message, as for any exception.
    """

class Tensor:
    """
    A copy of an expression's value (Expression.tensor_value()), or the indices computed from one.

    as_numpy() has DyNet's layout: the dims, then the batch as the last axis.
    """

    def as_numpy(self) -> numpy.typing.NDArray[numpy.float64] | numpy.typing.NDArray[numpy.int64]:
        """
        The tensor as a numpy array (the batch, when there is one, is the last axis).

        Returns:
            numpy.ndarray: float64 values (a copy), or int64 indices (a read-only view) for an index tensor.
        """

    def argmax(self, dim: int = 0, num: int = 1) -> Tensor:
        """
        The indices of the largest values along a dim.

        Args:
            dim (int): The dim to search along. Defaults to 0.
            num (int): How many indices per slice. Defaults to 1.

        Returns:
            Tensor: an index tensor.
        """

    def topk(self, dim: int = 0, num: int = 1) -> tuple[Tensor, Tensor]:
        """
        The num largest values along a dim, and their indices.

        Args:
            dim (int): The dim to search along. Defaults to 0.
            num (int): How many values per slice. Defaults to 1.

        Returns:
            tuple[Tensor, Tensor]: (values, indices).
        """

    def categorical_sample_log_prob(self, dim: int = 0, num: int = 1) -> Tensor:
        """
        Draws indices from the categorical distributions whose log-probabilities the tensor holds.

        Args:
            dim (int): The dim along which each distribution lies. Defaults to 0.
            num (int): How many samples per distribution. Defaults to 1.

        Returns:
            Tensor: an index tensor.
        """

    def dim(self) -> tuple[tuple, int]:
        """
        The dims of the tensor and its batch size.

        Returns:
            tuple[tuple[int, ...], int]: (dims, batch size).
        """

    def __array__(self, *args, **kwargs) -> object: ...

    def __repr__(self) -> str: ...

    __signature__: inspect.Signature = ...

class ComputationGraph:
    """
    A computation graph.

    dy.cg() is the global one; `with dy.ComputationGraph():` builds into a new graph in this thread (one graph per thread for data parallelism).
    """

    def __init__(self) -> None: ...

    def __repr__(self) -> str: ...

    def __enter__(self) -> ComputationGraph: ...

    def __exit__(self, *args) -> None: ...

    def renew(self, immediate_compute: bool | None = False, check_validity: bool | None = False, autobatching: object | None = None) -> None:
        """
        Clears the graph (its expressions become stale) and sets how it runs.

        Args:
            immediate_compute (bool): Compute each node as soon as it is added (for debugging). Defaults to False.
            check_validity (bool): Check each value for NaN and infinity as it is computed. Defaults to False.
            autobatching (bool | None): Batch independent operations automatically; None: the --dynet-autobatch setting. Defaults to None.

        Returns:
            None
        """

    def version(self) -> int:
        """
        A number that changes whenever the graph is renewed.

        Returns:
            int: the graph's version.
        """

    def checkpoint(self) -> None:
        """
        Remembers the graph's current size; revert() removes the nodes added after it.

        Returns:
            None
        """

    def revert(self) -> None:
        """
        Removes the nodes added since the last checkpoint().

        Returns:
            None
        """

    def print_graphviz(self) -> None:
        """
        Prints the graph in graphviz's dot format on sys.stdout (graphviz() returns the text).

        Returns:
            None
        """

    def dump(self, filename: str, show_values: bool | None = True, show_gradients: bool | None = True, nan_check_only: bool | None = False) -> None:
        """
        Writes the graph's nodes (ops, dims, and optionally values and gradients) to a text file.

        Args:
            filename (str): The file ('' : sys.stderr).
            show_values (bool): Include the values. Defaults to True.
            show_gradients (bool): Include the gradients. Defaults to True.
            nan_check_only (bool): Only say whether each value has a NaN. Defaults to False.

        Returns:
            None
        """

    def graphviz(self) -> str:
        """
        The graph in graphviz dot format (what print_graphviz() writes to sys.stdout).

        Returns:
            str: one node per line, labelled like "N1 = parameter(/W) {8,2}", then the edges.
        """

    def size(self) -> int:
        """
        The number of nodes in the graph.

        Returns:
            int: the node count.
        """

    def forward(self, index: object) -> None:
        """
        Computes the graph from scratch up to a node.

        Args:
            index (Expression | int): The node (an expression of this graph, or its index).

        Returns:
            None
        """

    def inc_forward(self, index: object) -> None:
        """
        Computes the nodes not yet computed, up to a node.

        Args:
            index (Expression | int): The node (an expression of this graph, or its index).

        Returns:
            None
        """

    def forward_scalar(self, index: object) -> float:
        """
        Computes the graph from scratch up to a node and returns its value as a float.

        Args:
            index (Expression | int): The node (an expression of this graph, or its index).

        Returns:
            float: the value.
        """

    def inc_forward_scalar(self, index: object) -> float:
        """
        Computes the nodes not yet computed, up to a node, and returns its value as a float.

        Args:
            index (Expression | int): The node (an expression of this graph, or its index).

        Returns:
            float: the value.
        """

    def forward_vec(self, index: object) -> list[float]:
        """
        Computes the graph from scratch up to a node and returns its values as a list.

        Args:
            index (Expression | int): The node (an expression of this graph, or its index).

        Returns:
            list[float]: the values.
        """

    def inc_forward_vec(self, index: object) -> list[float]:
        """
        Computes the nodes not yet computed, up to a node, and returns its values as a list.

        Args:
            index (Expression | int): The node (an expression of this graph, or its index).

        Returns:
            list[float]: the values.
        """

    def backward(self, index: object, full: bool | None = False) -> None:
        """
        Backpropagates from a scalar node of this graph.

        Args:
            index (Expression | int): The node (an expression of this graph, or its index).
            full (bool): Also compute the gradients of nodes that do not depend on parameters. Defaults to False.

        Returns:
            None
        """

    def inputMatrixLiteral(self, v: Sequence[float], d: Sequence[int], batch_size: int = 1, device: object = '') -> Expression:
        """
        An input of this graph from column-major values.

        Args:
            v (list[float]): The values, column-major, batch elements last.
            d (list[int]): The dims.
            batch_size (int): The number of batch elements. Defaults to 1.
            device (str): The device ('' : the default). Defaults to ''.

        Returns:
            Expression: the input.
        """

    def inputSparseTensor(self, idxs: Sequence[int], v: Sequence[float], dim: Sequence[int], batch_size: int = 1, defval: float = 0.0, device: object = '') -> Expression:
        """
        An input of this graph given by its nonzero values.

        Args:
            idxs (list[int]): The flat (column-major) indices of the values.
            v (list[float]): The values.
            dim (list[int]): The dims.
            batch_size (int): The number of batch elements. Defaults to 1.
            defval (float): The value everywhere else. Defaults to 0.0.
            device (str): The device ('' : the default). Defaults to ''.

        Returns:
            Expression: the input.
        """

    __signature__: inspect.Signature = ...

def renew_cg(immediate_compute: bool | None = False, check_validity: bool | None = False, autobatching: object | None = None) -> ComputationGraph:
    """
    Clears the current graph (DyNet's renew_cg): expressions made before become stale.

    Args:
        immediate_compute (bool): Compute each node as soon as it is added (for debugging). Defaults to False.
        check_validity (bool): Check each value for NaN and infinity as it is computed. Defaults to False.
        autobatching (bool | None): Batch independent operations automatically; None: the --dynet-autobatch setting. Defaults to None.

    Returns:
        ComputationGraph: the global graph.
    """

def cg() -> ComputationGraph:
    """
    The global computation graph.

    Returns:
        ComputationGraph: the graph that renew_cg() clears.
    """

def cg_version() -> int:
    """
    A number that changes whenever the global graph is renewed.

    Returns:
        int: the version.
    """

def cg_checkpoint() -> None:
    """
    Remembers the current graph's size; cg_revert() removes the nodes added after it.

    Returns:
        None
    """

def cg_revert() -> None:
    """
    Removes the nodes added to the current graph since the last cg_checkpoint().

    Returns:
        None
    """

def print_text_graphviz() -> None:
    """
    Prints the current graph in graphviz's dot format on sys.stdout.

    Returns:
        None
    """

def dump_cg(filename: str = '', show_values: bool | None = True, show_gradients: bool | None = True, nan_check_only: bool | None = False) -> None:
    """
    Writes the current graph's nodes (ops, dims, and optionally values and gradients) to a text file.

    Args:
        filename (str): The file ('' : sys.stderr). Defaults to ''.
        show_values (bool): Include the values. Defaults to True.
        show_gradients (bool): Include the gradients. Defaults to True.
        nan_check_only (bool): Only say whether each value has a NaN. Defaults to False.

    Returns:
        None
    """

def forward(exps: Sequence, recalculate: bool | None = False) -> None:
    """
    Computes several expressions with one forward pass (up to the last of them).

    Args:
        exps (list[Expression]): The expressions.
        recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

    Returns:
        None
    """

class PyInitializer:
    """
    The base of DyNet's parameter initializers.

    Pass an instance of a subclass (NormalInitializer, GlorotInitializer, ...) as `init` of ParameterCollection.add_parameters or add_lookup_parameters.
    """

    def __init__(self) -> None: ...

    __signature__: inspect.Signature = ...

class Parameters:
    """
    A parameter (weights, a bias) of a ParameterCollection.

    It is an expression of the current graph wherever one is expected (W * x), with the Expression's operators and value methods. Made by ParameterCollection.add_parameters.
    """

    def __add__(self, value, /):
        """Return self+value."""

    def __radd__(self, value, /):
        """Return value+self."""

    def __sub__(self, value, /):
        """Return self-value."""

    def __rsub__(self, value, /):
        """Return value-self."""

    def __mul__(self, value, /):
        """Return self*value."""

    def __rmul__(self, value, /):
        """Return value*self."""

    def __pow__(self, value, mod=None, /):
        """Return pow(self, value, mod)."""

    def __rpow__(self, value, mod=None, /):
        """Return pow(value, self, mod)."""

    def __neg__(self, /):
        """-self"""

    def __truediv__(self, value, /):
        """Return self/value."""

    def __rtruediv__(self, value, /):
        """Return value/self."""

    def __repr__(self) -> str: ...

    def expr(self, update: bool | None = False) -> Expression:
        """
        The parameter as an expression of the current graph (cached per graph).

        Args:
            update (bool): Whether gradients flow into it (False: a constant). Defaults to False.

        Returns:
            Expression: the parameter's node.
        """

    def shape(self) -> tuple:
        """
        The parameter's dims.

        Returns:
            tuple[int, ...]: the dims.
        """

    def as_array(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        The values.

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def grad_as_array(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        The accumulated gradient.

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def set_value(self, arr: object) -> None:
        """
        Replaces the values.

        Args:
            arr (numpy.ndarray | list): The new values, with the parameter's dims.

        Returns:
            None
        """

    def clip_inplace(self, left: float, right: float) -> None:
        """
        Clips every value into [left, right].

        Args:
            left (float): The lower bound.
            right (float): The upper bound.

        Returns:
            None
        """

    def zero(self) -> None:
        """
        Sets every value to 0.

        Returns:
            None
        """

    def scale(self, s: float) -> None:
        """
        Multiplies the values by a factor.

        Args:
            s (float): The factor.

        Returns:
            None
        """

    def scale_gradient(self, s: float) -> None:
        """
        Multiplies the accumulated gradient by a factor.

        Args:
            s (float): The factor.

        Returns:
            None
        """

    def is_updated(self) -> bool:
        """
        Whether trainers update this parameter.

        Returns:
            bool: True unless set_updated(False) was called.
        """

    def set_updated(self, b: bool | None) -> None:
        """
        Whether trainers update this parameter (False freezes it).

        Args:
            b (bool): True to train it, False to freeze it.

        Returns:
            None
        """

    def name(self) -> str:
        """
        The full name (e.g. '/W', or '/birnn/_0' in a subcollection).

        Returns:
            str: the name.
        """

    def save(self, fname: str, key: str = '', append: bool = False) -> None:
        """
        Appends (or writes) the values to a DyNet text model file.

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.
            append (bool): Add to the file instead of replacing it. Defaults to False.

        Returns:
            None
        """

    def write_to_textfile(self, fname: str, key: str = '', append: bool = False) -> None:
        """
        Appends (or writes) the values to a DyNet text model file (same as save).

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.
            append (bool): Add to the file instead of replacing it. Defaults to False.

        Returns:
            None
        """

    def populate(self, fname: str, key: str = '') -> None:
        """
        Reads the values from a DyNet text model file.

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.

        Returns:
            None
        """

    def populate_from_textfile(self, fname: str, key: str = '') -> None:
        """
        Reads the values from a DyNet text model file (same as populate).

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.

        Returns:
            None
        """

    def value(self, recalculate: bool | None = False) -> float | list[float] | numpy.typing.NDArray[numpy.float64]:
        """
        The value: a float for a scalar, a list for a vector, else a numpy array (DyNet's value()).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            float | list[float] | numpy.ndarray: a copy of the value.
        """

    def npvalue(self, recalculate: bool | None = False) -> numpy.typing.NDArray[numpy.float64]:
        """
        The value as a float64 numpy array (the batch, when there is one, is the last axis).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            numpy.ndarray: a copy of the value.
        """

    def scalar_value(self, recalculate: bool | None = False) -> float:
        """
        The value of a one-element expression as a float.

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            float: the value.

        Raises:
            ValueError: when the expression has more than one element.
        """

    def vec_value(self, recalculate: bool | None = False) -> list[float]:
        """
        The values as a flat list (column-major, batch elements last).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            list[float]: a copy of the values.
        """

    def tensor_value(self, recalculate: bool | None = False) -> Tensor:
        """
        The value as a dy.Tensor (which has argmax, topk and categorical_sample_log_prob).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            Tensor: a copy of the value.
        """

    def forward(self, recalculate: bool | None = False) -> None:
        """
        Computes the graph up to this node (the value is then cached).

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            None
        """

    def gradient(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        The gradient of the last backward()'s loss with respect to this node.

        Valid after backward() on an expression that depends on this one.

        Returns:
            numpy.ndarray: a float64 copy of the gradient.
        """

    def backward(self, full: bool | None = False) -> None:
        """
        Backpropagates from this (scalar) node: accumulates gradients into the parameters it depends on.

        Computes the value first if needed; then call a trainer's update().

        Args:
            full (bool): Also compute the gradients of nodes that do not depend on parameters (for gradient()). Defaults to False.

        Returns:
            None
        """

    def dim(self) -> tuple[tuple, int]:
        """
        The dims of the expression and its batch size.

        Does not compute the value.

        Returns:
            tuple[tuple[int, ...], int]: (dims, batch size).
        """

    def __getitem__(self, arg: object, /) -> Expression: ...

    __signature__: inspect.Signature = ...

class LookupParameters:
    """
    A lookup table (embeddings) of a ParameterCollection: rows of equal dims.

    E[i] and dy.lookup(E, i) are row i as an expression of the current graph; made by ParameterCollection.add_lookup_parameters.
    """

    def __add__(self, value, /):
        """Return self+value."""

    def __radd__(self, value, /):
        """Return value+self."""

    def __sub__(self, value, /):
        """Return self-value."""

    def __rsub__(self, value, /):
        """Return value-self."""

    def __mul__(self, value, /):
        """Return self*value."""

    def __rmul__(self, value, /):
        """Return value*self."""

    def __pow__(self, value, mod=None, /):
        """Return pow(self, value, mod)."""

    def __rpow__(self, value, mod=None, /):
        """Return pow(value, self, mod)."""

    def __neg__(self, /):
        """-self"""

    def __truediv__(self, value, /):
        """Return self/value."""

    def __rtruediv__(self, value, /):
        """Return value/self."""

    def __repr__(self) -> str: ...

    def expr(self, update: bool | None = True) -> Expression:
        """
        The whole table as one expression of the current graph, {dims..., rows}.

        Args:
            update (bool): Whether gradients flow into it (False: a constant). Defaults to True.

        Returns:
            Expression: the table's node.
        """

    def shape(self) -> tuple:
        """
        The table's dims: (rows, dims of a row...).

        Returns:
            tuple[int, ...]: the dims.
        """

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> Expression: ...

    def batch(self, i: Sequence[int]) -> Expression:
        """
        A batched lookup of several rows (one per batch element; same as dy.lookup_batch).

        Args:
            i (list[int]): The rows.

        Returns:
            Expression: the rows, as a batch.
        """

    def init_row(self, i: int, row: object) -> None:
        """
        Sets the values of one row.

        Args:
            i (int): The row.
            row (numpy.ndarray | list): Its values.

        Returns:
            None
        """

    def init_from_array(self, arr: object) -> None:
        """
        Sets every row from an array of shape (rows, dims...).

        Args:
            arr (numpy.ndarray): One row per entry.

        Returns:
            None
        """

    def as_array(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        The whole table, shape (rows, dims...).

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def grad_as_array(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        The accumulated gradient of the whole table, shape (rows, dims...).

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def row_as_array(self, row: int) -> numpy.typing.NDArray[numpy.float64]:
        """
        The values of one row.

        Args:
            row (int): The row.

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def row_grad_as_array(self, row: int) -> numpy.typing.NDArray[numpy.float64]:
        """
        The accumulated gradient of one row.

        Args:
            row (int): The row.

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def rows_as_array(self, rows: Sequence[int]) -> numpy.typing.NDArray[numpy.float64]:
        """
        The values of several rows, shape (len(rows), dims...).

        Args:
            rows (list[int]): The rows.

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def rows_grad_as_array(self, rows: Sequence[int]) -> numpy.typing.NDArray[numpy.float64]:
        """
        The accumulated gradients of several rows, shape (len(rows), dims...).

        Args:
            rows (list[int]): The rows.

        Returns:
            numpy.ndarray: a float64 copy.
        """

    def zero(self) -> None:
        """
        Sets every value to 0.

        Returns:
            None
        """

    def scale(self, s: float) -> None:
        """
        Multiplies the values by a factor.

        Args:
            s (float): The factor.

        Returns:
            None
        """

    def scale_gradient(self, s: float) -> None:
        """
        Multiplies the accumulated gradient by a factor.

        Args:
            s (float): The factor.

        Returns:
            None
        """

    def is_updated(self) -> bool:
        """
        Whether trainers update this parameter.

        Returns:
            bool: True unless set_updated(False) was called.
        """

    def set_updated(self, b: bool | None) -> None:
        """
        Whether trainers update this parameter (False freezes it).

        Args:
            b (bool): True to train it, False to freeze it.

        Returns:
            None
        """

    def name(self) -> str:
        """
        The full name (e.g. '/W', or '/birnn/_0' in a subcollection).

        Returns:
            str: the name.
        """

    def save(self, fname: str, key: str = '', append: bool = False) -> None:
        """
        Appends (or writes) the values to a DyNet text model file.

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.
            append (bool): Add to the file instead of replacing it. Defaults to False.

        Returns:
            None
        """

    def write_to_textfile(self, fname: str, key: str = '', append: bool = False) -> None:
        """
        Appends (or writes) the values to a DyNet text model file (same as save).

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.
            append (bool): Add to the file instead of replacing it. Defaults to False.

        Returns:
            None
        """

    def populate(self, fname: str, key: str = '') -> None:
        """
        Reads the values from a DyNet text model file.

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.

        Returns:
            None
        """

    def populate_from_textfile(self, fname: str, key: str = '') -> None:
        """
        Reads the values from a DyNet text model file (same as populate).

        Args:
            fname (str): The file.
            key (str): The name the values are stored under ('' : the parameter's own name). Defaults to ''.

        Returns:
            None
        """

    def value(self, recalculate: bool | None = False) -> float | list[float] | numpy.typing.NDArray[numpy.float64]:
        """
        The value: a float for a scalar, a list for a vector, else a numpy array (DyNet's value()).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            float | list[float] | numpy.ndarray: a copy of the value.
        """

    def npvalue(self, recalculate: bool | None = False) -> numpy.typing.NDArray[numpy.float64]:
        """
        The value as a float64 numpy array (the batch, when there is one, is the last axis).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            numpy.ndarray: a copy of the value.
        """

    def scalar_value(self, recalculate: bool | None = False) -> float:
        """
        The value of a one-element expression as a float.

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            float: the value.

        Raises:
            ValueError: when the expression has more than one element.
        """

    def vec_value(self, recalculate: bool | None = False) -> list[float]:
        """
        The values as a flat list (column-major, batch elements last).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            list[float]: a copy of the values.
        """

    def tensor_value(self, recalculate: bool | None = False) -> Tensor:
        """
        The value as a dy.Tensor (which has argmax, topk and categorical_sample_log_prob).

        Computes the graph up to this node if needed.

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            Tensor: a copy of the value.
        """

    def forward(self, recalculate: bool | None = False) -> None:
        """
        Computes the graph up to this node (the value is then cached).

        Args:
            recalculate (bool): Run forward again from scratch instead of incrementally. Defaults to False.

        Returns:
            None
        """

    def gradient(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        The gradient of the last backward()'s loss with respect to this node.

        Valid after backward() on an expression that depends on this one.

        Returns:
            numpy.ndarray: a float64 copy of the gradient.
        """

    def backward(self, full: bool | None = False) -> None:
        """
        Backpropagates from this (scalar) node: accumulates gradients into the parameters it depends on.

        Computes the value first if needed; then call a trainer's update().

        Args:
            full (bool): Also compute the gradients of nodes that do not depend on parameters (for gradient()). Defaults to False.

        Returns:
            None
        """

    def dim(self) -> tuple[tuple, int]:
        """
        The dims of the expression and its batch size.

        Does not compute the value.

        Returns:
            tuple[tuple[int, ...], int]: (dims, batch size).
        """

    __signature__: inspect.Signature = ...

class ParameterCollection:
    """
    Holds Parameters and LookupParameters (alias: Model).

    Nested collections (add_subcollection) name their parameters /outer/inner/name, as in DyNet's model files; trainers update every parameter of the collection they were given.
    """

    def __init__(self) -> None: ...

    def __repr__(self) -> str: ...

    def add_parameters(self, dim: object, init: object | None = None, name: str = '', device: object = '', scale: float = 1.0, mean: float = 0.0, std: float = 1.0) -> Parameters:
        """
        Adds a parameter (a weight matrix, a bias, ...).

        Args:
            dim (int | tuple[int, ...]): The dims.
            init (None | float | str | numpy.ndarray | PyInitializer): None: the default (Glorot); a number: that constant; 'uniform', 'normal', 'glorot', 'he', 'identity' or 'saxe'; an array: its values; or an initializer object. Defaults to None.
            name (str): The name ('' : one is made up). Defaults to ''.
            device (str): The device ('' : the default). Defaults to ''.
            scale (float): The scale of init='uniform' (values in [-scale, scale]) or 'saxe'. Defaults to 1.0.
            mean (float): The mean of init='normal'. Defaults to 0.0.
            std (float): The standard deviation of init='normal'. Defaults to 1.0.

        Returns:
            Parameters: the new parameter.
        """

    def add_lookup_parameters(self, dim: object, init: object | None = None, name: str = '', device: object = '', scale: float = 1.0, mean: float = 0.0, std: float = 1.0) -> LookupParameters:
        """
        Adds a lookup table (word embeddings, ...).

        Args:
            dim (tuple[int, ...]): (rows, dims of a row...).
            init (None | float | str | numpy.ndarray | PyInitializer): None: the default (Glorot); a number: that constant; 'uniform', 'normal', 'glorot', 'he', 'identity' or 'saxe'; an array: its values; or an initializer object. Defaults to None.
            name (str): The name ('' : one is made up). Defaults to ''.
            device (str): The device ('' : the default). Defaults to ''.
            scale (float): The scale of init='uniform' or 'saxe'. Defaults to 1.0.
            mean (float): The mean of init='normal'. Defaults to 0.0.
            std (float): The standard deviation of init='normal'. Defaults to 1.0.

        Returns:
            LookupParameters: the new table.
        """

    def parameters_from_numpy(self, array: object, name: str = '', device: object = '') -> Parameters:
        """
        Adds a parameter with the values (and dims) of an array.

        Args:
            array (numpy.ndarray): The values.
            name (str): The name. Defaults to ''.
            device (str): The device. Defaults to ''.

        Returns:
            Parameters: the new parameter.
        """

    def lookup_parameters_from_numpy(self, array: object, name: str = '', device: object = '') -> LookupParameters:
        """
        Adds a lookup table with the rows of an array of shape (rows, dims...).

        Args:
            array (numpy.ndarray): The rows.
            name (str): The name. Defaults to ''.
            device (str): The device. Defaults to ''.

        Returns:
            LookupParameters: the new table.
        """

    def add_subcollection(self, name: str | None = None) -> ParameterCollection:
        """
        Adds a nested collection; its parameters are named /this/name/....

        Args:
            name (str | None): The subcollection's name (None: one is made up). Defaults to None.

        Returns:
            ParameterCollection: the subcollection.
        """

    def parameter_count(self) -> int:
        """
        The number of values in all parameters and lookup tables.

        Returns:
            int: the count.
        """

    def name(self) -> str:
        """
        The collection's full name ('/' for a top-level one).

        Returns:
            str: the name.
        """

    def get_weight_decay(self) -> float:
        """
        The L2 weight decay λ applied at each update.

        Returns:
            float: λ.
        """

    def set_weight_decay(self, lam: float) -> None:
        """
        Sets the L2 weight decay λ applied at each update.

        Args:
            lam (float): λ, in [0, 1).

        Returns:
            None
        """

    def set_weight_decay_lambda(self, lam: float) -> None:
        """
        Sets the L2 weight decay λ applied at each update (same as set_weight_decay).

        Args:
            lam (float): λ, in [0, 1).

        Returns:
            None
        """

    def parameters_list(self) -> list[Parameters]:
        """
        The collection's parameters (subcollections' included).

        Returns:
            list[Parameters]: them.
        """

    def lookup_parameters_list(self) -> list[LookupParameters]:
        """
        The collection's lookup tables (subcollections' included).

        Returns:
            list[LookupParameters]: them.
        """

    def save(self, fname: str, name: str = '', append: bool | None = False) -> None:
        """
        Writes the collection to a DyNet text model file.

        Args:
            fname (str): The file.
            name (str): The prefix to store it under ('' : its own name). Defaults to ''.
            append (bool): Add to the file instead of replacing it. Defaults to False.

        Returns:
            None
        """

    def write_to_textfile(self, fname: str, key: str = '', append: bool | None = False) -> None:
        """
        Writes the collection to a DyNet text model file (same as save).

        Args:
            fname (str): The file.
            key (str): The prefix to store it under. Defaults to ''.
            append (bool): Add to the file instead of replacing it. Defaults to False.

        Returns:
            None
        """

    def populate(self, fname: str, key: str = '') -> None:
        """
        Reads the values of every parameter from a DyNet text model file.

        Args:
            fname (str): The file.
            key (str): The prefix they were stored under. Defaults to ''.

        Returns:
            None
        """

    def populate_from_textfile(self, fname: str, key: str = '') -> None:
        """
        Reads the values of every parameter from a DyNet text model file (same as populate).

        Args:
            fname (str): The file.
            key (str): The prefix they were stored under. Defaults to ''.

        Returns:
            None
        """

    def load_param(self, fname: str, key: str) -> Parameters:
        """
        Adds a parameter to this collection from a record of a DyNet text model file.

        Args:
            fname (str): The file.
            key (str): The record's name.

        Returns:
            Parameters: the loaded parameter.
        """

    def load_lookup_param(self, fname: str, key: str) -> LookupParameters:
        """
        Adds a lookup table to this collection from a record of a DyNet text model file.

        Args:
            fname (str): The file.
            key (str): The record's name.

        Returns:
            LookupParameters: the loaded table.
        """

    __signature__: inspect.Signature = ...

def save_safetensors(path: str, pc: ParameterCollection) -> None:
    """
    Writes the values of every parameter of a collection to a safetensors file.

    Keys are the parameters' full names; a parameter of dims {d0,d1} is an F32 tensor of shape [d0, d1] (row-major, as numpy shows it), a lookup table of n rows is [n, dims...]. Gradients are not stored.

    Args:
        path (str): The file to write.
        pc (ParameterCollection): The parameters to save.

    Returns:
        None
    """

def load_safetensors(path: str, pc: ParameterCollection) -> None:
    """
    Reads the values of every parameter of a collection from a safetensors file (see save_safetensors).

    Each parameter must be in the file under its full name, with its shape; tensors the collection lacks are ignored. Gradients are cleared.

    Args:
        path (str): The file to read.
        pc (ParameterCollection): The parameters to fill.

    Returns:
        None
    """

def reset_random_seed(seed: int) -> None:
    """
    Reseeds the random number generator (dropout, noise, random_* ops, initializers).

    Args:
        seed (int): The new seed.

    Returns:
        None
    """

class Trainer:
    """
    The base of the trainers: update() changes the parameters of a ParameterCollection from their gradients.

    Each subclass's docstring gives its update rule (θ: a parameter, g: its gradient after clipping, η: the learning rate).
    """

    def update(self) -> None:
        """
        Updates every parameter of the collection from its gradient, then clears the gradients.

        Returns:
            None
        """

    def update_subset(self, updated_params: Sequence[int], updated_lookups: Sequence[int]) -> None:
        """
        Updates only some parameters (by their index in the collection).

        Args:
            updated_params (list[int]): Indices of the Parameters to update.
            updated_lookups (list[int]): Indices of the LookupParameters to update.

        Returns:
            None
        """

    def update_epoch(self, r: float = 1.0) -> None:
        """
        Counts epochs (DyNet's learning-rate decay hook; the rate itself is set with learning_rate).

        Args:
            r (float): How many epochs passed. Defaults to 1.0.

        Returns:
            None
        """

    def restart(self, learning_rate: float | None = None) -> None:
        """
        Clears the trainer's state (moments, accumulated squares), as for a fresh start.

        Args:
            learning_rate (float | None): A new learning rate; None keeps the current one. Defaults to None.

        Returns:
            None
        """

    def status(self) -> None:
        """
        Prints the trainer's counters (updates, clips) on sys.stderr.

        Returns:
            None
        """

    def set_sparse_updates(self, su: bool | None) -> None:
        """
        Whether lookup tables update only the rows used since the last update.

        Args:
            su (bool): True: sparse updates (the default); False: every row.

        Returns:
            None
        """

    def set_clip_threshold(self, thr: float) -> None:
        """
        Sets gradient clipping: gradients are scaled down when their global L2 norm exceeds thr.

        Args:
            thr (float): The threshold; 0 or less turns clipping off.

        Returns:
            None
        """

    def get_clip_threshold(self) -> float:
        """
        The gradient clipping threshold.

        Returns:
            float: the threshold (0 when clipping is off).
        """

    @property
    def learning_rate(self) -> float:
        """The learning rate η (readable and writable)."""

    @learning_rate.setter
    def learning_rate(self, arg: float, /) -> None: ...

    def set_learning_rate(self, value: float) -> None:
        """
        Sets the learning rate.

        Args:
            value (float): The new learning rate η.

        Returns:
            None
        """

    def whoami(self) -> str:
        """
        The trainer's class name.

        Returns:
            str: e.g. 'AdamTrainer'.
        """

    def __repr__(self) -> str: ...

    __signature__: inspect.Signature = ...

class SimpleSGDTrainer(Trainer):
    """
    Stochastic gradient descent.

    Update rule: θ ← θ - η g

    Args:
        m (ParameterCollection): The parameters to train.
        learning_rate (float): η. Defaults to 0.1.
    """

    def __init__(self, m: ParameterCollection, learning_rate: float = 0.1) -> None: ...

    __signature__: inspect.Signature = ...

class CyclicalSGDTrainer(Trainer):
    """
    SGD with a cyclical (triangular) learning rate.

    Update rule: θ ← θ - η_t g, η_t going from η_min to η_max and back every 2·step_size updates (its range × γ^t)

    Args:
        m (ParameterCollection): The parameters to train.
        learning_rate_min (float): η_min. Defaults to 0.01.
        learning_rate_max (float): η_max. Defaults to 0.1.
        step_size (float): Updates per half cycle. Defaults to 2000.0.
        gamma (float): γ, the decay of the cycle's range per update. Defaults to 1.0.
        edecay (float): The learning-rate decay per epoch. Defaults to 0.0.
    """

    def __init__(self, m: ParameterCollection, learning_rate_min: float = 0.01, learning_rate_max: float = 0.1, step_size: float = 2000.0, gamma: float = 1.0, edecay: float = 0.0) -> None: ...

    __signature__: inspect.Signature = ...

class MomentumSGDTrainer(Trainer):
    """
    SGD with momentum.

    Update rule: v ← μ v - η g; θ ← θ + v

    Args:
        m (ParameterCollection): The parameters to train.
        learning_rate (float): η. Defaults to 0.01.
        mom (float): The momentum μ. Defaults to 0.9.
    """

    def __init__(self, m: ParameterCollection, learning_rate: float = 0.01, mom: float = 0.9) -> None: ...

    __signature__: inspect.Signature = ...

class AdagradTrainer(Trainer):
    """
    Adagrad: per-value rates from the accumulated squared gradients.

    Update rule: G ← G + g²; θ ← θ - η g / √(G + ε)

    Args:
        m (ParameterCollection): The parameters to train.
        learning_rate (float): η. Defaults to 0.1.
        eps (float): ε. Defaults to 1e-20.
    """

    def __init__(self, m: ParameterCollection, learning_rate: float = 0.1, eps: float = 1e-20) -> None: ...

    __signature__: inspect.Signature = ...

class AdadeltaTrainer(Trainer):
    """
    Adadelta: no learning rate, steps scaled by the running RMS of past steps.

    Update rule: E[g²] ← ρ E[g²] + (1-ρ) g²; Δ ← -g √(E[Δ²] + ε) / √(E[g²] + ε); E[Δ²] ← ρ E[Δ²] + (1-ρ) Δ²; θ ← θ + Δ

    Args:
        m (ParameterCollection): The parameters to train.
        eps (float): ε. Defaults to 1e-06.
        rho (float): ρ, the decay of the running averages. Defaults to 0.95.
    """

    def __init__(self, m: ParameterCollection, eps: float = 1e-06, rho: float = 0.95) -> None: ...

    __signature__: inspect.Signature = ...

class RMSPropTrainer(Trainer):
    """
    RMSProp: steps divided by the running RMS of the gradient.

    Update rule: r ← ρ r + (1-ρ) g²; θ ← θ - η g / √(r + ε)

    Args:
        m (ParameterCollection): The parameters to train.
        learning_rate (float): η. Defaults to 0.001.
        eps (float): ε. Defaults to 1e-08.
        rho (float): ρ, the decay of the running average. Defaults to 0.9.
    """

    def __init__(self, m: ParameterCollection, learning_rate: float = 0.001, eps: float = 1e-08, rho: float = 0.9) -> None: ...

    __signature__: inspect.Signature = ...

class AdamTrainer(Trainer):
    """
    Adam (Kingma and Ba, 2015).

    Update rule: m ← β₁ m + (1-β₁) g; v ← β₂ v + (1-β₂) g²; θ ← θ - η m̂ / (√v̂ + ε) (m̂, v̂ bias-corrected)

    Args:
        m (ParameterCollection): The parameters to train.
        alpha (float): The learning rate η. Defaults to 0.001.
        beta_1 (float): β₁, the decay of the first moment. Defaults to 0.9.
        beta_2 (float): β₂, the decay of the second moment. Defaults to 0.999.
        eps (float): ε. Defaults to 1e-08.
    """

    def __init__(self, m: ParameterCollection, alpha: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999, eps: float = 1e-08) -> None: ...

    __signature__: inspect.Signature = ...

class AmsgradTrainer(Trainer):
    """
    AMSGrad: Adam with the running maximum of the second moment.

    Update rule: m ← β₁ m + (1-β₁) g; v ← β₂ v + (1-β₂) g²; v̂ ← max(v̂, v); θ ← θ - η m̂ / (√v̂ + ε)

    Args:
        m (ParameterCollection): The parameters to train.
        alpha (float): The learning rate η. Defaults to 0.001.
        beta_1 (float): β₁, the decay of the first moment. Defaults to 0.9.
        beta_2 (float): β₂, the decay of the second moment. Defaults to 0.999.
        eps (float): ε. Defaults to 1e-08.
    """

    def __init__(self, m: ParameterCollection, alpha: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999, eps: float = 1e-08) -> None: ...

    __signature__: inspect.Signature = ...

class AsynchronousTraining:
    """
    Hogwild-style training for the thread inside the block: `with dy.AsynchronousTraining():` around a worker's loop.

    Inside, update() does not stop the other threads' forward and backward passes (as it does otherwise, so that they never read a value it is writing): it locks one parameter at a time, and while any thread is inside such a block, graphs read copies of the parameters, each as it was before or after an update, never half-written. Every gradient is still applied exactly once. Threads that each update after their own examples then train at once instead of taking turns. The updates of one trainer take turns; give each thread its own trainer for updates that run at once too.

    Enter and leave it on the same thread, not while that thread computes a graph. An update inside refuses lazy L2 weight decay (ParameterCollection.set_weight_decay_lambda), which needs the other threads stopped.
    """

    def __init__(self) -> None: ...

    def __enter__(self) -> AsynchronousTraining: ...

    def __exit__(self, *args) -> None: ...

    __signature__: inspect.Signature = ...

class SimpleRNNBuilder(_RNNBuilder):
    def __init__(self, layers: int, input_dim: int, hidden_dim: int, model: ParameterCollection, support_lags: bool | None = False) -> None: ...

    def set_dropouts(self, d: float, d_h: float) -> None:
        """
        Sets dropout on the inputs and on the recurrent state (applied from the next initial_state).

        Args:
            d (float): The dropout rate of the inputs.
            d_h (float): The dropout rate of the recurrent state.

        Returns:
            None
        """

    def set_dropout_masks(self, batch_size: int = 1) -> None:
        """
        Draws new dropout masks (one per batch element); call after initial_state when the batch size changes.

        Args:
            batch_size (int): The number of batch elements. Defaults to 1.

        Returns:
            None
        """

    __signature__: inspect.Signature = ...

class VanillaLSTMBuilder(_RNNBuilder):
    def __init__(self, layers: int, input_dim: int, hidden_dim: int, model: ParameterCollection, ln_lstm: bool | None = False, forget_bias: float = 1.0) -> None: ...

    def set_dropouts(self, d: float, d_r: float) -> None:
        """
        Sets dropout on the inputs and on the recurrent state (applied from the next initial_state).

        Args:
            d (float): The dropout rate of the inputs.
            d_r (float): The dropout rate of the recurrent state.

        Returns:
            None
        """

    def set_dropout_masks(self, batch_size: int = 1) -> None:
        """
        Draws new dropout masks (one per batch element); call after initial_state when the batch size changes.

        Args:
            batch_size (int): The number of batch elements. Defaults to 1.

        Returns:
            None
        """

    __signature__: inspect.Signature = ...

class CoupledLSTMBuilder(_RNNBuilder):
    def __init__(self, layers: int, input_dim: int, hidden_dim: int, model: ParameterCollection) -> None: ...

    __signature__: inspect.Signature = ...

class CompactVanillaLSTMBuilder(_RNNBuilder):
    def __init__(self, layers: int, input_dim: int, hidden_dim: int, model: ParameterCollection) -> None: ...

    def set_dropouts(self, d: float, d_r: float) -> None:
        """
        Sets dropout on the inputs and on the recurrent state (applied from the next initial_state).

        Args:
            d (float): The dropout rate of the inputs.
            d_r (float): The dropout rate of the recurrent state.

        Returns:
            None
        """

    def set_dropout_masks(self, batch_size: int = 1) -> None:
        """
        Draws new dropout masks (one per batch element); call after initial_state when the batch size changes.

        Args:
            batch_size (int): The number of batch elements. Defaults to 1.

        Returns:
            None
        """

    def set_weightnoise(self, std: float) -> None:
        """
        Adds Gaussian noise to the weights in each new graph (training only).

        Args:
            std (float): The standard deviation of the noise (0: none).

        Returns:
            None
        """

    __signature__: inspect.Signature = ...

class SparseLSTMBuilder(_RNNBuilder):
    def __init__(self, layers: int, input_dim: int, hidden_dim: int, model: ParameterCollection, ln_lstm: bool | None = False, forget_bias: float = 1.0) -> None: ...

    def set_sparsity(self, sparsity: float) -> None:
        """
        Sets the fraction of weights masked to zero.

        Args:
            sparsity (float): The fraction of zero weights, in [0, 1).

        Returns:
            None
        """

    def set_dropouts(self, d: float, d_r: float) -> None:
        """
        Sets dropout on the inputs and on the recurrent state (applied from the next initial_state).

        Args:
            d (float): The dropout rate of the inputs.
            d_r (float): The dropout rate of the recurrent state.

        Returns:
            None
        """

    def set_dropout_masks(self, batch_size: int = 1) -> None:
        """
        Draws new dropout masks (one per batch element); call after initial_state when the batch size changes.

        Args:
            batch_size (int): The number of batch elements. Defaults to 1.

        Returns:
            None
        """

    __signature__: inspect.Signature = ...

class FastLSTMBuilder(_RNNBuilder):
    def __init__(self, layers: int, input_dim: int, hidden_dim: int, model: ParameterCollection) -> None: ...

    __signature__: inspect.Signature = ...

class SoftmaxBuilder:
    """
    The base of the softmax output layers.

    Made through its subclasses (StandardSoftmaxBuilder, ClassFactoredSoftmaxBuilder).
    """

    def neg_log_softmax(self, x: Expression, c: int, update: bool | None = True) -> Expression:
        """
        The negative log-probability of class c given the hidden state x.

        Args:
            x (Expression): The hidden state.
            c (int): The class.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: the loss, a scalar.
        """

    def neg_log_softmax_batch(self, x: Expression, c: Sequence[int], update: bool | None = True) -> Expression:
        """
        The negative log-probabilities of one class per batch element.

        Args:
            x (Expression): The hidden states (batched).
            c (list[int]): One class per batch element.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: the losses, a batched scalar.
        """

    def sample(self, x: Expression) -> int:
        """
        Draws a class from the distribution given the hidden state x.

        Args:
            x (Expression): The hidden state.

        Returns:
            int: the class drawn.
        """

    def full_log_distribution(self, x: Expression, update: bool | None = True) -> Expression:
        """
        The log-probabilities of every class.

        Args:
            x (Expression): The hidden state.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: a vector with one log-probability per class.
        """

    def full_logits(self, x: Expression, update: bool | None = True) -> Expression:
        """
        The unnormalized scores of every class.

        Args:
            x (Expression): The hidden state.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: a vector with one score per class.
        """

    def param_collection(self) -> ParameterCollection:
        """
        The collection holding the builder's parameters.

        Returns:
            ParameterCollection: the builder's subcollection.
        """

    __signature__: inspect.Signature = ...

class StandardSoftmaxBuilder(SoftmaxBuilder):
    def __init__(self, input_dim: int, num_classes: int, pc: ParameterCollection, bias: bool | None = True) -> None: ...

    __signature__: inspect.Signature = ...

class ClassFactoredSoftmaxBuilder(SoftmaxBuilder):
    """
    A class-factored softmax: p(w | x) = p(class(w) | x) · p(w | class(w), x), with the word classes read from a cluster file.

    Args:
        input_dim (int): The size of the hidden state.
        cluster_file (str): Lines of 'class<TAB>word'.
        dic (dict[str, int]): The word ids (0..n-1), as the program's vocabulary assigns them.
        pc (ParameterCollection): Where the builder's parameters go.
        bias (bool): Whether the layers have biases. Defaults to True.
    """

    def __init__(self, input_dim: int, cluster_file: str, dic: dict, pc: ParameterCollection, bias: bool | None = True) -> None: ...

    def class_log_distribution(self, x: Expression, update: bool | None = True) -> Expression:
        """
        The log-probabilities of the word classes.

        Args:
            x (Expression): The hidden state.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: a vector with one log-probability per class.
        """

    def class_logits(self, x: Expression, update: bool | None = True) -> Expression:
        """
        The unnormalized scores of the word classes.

        Args:
            x (Expression): The hidden state.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: a vector with one score per class.
        """

    def subclass_log_distribution(self, x: Expression, classid: int, update: bool | None = True) -> Expression:
        """
        The log-probabilities of the words of one class.

        Args:
            x (Expression): The hidden state.
            classid (int): The class.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: a vector with one log-probability per word of the class.
        """

    def subclass_logits(self, x: Expression, classid: int, update: bool | None = True) -> Expression:
        """
        The unnormalized scores of the words of one class.

        Args:
            x (Expression): The hidden state.
            classid (int): The class.
            update (bool): Whether the trainer updates the builder's parameters from this use. Defaults to True.

        Returns:
            Expression: a vector with one score per word of the class.
        """

    __signature__: inspect.Signature = ...

class GRUBuilder(_RNNBuilder):
    def __init__(self, layers: int, input_dim: int, hidden_dim: int, model: ParameterCollection) -> None: ...

    __signature__: inspect.Signature = ...

def cmult(x: Expression, y: Expression) -> Expression: ...

def cdiv(x: Expression, y: Expression) -> Expression: ...

def pow(x: Expression, y: Expression) -> Expression: ...

def bmin(x: Expression, y: Expression) -> Expression: ...

def bmax(x: Expression, y: Expression) -> Expression: ...

def colwise_add(x: Expression, y: Expression) -> Expression: ...

def esum(xs: collections.abc.Sequence[Expression]) -> Expression: ...

def average(xs: collections.abc.Sequence[Expression]) -> Expression: ...

def dot_product(x: Expression, y: Expression) -> Expression: ...

def squared_norm(x: Expression) -> Expression: ...

def squared_distance(x: Expression, y: Expression) -> Expression: ...

def contract3d_1d(x: Expression, y: Expression) -> Expression: ...

def contract3d_1d_bias(x: Expression, y: Expression, b: Expression) -> Expression: ...

def contract3d_1d_1d(x: Expression, y: Expression, z: Expression) -> Expression: ...

def contract3d_1d_1d_bias(x: Expression, y: Expression, z: Expression, b: Expression) -> Expression: ...

def filter1d_narrow(x: Expression, y: Expression) -> Expression: ...

def kmh_ngram(x: Expression, v: int) -> Expression: ...

def conv2d(x: Expression, f: Expression, stride: collections.abc.Sequence[int], is_valid: bool = True) -> Expression: ...

def conv2d_bias(x: Expression, f: Expression, b: Expression, stride: collections.abc.Sequence[int], is_valid: bool = True) -> Expression: ...

def maxpooling2d(x: Expression, ksize: collections.abc.Sequence[int], stride: collections.abc.Sequence[int], is_valid: bool = True) -> Expression: ...

def dropout(x: Expression, p: float) -> Expression: ...

def dropout_dim(x: Expression, d: int, p: float) -> Expression: ...

def dropout_batch(x: Expression, p: float) -> Expression: ...

def block_dropout(x: Expression, p: float) -> Expression: ...

def noise(x: Expression, stddev: float) -> Expression: ...

def nobackprop(x: Expression) -> Expression: ...

def scale_gradient(x: Expression, lambd: float = 1.0) -> Expression: ...

def to_device(e: Expression, device_str: str) -> Expression: ...

def scalarInput(s, device='') -> Expression: ...

def inputTensor(arr, batched=False, device='', reusable_expr=False) -> Expression: ...

def inputVector(v, device='') -> Expression: ...

def vecInput(dim, device='') -> Expression: ...

def inputMatrix(v, d) -> Expression: ...

def matInput(d1, d2) -> Expression: ...

def sparse_inputTensor(idxs, values, shape, batched=False, defval=0, device='') -> Expression: ...

@typing.overload
def lookup(p: LookupParameters, index: int = 0, update = True) -> Expression: ...
@typing.overload
def lookup(p: LookupParameters, index: int = 0, update = False) -> Expression: ...

@typing.overload
def lookup_batch(p: LookupParameters, indices: collections.abc.Sequence[int], update = True) -> Expression: ...
@typing.overload
def lookup_batch(p: LookupParameters, indices: collections.abc.Sequence[int], update = False) -> Expression: ...

def constant(dim: int | collections.abc.Sequence[int], val: float, batch_size: int = 1) -> Expression: ...

@typing.overload
def one_hot(d: int, idx: int, device: str = '') -> Expression: ...
@typing.overload
def one_hot(d: int, idx: collections.abc.Sequence[int], device: str = '') -> Expression: ...

def zeros(dim: int | collections.abc.Sequence[int], batch_size: int = 1) -> Expression: ...

def zeroes(dim: int | collections.abc.Sequence[int], batch_size: int = 1) -> Expression: ...

def ones(dim: int | collections.abc.Sequence[int], batch_size: int = 1) -> Expression: ...

def random_normal(dim: int | collections.abc.Sequence[int], mean: float = 0.0, stddev: float = 1.0, batch_size: int = 1) -> Expression: ...

def random_bernoulli(dim: int | collections.abc.Sequence[int], p: float, scale: float = 1.0, batch_size: int = 1) -> Expression: ...

def random_uniform(dim: int | collections.abc.Sequence[int], left: float, right: float, batch_size: int = 1) -> Expression: ...

def random_gumbel(dim: int | collections.abc.Sequence[int], mu: float = 0.0, beta: float = 1.0, batch_size: int = 1) -> Expression: ...

def inverse(x: Expression) -> Expression: ...

def logdet(x: Expression) -> Expression: ...

def trace_of_product(x: Expression, y: Expression) -> Expression: ...

def hinge(x: Expression, v: int, m: float = 1.0) -> Expression: ...

def hinge_batch(x: Expression, vs: collections.abc.Sequence[int], m: float = 1.0) -> Expression: ...

@typing.overload
def hinge_dim(x: Expression, v: collections.abc.Sequence[int], d: int = 0, m: float = 1.0) -> Expression: ...
@typing.overload
def hinge_dim(x: Expression, v: collections.abc.Sequence[collections.abc.Sequence[int]], d: int = 0, m: float = 1.0) -> Expression: ...

def l2_norm(x: Expression) -> Expression: ...

def l1_distance(x: Expression, y: Expression) -> Expression: ...

def huber_distance(x: Expression, y: Expression, c: float = 1.345) -> Expression: ...

def binary_log_loss(x: Expression, y: Expression) -> Expression: ...

def pairwise_rank_loss(x: Expression, y: Expression, m: float = 1.0) -> Expression: ...

def poisson_loss(log_lambda: Expression, x: int) -> Expression: ...

def vanilla_lstm_gates(x_t: Expression, h_tm1: Expression, Wx: Expression, Wh: Expression, b: Expression, weightnoise_std: float = 0.0) -> Expression: ...

def vanilla_lstm_gates_concat(x_t: collections.abc.Sequence[Expression], h_tm1: Expression, Wx: Expression, Wh: Expression, b: Expression, weightnoise_std: float = 0.0) -> Expression: ...

def vanilla_lstm_gates_dropout(x_t: Expression, h_tm1: Expression, Wx: Expression, Wh: Expression, b: Expression, dropout_mask_x: Expression, dropout_mask_h: Expression, weightnoise_std: float = 0.0) -> Expression: ...

def vanilla_lstm_gates_dropout_concat(x_t: collections.abc.Sequence[Expression], h_tm1: Expression, Wx: Expression, Wh: Expression, b: Expression, dropout_mask_x: Expression, dropout_mask_h: Expression, weightnoise_std: float = 0.0) -> Expression: ...

def vanilla_lstm_c(c_tm1: Expression, gates_t: Expression) -> Expression: ...

def vanilla_lstm_h(c_t: Expression, gates_t: Expression) -> Expression: ...

def emax(xs: collections.abc.Sequence[Expression]) -> Expression: ...

def circ_conv(u: Expression, v: Expression) -> Expression: ...

def circ_corr(u: Expression, v: Expression) -> Expression: ...

def round(x: Expression, gradient_mode: str) -> Expression: ...

def ceil(x: Expression, gradient_mode: str) -> Expression: ...

def floor(x: Expression, gradient_mode: str) -> Expression: ...

def argmax(x: Expression, gradient_mode: str) -> Expression: ...

def flip_gradient(x: Expression) -> Expression: ...

def affine_transform(exprs: collections.abc.Sequence[Expression]) -> Expression: ...

def layer_norm(x: Expression, g: Expression, b: Expression) -> Expression: ...

def weight_norm(w: Expression, g: Expression) -> Expression: ...

def sum_elems(x: Expression) -> Expression: ...

def mean_elems(x: Expression) -> Expression: ...

def moment_elems(x: Expression, r: int) -> Expression: ...

def std_elems(x: Expression) -> Expression: ...

def sum_batches(x: Expression) -> Expression: ...

def moment_batches(x: Expression, r: int) -> Expression: ...

def mean_batches(x: Expression) -> Expression: ...

def std_batches(x: Expression) -> Expression: ...

def sum_dim(x: Expression, d: collections.abc.Sequence[int], b: bool = False, n: int = 0) -> Expression: ...

def moment_dim(x: Expression, d: collections.abc.Sequence[int], r: int, b: bool, n: int = 0) -> Expression: ...

def mean_dim(x: Expression, d: collections.abc.Sequence[int], b: bool, n: int = 0) -> Expression: ...

def std_dim(x: Expression, d: collections.abc.Sequence[int], b: bool, n: int = 0) -> Expression: ...

def max_dim(x: Expression, d: int = 0) -> Expression: ...

def min_dim(x: Expression, d: int = 0) -> Expression: ...

def logsumexp_dim(x: Expression, d: int = 0) -> Expression: ...

def cumsum(x: Expression, d: int = 0) -> Expression: ...

def kmax_pooling(x: Expression, k: int, d: int = 1) -> Expression: ...

def fold_rows(x: Expression, nrows: int = 2) -> Expression: ...

def pick(e: Expression, index: int = 0, dim: int = 0) -> Expression: ...

def pick_batch(e: Expression, indices: collections.abc.Sequence[int], dim: int = 0) -> Expression: ...

def pick_range(x: Expression, s: int, e: int, d: int = 0) -> Expression: ...

def pickrange(x: Expression, s: int, e: int) -> Expression: ...

def concatenate(xs: collections.abc.Sequence[Expression], d: int = 0) -> Expression: ...

def concatenate_cols(xs: collections.abc.Sequence[Expression]) -> Expression: ...

def reshape(x: Expression, d: int | collections.abc.Sequence[int], batch_size: int = 1) -> Expression: ...

def transpose(x: Expression, dims: collections.abc.Sequence[int] = [1, 0]) -> Expression: ...

def select_rows(x: Expression, rs: collections.abc.Sequence[int]) -> Expression: ...

def select_cols(x: Expression, cs: collections.abc.Sequence[int]) -> Expression: ...

def pick_batch_elem(x: Expression, v: int) -> Expression: ...

def pick_batch_elems(x: Expression, vs: collections.abc.Sequence[int]) -> Expression: ...

def concatenate_to_batch(xs: collections.abc.Sequence[Expression]) -> Expression: ...

def strided_select(x: Expression, strides: collections.abc.Sequence[int], range_from: collections.abc.Sequence[int], range_to: collections.abc.Sequence[int]) -> Expression: ...

def softmax(x: Expression, d: int = 0) -> Expression: ...

@typing.overload
def log_softmax(x: Expression, restrict = None) -> Expression: ...
@typing.overload
def log_softmax(x: Expression, restrict: collections.abc.Sequence[int] = None) -> Expression: ...

def logsumexp(xs: collections.abc.Sequence[Expression]) -> Expression: ...

def sparsemax(x: Expression) -> Expression: ...

def constrained_softmax(x: Expression, y: Expression) -> Expression: ...

def pickneglogsoftmax(x: Expression, v: int) -> Expression: ...

def pickneglogsoftmax_batch(x: Expression, vs: collections.abc.Sequence[int]) -> Expression: ...

def tanh(x: Expression) -> Expression: ...

def logistic(x: Expression) -> Expression: ...

def rectify(x: Expression) -> Expression: ...

def exp(x: Expression) -> Expression: ...

def log(x: Expression) -> Expression: ...

def sqrt(x: Expression) -> Expression: ...

def square(x: Expression) -> Expression: ...

def cube(x: Expression) -> Expression: ...

def abs(x: Expression) -> Expression: ...

def erf(x: Expression) -> Expression: ...

def sin(x: Expression) -> Expression: ...

def cos(x: Expression) -> Expression: ...

def tan(x: Expression) -> Expression: ...

def asin(x: Expression) -> Expression: ...

def acos(x: Expression) -> Expression: ...

def atan(x: Expression) -> Expression: ...

def sinh(x: Expression) -> Expression: ...

def cosh(x: Expression) -> Expression: ...

def asinh(x: Expression) -> Expression: ...

def acosh(x: Expression) -> Expression: ...

def atanh(x: Expression) -> Expression: ...

def log_sigmoid(x: Expression) -> Expression: ...

def lgamma(x: Expression) -> Expression: ...

def softsign(x: Expression) -> Expression: ...

def selu(x: Expression) -> Expression: ...

def elu(x: Expression, alpha: float = 1.0) -> Expression: ...

def silu(x: Expression, beta: float = 1.0) -> Expression: ...

class Profiler:
    """
    Op timings and a Chrome trace of what runs between start() and stop(), or inside `with`.

    Made by dy.profiler(). It collects whatever --dynet-profiling and DYNET_TRACE say, and
    leaves what they print at exit as it was. Collection is process-wide: with
    all_threads=True it sees the graphs of every thread (the trace's "tid" tells them
    apart), otherwise only the thread that started it. Several profilers may run at once.

    Args:
        all_threads (bool): Collect what every thread runs, else only the thread that calls start().
            Defaults to True.
        max_trace_events (int): Trace events kept (about 80 bytes each); the table counts past it.
            Defaults to 1048576.
    """

    def __init__(self, all_threads: bool = True, max_trace_events: int = 1048576) -> None:
        """
        Args:
            all_threads: collect what every thread runs (else only the thread that calls start()).
            max_trace_events: trace events kept (about 80 bytes each); the table counts past it.
        """

    def __enter__(self) -> Profiler: ...

    def __exit__(self, *args) -> None: ...

    def start(self) -> None:
        """
        Starts collecting (adds to what was collected before; a no-op when running).

        Returns:
            None
        """

    def stop(self) -> None:
        """
        Stops collecting; what was collected stays until reset().

        Returns:
            None
        """

    @property
    def running(self) -> bool:
        """Whether it is collecting now."""

    def reset(self) -> None:
        """
        Forgets what was collected (the table, the statistics and the trace).

        Returns:
            None
        """

    def table(self) -> str:
        """
        The timing table of what ran while collecting, as --dynet-profiling 1 prints it at exit.

        Returns:
            str: one line per op (forward and backward ms, % of the total, nodes, groups, batched
            nodes, KB gathered by autobatching), then the autobatching scheduling time and the total.
        """

    def __str__(self) -> str: ...

    def stats(self) -> list:
        """
        The table's figures per op and output dim, for programs.

        Returns:
            list[dict]: by total time, most first; keys: op (its name), dim (one member's output dim
            as in the trace, e.g. "{8,2}"), shape (its dims, a tuple), batch (its batch size), nodes
            (run forward), groups (forward kernel runs: an autobatched group counts once),
            batched_nodes, forward_ms, backward_ms, total_ms, gathered_bytes. Autobatching's own time
            comes last, as op "(scheduling)" with dim "".
        """

    def chrome_trace(self) -> str:
        """
        The Chrome trace JSON of what ran while collecting.

        Returns:
            str: {"traceEvents": [...]}: one complete event per node group run forward or backward
            (name: the op, " xN" when N nodes ran batched; args: op, dim of one member, members) and,
            with autobatching, one per forward pass (args: nodes, scheduling_us).
        """

    def export_chrome_trace(self, path: object) -> None:
        """
        Writes chrome_trace() to a file, for chrome://tracing or https://ui.perfetto.dev.

        Args:
            path: the file to write (str or os.PathLike); an existing file is replaced.
        """

    __signature__: inspect.Signature = ...

def profiler(all_threads: bool | None = True, max_trace_events: int = 1048576) -> Profiler:
    """
    A Profiler, not yet collecting: `with dy.profiler() as p:` collects what runs in the block.

    Args:
        all_threads: collect what every thread runs (else only the thread that enters the block).
        max_trace_events: trace events kept (about 80 bytes each); the table counts past it.

    Returns:
        Profiler: p.table() (the --dynet-profiling table), p.stats() (the same per op and dim, as
        dicts), p.export_chrome_trace(path) (a Chrome trace JSON).
    """
