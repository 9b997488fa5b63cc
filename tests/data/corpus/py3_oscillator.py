"""Py3Oscillator (FMI 3, pythonfmu3): m x'' + d x' + c x = F, the same equation, variable
names and exact step as the project's Oscillator FMU (without its coupling terms), so a system
may use either. Each step is exact for the force held over the step (closed form of the
underdamped oscillator), so results depend on the master only, not on an integrator.
Built with --handle-state: the FMU state is every registered variable (x and v included)."""

import math

from pythonfmu3 import DefaultExperiment, Float64, Fmi3Causality, Fmi3Slave, Fmi3Variability


def exact_step(m, c, d, force, x, v, h):
    """Position and velocity after h with the force held (underdamped: d^2 < 4 m c)."""
    sigma = d / (2.0 * m)
    omega = math.sqrt(c / m - sigma * sigma)
    rest = force / c
    a = x - rest
    b = (v + sigma * a) / omega
    decay = math.exp(-sigma * h)
    cos, sin = math.cos(omega * h), math.sin(omega * h)
    x_new = rest + decay * (a * cos + b * sin)
    v_new = decay * ((omega * b - sigma * a) * cos - (sigma * b + omega * a) * sin)
    return x_new, v_new


class Py3Oscillator(Fmi3Slave):

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.description = "Single-mass oscillator m x'' = F - c x - d v (pythonfmu3, exact steps)"
        self.default_experiment = DefaultExperiment(start_time=0.0, stop_time=1.0, step_size=0.01)
        self.time = 0.0
        self.m, self.c, self.d = 1.0, 1.0, 0.1
        self.x0, self.v0 = 1.0, 0.0
        self.F = 0.0
        self.x, self.v = self.x0, self.v0
        self.register_variable(
            Float64("time", causality=Fmi3Causality.independent, variability=Fmi3Variability.continuous)
        )
        for name in ("m", "c", "d", "x0", "v0"):
            self.register_variable(
                Float64(name, causality=Fmi3Causality.parameter, variability=Fmi3Variability.fixed)
            )
        self.register_variable(
            Float64("F", causality=Fmi3Causality.input, variability=Fmi3Variability.continuous)
        )
        for name in ("x", "v"):
            self.register_variable(
                Float64(name, causality=Fmi3Causality.output, variability=Fmi3Variability.continuous)
            )

    def exit_initialization_mode(self):
        self.x, self.v = self.x0, self.v0

    def do_step(self, current_time, step_size):
        self.x, self.v = exact_step(self.m, self.c, self.d, self.F, self.x, self.v, step_size)
        self.time = current_time + step_size
        return True
