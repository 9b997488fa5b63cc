#!/usr/bin/env python3
"""The cost per macro step of a system exported as an FMU (`cosimo export`) when a plain C
loop drives it, against `cosimo run` of the same system (issue 30: "through a plain C loop over
the exported FMU, the cost per macro step is within 5 % of `cosimo run` of the same system"),
and against the same system packed by two other containers of FMUs ("FMPy's and the Renault
toolbox's containers (both on PyPI) on the same Jacobi system in the same run").

The system: a chain of N Gain FMI 2 FMUs (each one's y drives the next one's u, g0's u is 1),
fixed step 1 ms. It is exported as an FMI 2 FMU (the release container library), unzipped, and
driven by raw_loop.c (this folder; compiled here with `cc`): fmi2Instantiate,
fmi2SetupExperiment, enter / exit initialization, then S times fmi2DoStep and fmi2GetReal of
the last component's y. `cosimo run chain.json -q --output-interval STOP -o /dev/null` runs the
same system (two result rows), and so does `cosimo run chain.json -q -o /dev/null` (a row every
macro step, the output interval the exported FMU keeps inside: it reads every output after
each step, for the non-finite check, and hands the row to no one).

The peers pack the same chain as an FMI 2 co-simulation FMU with g0.u an input (start 1) and
the last y an output, internal step 1 ms, and raw_loop.c drives them exactly as the export:

- FMPy's container FMU (`fmpy.container_fmu`, fmpy 0.3.32: its prebuilt Rust library, one
  binary for FMI 2 and 3; the container is FMI 2 when its model description, built here, says
  so). It has no choice of algorithm: each internal step steps every component, then copies
  the connections in their order. Its configuration writer types a connection after the inner
  variable, "Real" for FMI 2, which its library refuses (it wants "Float64"): the connectors
  are therefore handed to it typed "Float64".
- The Renault FMU Manipulation Toolbox's container (`fmu-manipulation-toolbox` 2.0, its
  prebuilt `container.so`), from a description in its JSON input format built through its
  `Assembly` (the API of its `fmucontainer` command), step_size 1 ms, not sequential (its
  default: every component steps on the values of the previous internal step), one thread.
  It extracts every instance into a folder of its own, so it loads N copies of Gain's binary
  (FMPy's container and the export load one).

Each is timed from outside, a run of S steps and a run of 1 step, best of --repeats, in CPU
time (user + system); (T_S - T_1) / (S - 1) is the cost per macro step without start-up. With
--instructions, valgrind's callgrind counts the instructions of one run of each instead.

Columns: N; "run, 2 rows" and "run, rows": `cosimo run` with two result rows and with a row
every step; "export": the C loop over the export; "/ 2 rows", "/ rows": export over each run;
"export, -oi STOP": the system exported with `--output-interval STOP` (the master inside
reads the outputs at the end only), "/ 2 rows" its ratio; "FMPy", "Renault": the C loop over
each peer's container, "/ export" each over the export (above 1: the peer is slower). Each
row ends with the last y each C loop printed (the chain of gains with u = 1: 1); a peer whose
y differs from the export's is marked "DIFFERS".

    python3 benches/peers/export.py [--sizes 1,10,100] [--steps 100000] [--repeats 3] [--no-build]
    python3 benches/peers/export.py --instructions --steps 2000   # valgrind's count, not time
    target/fmpy-venv/bin/python benches/peers/export.py ...       # with the peers

The peers need fmpy and fmu-manipulation-toolbox, both in the test venv (`cargo xtask fmpy`
makes it and prints its python); a peer that the running python cannot import is skipped with
a message. It builds `cosimo` and the container (release) and the test FMUs first unless
--no-build. Not part of the test suite; run it when the machine is quiet.
"""

import argparse
import importlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
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


def unzipped(fmu, folder):
    """`fmu` unzipped into `folder` (emptied first), as the C loop needs it."""
    shutil.rmtree(folder, ignore_errors=True)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    return folder


def output_vr(folder, name):
    """Value reference of the variable `name` in an unzipped FMU's modelDescription.xml."""
    root = ET.parse(folder / "modelDescription.xml").getroot()
    for variable in root.iter("ScalarVariable"):
        if variable.get("name") == name:
            return variable.get("valueReference")
    sys.exit(f"{folder}/modelDescription.xml has no variable {name}")


def fmpy_container(n):
    """The chain packed as FMPy's container FMU, unzipped: (folder, model identifier, value
    reference of the last y)."""
    from fmpy import read_model_description
    from fmpy.container_fmu import Configuration
    from fmpy.container_fmu.cli import create_container_fmu
    from fmpy.container_fmu.config import Component, Connection
    from fmpy.model_description import CoSimulation, ModelDescription, ModelVariable, Unknown
    gain = read_model_description(FMU)
    # Typed "Float64" for the connections (see the docstring); only name, value reference and
    # type are read from them.
    port = {v.name: ModelVariable(name=v.name, valueReference=v.valueReference, type="Float64")
            for v in gain.modelVariables}
    components = [Component(name=f"g{i}", filename=FMU, modelDescription=gain) for i in range(n)]
    connections = [Connection(startElement=components[i - 1], startConnectors=[port["y"]],
                              endElement=components[i], endConnectors=[port["u"]])
                   for i in range(1, n)]
    u = ModelVariable(name="g0.u", type="Real", causality="input", variability="continuous",
                      start="1.0")
    y = ModelVariable(name=f"g{n - 1}.y", type="Real", causality="output",
                      variability="continuous")
    description = ModelDescription(
        fmiVersion="2.0", modelName=f"chain-{n}", instantiationToken=str(uuid.uuid4()),
        coSimulation=CoSimulation(modelIdentifier="container_fmu", fixedInternalStepSize=STEP,
                                  canHandleVariableCommunicationStepSize=True),
        modelVariables=[u, y], outputs=[Unknown(variable=y)])
    configuration = Configuration(
        parallelDoStep=False, modelDescription=description, components=components,
        connections=connections,
        variableMappings={u: [(components[0], port["u"])], y: [(components[-1], port["y"])]})
    build = OUT_DIR / f"fmpy-chain-{n}-build"
    build.mkdir(parents=True, exist_ok=True)  # create_container_fmu empties it first
    fmu = OUT_DIR / f"fmpy-chain-{n}.fmu"
    create_container_fmu(configuration, build, fmu)
    folder = unzipped(fmu, OUT_DIR / f"fmpy-chain-{n}")
    return folder, "container_fmu", output_vr(folder, f"g{n - 1}.y")


def renault_container(n):
    """The chain packed as the Renault FMU Manipulation Toolbox's container, unzipped: (folder,
    model identifier, value reference of the last y)."""
    from fmu_manipulation_toolbox.assembly import Assembly
    name = f"renault_chain_{n}"
    fmus = [f"g{i}.fmu" for i in range(n)]
    description = {
        "name": f"{name}.fmu", "step_size": STEP, "mt": False, "sequential": False,
        "auto_link": False, "auto_input": False, "auto_output": False,
        "fmu": fmus, "path": {f: str(FMU) for f in fmus},  # n instances of one file
        "input": [["g0.u", fmus[0], "u"]],
        "output": [[fmus[-1], "y", f"g{n - 1}.y"]],
        "link": [[fmus[i - 1], "y", fmus[i], "u"] for i in range(1, n)],
        "start": [[fmus[0], "u", "1.0"]],
    }
    directory = OUT_DIR / "renault"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(description, indent=1) + "\n")
    Assembly(f"{name}.json", fmu_directory=directory).make_fmu()
    folder = unzipped(directory / f"{name}.fmu", OUT_DIR / name)
    return folder, name, output_vr(folder, f"g{n - 1}.y")


# The peers' containers: the module each needs and the function that packs the chain.
PEERS = [("FMPy", "fmpy.container_fmu.cli", fmpy_container),
         ("Renault", "fmu_manipulation_toolbox.assembly", renault_container)]


def missing(module):
    """Why `module` cannot be imported by this python, or None when it can."""
    try:
        importlib.import_module(module)
    except ImportError as e:
        return str(e)
    return None


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
    peers = []
    for name, module, pack in PEERS:
        why = missing(module)
        if why:
            print(f"{name}'s container skipped: {why} (run with target/fmpy-venv/bin/python)")
        else:
            peers.append((name, pack))
    how = "callgrind's count" if args.instructions else f"best of {args.repeats}"
    print(f"load average {os.getloadavg()[0]:.2f}; S = {args.steps}, {how}")
    unit = "instructions" if args.instructions else "µs"
    number = ".0f" if args.instructions else ".3f"
    print(f"{unit} per macro step; ratios: C loop over the export / cosimo run, and each peer's"
          " container / the export")
    header = (f"{'N':>5} {'run, 2 rows':>12} {'run, rows':>10} {'export':>8} {'/ 2 rows':>9}"
              f" {'/ rows':>7} {'export, -oi STOP':>17} {'/ 2 rows':>9}")
    for name, _ in peers:
        header += f" {name:>9} {'/ export':>9}"
    print(header)
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
        y = printed.strip()
        row = (f"{n:>5} {two_rows:>12{number}} {rows:>10{number}} {plain:>8{number}}"
               f" {plain / two_rows:>9.3f} {plain / rows:>7.3f} {sparse:>17{number}}"
               f" {sparse / two_rows:>9.3f}")
        ys = [f"cosimo {y}"]
        for name, pack in peers:
            cost, peer_printed = per_step(c_loop(pack(n)), args.steps, args.repeats)
            row += f" {cost:>9{number}} {cost / plain:>9.3f}"
            peer_y = peer_printed.strip()
            ys.append(f"{name} {peer_y}" + ("" if peer_y == y else " DIFFERS"))
        print(f"{row}   (last y: {', '.join(ys)})", flush=True)

if __name__ == "__main__":
    main()
