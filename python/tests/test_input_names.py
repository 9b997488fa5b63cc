"""Input arrays whose field names need CSV quoting (issue 33): FMI 2 names array elements
``u[1,2]``, and an unquoted header split such a name into two columns."""

import csv
import io
import zipfile

import numpy as np
import pytest

import cosimo

from conftest import fmu


def feedthrough_with_input_named(name: str, tmp_path):
    """The FMI 2 Feedthrough FMU, unpacked, its continuous Float64 input renamed ``name``."""
    folder = tmp_path / "Feedthrough"
    with zipfile.ZipFile(fmu("Feedthrough", 2)) as archive:
        archive.extractall(folder)
    description = folder / "modelDescription.xml"
    text = description.read_text()
    assert 'name="Float64_continuous_input"' in text
    description.write_text(text.replace('name="Float64_continuous_input"', f'name="{name}"'))
    return folder


def test_the_header_and_text_cells_round_trip_through_csv():
    array = np.array(
        [(0.0, 1.0, "a, \"quoted\" text"), (1.0, 2.0, "plain")],
        dtype=[("time", np.float64), ("u[1,2]", np.float64), ('say "hi", now', object)],
    )
    rows = list(csv.reader(io.StringIO(cosimo._input_csv(array))))
    assert rows[0] == ["time", "u[1,2]", 'say "hi", now']
    assert rows[1] == ["0.0", "1.0", 'a, "quoted" text']
    assert rows[2] == ["1.0", "2.0", "plain"]


@pytest.mark.parametrize("name", ["u[1,2]", "a,b"])
def test_an_input_named_with_a_comma_is_driven_by_its_field(name, tmp_path):
    path = feedthrough_with_input_named(name, tmp_path)
    inputs = np.array([(0.0, 0.0), (1.0, 4.0)], dtype=[("time", np.float64), (name, np.float64)])
    result = cosimo.simulate(path, stop_time=1.0, step_size=0.25, input=inputs,
                             output=["Float64_continuous_output"])
    # Interpolated, and set at each step's start: the row at t shows the input at t - h.
    assert result["Float64_continuous_output"].tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    # The same table from a CSV file the csv module writes gives the same result.
    table = tmp_path / "inputs.csv"
    with open(table, "w", newline="") as f:
        csv.writer(f).writerows([["time", name], [0.0, 0.0], [1.0, 4.0]])
    from_file = cosimo.simulate(path, stop_time=1.0, step_size=0.25, input=table,
                                output=["Float64_continuous_output"])
    assert from_file.tobytes() == result.tobytes()
