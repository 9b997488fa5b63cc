#!/usr/bin/env python3
"""The stiff Model Exchange benchmark: Robertson's chemical kinetics (kit FMU, FMI 2 and 3)
integrated by cosimo (BDF, through `--interface me`) to 1e5 s, against FMPy's Model Exchange
simulation (SUNDIALS CVODE) of the same FMU, and against the FMU's own Co-Simulation interface
(the kit's fixed-step RK4, stable only below a 2e-4 s step), which is timed over a short span
and extrapolated.

Prints, per run: wall time (median of --repeats), integrator steps, evaluations of the
derivatives and events (cosimo's run summary), and the same per simulated second.

    python3 benches/model_exchange/robertson.py [--repeats 5] [--no-build] [--no-fmpy]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COSIMO = ROOT / "target" / "release" / "cosimo"
FMUS = ROOT / "target" / "fmus"
FMPY_PYTHON = ROOT / "target" / "fmpy-venv" / "bin" / "python"
STOP = 1e5

SUMMARY = re.compile(
    r"Model Exchange: (\d+) integrator steps, (\d+) evaluations of the derivatives, (\d+) events"
)


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "cosimo"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "run", "--release", "--quiet", "-p", "fmu-pack"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def cosimo_run(fmu, extra, out):
    start = time.perf_counter()
    done = subprocess.run([str(COSIMO), "run", str(fmu), "-o", out, *extra],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    match = SUMMARY.search(done.stderr)
    counts = tuple(int(g) for g in match.groups()) if match else (0, 0, 0)
    return wall, counts


def fmpy_run(fmu, rtol, step):
    script = (
        "import sys, time\n"
        "from fmpy import simulate_fmu\n"
        "t = time.perf_counter()\n"
        f"simulate_fmu({str(fmu)!r}, fmi_type='ModelExchange', solver='CVode', "
        f"relative_tolerance={rtol}, stop_time={STOP}, step_size={step}, output_interval={step})\n"
        "print(time.perf_counter() - t)\n"
    )
    done = subprocess.run([str(FMPY_PYTHON), "-c", script], capture_output=True, text=True)
    if done.returncode != 0:
        # E.g. CVODE's "mxstep steps taken before reaching tout" (FMPy's limit per output step).
        return None, done.stderr.strip().splitlines()[-1][-90:]
    return float(done.stdout.strip().splitlines()[-1]), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--no-fmpy", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        build()
    use_fmpy = not args.no_fmpy and FMPY_PYTHON.exists()
    rows = []
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.csv")
        for version in (2, 3):
            fmu = FMUS / f"Robertson-fmi{version}.fmu"
            for rtol in ("1e-4", "1e-6", "1e-8"):
                for step in ("10", "1000"):
                    extra = ["--interface", "me", "--solver", "bdf", "--solver-rtol", rtol,
                             "--solver-atol", f"{float(rtol) * 1e-6:g}", "--step-size", step,
                             "--output-interval", step]
                    runs = [cosimo_run(fmu, extra, out) for _ in range(args.repeats)]
                    wall = statistics.median(w for w, _ in runs)
                    steps, evaluations, events = runs[0][1]
                    rows.append((f"cosimo BDF FMI {version}", rtol, step, wall, steps, evaluations,
                                 events))
                    if use_fmpy and version == 2:
                        runs = [fmpy_run(fmu, rtol, step) for _ in range(args.repeats)]
                        failure = next((f for _, f in runs if f), None)
                        if failure:
                            failures.append(f"FMPy CVODE rtol {rtol} H {step}: {failure}")
                        else:
                            rows.append(("FMPy CVODE FMI 2", rtol, step,
                                         statistics.median(w for w, _ in runs), None, None, None))
        # The Co-Simulation interface over 1 s, extrapolated to 1e5 s.
        span = 1.0
        fmu = FMUS / "Robertson-fmi2.fmu"
        walls = [cosimo_run(fmu, ["--stop-time", str(span), "--step-size", "0.1", "-q"], out)[0]
                 for _ in range(args.repeats)]
        cs_wall = statistics.median(walls) * STOP / span
    print(f"Robertson to {STOP:g} s; medians of {args.repeats} runs (wall time of the whole "
          "command, loading and writing included)")
    print(f"{'engine':<20} {'rtol':>6} {'H / s':>6} {'wall / s':>9} {'steps':>7} "
          f"{'f evals':>8} {'events':>6} {'µs / sim s':>11} {'f evals / sim s':>16}")
    for engine, rtol, step, wall, steps, evaluations, events in rows:
        per = wall / STOP * 1e6
        evals_per = "-" if evaluations is None else f"{evaluations / STOP:.3f}"
        print(f"{engine:<20} {rtol:>6} {step:>6} {wall:>9.3f} "
              f"{'-' if steps is None else steps:>7} {'-' if evaluations is None else evaluations:>8} "
              f"{'-' if events is None else events:>6} {per:>11.3f} {evals_per:>16}")
    for failure in failures:
        print(f"failed: {failure}")
    print(f"Co-Simulation interface (RK4, 2e-4 s internal step, 5e8 steps): about "
          f"{cs_wall:.0f} s for {STOP:g} s (1 s simulated, extrapolated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
