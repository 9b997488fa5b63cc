"""Spectral radii of index-1 constraint coupling (Meyer et al. 2018, Appendix A) in 40-digit
arithmetic, independent of cosimo: the reference of tests/analysis_index1.rs.

Two oscillators m_i x_i'' + d_i x_i' + c_i x_i = -/+ lambda joined by x2 - x1 = 0 (+lambda on
mass 1, -lambda on mass 2); the multiplier follows the paper's optimised basis over the macro
step (k = 2: lambda = sum beta_l p_l(tau); k = 3: lambda_N + sum beta_l p_l(tau)); beta solves
the scaled residuals (x2 - x1)/H^2, (v2 - v1)/H, a2 - a1 at the step's end exactly (the
subsystems are linear). Each subsystem is integrated exactly with the matrix exponential of the
oscillator augmented by the Taylor chain of the cubic input (mpmath.expm), and the spectral
radius of the one-step map on (x1, v1, x2, v2[, lambda]) is taken with mpmath.eig.

    python3 reference.py K SIZE ALPHA_M,ALPHA_LR,ALPHA_LI POINTS OUT.csv [RE_SIZE]

writes the POINTS x POINTS grid over [-SIZE, 0] x [0, SIZE] of (Lambda_r1, Lambda_i1), with
m1 = 1 and H = 1, as rows `lambda_re,lambda_im,spectral_radius`; with RE_SIZE, Lambda_r1 spans
[-RE_SIZE, 0] instead (a strip along the axis).
"""
import sys

import mpmath as mp

mp.mp.dps = 40

BASIS = {
    2: [[12, -48, 36, 0], [-6, 30, -24, 0], [1, -6, 6, 0]],
    3: [[0, 60, -180, 120], [0, -24, 84, -60], [0, 3, -12, 10]],
}


def response(m, c, d, sign):
    """y(1) = Phi y(0) + G u for m x'' + d x' + c x = sign * u(t), u the cubic with Taylor
    coefficients u = [u, u', u'', u'''] at the step start (H = 1)."""
    a = mp.zeros(6, 6)
    a[0, 1] = 1
    a[1, 0] = -c / m
    a[1, 1] = -d / m
    a[1, 2] = mp.mpf(sign) / m
    a[2, 3] = a[3, 4] = a[4, 5] = 1
    e = mp.expm(a)
    phi = mp.matrix([[e[i, j] for j in range(2)] for i in range(2)])
    g = mp.matrix([[e[i, 2 + j] for j in range(4)] for i in range(2)])
    return phi, g


def one_step(k, z, model):
    m1, c1, d1, m2, c2, d2 = model
    phi1, g1 = response(m1, c1, d1, 1)
    phi2, g2 = response(m2, c2, d2, -1)
    lambda_n = z[4] if k == 3 else 0

    def run(beta):
        poly = [lambda_n if (n == 0 and k == 3) else 0 for n in range(4)]
        for l in range(3):
            for n in range(4):
                poly[n] += beta[l] * BASIS[k][l][n]
        taylor = mp.matrix([mp.factorial(n) * poly[n] for n in range(4)])
        end = sum(poly)
        y1 = phi1 * mp.matrix([z[0], z[1]]) + g1 * taylor
        y2 = phi2 * mp.matrix([z[2], z[3]]) + g2 * taylor
        a1 = (-c1 * y1[0] - d1 * y1[1] + end) / m1
        a2 = (-c2 * y2[0] - d2 * y2[1] - end) / m2
        residual = [y2[0] - y1[0], y2[1] - y1[1], a2 - a1]
        state = [y1[0], y1[1], y2[0], y2[1]] + ([end] if k == 3 else [])
        return residual, state

    g0, _ = run([0, 0, 0])
    jacobian = mp.zeros(3, 3)
    for l in range(3):
        unit = [0, 0, 0]
        unit[l] = 1
        gl, _ = run(unit)
        for r in range(3):
            jacobian[r, l] = gl[r] - g0[r]
    beta = mp.lu_solve(jacobian, -mp.matrix(g0))
    return run([beta[0], beta[1], beta[2]])[1]


def model(re, im, alpha_m, alpha_lr, alpha_li):
    """cosimo.analysis.stability.rigidly_coupled: m1 = 1, H = 1."""
    re, im = mp.mpf(re), mp.mpf(im)
    re2, im2 = alpha_lr * re, alpha_li * im
    return (1, re * re + im * im, -2 * re, alpha_m, alpha_m * (re2 * re2 + im2 * im2), -2 * alpha_m * re2)


def spectral_radius(k, m):
    n = 5 if k == 3 else 4
    a = mp.zeros(n, n)
    for j in range(n):
        z = [0] * n
        z[j] = 1
        column = one_step(k, z, m)
        for i in range(n):
            a[i, j] = column[i]
    return max(abs(e) for e in mp.eig(a, left=False, right=False))


def main():
    k, size = int(sys.argv[1]), mp.mpf(sys.argv[2])
    ratios = [mp.mpf(r) for r in sys.argv[3].split(",")]
    points = int(sys.argv[4])
    re_size = mp.mpf(sys.argv[6]) if len(sys.argv) > 6 else size
    with open(sys.argv[5], "w") as out:
        for i in range(points):
            for j in range(points):
                re = -re_size + re_size * i / (points - 1)
                im = size * j / (points - 1)
                rho = spectral_radius(k, model(re, im, *ratios))
                out.write(f"{mp.nstr(re, 17)},{mp.nstr(im, 17)},{mp.nstr(rho, 17)}\n")
                out.flush()


if __name__ == "__main__":
    main()
