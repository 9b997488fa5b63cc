"""PyRaises (FMI 2, pythonfmu): its step raises a Python exception from t = 0.1 on, as a
buggy Python model would. An importer must report the failure, not crash."""

from pythonfmu import Fmi2Causality, Fmi2Slave, Real
from pythonfmu.default_experiment import DefaultExperiment


class PyRaises(Fmi2Slave):
    description = "Raises from its step at t >= 0.1"
    default_experiment = DefaultExperiment(start_time=0.0, stop_time=0.3, step_size=0.05)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.y = 0.0
        self.register_variable(Real("y", causality=Fmi2Causality.output))

    def do_step(self, current_time, step_size):
        if current_time + 1e-12 >= 0.1:
            raise RuntimeError(f"PyRaises gave up at t = {current_time:.2f} on purpose")
        self.y = current_time + step_size
        return True
