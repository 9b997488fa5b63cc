"""PyTypes (FMI 2, pythonfmu): a parameter, an input and an output of every type pythonfmu
exports (Real, Integer, Boolean, String). The outputs are functions of the parameters, the
inputs and the number of steps taken, so every get and set shows in the results."""

from pythonfmu import Boolean, Fmi2Causality, Fmi2Slave, Fmi2Variability, Integer, Real, String
from pythonfmu.default_experiment import DefaultExperiment


class PyTypes(Fmi2Slave):
    description = "Parameters, inputs and outputs of every FMI 2 type pythonfmu supports"
    default_experiment = DefaultExperiment(start_time=0.0, stop_time=0.5, step_size=0.05)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.gain, self.offset, self.flag, self.label = 2.0, 10, False, "py"
        self.real_in, self.int_in, self.bool_in, self.string_in = 0.0, 0, False, "in"
        self.steps, self.time = 0, 0.0
        self._update()
        parameter = dict(causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable)
        self.register_variable(Real("gain", **parameter))
        self.register_variable(Integer("offset", **parameter))
        self.register_variable(Boolean("flag", **parameter))
        self.register_variable(String("label", **parameter))
        self.register_variable(Real("real_in", causality=Fmi2Causality.input))
        # pythonfmu leaves variability out, which FMI 2 reads as continuous: only Reals may be
        discrete = dict(variability=Fmi2Variability.discrete)
        self.register_variable(Integer("int_in", causality=Fmi2Causality.input, **discrete))
        self.register_variable(Boolean("bool_in", causality=Fmi2Causality.input, **discrete))
        self.register_variable(String("string_in", causality=Fmi2Causality.input, **discrete))
        self.register_variable(Real("real_out", causality=Fmi2Causality.output))
        self.register_variable(Integer("int_out", causality=Fmi2Causality.output, **discrete))
        self.register_variable(Boolean("bool_out", causality=Fmi2Causality.output, **discrete))
        self.register_variable(String("string_out", causality=Fmi2Causality.output, **discrete))

    def _update(self):
        self.real_out = self.gain * self.real_in + self.time
        self.int_out = self.offset + self.int_in + self.steps
        self.bool_out = self.flag != self.bool_in != (self.steps % 2 == 1)
        self.string_out = f"{self.label}/{self.string_in}/{self.steps}"

    def exit_initialization_mode(self):
        self._update()

    def do_step(self, current_time, step_size):
        self.steps += 1
        self.time = current_time + step_size
        self._update()
        return True
