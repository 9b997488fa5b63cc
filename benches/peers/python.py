#!/usr/bin/env python3
"""cosimo's Python module against FMPy on the same run: the Feedthrough FMI 2 FMU of the
feedthrough chain (benches/peers/chain.py), fixed communication step 1 ms, every output
recorded at every step, called from the same Python process:

  - cosimo   `cosimo.simulate(fmu, stop_time=T, step_size=1e-3, output_interval=1e-3, output=...)`
  - FMPy     `fmpy.simulate_fmu(fmu, stop_time=T, step_size=1e-3, output_interval=1e-3, output=...)`

Both return a numpy structured array of the same rows. Each run is timed (wall clock,
best of --repeats) at S steps and at 1 step; the difference divided by S - 1 is the cost per
step, free of loading and extraction. The ratio FMPy / cosimo is what the README reports.

Set up once, from the repository root (a release build of the module; FMPy pinned as in
xtask/src/main.rs):

    python3 -m venv target/python-bench-venv
    target/python-bench-venv/bin/pip install ./python fmpy==0.3.32
    cargo run -p fmu-pack          # packs target/fmus/Feedthrough-fmi2.fmu
    target/python-bench-venv/bin/python benches/peers/python.py [--steps 100000] [--repeats 3]

Not part of the test suite.
"""

import argparse
import time
from pathlib import Path

import cosimo
import fmpy

ROOT = Path(__file__).resolve().parents[2]
FMU = ROOT / "target" / "fmus" / "Feedthrough-fmi2.fmu"
STEP = 1e-3
OUTPUTS = ["Float64_continuous_output", "Float64_discrete_output", "Int32_output", "Boolean_output"]


def run_cosimo(steps):
    return cosimo.simulate(FMU, start_time=0.0, stop_time=steps * STEP, step_size=STEP,
                           output_interval=STEP, output=OUTPUTS)


def run_fmpy(steps):
    return fmpy.simulate_fmu(str(FMU), fmi_type="CoSimulation", start_time=0.0,
                             stop_time=steps * STEP, step_size=STEP, output_interval=STEP,
                             output=OUTPUTS)


def best(run, steps, repeats):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = run(steps)
        times.append(time.perf_counter() - started)
    return min(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not FMU.exists():
        raise SystemExit(f"{FMU} is missing: run `cargo run -p fmu-pack` first")
    rows = {}
    for name, run in [("cosimo", run_cosimo), ("FMPy", run_fmpy)]:
        one, _ = best(run, 1, args.repeats)
        full, result = best(run, args.steps, args.repeats)
        per_step = (full - one) / (args.steps - 1)
        rows[name] = (full, one, per_step, result)
    a, b = rows["cosimo"][3], rows["FMPy"][3]
    assert len(a) == len(b), (len(a), len(b))
    for name in OUTPUTS:
        assert (a[name].astype(float) == b[name].astype(float)).all(), f"{name} differs"
    print(f"Feedthrough FMI 2, {args.steps} steps of {STEP} s, {len(OUTPUTS)} outputs per row, "
          f"best of {args.repeats}; both results are equal")
    print(f"{'engine':8} {'run [s]':>10} {'1 step [s]':>11} {'per step [us]':>14}")
    for name, (full, one, per_step, _) in rows.items():
        print(f"{name:8} {full:10.3f} {one:11.4f} {per_step * 1e6:14.2f}")
    ratio_run = rows["FMPy"][0] / rows["cosimo"][0]
    ratio_step = rows["FMPy"][2] / rows["cosimo"][2]
    print(f"FMPy / cosimo: {ratio_run:.1f}x the whole run, {ratio_step:.1f}x per step")


if __name__ == "__main__":
    main()
