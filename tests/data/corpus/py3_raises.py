"""Py3Raises (FMI 3, pythonfmu3): its step raises a Python exception from t = 0.1 on, as a
buggy Python model would. An importer must report the failure, not crash."""

from pythonfmu3 import DefaultExperiment, Float64, Fmi3Causality, Fmi3Slave, Fmi3Variability


class Py3Raises(Fmi3Slave):

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.description = "Raises from its step at t >= 0.1"
        self.default_experiment = DefaultExperiment(start_time=0.0, stop_time=0.3, step_size=0.05)
        self.time = 0.0
        self.y = 0.0
        self.register_variable(
            Float64("time", causality=Fmi3Causality.independent, variability=Fmi3Variability.continuous)
        )
        self.register_variable(
            Float64("y", causality=Fmi3Causality.output, variability=Fmi3Variability.continuous)
        )

    def do_step(self, current_time, step_size):
        if current_time + 1e-12 >= 0.1:
            raise RuntimeError(f"Py3Raises gave up at t = {current_time:.2f} on purpose")
        self.y = current_time + step_size
        self.time = current_time + step_size
        return True
