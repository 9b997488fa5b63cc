"""cosimo.simulate agrees with FMPy's simulate_fmu on every FMU of the project's kit (the
same experiment, the numeric scalar outputs), as tests/fmpy_agreement.rs does for the CLI."""

import numpy as np
import pytest

import cosimo

from conftest import FMUS

fmpy = pytest.importorskip("fmpy")

KIT = sorted(FMUS.glob("*.fmu"))


def numeric_outputs(path):
    return [
        v["name"]
        for v in cosimo.inspect(path)["variables"]
        if v["causality"] == "output"
        and "dimensions" not in v
        and v["type"] not in ("String", "Binary", "Clock")
    ]


def has_clocks(path):
    return any(v["type"] == "Clock" for v in cosimo.inspect(path)["variables"])


# What both tools can run alike: FMUs with numeric scalar outputs (ResizableGain's are arrays)
# and without clocks (FMPy's simulate_fmu never ticks one; tests/clocks.rs checks those FMUs
# against their models' formulas).
COMPARABLE = [p for p in KIT if numeric_outputs(p) and not has_clocks(p)]


def test_the_kit_is_packed():
    assert len(KIT) >= 6, f"the project's FMUs are not in {FMUS}"


@pytest.mark.parametrize("path", COMPARABLE, ids=lambda p: p.name)
def test_simulate_agrees_with_fmpy(path):
    outputs = numeric_outputs(path)
    ours = cosimo.simulate(path, start_time=0.0, stop_time=2.0, step_size=0.01, output=outputs)
    theirs = fmpy.simulate_fmu(
        str(path), fmi_type="CoSimulation", start_time=0.0, stop_time=2.0, step_size=0.01,
        output_interval=0.01, output=outputs,
    )
    assert len(ours) == len(theirs)
    np.testing.assert_allclose(ours["time"], theirs["time"], rtol=0, atol=1e-9)
    for name in outputs:
        a = ours[name].astype(float)
        b = theirs[name].astype(float)
        scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-6)
        deviation = np.max(np.abs(a - b) / scale)
        assert deviation < 1e-9, f"{name}: cosimo and FMPy differ by {deviation:e} (relative)"
