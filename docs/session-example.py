#!/usr/bin/env python3
"""Holding the wheel with cosimo.Session: a Gymnasium-style environment around a co-simulated
system, and a short optimisation loop that restores one snapshot per trial.

The system is the two-mass oscillator (fmus/two-mass-force-force.json): mass 1 starts 0.1 m
out; the agent sets the damping of the coupling spring-damper (`spring.d1`, a tunable
parameter) every 0.05 s to bring both masses to rest.

Run it from the repository root after `pip install ./python` and packing the FMUs
(`cargo run -p fmu-pack`, or `cargo xtask demo`):

    python docs/session-example.py

It uses only cosimo and numpy; the environment follows Gymnasium's API (`reset()` returns
`(observation, info)`, `step(action)` returns `(observation, reward, terminated, truncated,
info)`), so `gymnasium.Env` can wrap it unchanged.
"""

from pathlib import Path

import numpy as np

import cosimo

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = ROOT / "fmus" / "two-mass-force-force.json"


class TwoMassDamping:
    """Each step holds a damping for 0.05 s of simulated time; the reward is minus the
    system's energy-like measure at the end of the step."""

    control_interval = 0.05

    def __init__(self, horizon: float = 1.0):
        self.horizon = horizon
        self.session = cosimo.Session(SYSTEM, stop_time=horizon,
                                      output=["mass1.x", "mass1.v", "mass2.x", "mass2.v"])
        # The state at t = 0, restored by every reset (no re-instantiation of the FMUs).
        self.initial = self.session.save()

    def observe(self) -> np.ndarray:
        values = self.session.get(["mass1.x", "mass1.v", "mass2.x", "mass2.v"])
        return np.array(list(values.values()))

    def reset(self, seed=None):
        self.session.restore(self.initial)
        return self.observe(), {}

    def step(self, damping: float):
        self.session.set({"spring.d1": float(np.clip(damping, 0.0, 200.0))})
        end = min(self.session.time + self.control_interval, self.horizon)
        done = self.session.step_until(end)
        x1, v1, x2, v2 = observation = self.observe()
        reward = -(x1 ** 2 + x2 ** 2 + 1e-3 * (v1 ** 2 + v2 ** 2))
        return observation, reward, done, False, {"time": self.session.time}

    def close(self):
        self.session.close()


def episode(env: TwoMassDamping, policy) -> float:
    observation, _ = env.reset()
    total, done = 0.0, False
    while not done:
        observation, reward, done, _, _ = env.step(policy(observation))
        total += reward
    return total


def main() -> None:
    env = TwoMassDamping()
    try:
        # A short optimisation: the constant damping that maximises the return, each trial
        # from the same snapshot.
        trials = {d: episode(env, lambda _obs, d=d: d) for d in (0.0, 10.0, 50.0, 100.0, 200.0)}
        best = max(trials, key=trials.get)
        for d, total in trials.items():
            print(f"damping {d:6.1f} N s/m: return {total:9.5f}")
        print(f"best constant damping: {best} N s/m")
        # A feedback policy: damp hard while the masses move apart.
        feedback = episode(env, lambda obs: 200.0 if obs[1] * obs[3] < 0 else 10.0)
        print(f"feedback policy: return {feedback:9.5f}")
    finally:
        env.close()


if __name__ == "__main__":
    main()
