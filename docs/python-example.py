#!/usr/bin/env python3
"""The two-mass oscillator (fmus/two-mass-force-force.json) under zero-order-hold (Jacobi,
extrapolation order 0) and implicit (predictor / corrector) coupling, plotted with matplotlib.

Run it from the repository root after `pip install ./python matplotlib` and packing the FMUs
(`cargo run -p fmu-pack`, or `cargo xtask demo`):

    python docs/python-example.py            # writes target/python-example.png
    python docs/python-example.py --show     # and opens a window
"""

import sys
from pathlib import Path

import matplotlib

if "--show" not in sys.argv:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt

import cosimo

root = Path(__file__).resolve().parents[1]
system = root / "fmus" / "two-mass-force-force.json"

# A coarse macro step makes the coupling error visible; the fine run is the reference.
coarse = dict(stop_time=1.0, step_size=1e-2, output_interval=1e-2, output=["mass1.x", "mass2.x"])
reference = cosimo.simulate(system, step_size=1e-5, output_interval=1e-2, stop_time=1.0,
                            output=["mass1.x", "mass2.x"])
zoh = cosimo.simulate(system, algorithm="jacobi", extrapolation_order=0, **coarse)
implicit = cosimo.simulate(system, algorithm="implicit", **coarse)

figure, axes = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
for axis, name in zip(axes, ["mass1.x", "mass2.x"]):
    axis.plot(reference["time"], reference[name], "k", lw=2.5, alpha=0.3,
              label="reference (H = 1e-5 s)")
    axis.plot(zoh["time"], zoh[name], label="Jacobi, zero-order hold (H = 10 ms)")
    axis.plot(implicit["time"], implicit[name], "--", label="implicit (H = 10 ms)")
    axis.set_ylabel(f"{name} [m]")
    axis.grid(True, alpha=0.3)
axes[0].legend(loc="upper right")
axes[-1].set_xlabel("time [s]")
figure.suptitle("Two-mass oscillator, force/force coupling")
figure.tight_layout()

for label, result in [("zero-order hold", zoh), ("implicit", implicit)]:
    error = max(abs(result[n] - reference[n]).max() for n in ["mass1.x", "mass2.x"])
    print(f"{label:16} largest deviation from the reference: {error:.3e} m")

out = root / "target" / "python-example.png"
out.parent.mkdir(exist_ok=True)
figure.savefig(out, dpi=120)
print(f"plot written to {out}")
if "--show" in sys.argv:
    plt.show()
