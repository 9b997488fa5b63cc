"""FMPy, an independent importer, vouches for the project's FMUs.

Usage: python fmpy_check.py FMU...

For every FMU: fmpy.validation.validate_fmu must report no problems, and
fmpy.simulate_fmu(..., fmi_type='CoSimulation') must run without raising and return rows with
finite floating-point values; an FMU with a ModelExchange interface must also run with
fmi_type='ModelExchange' (FMPy's own CVode integrates it) over its whole default experiment.
Prints one line per FMU ("ok ..." or "FAIL ...") and exits with 1 if any FMU failed.
"""

import sys
import traceback

# Co-Simulation runs shortened: Robertson's stiff kinetics through the kit's explicit RK4 at a
# stable 2e-4 s step would need 5e8 steps to its stop time of 1e5 s (its Model Exchange run
# covers the whole experiment).
CS_STOP_TIME = {"Robertson": 10.0}


def finite(result, what):
    import numpy as np

    if result is None or len(result) == 0:
        return "%s: simulate_fmu returned no rows" % what
    for name in result.dtype.names:
        column = result[name]
        if column.dtype.kind == "f" and not np.all(np.isfinite(column)):
            return "%s: column %r has non-finite values" % (what, name)
    return None


def check(path):
    from fmpy import read_model_description, simulate_fmu
    from fmpy.validation import validate_fmu

    problems = validate_fmu(path)
    if problems:
        return "validate_fmu reported %d problem(s): %s" % (len(problems), "; ".join(map(str, problems)))
    md = read_model_description(path)
    if md.coSimulation is None and md.scheduledExecution is not None:
        # FMPy cannot schedule partitions: cosimo's tests run Scheduled Execution FMUs.
        return "ok: FMI %s Scheduled Execution, validated" % md.fmiVersion
    if md.coSimulation is None:
        return "no CoSimulation interface in the model description"
    result = simulate_fmu(path, fmi_type="CoSimulation", stop_time=CS_STOP_TIME.get(md.modelName))
    error = finite(result, "CoSimulation")
    if error:
        return error
    verdict = "ok: FMI %s, %d rows, columns %s" % (md.fmiVersion, len(result), ", ".join(result.dtype.names))
    if md.modelExchange is not None:
        me = simulate_fmu(path, fmi_type="ModelExchange")
        error = finite(me, "ModelExchange")
        if error:
            return error
        if md.modelName == "Robertson":
            # Mass is conserved, and the species at 1e5 s are the known ones (Hairer & Wanner).
            last = me[-1]
            total = last["y1"] + last["y2"] + last["y3"]
            if abs(total - 1) > 1e-6 or abs(last["y1"] - 0.01786) > 1e-4 or last["time"] < 1e5:
                return "ModelExchange: Robertson at t = %g: %s" % (last["time"], last)
        verdict += "; Model Exchange: %d rows to t = %g" % (len(me), me[-1]["time"])
    return verdict


def main(paths):
    if not paths:
        print("usage: fmpy_check.py FMU...", file=sys.stderr)
        return 2
    import fmpy

    print("FMPy %s" % fmpy.__version__)
    failed = 0
    for path in paths:
        try:
            verdict = check(path)
        except Exception:  # report every FMU, not just the first failure
            verdict = "exception:\n" + traceback.format_exc()
        if verdict.startswith("ok"):
            print("ok %s (%s)" % (path, verdict[4:]))
        else:
            failed += 1
            print("FAIL %s: %s" % (path, verdict))
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
