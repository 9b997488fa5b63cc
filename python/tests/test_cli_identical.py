"""cosimo.simulate gives the command line's results bit for bit on every example system."""

import pytest

import cosimo

from conftest import ROOT, assert_same_as_csv, run_cli

# Study files (cosimo sweep) are not systems; every other example is run both ways.
EXAMPLES = sorted(
    p
    for p in (ROOT / "fmus").iterdir()
    if p.suffix in (".json", ".ssp") and "study" not in p.name
)


def test_the_examples_are_found():
    assert len(EXAMPLES) >= 16


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_simulate_equals_the_cli_bit_for_bit(example, tmp_path):
    out = tmp_path / "cli.csv"
    code, _, stderr = run_cli("run", example, "--quiet", "-o", out)
    assert code == 0, stderr
    result = cosimo.simulate(example)
    assert_same_as_csv(result, out)


def test_settings_reach_the_run_as_the_cli_options_do(tmp_path):
    example = ROOT / "fmus" / "two-mass-force-force.json"
    out = tmp_path / "cli.csv"
    code, _, stderr = run_cli(
        "run", example, "--quiet", "-o", out, "--algorithm", "implicit",
        "--extrapolation-order", "2", "--stop-time", "0.5", "--output-interval", "0.05",
        "--start-value", "mass1.x0=0.2", "--output-variable", "mass1.x",
        "--output-variable", "mass2.x",
    )
    assert code == 0, stderr
    result = cosimo.simulate(
        example, algorithm="implicit", extrapolation_order=2, stop_time=0.5,
        output_interval=0.05, start_values={"mass1.x0": 0.2}, output=["mass1.x", "mass2.x"],
    )
    assert_same_as_csv(result, out)
