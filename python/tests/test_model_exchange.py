"""Model Exchange from Python: interface="me" and the solver settings reach cosimo's
integrator, and the result agrees with FMPy's own Model Exchange simulation (CVODE)."""

import numpy as np
import pytest

import cosimo

from conftest import fmu


@pytest.mark.parametrize("version", [2, 3])
def test_robertson_through_model_exchange(version):
    result = cosimo.simulate(
        fmu("Robertson", version), interface="me", solver="bdf", solver_rtol=1e-8,
        solver_atol=1e-12,
    )
    assert result["time"][-1] == 1e5
    last = result[-1]
    assert abs(last["y1"] - 1.7866e-2) < 1e-5
    assert abs(last["y2"] - 7.2749e-8) < 1e-11
    assert abs(last["y1"] + last["y2"] + last["y3"] - 1.0) < 1e-9


def test_bouncing_ball_agrees_with_fmpy_model_exchange():
    fmpy = pytest.importorskip("fmpy")
    path = fmu("BouncingBall", 2)
    ours = cosimo.simulate(path, interface="me", solver="rk45", solver_rtol=1e-10,
                           stop_time=2.0, step_size=0.01)
    theirs = fmpy.simulate_fmu(str(path), fmi_type="ModelExchange", solver="CVode",
                               relative_tolerance=1e-10, stop_time=2.0, step_size=0.01,
                               output_interval=0.01, output=["h", "v"])
    # FMPy adds a row before and after each event: take its last row at each output time.
    rows = [np.flatnonzero(np.abs(theirs["time"] - t) < 1e-9)[-1] for t in ours["time"]]
    for name in ("h", "v"):
        np.testing.assert_allclose(ours[name], theirs[name][rows], rtol=0, atol=1e-6)


def test_solver_settings_are_checked():
    with pytest.raises(cosimo.UsageError, match="interface"):
        cosimo.simulate(fmu("Dahlquist", 2), interface="modelexchange")
    with pytest.raises(cosimo.UsageError, match="solver"):
        cosimo.simulate(fmu("Dahlquist", 2), interface="me", solver="euler")
    with pytest.raises(cosimo.UsageError, match="solver_rtol"):
        cosimo.simulate(fmu("Dahlquist", 2), interface="me", solver_rtol=-1.0)
