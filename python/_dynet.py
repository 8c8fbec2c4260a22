"""`import _dynet`: the original DyNet's compiled module, which programs import directly (its documentation
sets DyNet up through `_dynet.DynetParams` before anything else; libraries such as antu import it as `dy`).
Here it is the `dynet` module itself. Importing it initializes DyNet as `import dynet` does, but when it comes
first, the program's first explicit `DynetParams().init()` (or `init()`) still replaces those settings: the
original applied the first initialization it was asked for.
"""
import sys

_first = "dynet" not in sys.modules  # else `import dynet` came first and initialized DyNet, as the original's did
import dynet  # noqa: E402

if _first:
    dynet._import_init_replaceable = True
sys.modules[__name__] = dynet
