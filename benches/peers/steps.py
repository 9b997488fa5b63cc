#!/usr/bin/env python3
"""Issue 16's side-by-side benchmark: the cost of one instance-step of a cheap FMU in cosimo,
libcosim and FMPy, each against a raw loop over the same FMU binary, in one script run.

The systems (fixed step 1 ms, S macro steps, N instances of one kit FMU, FMI 2):

  - gain         a chain of N Gain-fmi2.fmu (the kit's minimal feedthrough, y = k u): each
                 one's y drives the next one's u; the cheapest FMU, for the master's own cost
  - feedthrough  a chain of N Feedthrough-fmi2.fmu: each one's Float64_continuous_output
                 drives the next one's Float64_continuous_input (every FMI type, copied)
  - dahlquist    N unconnected Dahlquist-fmi2.fmu (x' = -k x, stepped exactly; it has no input)
  - gain-20us    the gain chain with every Gain busy 20 us per step (its parameter cost): an
                 expensive FMU, where --parallel must pay; raw and cosimo only, N * S capped
                 by --costly-cap

The engines, each run as a process of its own:

  - raw                 raw_loop.c (built here with gcc -O2): dlopen the FMU's binary,
                        instantiate N, then per step and instance only fmi2SetReal (input from
                        the previous instance's output, if the FMU has an input),
                        fmi2DoStep, fmi2GetReal (output)
  - cosimo              `cosimo run SYSTEM -q --stop-time T --output-interval T
                        -o /dev/null` (sequential)
  - cosimo parallel     the same with `--parallel` (cosimo times the components' steps in a
                        trial and uses up to one thread per core where that pays, else runs
                        sequentially)
  - libcosim inline     libcosimpy's fixed-step execution with no worker thread (the
                        one_cpu.c shim preloaded: libcosim then runs each slave's step in the
                        calling thread)
  - libcosim default    libcosimpy's fixed-step execution as it comes (hardware threads - 1
                        worker threads)
  - fmpy loop           FMPy's FMU2Slave, N instances, setReal / doStep / getReal per
                        instance-step in Python
  - fmpy simulate_fmu   fmpy.simulate_fmu (one FMU, so N = 1 only; its communication step is
                        the output interval, so it records the output after every step)

Each engine's run of S steps has a twin of 1 step; (long - short) / (N (S - 1)) is the cost per
instance-step without start-up. Every engine's pair of runs is taken right after a pair of raw
runs, and its ratio to raw comes from that pair (engines alternate within each of --repeats
repeats; medians are reported). CPU is user + system time of the process and the children it
waited for, peak memory the long run's maximum resident set size, both from wait4 in
measure.c, which starts every run (forked from Python a child would inherit Python's peak).

Run from the repository root with the system python (stdlib only; libcosimpy and FMPy go
into target/peers-venv, made on first use, see chain.py):

    python3 benches/peers/steps.py [--sizes 1,10,100,1000] [--steps 10000] [--repeats 5]

It builds cosimo (release) and the kit's FMUs first unless --no-build. The table is printed and
written to target/peers/steps.csv and target/peers/steps.md. Not part of the test suite.
"""

import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chain  # noqa: E402  (the venv, the build, the cosimo binary and libcosim's driver)

ROOT, OUT_DIR, STEP = chain.ROOT, chain.OUT_DIR, chain.STEP
HERE = Path(__file__).resolve().parent
FMU_DIR = ROOT / "target" / "fmus"
# The kit FMUs: file, the input driven by the previous instance (None: unconnected), output,
# Float64 parameters of every instance.
FMUS = {
    "gain": ("Gain-fmi2.fmu", "u", "y", {}),
    "feedthrough": ("Feedthrough-fmi2.fmu", "Float64_continuous_input", "Float64_continuous_output", {}),
    "dahlquist": ("Dahlquist-fmi2.fmu", None, "x", {}),
    "gain-20us": ("Gain-fmi2.fmu", "u", "y", {"cost": 20e-6}),
}
ENGINES = ("raw", "cosimo", "cosimo parallel", "libcosim inline", "libcosim default",
           "fmpy loop", "fmpy simulate_fmu")


# --- the FMU ---------------------------------------------------------------------------------

class Fmu:
    """A kit FMU unzipped into target/peers/<name>/, with what the engines need from its
    model description."""

    def __init__(self, key):
        file, self.input, self.output, self.parameters = FMUS[key]
        self.key, self.path = key, FMU_DIR / file
        self.dir = OUT_DIR / key
        if self.dir.exists():
            shutil.rmtree(self.dir)
        with zipfile.ZipFile(self.path) as z:
            z.extractall(self.dir)
        for so in (self.dir / "binaries").rglob("*.so"):
            so.chmod(0o755)
        root = ET.parse(self.dir / "modelDescription.xml").getroot()
        self.model_identifier = root.find("CoSimulation").get("modelIdentifier")
        refs = {v.get("name"): int(v.get("valueReference")) for v in root.iter("ScalarVariable")}
        self.in_vr = refs[self.input] if self.input else None
        self.out_vr = refs[self.output]
        self.parameter_vrs = {refs[name]: value for name, value in self.parameters.items()}

    def system(self, n, steps):
        """The system file of n instances (a chain through input/output when there is an
        input), S = steps macro steps of 1 ms."""
        connections = []
        if self.input:
            connections = [{"from": f"f{i - 1}.{self.output}", "to": f"f{i}.{self.input}"}
                           for i in range(1, n)]
        return {
            "description": f"{n} x {self.path.name} (benches/peers/steps.py)",
            "components": [{"name": f"f{i}", "fmu": str(self.path), "parameters": self.parameters}
                           for i in range(n)],
            "connections": connections,
            "experiment": {"startTime": 0, "stopTime": steps * STEP, "stepSize": STEP},
        }

    def write_system(self, n, steps):
        path = OUT_DIR / f"steps-{self.key}-{n}-{steps}.json"
        if not path.exists():
            path.write_text(json.dumps(self.system(n, steps), indent=1) + "\n")
        return path


# --- the children run by the venv's python ---------------------------------------------------

def fmpy_loop_child(fmu_dir, n, steps, input_, output):
    """N FMPy FMU2Slave instances of the unzipped FMU, stepped in a Python loop with exactly
    the calls of raw_loop.c (input_ "-": no input, the instances are not connected)."""
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(fmu_dir)
    refs = {v.name: v.valueReference for v in md.modelVariables}
    in_vr = [refs[input_]] if input_ != "-" else None
    out_vr = [refs[output]]
    slaves = []
    for i in range(n):
        s = FMU2Slave(guid=md.guid, unzipDirectory=fmu_dir,
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName=f"f{i}")
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()
        slaves.append(s)
    y = [0.0]
    for k in range(steps):
        t = k * STEP
        for i, s in enumerate(slaves):
            if in_vr and i > 0:
                s.setReal(in_vr, y)
            s.doStep(currentCommunicationPoint=t, communicationStepSize=STEP)
            y = s.getReal(out_vr)
    for s in slaves:
        s.terminate()
        s.freeInstance()
    print(repr(y[0]))


def fmpy_simulate_child(fmu_dir, steps, output):
    """fmpy.simulate_fmu on the unzipped FMU, fixed step 1 ms. For co-simulation FMPy's
    communication step is the output interval, so it records the output after every step."""
    from fmpy import simulate_fmu

    result = simulate_fmu(fmu_dir, fmi_type="CoSimulation", stop_time=steps * STEP,
                          output_interval=STEP, output=[output])
    print(repr(result[-1][output]))


# --- running and timing ----------------------------------------------------------------------

def timed(measure, argv, env=None):
    """(wall s, CPU s, peak RSS MiB) of one run; exits on failure. The run is started by
    measure.c, which reports CPU and peak memory (see there why not from Python)."""
    report = OUT_DIR / "measure.txt"
    start = time.perf_counter()
    done = subprocess.run([str(measure), str(report), *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed (exit {done.returncode}):\n"
                 f"{done.stderr.decode(errors='replace')}")
    utime, stime, maxrss_kib = report.read_text().split()
    return wall, float(utime) + float(stime), int(maxrss_kib) / 1024


class Tools:
    def __init__(self, cosimo, python, raw_loop, one_cpu, measure):
        self.cosimo, self.python, self.raw_loop, self.one_cpu = cosimo, python, raw_loop, one_cpu
        self.measure = measure

    def command(self, engine, fmu, n, steps):
        """(argv, env) of one run of engine on n instances of fmu for steps macro steps."""
        me = [str(self.python), str(Path(__file__).resolve())]
        if engine == "raw":
            parameters = [f"{vr}={value!r}" for vr, value in fmu.parameter_vrs.items()]
            return [str(self.raw_loop), str(fmu.dir), fmu.model_identifier, str(n), str(steps),
                    "-" if fmu.in_vr is None else str(fmu.in_vr), str(fmu.out_vr), repr(STEP),
                    *parameters], None
        if engine.startswith("cosimo"):
            stop = repr(steps * STEP)
            argv = [str(self.cosimo), "run", str(fmu.write_system(n, steps)), "-q",
                    "--stop-time", stop, "--output-interval", stop, "-o", os.devnull]
            if engine == "cosimo parallel":
                argv += ["--parallel"]
            return argv, None
        if engine.startswith("libcosim"):
            argv = me + ["--child", "libcosim", str(fmu.write_system(n, steps)), str(steps)]
            env = None
            if engine == "libcosim inline":
                env = dict(os.environ, LD_PRELOAD=str(self.one_cpu))
            return argv, env
        if engine == "fmpy loop":
            return me + ["--child", "fmpy-loop", str(fmu.dir), str(n), str(steps),
                         fmu.input or "-", fmu.output], None
        if engine == "fmpy simulate_fmu":
            return me + ["--child", "fmpy-simulate", str(fmu.dir), str(steps), fmu.output], None
        raise ValueError(engine)


def build_c(source, output, shared=False):
    """gcc -O2 source into target/peers/ (again when the source is newer)."""
    if output.exists() and output.stat().st_mtime >= source.stat().st_mtime:
        return output
    flags = ["-shared", "-fPIC"] if shared else []
    subprocess.run(["gcc", "-O2", "-Wall", *flags, "-o", str(output), str(source), "-ldl"],
                   check=True)
    return output


def cap(engine, fmu, args):
    """The most instance-steps N * S of one run of this engine on this FMU."""
    if fmu.parameters.get("cost"):
        return min(args.max_instance_steps, args.costly_cap)
    if engine.startswith("libcosim"):
        return min(args.max_instance_steps, args.libcosim_cap)
    if engine.startswith("fmpy"):
        return min(args.max_instance_steps, args.fmpy_cap)
    return args.max_instance_steps


def wanted_steps(n, args):
    """S before any cap: --steps, raised to --min-instance-steps / N where that is more."""
    return max(args.steps, math.ceil(args.min_instance_steps / n))


def steps_for(engine, fmu, n, args):
    """S for this engine on this FMU at this N: wanted_steps, lowered to the engine's cap / N
    (at least 2) where that is less."""
    return min(wanted_steps(n, args), max(2, cap(engine, fmu, args) // n))


def measure(tools, engine, fmu, n, steps):
    """One pair: (wall, CPU) per instance-step of S and of 1 step's twin, peak MiB of S."""
    argv, env = tools.command(engine, fmu, n, steps)
    wall, cpu, mib = timed(tools.measure, argv, env)
    argv1, env1 = tools.command(engine, fmu, n, 1)
    wall1, cpu1, _ = timed(tools.measure, argv1, env1)
    per = n * (steps - 1)
    return (wall - wall1) / per * 1e9, (cpu - cpu1) / per * 1e9, mib


def run(args, tools, fmus, sizes, engines):
    rows = []
    for fmu in fmus:
        for n in sizes:
            here = [e for e in engines if e != "fmpy simulate_fmu" or n == 1]
            if fmu.parameters:
                # libcosim's and FMPy's drivers here set no parameters.
                here = [e for e in here if e == "raw" or e.startswith("cosimo")]
            others = [e for e in here if e != "raw"]
            if not others:
                continue
            s = {e: steps_for(e, fmu, n, args) for e in here}
            raw_steps = set()
            raw_samples, samples = [], {e: [] for e in others}
            load = os.getloadavg()[0]
            for r in range(args.repeats):
                # The engines take turns, starting one further each repeat; each one's pair of
                # runs comes right after a pair of raw runs, its ratio to raw from those.
                order = others[r % len(others):] + others[:r % len(others)]
                for engine in order:
                    # raw at the engine's S, so that capped pairs stay short
                    raw = measure(tools, "raw", fmu, n, s[engine])
                    got = measure(tools, engine, fmu, n, s[engine])
                    raw_samples.append(raw)
                    raw_steps.add(s[engine])
                    samples[engine].append(got + (got[1] / raw[1], got[0] / raw[0]))
            med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
            raw_wall, raw_cpu = med(raw_samples, 0), med(raw_samples, 1)
            rows.append(row(fmu, n, "raw", max(raw_steps), raw_wall, raw_cpu, med(raw_samples, 2), 1.0, 1.0, load))
            for engine in others:
                x = samples[engine]
                rows.append(row(fmu, n, engine, s[engine], med(x, 0), med(x, 1), med(x, 2),
                                med(x, 3), med(x, 4), load))
            write_files(rows)  # so far: a long run stopped early keeps what it measured
            print(f"{fmu.key} N = {n} done (load {load:.2f} before, {os.getloadavg()[0]:.2f} after)",
                  flush=True)
    return rows


def row(fmu, n, engine, steps, wall, cpu, mib, x_cpu, x_wall, load):
    return {"fmu": fmu.key, "n": n, "engine": engine, "steps": steps,
            "ns_per_instance_step": round(wall, 1), "cpu_ns_per_instance_step": round(cpu, 1),
            "peak_mib": round(mib, 1), "x_raw_cpu": round(x_cpu, 2), "x_raw_wall": round(x_wall, 2),
            "load1": round(load, 2)}


# --- reporting -------------------------------------------------------------------------------

def fmt(x):
    """Three significant figures, no exponent."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{digits}f}"


HEADER = ("FMU", "N", "engine", "S", "ns/inst-step", "CPU ns", "peak MiB", "x raw CPU", "x raw wall")


def table(rows):
    return [(r["fmu"], str(r["n"]), r["engine"], str(r["steps"]), fmt(r["ns_per_instance_step"]),
             fmt(r["cpu_ns_per_instance_step"]), f"{r['peak_mib']:.1f}", fmt(r["x_raw_cpu"]),
             fmt(r["x_raw_wall"])) for r in rows]


def write_files(rows):
    """target/peers/steps.csv and steps.md."""
    with (OUT_DIR / "steps.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    md = ["| FMU | N | engine | S | ns / instance-step (wall) | CPU ns / instance-step | peak MiB "
          "| x raw (CPU) | x raw (wall) |",
          "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    md += ["| " + " | ".join(l) + " |" for l in table(rows)]
    (OUT_DIR / "steps.md").write_text("\n".join(md) + "\n")


def report(rows, args, load_start):
    load_end = os.getloadavg()
    header, lines = HEADER, table(rows)
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
    left = {0, 2}

    def show(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    print()
    print(show(header))
    for l in lines:
        print(show(l))

    print(f"\nload average: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f} at start, "
          f"{load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f} at end ({os.cpu_count()} cores); "
          f"medians of {args.repeats}")
    capped = sorted({(r["n"], r["engine"], r["steps"]) for r in rows
                     if r["engine"] != "raw" and r["steps"] < wanted_steps(r["n"], args)})
    if capped:
        print("S lowered by the caps on N * S (raw runs at each engine's S for its pairs): "
              + ", ".join(f"{e} N = {n}: S = {s}" for n, e, s in capped))
    checks(rows)
    print(f"written to {(OUT_DIR / 'steps.csv').relative_to(ROOT)} and "
          f"{(OUT_DIR / 'steps.md').relative_to(ROOT)}")


def checks(rows):
    """Issue 16's "done when", against this run's figures, for every FMU run (the issue names
    the cheapest; which one that is shows in the raw rows)."""
    at = {(r["fmu"], r["n"], r["engine"]): r for r in rows}
    fmus = sorted({r["fmu"] for r in rows}, key=list(FMUS).index)
    sizes = sorted({r["n"] for r in rows})
    verdict = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    print("\nissue 16, done when (per instance-step; 'faster' compares wall time):")
    for fmu in fmus:
        for n in sizes:
            c = at.get((fmu, n, "cosimo"))
            if not c:
                continue
            print(f"  {fmu} N = {n} (raw {fmt(at[(fmu, n, 'raw')]['cpu_ns_per_instance_step'])} CPU ns):")
            print(f"    cosimo CPU {c['x_raw_cpu']:.2f}x raw (<= 1.2x: {verdict(c['x_raw_cpu'] <= 1.2)})")
            libcosim = [at[k] for k in ((fmu, n, "libcosim inline"), (fmu, n, "libcosim default")) if k in at]
            fastest = min(libcosim, key=lambda r: r["ns_per_instance_step"]) if libcosim else None
            for other, label, factor in ((fastest, "libcosim fastest", 5),
                                         (at.get((fmu, n, "libcosim default")), "libcosim default", 25),
                                         (at.get((fmu, n, "fmpy loop")), "fmpy loop", 100)):
                if other:
                    speedup = other["ns_per_instance_step"] / c["ns_per_instance_step"]
                    if label == "libcosim fastest":
                        label += f" ({other['engine']})"
                    print(f"    {speedup:.1f}x faster than {label} (>= {factor}x: {verdict(speedup >= factor)})")
        c, raw = at.get((fmu, 1000, "cosimo")), at.get((fmu, 1000, "raw"))
        if c and raw:
            limit = 2 * raw["peak_mib"] + 5
            print(f"  {fmu} peak memory at N = 1000: cosimo {c['peak_mib']:.1f} MiB, raw "
                  f"{raw['peak_mib']:.1f} MiB (<= 2x raw + 5 MiB = {limit:.1f}: {verdict(c['peak_mib'] <= limit)})")
    if 1000 not in sizes:
        print("  peak memory at N = 1000: not measured (add 1000 to --sizes)")
    print("  cosimo --parallel against sequential (wall): never > 5 % slower on cheap FMUs, "
          ">= 1.8x faster where steps cost >= 20 us:")
    for fmu in fmus:
        costly = FMUS[fmu][3].get("cost", 0) >= 20e-6
        for n in sizes:
            c, p = at.get((fmu, n, "cosimo")), at.get((fmu, n, "cosimo parallel"))
            if c and p:
                # Each engine's wall time against the raw runs of its own pairs: the machine's
                # drift between the two engines' runs cancels.
                speedup = c["x_raw_wall"] / p["x_raw_wall"]
                if costly and n > 1:
                    print(f"    {fmu} N = {n}: {speedup:.2f}x faster ({verdict(speedup >= 1.8)})")
                else:
                    ratio = 1 / speedup
                    print(f"    {fmu} N = {n}: parallel / sequential {ratio:.2f} ({verdict(ratio <= 1.05)})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,100,1000", help="instance counts N (default 1,10,100,1000)")
    parser.add_argument("--steps", type=int, default=10_000, help="macro steps S (default 10000)")
    parser.add_argument("--min-instance-steps", type=int, default=200_000,
                        help="raise S to this / N where that is more, so that small N run long "
                             "enough to time (default 200000; 0: S at every N)")
    parser.add_argument("--max-instance-steps", type=int, default=10_000_000,
                        help="most N * S per run of any engine; S becomes this / N, at least 2 "
                             "(default 10000000: no cap up to N = 1000 with S = 10000)")
    parser.add_argument("--libcosim-cap", type=int, default=1_000_000,
                        help="most N * S per run of libcosim (default 1000000)")
    parser.add_argument("--fmpy-cap", type=int, default=200_000,
                        help="most N * S per run of FMPy (default 200000)")
    parser.add_argument("--costly-cap", type=int, default=200_000,
                        help="most N * S per run on an FMU with a step cost (default 200000: "
                             "4 s of 20 us steps)")
    parser.add_argument("--repeats", type=int, default=5, help="medians of this many runs (default 5)")
    parser.add_argument("--fmus", default=",".join(FMUS), help=f"of {', '.join(FMUS)} (default all)")
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help="engines to run (raw is always run; default all)")
    parser.add_argument("--cosimo", help="cosimo binary (default $CARGO_TARGET_DIR/release/cosimo)")
    parser.add_argument("--no-build", action="store_true", help="use the cosimo binary and FMUs as they are")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, rest = args.child[0], args.child[1:]
        if kind == "libcosim":
            return chain.libcosim_child(rest[0], int(rest[1]))
        if kind == "fmpy-loop":
            return fmpy_loop_child(rest[0], int(rest[1]), int(rest[2]), rest[3], rest[4])
        if kind == "fmpy-simulate":
            return fmpy_simulate_child(rest[0], int(rest[1]), rest[2])
        sys.exit(f"unknown child {kind}")

    engines = [e.strip() for e in args.engines.split(",")]
    unknown = set(engines) - set(ENGINES)
    if unknown:
        sys.exit(f"unknown engines {sorted(unknown)}: choose from {', '.join(ENGINES)}")
    engines = ["raw"] + [e for e in ENGINES if e in engines and e != "raw"]
    if len(engines) < 2:
        sys.exit("name at least one engine besides raw")
    if args.steps < 2 or args.repeats < 1:
        sys.exit("--steps must be at least 2 and --repeats at least 1")
    python = chain.venv_python()
    if not args.no_build:
        chain.build()
    cosimo = chain.cosimo_binary(args.cosimo)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    keys = [k.strip() for k in args.fmus.split(",")]
    for k in keys:
        if k not in FMUS:
            sys.exit(f"unknown FMU {k}: choose from {', '.join(FMUS)}")
        if not (FMU_DIR / FMUS[k][0]).exists():
            sys.exit(f"{FMU_DIR / FMUS[k][0]} is missing: run without --no-build")
    if not cosimo.exists():
        sys.exit(f"{cosimo} is missing: run without --no-build")
    for stale in OUT_DIR.glob("steps-*.json"):
        stale.unlink()
    tools = Tools(cosimo, python, build_c(HERE / "raw_loop.c", OUT_DIR / "raw_loop"),
                  build_c(HERE / "one_cpu.c", OUT_DIR / "one_cpu.so", shared=True),
                  build_c(HERE / "measure.c", OUT_DIR / "measure"))
    fmus = [Fmu(k) for k in keys]
    sizes = [int(s) for s in args.sizes.split(",")]
    load_start = os.getloadavg()
    print(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f} "
          f"({os.cpu_count()} cores); medians of {args.repeats}", flush=True)
    rows = run(args, tools, fmus, sizes, engines)
    report(rows, args, load_start)


if __name__ == "__main__":
    sys.exit(main())
