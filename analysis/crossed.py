"""Mixed models with crossed random intercepts (participant and clip), fitted on all trials.

A crossed design's random-effects system has two diagonal blocks (one per participant, one
per clip) and a dense participant x clip coupling. Eliminating the larger diagonal block
leaves a dense system the size of the smaller factor, so one evaluation of the likelihood
costs about (participants x clips^2) and never (trials x random effects^2), and every
fixed-effect design here is categorical, so trials enter only through counts per
(participant, clip, design cell). :func:`fit_lmm` is the REML fit of lme4's ``lmer``;
:func:`analysis.crossed_glmm.fit_glmm` lme4's ``glmer`` on the same design.

References
----------
.. [1] Bates, D., Maechler, M., Bolker, B. & Walker, S. (2015). Fitting linear
   mixed-effects models using lme4. J. Stat. Softw. 67(1), 1-48 (eqs. 3-34).
.. [2] Baayen, Davidson & Bates (2008). Mixed-effects modeling with crossed random effects
   for subjects and items. J. Mem. Lang. 59, 390-412.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import linalg, optimize

if TYPE_CHECKING:
    import pandas as pd

# Dense participant x clip coupling matrices above this many cells are not formed.
MAX_COUPLING_CELLS = 30_000_000
MAX_SMALLER_FACTOR = 6000


@dataclass
class Fit:
    """Estimates of one fit. ``cov`` is the covariance of ``beta``; ``var_a``/``var_b`` are
    the random-intercept variances (log-odds scale for the GLMM); ``scale`` is the residual
    variance (1 for the GLMM)."""

    beta: np.ndarray
    cov: np.ndarray
    var_a: float
    var_b: float
    scale: float
    deviance: float
    converged: bool
    warnings: list


class Design:
    """Aggregated rows: factor codes ``a`` (the larger factor) and ``b``, a design cell per
    row and the cell design matrix ``x_cells`` (cells x p). ``b`` may be None (one factor)."""

    def __init__(self, a, b, cell, x_cells, n_a: int, n_b: int | None):
        self.one_factor = b is None
        self.a, self.cell = np.asarray(a, np.int64), np.asarray(cell, np.int64)
        self.b = np.zeros_like(self.a) if b is None else np.asarray(b, np.int64)
        self.x = np.asarray(x_cells, float)
        if b is not None and n_b is None:
            raise TypeError("n_b is required when b is given")
        self.n_a: int = n_a
        self.n_b: int = 1 if n_b is None or b is None else n_b
        if self.n_a * self.n_b > MAX_COUPLING_CELLS or min(self.n_a, self.n_b) > \
                MAX_SMALLER_FACTOR:
            raise ValueError(f"{self.n_a} x {self.n_b} crossed levels are too many to fit")

    def _sum(self, codes, size, w):
        return np.bincount(codes, weights=w, minlength=size)

    def blocks(self, w):
        """Z'WZ, Z'WX and X'WX pieces for row weights ``w``."""
        n_c = len(self.x)
        return {"da": self._sum(self.a, self.n_a, w), "db": self._sum(self.b, self.n_b, w),
                "n": self._sum(self.a * self.n_b + self.b, self.n_a * self.n_b, w).reshape(
                    self.n_a, self.n_b),
                "ax": self._sum(self.a * n_c + self.cell, self.n_a * n_c, w).reshape(
                    self.n_a, n_c) @ self.x,
                "bx": self._sum(self.b * n_c + self.cell, self.n_b * n_c, w).reshape(
                    self.n_b, n_c) @ self.x,
                "xx": self.x.T @ (self._sum(self.cell, n_c, w)[:, None] * self.x)}

    def rhs(self, v):
        return (self._sum(self.a, self.n_a, v), self._sum(self.b, self.n_b, v),
                self.x.T @ self._sum(self.cell, len(self.x), v))

    def eta(self, beta, ua, ub, theta):
        return (self.x @ beta)[self.cell] + theta[0] * ua[self.a] + theta[1] * ub[self.b]


def solve(theta, blk, rhs, with_beta: bool = True) -> dict:
    """Solve the penalised system [[L'Z'WZL + I, L'Z'WX], [X'WZL, X'WX]] [u; beta] = [L'r_z; r_x].

    The participant (``a``) block is diagonal and eliminated first; the clip block's Schur
    complement is factored densely. Returns ``ua, ub, beta, logdet_u`` (log|L'Z'WZL + I|),
    ``quad`` (the solution's inner product with the right-hand side) and ``rxtrx``.
    """
    ta, tb = theta
    ha = ta * ta * blk["da"] + 1.0
    hab = ta * tb * blk["n"]
    ra, rb = ta * rhs[0], tb * rhs[1]
    scaled = hab / ha[:, None]
    sbb = np.diag(tb * tb * blk["db"] + 1.0) - scaled.T @ hab
    lb = linalg.cholesky(sbb, lower=True)
    cb = linalg.solve_triangular(lb, rb - scaled.T @ ra, lower=True)
    quad = ra @ (ra / ha) + cb @ cb
    out = {"logdet_u": np.log(ha).sum() + 2 * np.log(np.diag(lb)).sum()}
    if with_beta:
        hax = ta * blk["ax"]
        tbx = linalg.solve_triangular(lb, tb * blk["bx"] - scaled.T @ hax, lower=True)
        rxtrx = blk["xx"] - (hax / ha[:, None]).T @ hax - tbx.T @ tbx
        rx = rhs[2] - hax.T @ (ra / ha) - tbx.T @ cb
        beta = linalg.solve(rxtrx, rx, assume_a="pos")
        quad += rx @ beta
    else:
        tbx, beta, rxtrx = np.zeros((len(cb), 0)), np.zeros(0), None
    ub = linalg.solve_triangular(lb.T, cb - tbx @ beta, lower=False)
    ua = (ra - hab @ ub - (ta * blk["ax"] @ beta if with_beta else 0.0)) / ha
    return out | {"ua": ua, "ub": ub, "beta": beta, "quad": quad, "rxtrx": rxtrx}


def minimize(objective, start, bounds, ftol: float = 2.2e-9, max_evaluations: int = 15000):
    """L-BFGS-B; ``ftol`` is its relative reduction of the objective at which it stops."""
    # Finite-difference steps of 1e-6 keep the gradient clear of rounding in deviances of
    # ~1e6 (a million trials); L-BFGS-B then needs ~20-30 evaluations from a moment start.
    with _one_blas_thread():
        res = optimize.minimize(objective, start, method="L-BFGS-B", bounds=bounds,
                                options={"eps": 1e-6, "ftol": ftol,
                                         "maxfun": max_evaluations})
    notes = [] if res.success else [f"optimizer: {res.message}"]
    return res, notes


def _one_blas_thread():
    """The fits' many small factorisations and products run faster on one BLAS thread,
    and far faster when other work shares the cores (OpenBLAS threads then wait on each
    other: seen 0.1 s instead of 1 ms per Cholesky factor)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # results are the same, only slower on a busy machine
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def moment_start(design: Design, n, sum_y, sum_yy: float) -> np.ndarray:
    """Relative SDs from per-level means of cell-mean residuals (a start near the optimum)."""
    n_c = len(design.x)
    cell_n = np.bincount(design.cell, n, n_c)
    cell_mean = np.bincount(design.cell, sum_y, n_c) / np.maximum(cell_n, 1)
    fitted = cell_mean[design.cell]
    resid_sum = sum_y - n * fitted
    total_var = (sum_yy - 2 * (sum_y * fitted).sum() + (n * fitted ** 2).sum()) / n.sum()
    out = []
    for codes, size in ((design.a, design.n_a), (design.b, design.n_b)):
        level_n = np.bincount(codes, n, size)
        means = np.bincount(codes, resid_sum, size) / np.maximum(level_n, 1)
        out.append(max(np.average(means ** 2, weights=level_n) - total_var / level_n.mean(),
                       0.01 * total_var))
    resid_var = max(total_var - sum(out), 1e-6 * total_var)
    start = np.sqrt(np.array(out) / resid_var)
    if design.one_factor:
        start[1] = 0.0
    return start


def boundary_warnings(theta, one_factor, names) -> list:
    hit = [n for t, n in zip(theta, names) if t < 1e-4 and not (one_factor and n == names[1])]
    return [f"singular fit: var({n}) is at the boundary 0" for n in hit]


def fit_lmm(design: Design, n, sum_y, sum_yy: float, names=("a", "b")) -> Fit:
    """REML fit of y = X beta + a_i + b_j + e from per-row counts and sums of y and y^2.

    Notes
    -----
    Profiled REML deviance of lme4 [1]_ (eq. 42), minimised over the relative standard
    deviations theta = (sd_a, sd_b) / sigma >= 0 by L-BFGS-B:
    ``log|L_theta|^2 + log|R_X|^2 + (n - p)(1 + log(2 pi r^2 / (n - p)))``.
    """
    blk, rhs = design.blocks(np.asarray(n, float)), design.rhs(np.asarray(sum_y, float))
    n_obs, p = float(np.sum(n)), design.x.shape[1]
    dof = n_obs - p

    def parts(theta):
        sol = solve(theta, blk, rhs)
        r2 = max(sum_yy - sol["quad"], 1e-300)
        dev = sol["logdet_u"] + np.linalg.slogdet(sol["rxtrx"])[1] + dof * (
            1 + np.log(2 * np.pi * r2 / dof))
        return dev, sol, r2

    bounds = [(0.0, None), (0.0, 0.0) if design.one_factor else (0.0, None)]
    res, notes = minimize(lambda t: parts(t)[0],
                          moment_start(design, np.asarray(n, float), np.asarray(sum_y, float),
                                       sum_yy), bounds)
    dev, sol, r2 = parts(res.x)
    scale = r2 / dof
    return Fit(beta=sol["beta"], cov=scale * np.linalg.inv(sol["rxtrx"]),
               var_a=scale * res.x[0] ** 2, var_b=scale * res.x[1] ** 2, scale=scale,
               deviance=float(dev), converged=bool(res.success),
               warnings=notes + boundary_warnings(res.x, design.one_factor, names))


def design(subject, clip, cell, x_cells, sums: dict) -> tuple[Design, dict, bool]:
    """Aggregate trials to one row per (subject, clip, design cell).

    ``subject``, ``clip``, ``cell`` are integer codes per trial; ``sums`` maps a name to a
    per-trial array summed per row (``"n"`` is added). The factor with more levels becomes
    ``a``; the third value says whether that is the clip (names must then be swapped).
    """
    subject, clip, cell = (np.asarray(v, np.int64) for v in (subject, clip, cell))
    n_s, n_k, n_c = subject.max() + 1, clip.max() + 1, len(x_cells)
    flat = (subject * n_k + clip) * n_c + cell
    if n_s * n_k * n_c <= 50_000_000:  # a lookup table instead of sorting every trial
        present = np.bincount(flat, minlength=n_s * n_k * n_c) > 0
        key, row = np.flatnonzero(present), (np.cumsum(present) - 1)[flat]
    else:
        key, row = np.unique(flat, return_inverse=True)
        row = row.ravel()
    out = {"n": np.bincount(row, minlength=len(key)).astype(float)}
    out |= {name: np.bincount(row, weights=v, minlength=len(key)) for name, v in sums.items()}
    s_row, k_row, c_row = key // (n_k * n_c), (key // n_c) % n_k, key % n_c
    swapped = n_k > n_s
    a, b, n_a, n_b = (k_row, s_row, n_k, n_s) if swapped else (s_row, k_row, n_s, n_k)
    return Design(a, b, c_row, x_cells, int(n_a), int(n_b)), out, swapped


def feasible(n_subjects: int, n_clips: int) -> bool:
    """Whether the dense coupling of a crossed fit of this size can be formed."""
    return n_subjects * n_clips <= MAX_COUPLING_CELLS and \
        min(n_subjects, n_clips) <= MAX_SMALLER_FACTOR


def fixed_table(fit: Fit, names) -> "pd.DataFrame":
    """term, coef, se, z, p, ci_low, ci_high (Wald, normal) of the fixed effects. A term
    whose variance is not positive (a numerical Hessian at a boundary can give one) has no
    standard error: its se, z, p and interval are left empty and ``fit.warnings`` says so."""
    import pandas as pd
    from scipy import stats

    var = np.diag(fit.cov)
    valid = np.isfinite(var) & (var > 0)
    if not valid.all():
        fit.warnings.append("no standard error for " + ", ".join(
            n for n, v in zip(names, valid) if not v) + ": its variance is not positive")
    se = np.sqrt(np.where(valid, var, np.nan))
    z = fit.beta / se
    return pd.DataFrame({"term": list(names), "coef": fit.beta, "se": se, "z": z,
                         "p": 2 * stats.norm.sf(np.abs(z)),
                         "ci_low": fit.beta - 1.959963984540054 * se,
                         "ci_high": fit.beta + 1.959963984540054 * se})
