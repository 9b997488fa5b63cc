#!/usr/bin/env python3
"""The cost per macro step of a system exported as an FMU (`cosimo export`) when a plain C
loop drives it, against `cosimo run` of the same system (issue 30: "through a plain C loop over
the exported FMU, the cost per macro step is within 5 % of `cosimo run` of the same system").

The system: a chain of N Gain FMI 2 FMUs (each one's y drives the next one's u), fixed step
1 ms. It is exported as an FMI 2 FMU (the release container library), unzipped, and driven by
raw_loop.c (this folder; compiled here with `cc`): fmi2Instantiate, fmi2SetupExperiment,
enter / exit initialization, then S times fmi2DoStep and fmi2GetReal of the last
component's y. `cosimo run chain.json -q --output-interval STOP -o /dev/null` runs the same
system (two result rows), and so does `cosimo run chain.json -q -o /dev/null` (a row every
macro step, the output interval the exported FMU keeps inside: it reads every output after
each step, for the non-finite check, and hands the row to no one). Each is timed from outside, a run of S steps and a run of 1 step,
best of --repeats, in CPU time (user + system); (T_S - T_1) / (S - 1) is the cost per
macro step without start-up.

    python3 benches/peers/export.py [--sizes 1,10,100] [--steps 100000] [--repeats 3] [--no-build]
    python3 benches/peers/export.py --instructions --steps 2000   # valgrind's count, not time

It builds `cosimo` and the container (release) and the test FMUs first unless --no-build. Not
part of the test suite; run it when the machine is quiet.
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "target" / "peers" / "export"
FMU = ROOT / "target" / "fmus" / "Gain-fmi2.fmu"
STEP = 1e-3
COUNT_INSTRUCTIONS = False


def target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def build():
    cargo = os.environ.get("CARGO", "cargo")
    for args in (["--bin", "cosimo"], ["-p", "cosimo-container"]):
        subprocess.run([cargo, "build", "--release", "--quiet", *args], cwd=ROOT, check=True)
    subprocess.run([cargo, "run", "--release", "--quiet", "-p", "fmu-pack"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def write_system(n, steps):
    system = {
        "description": f"Chain of {n} Gain FMI 2 FMUs (benches/peers/export.py)",
        "components": [
            {"name": f"g{i}", "fmu": str(FMU), **({"parameters": {"u": 1.0}} if i == 0 else {})}
            for i in range(n)
        ],
        "connections": [{"from": f"g{i - 1}.y", "to": f"g{i}.u"} for i in range(1, n)],
        "experiment": {"startTime": 0, "stopTime": steps * STEP, "stepSize": STEP},
    }
    path = OUT_DIR / f"chain-{n}.json"
    path.write_text(json.dumps(system, indent=1) + "\n")
    return path


def exported(cosimo, system, n, name, extra):
    """The system exported with `extra` options and unzipped: (folder, model identifier, value
    reference of the last component's y)."""
    fmu = OUT_DIR / f"{name}.fmu"
    library = target_dir() / "release" / "libcosimo_container.so"
    subprocess.run([str(cosimo), "export", str(system), "-q", "-o", str(fmu),
                    "--container-library", str(library), *extra], check=True)
    folder = OUT_DIR / name
    shutil.rmtree(folder, ignore_errors=True)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
        description = z.read("modelDescription.xml").decode()
        manifest = json.loads(z.read("resources/cosimo-export.json"))
    identifier = re.search(r'modelIdentifier="([^"]+)"', description).group(1)
    vr = next(v["valueReference"] for v in manifest["variables"] if v["name"] == f"g{n - 1}.y")
    return folder, identifier, vr


def instructions(argv):
    """Instructions the run executes, counted by valgrind's callgrind (children included):
    exact and independent of other work on the machine, unlike times."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                           "--callgrind-out-file=/dev/null", *argv],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stderr}")
    counts = [int(m.replace(",", "")) for m in re.findall(r"Collected : ([\d,]+)", done.stderr)]
    if not counts:
        sys.exit(f"no instruction count from valgrind for {' '.join(argv)}:\n{done.stderr}")
    return sum(counts), done.stdout


def timed(argv):
    """CPU seconds (user + system of the run and the children it waited for: less sensitive
    than the wall clock to other work on the machine) and stdout of a run that must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done.stdout


def per_step(make, steps, repeats):
    """(T_S - T_1) / (S - 1), best of `repeats` each, in microseconds (or instructions with
    --instructions); the S run's stdout."""
    if COUNT_INSTRUCTIONS:
        long = instructions(make(steps))
        return (long[0] - instructions(make(1))[0]) / (steps - 1), long[1]
    long = [timed(make(steps)) for _ in range(repeats)]
    short = min(timed(make(1))[0] for _ in range(repeats))
    return (min(w for w, _ in long) - short) / (steps - 1) * 1e6, long[0][1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,100", help="chain lengths N (default 1,10,100)")
    parser.add_argument("--steps", type=int, default=100_000, help="macro steps S (default 100000)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs (default 3)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind (callgrind) instead of timing: "
                             "exact on a busy machine; use a smaller --steps (e.g. 2000)")
    args = parser.parse_args()
    global COUNT_INSTRUCTIONS
    COUNT_INSTRUCTIONS = args.instructions
    if not args.no_build:
        build()
    cosimo = target_dir() / "release" / "cosimo"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    loop = OUT_DIR / "raw_loop"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", str(loop),
                    str(Path(__file__).with_name("raw_loop.c")), "-ldl"], check=True)
    print(f"load average {os.getloadavg()[0]:.2f}; S = {args.steps}, best of {args.repeats}")
    unit = "instructions" if args.instructions else "µs"
    print(f"{unit} per macro step; ratios: C loop over the export / cosimo run")
    print(f"{'N':>5} {'run, 2 rows':>12} {'run, rows':>10} {'export':>8} {'/ 2 rows':>9}"
          f" {'/ rows':>7} {'export, -oi STOP':>17} {'/ 2 rows':>9}")
    for n in [int(s) for s in args.sizes.split(",")]:
        system = write_system(n, args.steps)
        stop = repr(args.steps * STEP)

        def c_loop(export):
            folder, identifier, vr = export
            return lambda steps: [str(loop), str(folder), identifier, "1", str(steps), "-",
                                  str(vr), repr(STEP)]

        def run(extra):
            return lambda steps: [str(cosimo), "run", str(system), "-q", "--stop-time",
                                  repr(steps * STEP), "-o", os.devnull, *extra(steps)]

        two_rows, _ = per_step(run(lambda steps: ["--output-interval", repr(steps * STEP)]),
                               args.steps, args.repeats)
        rows, _ = per_step(run(lambda steps: []), args.steps, args.repeats)
        # Inside the FMU the master reads every output at each output point (for the
        # non-finite check): by default after every step; exported with --output-interval
        # STOP, at the end only.
        plain, printed = per_step(c_loop(exported(cosimo, system, n, f"chain-{n}", [])),
                                  args.steps, args.repeats)
        sparse, _ = per_step(
            c_loop(exported(cosimo, system, n, f"chain-{n}-sparse", ["--output-interval", stop])),
            args.steps, args.repeats)
        print(f"{n:>5} {two_rows:>12.3f} {rows:>10.3f} {plain:>8.3f} {plain / two_rows:>9.3f}"
              f" {plain / rows:>7.3f} {sparse:>17.3f} {sparse / two_rows:>9.3f}"
              f"   (last y = {printed.strip()})", flush=True)


if __name__ == "__main__":
    main()
