#!/usr/bin/env python3
"""Issue 17's benchmark: runs per second of `cosimo sweep` on 1,000 short runs, on one core,
on two (`--workers 2`) and under `mpirun -n 2` and `-n 3` (rank 0 hands out the runs, the
other ranks make them: one and two cores of work), in one script run. The MPI figures include
mpirun's start of the ranks (about 0.4 s here).

The study: the two-mass system (fmus/two-mass-force-displacement.json), 1,000 seeded random
samples of the coupling damping, 0.1 s of 1 ms steps each (100 steps), the largest
displacement kept. Each configuration runs --repeats times; the best wall time counts.

    cargo build --release --features mpi     # cosimo with MPI (Open MPI: .ci/run installs it)
    python3 benches/sweep/runs.py [--runs 1000] [--repeats 3] [--cosimo target/release/cosimo]

Not part of the test suite. Run it on a quiet machine: the load average is printed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def study(path: Path, runs: int) -> None:
    path.write_text(json.dumps({
        "system": str(ROOT / "fmus" / "two-mass-force-displacement.json"),
        "experiment": {"stopTime": 0.1, "stepSize": 1e-3, "outputInterval": 1e-2},
        "samples": {"count": runs, "seed": 17, "method": "random",
                    "parameters": [{"name": "mass2.dc", "uniform": {"min": 2, "max": 20}}]},
        "keep": {"summaries": [{"variable": "mass2.x", "statistics": ["max"]}]},
    }))


def timed(argv, env=None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} failed:\n{done.stderr}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cosimo", default=str(ROOT / "target" / "release" / "cosimo"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = tmp / "study.json"
        study(path, args.runs)
        sweep = [args.cosimo, "sweep", str(path), "-q", "-o"]
        configs = [
            ("1 core (--workers 1)", lambda out: (sweep + [out, "--workers", "1"], None)),
            ("2 cores (--workers 2)", lambda out: (sweep + [out, "--workers", "2"], None)),
        ]
        if shutil.which("mpirun"):
            mpi_env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                           OMPI_MCA_btl_vader_single_copy_mechanism="none")
            for ranks in (2, 3):
                configs.append((f"mpirun -n {ranks} ({ranks - 1} working)", lambda out, n=ranks: (
                    ["mpirun", "-n", str(n), "--oversubscribe"] + sweep + [out], mpi_env)))
        print(f"load average {os.getloadavg()[0]:.2f}; {args.runs} runs, best of {args.repeats}")
        best = {}
        for _ in range(args.repeats):
            for name, make in configs:
                out = tmp / f"out-{len(best)}"
                argv, run_env = make(str(out))
                wall = timed(argv, run_env)
                best[name] = min(best.get(name, wall), wall)
                shutil.rmtree(out, ignore_errors=True)
        one = best[configs[0][0]]
        print(f"{'configuration':32} {'wall s':>8} {'runs/s':>8} {'x 1 core':>9}")
        for name, wall in best.items():
            print(f"{name:32} {wall:8.2f} {args.runs / wall:8.1f} {one / wall:9.2f}")


if __name__ == "__main__":
    main()
