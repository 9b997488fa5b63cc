#!/usr/bin/env python3
"""Peers side by side on one system: a chain of Feedthrough FMI 2 FMUs (each one's
Float64_continuous_output drives the next one's Float64_continuous_input), fixed step 1 ms,
run in one script run by

  - cosimo in-process     `cosimo run chain.json`
  - cosimo isolated       `cosimo run chain.json --isolate` (every FMU in its own worker process)
  - cosimo grouped        `cosimo run chain.json --isolate --worker-processes W`, W = cores - 1
                          (every FMU in a worker process, the FMUs spread over W processes)
  - libcosim in-process   libcosimpy (PyPI, pinned below; bundles libcosim's C library),
                          the same FMU file and connections, no observer

Issue 15's benchmark: "the feedthrough chain with every FMU isolated costs at most 3x the
in-process run per instance-step and less than libcosim's in-process run on the same FMUs".

Each engine runs as its own process, timed from outside (wall clock, and the CPU time of the
process and the children it waited for). A run of S macro steps and a run of 1 step are timed,
best of --repeats each; the difference divided by N * (S - 1) is the cost per instance-step,
free of start-up (loading, extraction, worker spawning, Python's start for libcosim).

Run from the repository root with the system python (stdlib only; libcosimpy goes into the
virtual environment target/peers-venv with FMPy for steps.py, made on first use):

    python3 benches/peers/chain.py [--sizes 1,4,16] [--repeats 3] [--instance-steps 320000]

It builds `cosimo` (release) and the test FMUs first unless --no-build. The table is printed
and written to target/peers/chain.csv. Not part of the test suite.
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

LIBCOSIMPY = "libcosimpy==0.0.6"
# FMPy: pinned as in xtask/src/main.rs; steps.py drives it, chain.py does not.
FMPY = "fmpy==0.3.32"
# What the venv holds (the stamp lists them; a changed pin installs again).
REQUIREMENTS = (LIBCOSIMPY, FMPY)
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "target" / "peers-venv"
OUT_DIR = ROOT / "target" / "peers"
FMU = ROOT / "target" / "fmus" / "Feedthrough-fmi2.fmu"
STEP = 1e-3
OUTPUT = "Float64_continuous_output"
INPUT = "Float64_continuous_input"
ENGINES = ("cosimo", "cosimo --isolate", "cosimo grouped", "libcosim")
# Worker processes for "cosimo grouped": one per core the master leaves free.
GROUPED_WORKERS = max(1, (os.cpu_count() or 1) - 1)


def venv_python():
    """The venv's python with libcosimpy and FMPy installed (made and filled once; a stamp file
    records what was installed, so a changed pin installs again)."""
    python = VENV / "bin" / "python"
    stamp = VENV / "installed.txt"
    wanted = "".join(r + "\n" for r in REQUIREMENTS)
    if stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *REQUIREMENTS],
        check=True,
    )
    stamp.write_text(wanted)
    return python


def cosimo_binary(explicit):
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "cosimo"


def build():
    """cosimo (release) and the project's FMUs into target/fmus; both are no-ops when fresh."""
    cargo = os.environ.get("CARGO", "cargo")
    subprocess.run([cargo, "build", "--release", "--quiet", "--bin", "cosimo"], cwd=ROOT, check=True)
    subprocess.run(
        [cargo, "run", "--release", "--quiet", "-p", "fmu-pack"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def chain_system(n, steps):
    """The system file of a chain of n Feedthrough FMUs, S = steps macro steps of 1 ms."""
    return {
        "description": f"Chain of {n} Feedthrough FMI 2 FMUs (benches/peers/chain.py)",
        "components": [{"name": f"f{i}", "fmu": str(FMU)} for i in range(n)],
        "connections": [
            {"from": f"f{i - 1}.{OUTPUT}", "to": f"f{i}.{INPUT}"} for i in range(1, n)
        ],
        "experiment": {"startTime": 0, "stopTime": steps * STEP, "stepSize": STEP},
    }


def write_system(n, steps):
    path = OUT_DIR / f"chain-{n}-{steps}.json"
    path.write_text(json.dumps(chain_system(n, steps), indent=1) + "\n")
    return path


def command(engine, system, steps, cosimo, python):
    if engine == "libcosim":
        return [str(python), str(Path(__file__).resolve()), "--libcosim-child", str(system), str(steps)]
    stop = repr(steps * STEP)
    run = [str(cosimo), "run", str(system), "-q", "--stop-time", stop, "--output-interval", stop,
           "-o", os.devnull]
    if engine == "cosimo --isolate":
        run.append("--isolate")
    elif engine == "cosimo grouped":
        run += ["--isolate", "--worker-processes", str(GROUPED_WORKERS)]
    return run


def timed(argv):
    """(wall seconds, CPU seconds of the process and the descendants it waited for)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(argv)} failed (exit {code}):\n{stderr.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def libcosim_child(system_path, steps):
    """Run the system file's chain in libcosim in this process (the venv's python): every
    component a local slave, every connection a real connection, fixed step, no observer."""
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimSlave import CosimLocalSlave
    from libcosimpy._internal import get_last_error_message

    # FMI Library reports "Start attribute is required" (at error level) twice per Feedthrough
    # FMU and goes on; real failures are caught from the return codes below.
    log_output_level(CosimLogLevel.FATAL)
    system = json.loads(Path(system_path).read_text())
    step_ns = round(system["experiment"]["stepSize"] * 1e9)
    execution = CosimExecution.from_step_size(step_ns)
    slaves, index = [], {}
    for component in system["components"]:
        slave = CosimLocalSlave(fmu_path=component["fmu"], instance_name=component["name"])
        slaves.append(slave)  # the wrapper frees the C slave when collected
        index[component["name"]] = execution.add_local_slave(slave)
        if index[component["name"]] < 0:
            sys.exit(f"libcosim: cannot add {component['name']}: {get_last_error_message()}")

    def reference(endpoint):
        name, variable = endpoint.split(".", 1)
        for v in execution.slave_variables(index[name]):
            if v.name.decode() == variable:
                return index[name], v.reference
        sys.exit(f"libcosim: {endpoint} not found")

    for connection in system["connections"]:
        (source, output), (target, input_) = reference(connection["from"]), reference(connection["to"])
        if execution.connect_real_variables(source, output, target, input_) != 0:
            sys.exit(f"libcosim: cannot connect {connection}: {get_last_error_message()}")
    if not execution.step(steps):
        sys.exit(f"libcosim: step failed: {get_last_error_message()}")
    status = execution.status()
    if status.current_time != steps * step_ns:
        sys.exit(f"libcosim: stopped at {status.current_time} ns, not {steps * step_ns}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,4,16", help="chain lengths N (default 1,4,16)")
    parser.add_argument("--instance-steps", type=int, default=320_000,
                        help="N * S per run; S = max(20000, this / N) (default 320000)")
    parser.add_argument("--steps", type=int, help="macro steps S for every N (overrides --instance-steps)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs (default 3)")
    parser.add_argument("--cosimo", help="cosimo binary (default $CARGO_TARGET_DIR/release/cosimo)")
    parser.add_argument("--no-build", action="store_true", help="use the cosimo binary and FMUs as they are")
    parser.add_argument("--libcosim-child", nargs=2, metavar=("SYSTEM", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.libcosim_child:
        return libcosim_child(args.libcosim_child[0], int(args.libcosim_child[1]))

    python = venv_python()
    if not args.no_build:
        build()
    cosimo = cosimo_binary(args.cosimo)
    for needed in (cosimo, FMU):
        if not needed.exists():
            sys.exit(f"{needed} is missing: run without --no-build")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    if (args.steps or 2) < 2 or args.repeats < 1:
        sys.exit("--steps must be at least 2 and --repeats at least 1")
    load_start = os.getloadavg()
    print(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f} "
          f"({os.cpu_count()} cores); best of {args.repeats}", flush=True)

    rows = []
    for n in sizes:
        steps = args.steps or max(20_000, math.ceil(args.instance_steps / n))
        load = os.getloadavg()[0]
        long_system, short_system = write_system(n, steps), write_system(n, 1)
        best = {(e, s): (math.inf, math.inf) for e in ENGINES for s in (steps, 1)}
        # Engines take turns within each repeat, so a burst of load from elsewhere hits one
        # repeat of every engine rather than every repeat of one.
        for _ in range(args.repeats):
            for engine in ENGINES:
                for system, s in ((long_system, steps), (short_system, 1)):
                    wall, cpu = timed(command(engine, system, s, cosimo, python))
                    old = best[(engine, s)]
                    best[(engine, s)] = (min(old[0], wall), min(old[1], cpu))
        per = {}
        for engine in ENGINES:
            (wall, cpu), (wall1, cpu1) = best[(engine, steps)], best[(engine, 1)]
            instance_steps = n * (steps - 1)
            per[engine] = (wall - wall1) / instance_steps * 1e6
            rows.append({
                "n": n, "engine": engine, "steps": steps,
                "total_s": round(wall, 3), "startup_s": round(wall1, 3),
                "us_per_instance_step": round(per[engine], 3),
                "cpu_us_per_instance_step": round((cpu - cpu1) / instance_steps * 1e6, 3),
                "load1": round(load, 2),
            })
        for row in rows[-len(ENGINES):]:
            row["ratio_to_cosimo"] = round(row["us_per_instance_step"] / per["cosimo"], 2)
        print(f"N = {n} done (S = {steps}; load {load:.2f} before, {os.getloadavg()[0]:.2f} after)",
              flush=True)

    load_end = os.getloadavg()
    path = OUT_DIR / "chain.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    print()
    print(f"{'N':>3}  {'engine':<17}{'S':>7}  {'total s':>8}  {'start s':>8}  "
          f"{'us/inst-step':>12}  {'CPU us':>7}  {'x cosimo':>8}")
    for r in rows:
        print(f"{r['n']:>3}  {r['engine']:<17}{r['steps']:>7}  {r['total_s']:>8.3f}  "
              f"{r['startup_s']:>8.3f}  {r['us_per_instance_step']:>12.2f}  "
              f"{r['cpu_us_per_instance_step']:>7.2f}  {r['ratio_to_cosimo']:>8.2f}")
    print(f"\nload average at end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    print("issue 15 (per instance-step): isolated <= 3x in-process, and < libcosim in-process")
    for n in sizes:
        r = {row["engine"]: row for row in rows if row["n"] == n}
        lib = r["libcosim"]
        for engine in ("cosimo --isolate", "cosimo grouped"):
            iso = r[engine]
            print(f"  N = {n:>2} {engine:<17}: {iso['ratio_to_cosimo']:.2f}x in-process "
                  f"({'met' if iso['ratio_to_cosimo'] <= 3 else 'NOT met'}); "
                  f"/ libcosim {iso['us_per_instance_step'] / lib['us_per_instance_step']:.2f} "
                  f"({'met' if iso['us_per_instance_step'] < lib['us_per_instance_step'] else 'NOT met'})")
    print(f"(cosimo grouped: --worker-processes {GROUPED_WORKERS})")
    print(f"written to {path.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
