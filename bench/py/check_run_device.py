"""Checks of bench/run --device gpu that need no GPU (ctest bench_run_device_gpu): the plan of the GPU run
(the issue's settings, ours on the GPU and the CPU, PyTorch on CUDA), and the refusals with a reason.

    python3 check_run_device.py CPU_BUILD_DIR
"""

import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).resolve().parent.parent / "run"


def bench_run(*args):
    return subprocess.run([sys.executable, str(RUN)] + list(args), capture_output=True, text=True)


def expect(cond, what, detail=""):
    if not cond:
        raise SystemExit("check_run_device: " + what + ("\n" + detail if detail else ""))


def main():
    cpu_build = Path(sys.argv[1])
    plan = bench_run("--device", "gpu", "--plan", "--build-dir", str(cpu_build))
    expect(plan.returncode == 0, "bench/run --device gpu --plan failed", plan.stderr)
    lines = plan.stdout.splitlines()
    expect(len(lines) == 14, "the GPU plan has %d commands, not 14" % len(lines), plan.stdout)

    def one(*parts, exclude=()):
        hits = [l for l in lines if all(p in l for p in parts) and not any(e in l for e in exclude)]
        expect(len(hits) == 1, "%d commands with %s (not %s)" % (len(hits), parts, exclude), plan.stdout)

    batched = "--update-batch 64 --autobatch 1"
    for task, setting in (("rnnlm", "--minibatch 64"), ("tagger", batched), ("treelstm", batched), ("parser", batched),
                          ("bilstm", batched)):
        one("bench_" + task + " ", setting, "--device gpu")                    # ours on the GPU
        one("bench_" + task + " ", setting, exclude=("--device",))             # ours on the CPU
        if task != "bilstm":  # (PyTorch has no BiLSTM task)
            one("torch_tasks.py " + task + " ", "--device cuda", exclude=("--update-batch", "--autobatch"))

    refused = bench_run("--device", "gpu", "--no-build", "--build-dir", str(cpu_build))
    expect(refused.returncode != 0 and "has no CUDA backend" in refused.stderr and "-DDYNET_CUDA=ON" in refused.stderr,
           "a CPU build was not refused with the reason", refused.stderr)
    missing = bench_run("--device", "gpu", "--no-build", "--build-dir", str(cpu_build / "no-such-build"))
    expect(missing.returncode != 0 and "no build in" in missing.stderr, "a missing build was not refused", missing.stderr)
    other = bench_run("--device", "gpu", "--plan", "--tasks", "tagger_char")
    expect(other.returncode != 0 and "unknown task 'tagger_char'" in other.stderr, "--device gpu took tagger_char",
           other.stderr)
    # without --device gpu, @gpu implementations do not exist and the CPU plan is unchanged
    cpu = bench_run("--plan", "--tasks", "tagger", "--impl", "ours-cpp@gpu")
    expect(cpu.returncode != 0 and "unknown implementation" in cpu.stderr, "@gpu taken without --device gpu", cpu.stderr)
    cpu = bench_run("--plan", "--tasks", "rnnlm", "--impl", "ours-cpp,torch", "--build-dir", str(cpu_build))
    expect(cpu.returncode == 0 and len(cpu.stdout.splitlines()) == 8 and "--device" not in cpu.stdout,
           "the CPU plan changed", cpu.stdout + cpu.stderr)
    print("check_run_device: PASS")


if __name__ == "__main__":
    main()
