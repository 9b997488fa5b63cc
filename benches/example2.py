#!/usr/bin/env python3
"""The variable-order paper's Example 2 as a study (issue 29): the oscillator chain that
fmus/oscillator-chain-example2.py writes, run with macro-step size and order control by the
explicit estimator ExSLocal and the implicit ImSLocal, each in one process and under
`mpirun --oversubscribe -n K` for each K of --ranks.

For every run it prints the macro steps (accepted, rejected), the orders the order controller
chose, the corrector iterations, the wall time (from outside, mpirun's start included) and,
over ranks, each rank's time split as the paper splits it (the summary's `ranks`, from
`--json-file`): stepping its FMUs (integration), saving and restoring FMU states, interface
computations, communication and waiting. The results file of each mpirun run is compared
byte for byte with the one-process run's; a difference, or a run that fails, is reported
(a refusal under mpirun is printed with its message) and makes the exit status 1.

    python3 benches/example2.py [--masses 1000] [--subsystems 20] [--stop 1e-3] [--seed 1]
                                [--estimators ExSLocal,ImSLocal] [--ranks 2] [--no-build]

The paper's size is --masses 10000 --subsystems 191 --stop 0.5 (hours on 2 cores; the
defaults finish in minutes). It builds `cosimo` (release, feature mpi) and the test FMUs first
unless --no-build. Not part of the test suite; run it when the machine is quiet.
"""

import argparse
import filecmp
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "target" / "peers" / "example2"
GENERATOR = ROOT / "fmus" / "oscillator-chain-example2.py"
# The MPI environment, the target folder and the release build with the feature mpi are
# those of the distributed benchmark beside this script.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from distributed import build, run_child, target_dir  # noqa: E402


def generate(args, estimator):
    path = OUT_DIR / f"example2-{args.masses}-{args.subsystems}-{args.seed}-{estimator}.json"
    subprocess.run([sys.executable, str(GENERATOR), "--masses", str(args.masses),
                    "--subsystems", str(args.subsystems), "--seed", str(args.seed),
                    "--estimator", estimator, "--stop", repr(args.stop),
                    "--output-interval", repr(args.output_interval),
                    "--fmus", str(ROOT / "target" / "fmus"), "-o", str(path)],
                   check=True, stdout=subprocess.DEVNULL)
    return path


def run(cosimo, system, ranks, label):
    """(wall seconds, summary, printed text, results path) or (None, None, error text, None)."""
    results = OUT_DIR / f"{label}.csv"
    summary = OUT_DIR / f"{label}.summary.json"
    argv = [str(cosimo), "run", str(system), "-o", str(results), "--json-file", str(summary)]
    if ranks > 1:
        argv = ["mpirun", "--oversubscribe", "-n", str(ranks), *argv]
    started = time.perf_counter()
    done = run_child(argv)
    wall = time.perf_counter() - started
    text = done.stdout + done.stderr
    if done.returncode != 0:
        return None, None, text.strip(), None
    return wall, json.loads(summary.read_text()), text, results


def control_line(text):
    found = re.search(r"step control: (.*)", text)
    return found.group(1) if found else "(no step control line)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--masses", type=int, default=1000, help="masses (default 1000)")
    parser.add_argument("--subsystems", type=int, default=20, help="subsystems (default 20)")
    parser.add_argument("--stop", type=float, default=1e-3, help="stop time in s (default 1e-3)")
    parser.add_argument("--output-interval", type=float, default=1e-4,
                        help="result rows every this many s (default 1e-4)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the study (default 1)")
    parser.add_argument("--estimators", default="ExSLocal,ImSLocal",
                        help="estimators to run (default ExSLocal,ImSLocal)")
    parser.add_argument("--ranks", default="2", help="K values for mpirun (default 2)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    args = parser.parse_args()
    if not args.no_build:
        build()
    cosimo = target_dir() / "release" / "cosimo"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; Example 2 with "
          f"{args.masses} masses in {args.subsystems} subsystems, seed {args.seed}, "
          f"to t = {args.stop} s")
    failed = False
    for estimator in args.estimators.split(","):
        system = generate(args, estimator)
        alone = None
        for k in [1] + [int(r) for r in args.ranks.split(",") if int(r) > 1]:
            label = f"{estimator}-K{k}"
            wall, summary, text, results = run(cosimo, system, k, label)
            where = "one process" if k == 1 else f"mpirun -n {k}"
            if wall is None:
                lines = text.splitlines()
                said = [line for line in lines if line.lower().startswith("error")] or lines[-6:]
                print(f"{estimator}, {where}: FAILED or REFUSED:\n  " + "\n  ".join(said),
                      flush=True)
                failed = True
                continue
            print(f"{estimator}, {where}: {wall:.2f} s wall ({summary['wall_seconds']:.2f} s in "
                  f"the run), {summary['steps']} macro steps; {control_line(text)}", flush=True)
            for r in summary.get("ranks") or []:
                total = sum(r[key] for key in ("integration_seconds", "state_seconds",
                                               "interface_seconds", "communication_seconds"))
                share = (lambda x: 100 * x / total) if total > 0 else (lambda x: 0.0)
                print(f"  rank {r['rank']}: integration {r['integration_seconds']:.3f} s "
                      f"({share(r['integration_seconds']):.0f} %), state save/restore "
                      f"{r['state_seconds']:.3f} s ({share(r['state_seconds']):.0f} %), "
                      f"interface {r['interface_seconds']:.3f} s "
                      f"({share(r['interface_seconds']):.0f} %), communication and waiting "
                      f"{r['communication_seconds']:.3f} s "
                      f"({share(r['communication_seconds']):.0f} %)")
            if k == 1:
                alone = results
            elif alone is not None:
                same = filecmp.cmp(alone, results, shallow=False)
                print(f"  rows {'byte-identical to' if same else 'DIFFER from'} one process'")
                failed |= not same
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
