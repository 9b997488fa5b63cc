"""cosimo.Session: a simulation driven from Python equals simulate, cut anywhere on its grid;
save / restore and snapshots as bytes give the same rows; values by name of every type; bad
requests are refused and leave the session usable; the GIL is released while stepping."""

import threading
import time

import numpy as np
import pytest

import cosimo

from conftest import ROOT, fmu

EXAMPLES = sorted(p for p in (ROOT / "fmus").iterdir()
                  if p.suffix in (".json", ".ssp") and "study" not in p.name)


def same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype
    assert len(a) == len(b), f"{len(a)} rows against {len(b)}"
    for name in a.dtype.names:
        if a[name].dtype == object:
            assert list(a[name]) == list(b[name]), name
        else:
            assert a[name].tobytes() == b[name].tobytes(), name


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_a_session_cut_into_steps_equals_simulate(example):
    with cosimo.Session(example) as session:
        stop = session.stop_time
        start = session.start_time
    duration = 0.25 * (stop - start)
    expected = cosimo.simulate(example, stop_time=start + duration)
    grid = expected["time"]
    cuts = [grid[len(grid) // 3], grid[2 * len(grid) // 3]]
    with cosimo.Session(example, stop_time=start + duration) as session:
        for t in cuts:
            session.step_until(t)
            assert session.time == t
        assert session.step_until(start + duration) is True
        same(session.result(), expected)


def test_step_takes_one_macro_step_of_the_grid():
    with cosimo.Session(fmu("Oscillator", 3), stop_time=0.05, step_size=0.01) as session:
        times = []
        while not session.step():
            times.append(session.time)
        assert times == pytest.approx([0.01, 0.02, 0.03, 0.04])
        assert session.time == 0.05
        assert len(session.result()) == 6


def test_save_run_on_restore_gives_the_same_rows():
    example = ROOT / "fmus" / "two-mass-force-force.json"
    expected = cosimo.simulate(example, stop_time=0.5)
    with cosimo.Session(example, stop_time=0.5) as session:
        session.step_until(0.2)
        snapshot = session.save()
        assert snapshot.time == 0.2
        session.step_until(0.4)
        session.restore(snapshot)
        assert session.time == 0.2
        assert session.result()["time"][-1] == 0.2
        session.step_until(0.5)
        same(session.result(), expected)
        data = snapshot.to_bytes()
    with cosimo.Session(example, stop_time=0.5) as other:
        other.restore(cosimo.Snapshot.from_bytes(data))
        assert other.time == 0.2
        other.step_until(0.5)
        # Its own first row (t = 0), then the rows after the snapshot.
        tail = other.result()[1:]
        same(tail, expected[expected["time"] > 0.2])


def test_an_optimisation_loop_restores_a_snapshot_per_trial():
    example = ROOT / "fmus" / "two-mass-force-force.json"
    with cosimo.Session(example, stop_time=0.3, output=["mass1.x"]) as session:
        session.step_until(0.1)
        start = session.save()
        ends = []
        for _ in range(3):
            session.restore(start)
            session.step_until(0.3)
            ends.append(session.get("mass1.x"))
        assert ends[0] == ends[1] == ends[2]


def test_values_of_every_type_are_set_and_read_by_name():
    path = fmu("Feedthrough", 3)
    with cosimo.Session(path, stop_time=1.0, step_size=0.1) as session:
        session.set({
            "Float64_continuous_input": 2.5,
            "Int32_input": 7,
            "Boolean_input": True,
            "String_input": "hello",
        })
        session.step()
        got = session.get(["Float64_continuous_output", "Int32_output", "Boolean_output",
                           "String_output"])
        assert got == {
            "Float64_continuous_output": 2.5,
            "Int32_output": 7,
            "Boolean_output": True,
            "String_output": "hello",
        }
        session.set({"UInt8_input": np.uint8(200)})
        session.step()
        assert session.get("UInt8_output") == 200


@pytest.mark.parametrize("values, needle", [
    ({"nope": 1.0}, "no variable"),
    ({"Float64_continuous_output": 1.0}, "output"),
    ({"Int32_input": 1.5}, "expected an integer"),
    ({"UInt8_input": 300}, "out of the range"),
    ({"Float64_continuous_input": "text"}, "expected a number"),
    ({"Boolean_input": "yes"}, "expected True or False"),
])
def test_bad_values_are_refused_and_the_session_stays_usable(values, needle):
    with cosimo.Session(fmu("Feedthrough", 3), stop_time=1.0, step_size=0.1) as session:
        with pytest.raises(cosimo.UsageError, match=needle):
            session.set(values)
        session.step()
        assert session.time == pytest.approx(0.1)


def test_bad_times_and_foreign_snapshots_are_refused():
    example = ROOT / "fmus" / "two-mass-force-force.json"
    with cosimo.Session(example, stop_time=0.5) as first, \
            cosimo.Session(example, stop_time=0.5) as second:
        first.step_until(0.2)
        with pytest.raises(cosimo.UsageError, match="before the current time"):
            first.step_until(0.1)
        with pytest.raises(cosimo.UsageError, match="after the stop time"):
            first.step_until(5.0)
        snapshot = first.save()
        with pytest.raises(cosimo.UsageError, match="another session"):
            second.restore(snapshot)
        with pytest.raises(cosimo.UsageError, match="not a cosimo snapshot"):
            second.restore(cosimo.Snapshot.from_bytes(b"garbage"))
        first.step_until(0.3)
    with pytest.raises(cosimo.UsageError, match="closed"):
        first.step()


def test_the_gil_is_released_while_stepping():
    counts = []
    done = threading.Event()

    def count():
        n = 0
        while not done.is_set():
            n += 1
            time.sleep(0.001)
        counts.append(n)

    example = ROOT / "fmus" / "two-mass-force-force.json"
    with cosimo.Session(example, stop_time=200.0, output_interval=1.0) as session:
        thread = threading.Thread(target=count)
        thread.start()
        started = time.perf_counter()
        try:
            session.step_until(200.0)
        finally:
            done.set()
            thread.join()
        elapsed = time.perf_counter() - started
    assert elapsed > 0.2, "the run is too short to tell"
    assert counts[0] > 0.2 * elapsed * 1000, (counts, elapsed)


def test_real_time_paces_a_session():
    with cosimo.Session(fmu("Oscillator", 3), stop_time=0.3, step_size=0.01,
                        real_time=1) as session:
        started = time.perf_counter()
        session.step_until(0.3)
        elapsed = time.perf_counter() - started
        report = session.real_time
    assert elapsed >= 0.28
    assert report["target_factor"] == 1.0
    assert report["total_factor"] == pytest.approx(1.0, rel=0.1)
    with pytest.raises(cosimo.UsageError, match="real_time"):
        cosimo.Session(fmu("Oscillator", 3), real_time=-1)


def test_a_scenario_plays_in_simulate_and_in_a_session_as_on_the_command_line(tmp_path):
    from conftest import assert_same_as_csv, run_cli

    example = ROOT / "fmus" / "two-mass-force-force.json"
    scenario = ROOT / "fmus" / "scenarios" / "two-mass-scenario.yaml"
    out = tmp_path / "cli.csv"
    code, _, stderr = run_cli("run", example, "--scenario", scenario, "-o", out)
    assert code == 0, stderr
    assert_same_as_csv(cosimo.simulate(example, scenario=str(scenario)), out)
    with cosimo.Session(example, scenario=str(scenario)) as session:
        session.step_until(0.5)
        assert [e["action"] for e in session.scenario_events] == ["bias", "override"]
        session.step_until(1.0)
        assert [e["action"] for e in session.scenario_events] == ["bias", "override", "reset", "end"]
        assert session.scenario_events[0]["variable"] == "mass1.F"
        assert session.scenario_events[0]["location"].endswith("two-mass-scenario.yaml:10")
        assert_same_as_csv(session.result(), out)
    with pytest.raises(cosimo.UsageError, match="no component"):
        bad = tmp_path / "bad.json"
        bad.write_text('{"events": [{"time": 0.1, "model": "x", "variable": "y", "action": "reset"}]}')
        cosimo.simulate(example, scenario=str(bad))


def test_the_gymnasium_style_example_runs_and_its_episodes_repeat():
    import runpy

    example = runpy.run_path(str(ROOT / "docs" / "session-example.py"))
    env = example["TwoMassDamping"]()
    try:
        first = example["episode"](env, lambda _obs: 50.0)
        again = example["episode"](env, lambda _obs: 50.0)
        assert first == again, "every reset restores the same snapshot"
        assert first > example["episode"](env, lambda _obs: 0.0), "damping helps"
    finally:
        env.close()


def test_arrays_are_set_and_read_whole():
    with cosimo.Session(fmu("Feedthrough", 3), stop_time=1.0, step_size=0.1) as session:
        values = np.arange(6, dtype=np.float64) + 0.5
        session.set({"Float64_array_input": values})
        session.step()
        assert session.get("Float64_array_output") == list(values)
        with pytest.raises(cosimo.UsageError, match="element"):
            session.set({"Float64_array_input": [1.0, 2.0]})
