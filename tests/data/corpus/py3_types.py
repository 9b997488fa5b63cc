"""Py3Types (FMI 3, pythonfmu3): parameters, inputs and outputs of every type pythonfmu3
exports (Float64, Int32, Int64, UInt64, Boolean, String, Enumeration, and a Float64 array). The
outputs are functions of the parameters, the inputs and the number of steps taken, so every get
and set shows in the results."""

from enum import Enum

import numpy as np
from pythonfmu3 import (
    Boolean,
    DefaultExperiment,
    Dimension,
    Enumeration,
    EnumerationType,
    Float64,
    Fmi3Causality,
    Fmi3Slave,
    Fmi3Variability,
    Int32,
    Int64,
    String,
    UInt64,
)


class Mode(Enum):
    idle = 1
    run = 2
    done = 3


class Py3Types(Fmi3Slave):

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.description = "Parameters, inputs and outputs of every FMI 3 type pythonfmu3 supports"
        self.default_experiment = DefaultExperiment(start_time=0.0, stop_time=0.5, step_size=0.05)
        self.time = 0.0
        self.gain, self.offset, self.flag, self.label = 2.0, 10, False, "py"
        self.big = 5_000_000_000
        self.real_in, self.int_in, self.bool_in, self.string_in = 0.0, 0, False, "in"
        self.int64_in, self.uint64_in = 0, 0
        self.steps = 0
        self.mode = Mode.idle.value
        self.array_out = np.zeros(3)
        self._update()

        register = self.register_variable
        independent = dict(causality=Fmi3Causality.independent, variability=Fmi3Variability.continuous)
        register(Float64("time", **independent))
        parameter = dict(causality=Fmi3Causality.parameter, variability=Fmi3Variability.tunable)
        register(Float64("gain", **parameter))
        register(Int32("offset", **parameter))
        register(Int64("big", **parameter))
        register(Boolean("flag", **parameter))
        register(String("label", **parameter))
        continuous_in = dict(causality=Fmi3Causality.input, variability=Fmi3Variability.continuous)
        discrete_in = dict(causality=Fmi3Causality.input, variability=Fmi3Variability.discrete)
        register(Float64("real_in", **continuous_in))
        register(Int32("int_in", **discrete_in))
        register(Int64("int64_in", **discrete_in))
        register(UInt64("uint64_in", **discrete_in))
        register(Boolean("bool_in", **discrete_in))
        register(String("string_in", **discrete_in))
        continuous_out = dict(causality=Fmi3Causality.output, variability=Fmi3Variability.continuous)
        discrete_out = dict(causality=Fmi3Causality.output, variability=Fmi3Variability.discrete)
        register(Float64("real_out", **continuous_out))
        register(Int32("int_out", **discrete_out))
        register(Int64("int64_out", **discrete_out))
        register(UInt64("uint64_out", **discrete_out))
        register(Boolean("bool_out", **discrete_out))
        register(String("string_out", **discrete_out))
        mode = Enumeration("mode", **discrete_out)
        # pythonfmu3 0.3.4 reads an Enumeration as an Int64 and asks for its dimensions, which
        # Enumeration lacks (fmi3GetInt64 fails with an AttributeError): a scalar has none
        mode.dimensions = []
        register(mode, var_type=EnumerationType("Mode", values=Mode))
        register(Float64("array_out", dimensions=[Dimension(start="3")], **continuous_out))

    def _update(self):
        self.real_out = self.gain * self.real_in + self.time
        self.int_out = self.offset + self.int_in + self.steps
        self.int64_out = self.big + self.int64_in - self.steps
        self.uint64_out = self.uint64_in + 2 * self.steps
        self.bool_out = self.flag != self.bool_in != (self.steps % 2 == 1)
        self.string_out = f"{self.label}/{self.string_in}/{self.steps}"
        self.mode = (Mode.idle if self.steps == 0 else Mode.run if self.steps < 5 else Mode.done).value
        self.array_out = np.array([self.time, self.gain * self.steps, -self.real_in])

    def exit_initialization_mode(self):
        self._update()

    def do_step(self, current_time, step_size):
        self.steps += 1
        self.time = current_time + step_size
        self._update()
        return True
