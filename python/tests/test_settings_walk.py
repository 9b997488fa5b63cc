"""Every keyword of ``cosimo.simulate`` takes effect or is refused (issue 34: "every setting of
... a Python call either changes the run or is refused").

Each keyword of :data:`cosimo.SETTINGS` has a walk: the run with it must (a) agree with the
command line given the option of the same name (the same bits, or both refuse / fail), and
(b) show its effect, without the keyword, the run is different (results, a refusal, a failure,
the time it takes or what it prints). The test fails when a keyword has no walk, so a new
setting cannot slip in unwalked; the command line's own walks (tests/options_walk_run.rs)
prove the options themselves.
"""

import time

import numpy as np
import pytest

import cosimo

from conftest import ROOT, assert_same_as_csv, fmu, run_cli

TWO_MASS = ROOT / "fmus" / "two-mass-force-force.json"
BASE = {"stop_time": 0.1}


def _two_mass():
    return [TWO_MASS], ["--stop-time", "0.1"], dict(BASE)


def _one(model, version, stop):
    path = fmu(model, version)
    return [path], ["--stop-time", str(stop)], {"stop_time": stop}


# keyword -> (target builder, extra base CLI args, extra base kwargs, CLI option args,
#             keyword value, expected effect)
# Effects: "results" (the results differ from the run without it), "refused" (UsageError,
# exit 2), "fails" (the run fails: Error, exit 1), "slower" (takes at least the simulated
# time), "prints" (stderr holds a text only with it).
WALKS = {
    "algorithm": (_two_mass, [], {}, ["--algorithm", "gauss-seidel"], "gauss-seidel", "results"),
    "extrapolation_order": (_two_mass, [], {}, ["--extrapolation-order", "2"], 2, "results"),
    "parallel": (_two_mass, ["--algorithm", "gauss-seidel"], {"algorithm": "gauss-seidel"},
                 ["--parallel"], True, "refused"),
    "threads": (_two_mass, [], {}, ["--threads", "2"], 2, "refused"),
    "jacobian": (_two_mass, [], {}, ["--jacobian", "components"], "components", "refused"),
    "extension": (_two_mass, [], {}, ["--extension", "integral"], "integral", "refused"),
    "adaptive": (_two_mass, [], {}, ["--adaptive"], True, "results"),
    "estimator": (_two_mass, ["--adaptive"], {"adaptive": True}, ["--estimator", "ExLocal"],
                  "ExLocal", "results"),
    "fixed_order": (_two_mass, ["--adaptive", "--extrapolation-order", "2"],
                    {"adaptive": True, "extrapolation_order": 2}, ["--fixed-order"], True,
                    "results"),
    "rtol": (_two_mass, ["--adaptive", "--estimator", "ExMilne"],
             {"adaptive": True, "estimator": "ExMilne"}, ["--rtol", "1e-3"], 1e-3, "results"),
    "atol_position": (_two_mass, ["--adaptive"], {"adaptive": True},
                      ["--atol-position", "1e-4"], 1e-4, "refused"),
    "atol_velocity": (_two_mass, ["--adaptive"], {"adaptive": True},
                      ["--atol-velocity", "1e-3"], 1e-3, "refused"),
    "rtol_coupling": (_two_mass, ["--adaptive"], {"adaptive": True},
                      ["--rtol-coupling", "1e-6"], 1e-6, "results"),
    "atol_coupling": (_two_mass, ["--adaptive"], {"adaptive": True},
                      ["--atol-coupling", "1e-3"], 1e-3, "results"),
    "max_step": (_two_mass, ["--adaptive"], {"adaptive": True}, ["--max-step", "1e-4"], 1e-4,
                 "results"),
    "safety_factor": (_two_mass, ["--adaptive"], {"adaptive": True},
                      ["--safety-factor", "0.3"], 0.3, "results"),
    "tolerance": (lambda: _one("VanDerPol", 2, 1.0), ["--interface", "me"], {"interface": "me"},
                  ["--tolerance", "1e-2"], 1e-2, "results"),
    "max_rows": (_two_mass, [], {}, ["--max-rows", "3"], 3, "refused"),
    "divergence_limit": (_two_mass, [], {}, ["--divergence-limit", "0.01"], 0.01, "fails"),
    "real_time": (_two_mass, [], {}, ["--real-time", "1"], 1.0, "slower"),
    # The scenario's events are at 0.2 s and later.
    "scenario": (lambda: ([TWO_MASS], ["--stop-time", "0.5"], {"stop_time": 0.5}), [], {},
                 ["--scenario", ROOT / "fmus" / "scenarios" / "two-mass-scenario.yaml"],
                 str(ROOT / "fmus" / "scenarios" / "two-mass-scenario.yaml"), "results"),
    "call_timeout": (lambda: _one("Gain", 2, 0.002), ["--step-size", "0.001",
                                                       "--start-value", "cost=0.5"],
                     {"step_size": 0.001, "start_values": {"cost": 0.5}},
                     ["--call-timeout", "0.1"], 0.1, "fails"),
    "worker_memory": (_two_mass, [], {}, ["--worker-memory", "150M"], "150M", "refused"),
    "worker_processes": (_two_mass, [], {}, ["--worker-processes", "1"], 1, "refused"),
    "isolate": (_two_mass, ["--worker-processes", "1"], {"worker_processes": 1},
                ["--isolate"], True, "accepted-where-refused"),
    "allow_non_finite": (lambda: _one("Faulty", 2, 0.05),
                         ["--start-value", "failure=9", "--start-value", "fail_at=0.01"],
                         {"start_values": {"failure": 9, "fail_at": 0.01}},
                         ["--allow-non-finite"], True, "succeeds-where-failed"),
    "event_mode": (lambda: _one("Stair", 2, 3.0), [], {}, ["--event-mode"], True, "refused"),
    "interface": (lambda: _one("VanDerPol", 2, 1.0), [], {}, ["--interface", "me"], "me",
                  "results"),
    "solver": (lambda: _one("VanDerPol", 2, 1.0), ["--interface", "me"], {"interface": "me"},
               ["--solver", "rk45"], "rk45", "results"),
    "solver_rtol": (lambda: _one("VanDerPol", 2, 1.0), ["--interface", "me"],
                    {"interface": "me"}, ["--solver-rtol", "1e-3"], 1e-3, "results"),
    "solver_atol": (lambda: _one("VanDerPol", 2, 1.0), ["--interface", "me"],
                    {"interface": "me"}, ["--solver-atol", "1e-2"], 1e-2, "results"),
    "debug_logging": (lambda: _one("BouncingBall", 2, 1.0), [], {}, ["--debug-logging"], True,
                      "prints:logEvents"),
    "log_fmi_calls": (_two_mass, [], {}, ["--log-fmi-calls"], True, "prints:fmi2DoStep"),
    "fmi_version": (lambda: _one("Oscillator", 3, 0.05), [], {}, ["--fmi-version", "2"], 2,
                    "refused"),
    "ssd": (_two_mass, [], {}, ["--ssd", "Other.ssd"], "Other.ssd", "refused"),
    "connections": (None, None, None, None, None, "connect"),
    "ignore_units": (None, None, None, None, None, "connect"),
    "output_file": (_two_mass, [], {}, None, None, "writes"),
}


def test_every_setting_has_a_walk():
    assert sorted(WALKS) == sorted(cosimo.SETTINGS)


def _python(targets, kwargs, capfd):
    """(status, result or error text, stderr, seconds) of cosimo.simulate."""
    path = targets[0] if len(targets) == 1 else [str(t) for t in targets]
    started = time.monotonic()
    try:
        result = cosimo.simulate(path, **kwargs)
        status, value = "ok", result
    except cosimo.UsageError as e:
        status, value = "refused", str(e)
    except cosimo.Error as e:
        status, value = "fails", str(e)
    seconds = time.monotonic() - started
    return status, value, capfd.readouterr().err, seconds


def _cli(targets, args, tmp_path):
    out = tmp_path / "cli.csv"
    code, _, stderr = run_cli("run", *targets, *args, "-o", out)
    status = {0: "ok", 2: "refused", 1: "fails"}.get(code, f"exit {code}")
    return status, out, stderr


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.names != b.dtype.names or len(a) != len(b):
        return False
    return all(np.array_equal(a[n], b[n]) for n in a.dtype.names)


@pytest.mark.parametrize("keyword", sorted(k for k, w in WALKS.items()
                                           if w[5] not in ("connect", "writes")))
def test_a_setting_acts_as_its_command_line_option(keyword, tmp_path, capfd):
    build, base_args, base_kwargs, option_args, value, effect = WALKS[keyword]
    targets, target_args, target_kwargs = build()
    cli_status, cli_out, cli_stderr = _cli(targets, target_args + base_args + option_args,
                                           tmp_path)
    kwargs = {**target_kwargs, **base_kwargs, keyword: value}
    status, got, stderr, seconds = _python(targets, kwargs, capfd)
    without = _python(targets, {**target_kwargs, **base_kwargs}, capfd)
    assert status == cli_status, f"Python {status} ({got}), the CLI {cli_status}: {cli_stderr}"
    if effect == "results":
        assert status == "ok", got
        assert without[0] == "ok", without[1]
        assert not _same(got, without[1]), f"{keyword}={value!r} changed nothing"
        assert_same_as_csv(got, cli_out)
    elif effect == "refused":
        assert status == "refused" and without[0] == "ok", (got, without[1])
        # The message names the Python argument, not the command line's flag.
        assert keyword in got, got
    elif effect == "fails":
        assert status == "fails" and without[0] == "ok", (got, without[1])
    elif effect == "slower":
        assert status == "ok"
        assert seconds >= 0.1 > without[3], (seconds, without[3])
        assert _same(got, without[1]), "pacing only waits: the same results"
    elif effect == "accepted-where-refused":
        # Without isolation worker_processes has nothing to act on and is refused; with it,
        # the run takes place (in worker processes), and gives the in-process bits.
        assert without[0] == "refused" and status == "ok", (got, without[1])
        in_process = _python(targets, dict(target_kwargs), capfd)
        assert _same(got, in_process[1])
    elif effect == "succeeds-where-failed":
        assert without[0] == "fails" and status == "ok", (got, without[1])
    elif effect.startswith("prints:"):
        text = effect.split(":", 1)[1]
        assert status == "ok", got
        assert text in stderr and text not in without[2], (stderr[-500:], without[2][-500:])
    else:
        pytest.fail(f"unknown effect {effect}")


def test_connections_and_ignore_units_build_the_system_they_name(tmp_path):
    m1 = f"m1={fmu('Oscillator', 2)}"
    m2 = f"m2={fmu('Oscillator', 3)}"
    # m2 is pulled towards x_in by a spring (cc = 1), so its input matters.
    base = {"stop_time": 0.05, "start_values": {"m2.cc": 1}}
    alone = cosimo.simulate([m1, m2], **base)
    joined = cosimo.simulate([m1, m2], connections=["m1.x=m2.x_in"], **base)
    assert not _same(alone, joined), "connections changed nothing"
    code, _, stderr = run_cli("run", m1, m2, "--stop-time", "0.05", "--start-value", "m2.cc=1",
                              "--connect", "m1.x=m2.x_in", "-o", tmp_path / "cli.csv")
    assert code == 0, stderr
    assert_same_as_csv(joined, tmp_path / "cli.csv")
    # ignore_units is read: it must name one of the connections (the kit's units carry no
    # base units, so a connection that converts cannot be built from them; the command
    # line's walk proves that metres to newtons are refused without it and run with it).
    ignored = cosimo.simulate([m1, m2], connections=["m1.x=m2.x_in"],
                              ignore_units=["m1.x=m2.x_in"], **base)
    assert _same(ignored, joined), "metres to metres: nothing to ignore"
    with pytest.raises(cosimo.UsageError, match="no such connection"):
        cosimo.simulate([m1, m2], connections=["m1.x=m2.x_in"], ignore_units=["m1.v=m2.F"],
                        **base)


def test_output_file_writes_the_results_it_returns(tmp_path):
    out = tmp_path / "r.csv"
    result = cosimo.simulate(TWO_MASS, output_file=str(out), **BASE)
    assert_same_as_csv(result, out)
