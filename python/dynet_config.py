"""Settings for `dynet`, given before its first import (DyNet's dynet_config module).

    import dynet_config
    dynet_config.set(mem=1024, random_seed=1, autobatch=0)
    import dynet as dy
"""

_config = None
_gpu = None


def set(mem="512", random_seed=0, autobatch=0, profiling=0, weight_decay=0, shared_parameters=0,
        requested_gpus=0, gpu_mask=None):
    """Records the settings that `import dynet` initializes with."""
    global _config
    _config = {"mem": mem, "seed": random_seed, "autobatch": autobatch, "profiling": profiling,
               "weight_decay": weight_decay, "shared_params": shared_parameters,
               "requested_gpus": requested_gpus, "gpu_mask": list(gpu_mask) if gpu_mask else []}


def set_gpu(flag=True):
    """Asks for a GPU (one, unless set(requested_gpus=...) or gpu_mask name others); a build without CUDA
    warns and runs on the CPU."""
    global _gpu
    _gpu = flag
    if _config is None:
        set()


def gpu():
    return _gpu


def get():
    return _config
