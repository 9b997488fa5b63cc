#!/usr/bin/env python3
"""One system over MPI ranks (issue 29): the coupling overhead per macro step against the number
of ranks K on cheap FMUs, and the speed-up on FMUs whose steps cost something.

The system: a Jacobi chain of N Gain FMI 2 FMUs (each one's y drives the next one's u), fixed
step 1 ms, two result rows. It runs in one process (K = 1, no mpirun) and under
`mpirun --oversubscribe -n K` for each K; each run is timed from outside (wall clock: waiting
ranks spin, so CPU time says little), a run of S steps and a run of 1 step, best of --repeats;
(T_S - T_1) / (S - 1) is the time per macro step without start-up. The summary's per-rank
split (`--json-file`) gives rank 0's communication and waiting per step.

With --cost C (microseconds), every Gain busy-waits C us per step (its `cost` parameter):
then K ranks should approach a speed-up of K while K <= the cores. With --estimator E the chain
runs under macro-step size and order control by E (ExSLocal, ExLocal or ExMilne), the step
capped at 1 ms so that S steps are still S steps: the time per step then includes the state
saves, the error norms and their exactly rounded sums merged over the ranks.

    python3 benches/distributed.py [--components 8] [--ranks 1,2,3,4] [--steps 20000]
                                   [--cost 0,20] [--repeats 3] [--estimator E] [--no-build]

It builds `cosimo` (release, feature mpi) and the test FMUs first unless --no-build. Not part of
the test suite; run it when the machine is quiet.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "target" / "peers" / "distributed"
FMU = ROOT / "target" / "fmus" / "Gain-fmi2.fmu"
STEP = 1e-3
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
}


def target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def build():
    cargo = os.environ.get("CARGO", "cargo")
    subprocess.run([cargo, "build", "--release", "--quiet", "--features", "mpi", "--bin", "cosimo"],
                   cwd=ROOT, check=True)
    subprocess.run([cargo, "run", "--release", "--quiet", "-p", "fmu-pack"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def write_system(n, steps, cost_us, estimator):
    parameters = {"cost": cost_us * 1e-6}
    system = {
        "description": f"Chain of {n} Gain FMI 2 FMUs (benches/distributed.py)",
        "components": [
            {"name": f"g{i}", "fmu": str(FMU),
             "parameters": {**parameters, **({"u": 1.0} if i == 0 else {})}}
            for i in range(n)
        ],
        "connections": [{"from": f"g{i - 1}.y", "to": f"g{i}.u"} for i in range(1, n)],
        "experiment": {"startTime": 0, "stopTime": steps * STEP, "stepSize": STEP,
                       "algorithm": "jacobi"},
    }
    if estimator:
        system["experiment"]["stepControl"] = {"estimator": estimator, "maxStepSize": STEP}
    path = OUT_DIR / f"chain-{n}-{cost_us}-{estimator or 'fixed'}.json"
    path.write_text(json.dumps(system, indent=1) + "\n")
    return path


def run_child(argv):
    """`argv` run to its end with its output captured; a SIGTERM or Ctrl-C of this script ends it
    too (mpirun passes the signal on to its ranks) instead of leaving it running."""
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **MPI_ENV})
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        stdout, stderr = child.communicate()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
    return subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)


def timed(cosimo, system, ranks, steps):
    """Wall seconds of a run of `steps` steps on `ranks` ranks, and its summary."""
    summary = OUT_DIR / "summary.json"
    stop = repr(steps * STEP)
    argv = [str(cosimo), "run", str(system), "-q", "-o", os.devnull, "--stop-time", stop,
            "--output-interval", stop, "--json-file", str(summary)]
    if ranks > 1:
        argv = ["mpirun", "--oversubscribe", "-n", str(ranks), *argv]
    started = time.perf_counter()
    done = run_child(argv)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stderr}")
    return wall, json.loads(summary.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--components", type=int, default=8, help="chain length N (default 8)")
    parser.add_argument("--ranks", default="1,2,3,4", help="K values (default 1,2,3,4)")
    parser.add_argument("--steps", type=int, default=20_000, help="macro steps S (default 20000)")
    parser.add_argument("--cost", default="0,20",
                        help="busy microseconds per Gain step, one table row set each (default 0,20)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs (default 3)")
    parser.add_argument("--estimator", help="macro-step control by this estimator (default none)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    args = parser.parse_args()
    if not args.no_build:
        build()
    cosimo = target_dir() / "release" / "cosimo"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    control = f", step control by {args.estimator}" if args.estimator else ""
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; N = {args.components}, "
          f"S = {args.steps}, best of {args.repeats}{control}")
    print(f"{'cost µs':>8} {'K':>3} {'µs / step':>10} {'- K=1':>8} {'speed-up':>9} "
          f"{'rank 0 comm µs / step':>22}")
    for cost in [float(c) for c in args.cost.split(",")]:
        system = write_system(args.components, args.steps, cost, args.estimator)
        one = None
        for k in [int(r) for r in args.ranks.split(",")]:
            runs = [timed(cosimo, system, k, args.steps) for _ in range(args.repeats)]
            short, short_summary = min((timed(cosimo, system, k, 1) for _ in range(args.repeats)),
                                       key=lambda r: r[0])
            wall, summary = min(runs, key=lambda r: r[0])
            # The steps the runs took (step control may add one to land on the stop time).
            steps = summary.get("steps", args.steps) - short_summary.get("steps", 1)
            per_step = (wall - short) / steps * 1e6
            one = per_step if k == 1 else one
            ranks = summary.get("ranks") or []
            comm = (ranks[0]["communication_seconds"] / args.steps * 1e6) if ranks else 0.0
            extra = f"{per_step - one:8.2f}" if one is not None else f"{'':>8}"
            speed_up = f"{one / per_step:9.2f}" if one else f"{'':>9}"
            print(f"{cost:8.1f} {k:3d} {per_step:10.2f} {extra} {speed_up} {comm:22.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
