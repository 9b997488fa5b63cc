#!/usr/bin/env python3
"""Writes Example 2 of the variable-order / step-size paper (Sect. 6.2) as a cosimo system file:
a nonlinear oscillator chain of M masses split into r `OscillatorChain` subsystems, joined
force/force by r - 1 `CouplingSpring` elements, under macro-step size and order control.

    python3 fmus/oscillator-chain-example2.py --masses 10000 --subsystems 191 --seed 1 \\
        --estimator ExSLocal --stop 0.5 [-o target/example2/example2.json]

The paper's parameters: every element and coupling spring F = c dx + d dv + C dx^3 + D dv^3
(Eqs. 37, 38) with m = 0.1 kg, c = 1e7 N/m, d = 1e4 N s/m, C = 1e14 N/m^3, D = 1e2 N s^3/m^3;
random initial positions in [-1e-3, 1e-3] m and velocities in [-10, 10] m/s; impulses
1/2 dF [tanh((t - t_a)/delta) - tanh((t - t_a - Dt)/delta)] with delta = 1e-5 s, Dt = 2.5e-3 s,
t_a = 0, 0.05, 0.1, ... s on a random 30 % of the masses, each dF random in +-[1e6, 5e6] N;
contacts A exp(B x) with A = -1e-2 N, B = 5e5 1/m on a random 10 %. The controller: SF = 6,
atol_lambda = 1e-1, rtol_lambda = 1e-3, r_min = 0.5, r_max = 2, the order chosen up to 3.
ExSLocal runs the explicit scheme (Jacobi), ImSLocal the implicit one (predictor / corrector
with the interface Jacobian composed from the components' own steps).

Reproducible from --seed S: subsystem s (1-based) is an OscillatorChain with `seed` =
S * 10000 + s, and the chain draws its initial states, its impulses (masses and dF) and its
contacts from that seed as its model documentation says (test-fmus/models/oscillator_chain).
Fractions are per subsystem: round(0.3 n_s) impulses and round(0.1 n_s) contacts among its
n_s masses. The masses are split as evenly as possible: the first M mod r subsystems hold one
mass more. Deviations from the paper: the subsystems integrate with the FMU's own adaptive
Dormand-Prince 5(4) (rtol 1e-6, atol 1e-9 for positions and velocities alike) instead of a BDF
code; a mass with a contact starts at -|x0| (inside its wall a start meets 1e-2 e^500 N).

The FMUs are the project's (`cargo xtask demo` or `cargo run -p fmu-pack` packs them into
target/fmus); the file names them by a path relative to itself. Generated systems belong in
target/, not in the repository. Python 3 standard library only.
"""

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The paper's chain (Sect. 6.2), also the coupling springs' constants (Eq. 38).
CHAIN = {"m": 0.1, "c": 1e7, "d": 1e4, "C": 1e14, "D": 1e2}
START = {"x0_spread": 1e-3, "v0_spread": 10.0}
IMPULSES = {"impulse_fraction": 0.3, "impulse_dF_min": 1e6, "impulse_dF_max": 5e6,
            "impulse_delta": 1e-5, "impulse_dt": 2.5e-3, "impulse_t0": 0.0,
            "impulse_period": 0.05}
CONTACTS = {"contact_fraction": 0.1, "contact_A": -1e-2, "contact_B": 5e5}
SOLVER = {"rtol": 1e-6, "atol": 1e-9}
CONTROL = {"safetyFactor": 6.0, "rMin": 0.5, "rMax": 2.0, "couplingAbsoluteTolerance": 1e-1,
           "couplingRelativeTolerance": 1e-3, "maxOrder": 3}
MAX_MASSES_PER_SUBSYSTEM = 1000  # OscillatorChain's n
SEED_STRIDE = 10000  # subsystem seeds S * 10000 + s stay apart for r < 10000


def split(masses, subsystems):
    """Masses per subsystem, as even as possible (the larger ones first)."""
    base, extra = divmod(masses, subsystems)
    return [base + (1 if s < extra else 0) for s in range(subsystems)]


def system(masses, subsystems, seed, estimator, stop, step, output_interval, fmus, here):
    sizes = split(masses, subsystems)
    chain_fmu = os.path.relpath(fmus / "OscillatorChain-fmi2.fmu", here)
    spring_fmu = os.path.relpath(fmus / "CouplingSpring-fmi2.fmu", here)
    components, connections = [], []
    for s, n in enumerate(sizes, start=1):
        components.append({
            "name": f"chain{s}",
            "fmu": chain_fmu,
            "parameters": {"n": n, **CHAIN, **START, "seed": seed * SEED_STRIDE + s,
                           **IMPULSES, **CONTACTS, **SOLVER},
        })
    for s in range(1, subsystems):
        spring, left, right = f"spring{s}", f"chain{s}", f"chain{s + 1}"
        components.append({
            "name": spring,
            "fmu": spring_fmu,
            "parameters": {"c1": CHAIN["c"], "d1": CHAIN["d"], "c3": CHAIN["C"],
                           "d3": CHAIN["D"]},
        })
        connections += [
            {"from": f"{left}.x_last", "to": f"{spring}.x1"},
            {"from": f"{left}.v_last", "to": f"{spring}.v1"},
            {"from": f"{right}.x_first", "to": f"{spring}.x2"},
            {"from": f"{right}.v_first", "to": f"{spring}.v2"},
            {"from": f"{spring}.F1", "to": f"{left}.F_right"},
            {"from": f"{spring}.F2", "to": f"{right}.F_left"},
        ]
    experiment = {"startTime": 0, "stopTime": stop, "stepSize": step,
                  "outputInterval": output_interval,
                  "stepControl": {"estimator": estimator, **CONTROL}}
    if estimator == "ImSLocal":
        experiment["algorithm"] = "implicit"
        experiment["corrector"] = {"jacobian": "components", "reuseJacobian": True}
    else:
        experiment["algorithm"] = "jacobi"
    return {
        "description": (f"Example 2 of the variable-order paper (Sect. 6.2): {masses} masses in "
                        f"{subsystems} subsystems, seed {seed}, {estimator}; written by "
                        "fmus/oscillator-chain-example2.py"),
        "components": components,
        "connections": connections,
        "experiment": experiment,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--masses", type=int, default=10000, help="masses M (default 10000)")
    parser.add_argument("--subsystems", type=int, default=191,
                        help="subsystems r (default 191)")
    parser.add_argument("--seed", type=int, default=1, help="seed S (default 1)")
    parser.add_argument("--estimator", choices=["ExSLocal", "ImSLocal"], default="ExSLocal",
                        help="error estimator: ExSLocal (explicit) or ImSLocal (implicit)")
    parser.add_argument("--stop", type=float, default=0.5, help="stop time in s (default 0.5)")
    parser.add_argument("--step", type=float, default=1e-5,
                        help="first macro step in s (default 1e-5)")
    parser.add_argument("--output-interval", type=float, default=1e-3,
                        help="interval of the result rows in s (default 1e-3)")
    parser.add_argument("--fmus", type=Path, default=ROOT / "target" / "fmus",
                        help="folder of the packed FMUs (default target/fmus)")
    parser.add_argument("-o", "--output", type=Path,
                        help="system file to write (default target/example2/"
                             "example2-M-r-S-ESTIMATOR.json)")
    args = parser.parse_args()
    if not 1 <= args.subsystems < SEED_STRIDE:
        sys.exit(f"--subsystems {args.subsystems}: give 1 to {SEED_STRIDE - 1}")
    if not args.subsystems <= args.masses <= args.subsystems * MAX_MASSES_PER_SUBSYSTEM:
        sys.exit(f"--masses {args.masses}: give {args.subsystems} to "
                 f"{args.subsystems * MAX_MASSES_PER_SUBSYSTEM} for {args.subsystems} "
                 f"subsystems (each holds 1 to {MAX_MASSES_PER_SUBSYSTEM} masses)")
    largest_seed = args.seed * SEED_STRIDE + args.subsystems
    if not 0 <= args.seed or largest_seed >= 2**31:
        sys.exit(f"--seed {args.seed}: give 0 to {(2**31 - 1 - args.subsystems) // SEED_STRIDE}"
                 " (the subsystems' seeds are 32-bit integers)")
    if not (args.stop > 0 and args.step > 0 and args.output_interval > 0):
        sys.exit("--stop, --step and --output-interval must be positive")
    output = args.output or (ROOT / "target" / "example2" / (
        f"example2-{args.masses}-{args.subsystems}-{args.seed}-{args.estimator}.json"))
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    text = system(args.masses, args.subsystems, args.seed, args.estimator, args.stop, args.step,
                  args.output_interval, args.fmus.resolve(), output.parent)
    output.write_text(json.dumps(text, indent=1) + "\n")
    print(output)


if __name__ == "__main__":
    main()
