"""Devices from Python: what the process set up, GPU requests through flags and dynet_config, and their
errors. The GPU cases run where this build has CUDA and the machine a GPU; elsewhere they check the error."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dynet as dy


def run_python(code, *args):
    return subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True, text=True,
                          env=dict(os.environ))


def gpu_usable():
    r = run_python("import dynet as dy; print(dy.available_devices())", "--dynet-devices", "GPU:0")
    return r.returncode == 0


def test_the_cpu_is_listed_first_and_described():
    assert dy.available_devices()[0] == "CPU"
    info = dy.get_device_info("CPU")
    assert (info.name, info.id, info.dtype) == ("CPU", 0, "CPU")
    assert isinstance(dy.HAVE_CUDA, bool)
    with pytest.raises(ValueError, match="GPU:7"):
        dy.get_device_info("GPU:7")


def test_parameters_and_inputs_take_a_device_name():
    pc = dy.ParameterCollection()
    w = pc.add_parameters((2, 3), init=1.0, device="CPU")
    dy.renew_cg()
    x = dy.inputTensor(np.arange(3, dtype=np.float32), device="CPU")
    assert np.allclose((w * x).npvalue(), [3.0, 3.0])
    with pytest.raises(Exception, match="GPU:9"):
        pc.add_parameters((2,), device="GPU:9")


def test_a_gpu_request_runs_on_the_gpu_or_names_why_not():
    code = ("import dynet as dy, numpy as np\n"
            "pc = dy.ParameterCollection()\n"
            "w = pc.add_parameters((2, 3), init=0.5, device='GPU:0')\n"
            "x = dy.inputTensor(np.ones(3, dtype=np.float32), device='GPU:0')\n"
            "print(dy.available_devices(), dy.sum_elems(w * x).scalar_value())\n")
    for flags in (["--dynet-gpus", "1"], ["--dynet-devices", "CPU,GPU:0"], ["--dynet-gpu-ids", "0"]):
        r = run_python(code, *flags)
        if gpu_usable():
            assert r.returncode == 0, r.stderr
            assert "'GPU:0'" in r.stdout and r.stdout.strip().endswith("3.0"), r.stdout
        elif flags[0] == "--dynet-gpus" and not dy.HAVE_CUDA:  # the count is ignored; the name is not
            assert r.returncode != 0
            assert "ValueError" in r.stderr and "unknown device 'GPU:0'" in r.stderr, r.stderr
        else:
            assert r.returncode != 0
            assert "RuntimeError" in r.stderr and "GPU:0" in r.stderr, r.stderr
            assert ("no CUDA backend" in r.stderr) != dy.HAVE_CUDA, r.stderr


def test_config_gpu_requests_agree_with_the_flags():
    r = run_python("import dynet_config\ndynet_config.set(requested_gpus=1)\nimport dynet as dy\n"
                   "print(dy.available_devices())")
    if not dy.HAVE_CUDA:  # DyNet's CPU builds ignore a GPU count; ours says so
        assert r.returncode == 0 and r.stdout.strip() == "['CPU']", r.stderr
        assert "no CUDA backend" in r.stderr and "running on the CPU" in r.stderr, r.stderr
        return
    assert (r.returncode == 0) == gpu_usable(), r.stderr
    if r.returncode != 0:
        assert "GPU:0" in r.stderr


def test_a_gpu_count_without_cuda_runs_on_the_cpu_as_in_dynet():
    """mead-baseline calls DynetParams.set_requested_gpus(1) whatever the machine; DyNet's CPU builds run it."""
    if dy.HAVE_CUDA:
        pytest.skip("this build has CUDA: a GPU count asks for GPUs (covered by the request test)")
    code = ("import _dynet\np = _dynet.DynetParams()\np.from_args()\np.set_requested_gpus(1)\np.init()\n"
            "print(_dynet.available_devices(), _dynet.inputVector([1, 2]).npvalue().sum())")
    for args in ([], ["--dynet-gpus", "2"]):
        r = run_python(code, *args)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["['CPU']", "3.0"], r.stdout
        assert "no CUDA backend" in r.stderr and "running on the CPU" in r.stderr, r.stderr


def test_the_gpu_switch_without_cuda_warns_and_runs_on_the_cpu():
    if dy.HAVE_CUDA:
        pytest.skip("this build has CUDA: --dynet-gpu asks for GPU:0 (covered by the request test)")
    for code, args in (("import dynet as dy; print(dy.available_devices())", ["--dynet-gpu"]),
                       ("import dynet_config; dynet_config.set_gpu()\nimport dynet as dy\n"
                        "print(dy.available_devices())", [])):
        r = run_python(code, *args)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "['CPU']"
        assert "no CUDA backend" in r.stderr and "running on the CPU" in r.stderr


def test_malformed_device_flags_are_errors():
    r = run_python("import dynet", "--dynet-gpu-ids", "-1")
    assert r.returncode != 0 and "--dynet-gpu-ids" in r.stderr, r.stderr
    r = run_python("import dynet", "--dynet-devices", "CPU:1")
    assert r.returncode != 0 and "CPU:1" in r.stderr, r.stderr
    r = run_python("import dynet", "--dynet-gpus", "1", "--dynet-devices", "GPU:0")
    assert r.returncode != 0 and "only one of" in r.stderr, r.stderr
