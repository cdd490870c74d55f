"""lme4's ``glmer`` (binomial, logit link) with crossed random intercepts, on the aggregated
design of :mod:`analysis.crossed`.

The random effects' conditional modes (and, at ``nAGQ = 0``, the fixed effects) come from
penalised iteratively reweighted least squares (PIRLS) at each variance parameter theta; the
optimiser moves theta. PIRLS minimises a convex penalised deviance, so Newton steps halved
until the penalised deviance falls always converge; what can go wrong is the start (the
state a far theta left behind) and the iteration budget, and both are checked: a fit is
``converged`` only when the optimiser and the final PIRLS both converged, and its warnings
say which did not.

References
----------
.. [1] Bates, D., Maechler, M., Bolker, B. & Walker, S. (2015). Fitting linear
   mixed-effects models using lme4. J. Stat. Softw. 67(1), 1-48 (section 5, PIRLS).
"""
from __future__ import annotations

import numpy as np
from scipy import linalg, special

from analysis.crossed import Design, Fit, boundary_warnings, minimize, moment_start, solve

# theta values probed inside the boundary before a variance is reported as 0 (relative SDs
# on the logit scale; lme4 finds SDs of ~0.06 where the gradient at 0 vanishes).
INTERIOR_PROBES = (0.02, 0.1, 0.5)
# L-BFGS-B's default stop (a relative fall of 2e-9, i.e. 3e-5 on a deviance of 1e4) is too
# loose for variances near 0; PIRLS converged to 1e-12 keeps the finite differences clean
# enough for 1e-13.
FTOL = 1e-13
MAX_RESTARTS = 5


class _Pirls:
    """Penalised IRLS at given theta (and beta, when held fixed), warm-started from the last
    converged state. ``failure`` is None after a converged call, else the reason."""

    def __init__(self, design: Design, y, n):
        self.d, self.y, self.n = design, np.asarray(y, float), np.asarray(n, float)
        # Deviances include the log binomial coefficients, as lme4's do.
        self.log_choose = (special.gammaln(self.n + 1) - special.gammaln(self.y + 1)
                           - special.gammaln(self.n - self.y + 1)).sum()
        self.state = (np.zeros(design.x.shape[1]), np.zeros(design.n_a), np.zeros(design.n_b))
        self.failure: str | None = None
        self.last = self.state

    def pdev(self, theta, beta, ua, ub) -> float:
        """Penalised deviance: -2 log-likelihood + |u|^2."""
        eta = self.d.eta(beta, ua, ub, theta)
        loglik = (self.y * eta - self.n * np.logaddexp(0.0, eta)).sum() + self.log_choose
        return float(-2 * loglik + ua @ ua + ub @ ub)

    def __call__(self, theta, beta=None, max_iter: int = 100) -> float:
        """The Laplace deviance at theta (beta held fixed when given)."""
        fixed = beta is not None
        warm = (beta if fixed else self.state[0], *self.state[1:])
        safe = (beta if fixed else np.zeros_like(self.state[0]), np.zeros(self.d.n_a),
                np.zeros(self.d.n_b))
        # A far theta's state can be worse than none: start from the better of the two, and
        # from none when the warm start does not converge.
        first = min((warm, safe), key=lambda s: self.pdev(theta, *s))
        state, pdev, self.failure = self._iterate(theta, first, fixed, max_iter)
        if self.failure and first is warm:
            state, pdev, self.failure = self._iterate(theta, safe, fixed, max_iter)
        if self.failure is None:
            self.state = (self.state[0] if fixed else state[0], state[1], state[2])
        self.last = state
        return pdev + self.system(theta, with_beta=False)["logdet_u"]

    def system(self, theta, with_beta: bool) -> dict:
        """:func:`analysis.crossed.solve` at the last call's state: ``logdet_u`` for the
        deviance and, ``with_beta``, ``rxtrx`` for the covariance (whose factor can be
        singular at a far theta, where only the deviance is needed)."""
        mu = special.expit(self.d.eta(self.last[0], self.last[1], self.last[2], theta))
        blk = self.d.blocks(np.maximum(self.n * mu * (1 - mu), 1e-12))
        return solve(theta, blk, self.d.rhs(np.zeros_like(self.y)), with_beta=with_beta)

    def _iterate(self, theta, start, fixed: bool, max_iter: int):
        """Newton steps, each halved until the penalised deviance does not rise.
        Returns ((beta, ua, ub), penalised deviance, None or why it did not converge)."""
        d, y, n = self.d, self.y, self.n
        state, pdev = start, self.pdev(theta, *start)
        for _ in range(max_iter):
            eta = d.eta(state[0], state[1], state[2], theta)
            mu = special.expit(eta)
            w = np.maximum(n * mu * (1 - mu), 1e-12)
            offset = (d.x @ state[0])[d.cell] if fixed else 0.0
            try:
                sol = solve(theta, d.blocks(w), d.rhs(w * (eta - offset) + (y - n * mu)),
                            with_beta=not fixed)
            except (linalg.LinAlgError, ValueError) as error:
                return state, pdev, f"PIRLS: singular system ({error})"
            target = (state[0] if fixed else sol["beta"], sol["ua"], sol["ub"])
            for halving in range(13):
                step = 0.5 ** halving
                new = tuple(old + step * (t - old) for old, t in zip(state, target))
                new_pdev = self.pdev(theta, *new)
                if new_pdev <= pdev + 1e-10 * (abs(pdev) + 1):
                    break
            else:
                return state, pdev, "PIRLS: no step-halving reduced the penalised deviance"
            state, change, pdev = new, pdev - new_pdev, new_pdev
            # Newton converges quadratically: a change of 1e-12 leaves an error far below
            # what the optimiser's finite differences (steps of 1e-6) can see.
            if abs(change) < 1e-12 * (abs(pdev) + 1):
                return state, pdev, None
        return state, pdev, f"PIRLS: not converged in {max_iter} iterations"


def _descend(objective, start, bounds, max_evaluations: int):
    """L-BFGS-B, restarted from where it stopped while its projected gradient is not yet
    flat: after a long first step its line search can stall and stop on a small fall with
    a large gradient (seen: 0.15 deviance units short, gradient 11), and a fresh curvature
    memory goes on. Flat is 1e-7 of the deviance (at least 1e-3): finite differences of
    deviances converged to 1e-12 stay below it (seen: 2.5e-4 on a deviance of 1.2e5).
    A line search that ends "abnormally" where the gradient is flat, and from where a fresh
    start finds nothing lower, has stopped at the minimum (its finite differences cannot
    resolve a smaller step): that is convergence, with no warning (seen: equal to lme4 to
    3e-8 and reported as not converged)."""
    res, notes = minimize(objective, start, bounds, FTOL, max_evaluations)
    lower = np.array([-np.inf if lo is None else lo for lo, _ in bounds])
    upper = np.array([np.inf if hi is None else hi for _, hi in bounds])

    def flat(res) -> bool:
        blocked = ((res.x <= lower) & (res.jac > 0)) | ((res.x >= upper) & (res.jac < 0))
        slope = np.where(blocked, 0.0, res.jac)
        return bool(np.abs(slope).max() <= 1e-7 * max(abs(res.fun), 1e4))

    for _ in range(MAX_RESTARTS):
        if flat(res):
            break
        again, again_notes = minimize(objective, res.x, bounds, FTOL, max_evaluations)
        if again.fun > res.fun:
            break
        res, notes = again, again_notes
    if not res.success and "ABNORMAL" in str(res.message) and flat(res):
        # Flat in finite differences is not proof (far in a variance's tail the slope is
        # small too): a fresh start from there must find nothing lower either.
        again, again_notes = minimize(objective, res.x, bounds, FTOL, max_evaluations)
        if again.fun < res.fun - 1e-6 * max(abs(res.fun), 1.0):
            res, notes = again, again_notes
        else:
            res.success, notes = True, []
    return res, notes


def _optimise_theta(objective, start, bounds, free, max_evaluations: int):
    """Minimise over theta; then, since the deviance is even in each theta (its gradient
    vanishes at 0 whether or not it is lower inside), probe inside every theta that stopped
    at 0 and go on from the best probe that is lower, until no probe is lower: going on
    from one probe can put another theta at 0 (seen with 3 clips: the participant variance
    came back to 0 with the clips' probe, where lme4 finds 0.012 and a lower deviance)."""
    res, notes = _descend(objective, start, bounds, max_evaluations)
    for _ in range(len(free) * MAX_RESTARTS):
        lower = None
        for k in free:
            if res.x[k] >= 1e-4:
                continue
            probes = [np.where(np.arange(len(res.x)) == k, h, res.x) for h in INTERIOR_PROBES]
            best = min(probes, key=objective)
            if objective(best) < res.fun:
                again, again_notes = _descend(objective, best, bounds, max_evaluations)
                if again.fun < res.fun and (lower is None or again.fun < lower[0].fun):
                    lower = (again, again_notes)
        if lower is None:
            break
        res, notes = lower
    return res, notes


def fit_glmm(design: Design, y, n, nagq: int = 0, names=("a", "b"),
             max_evaluations: int = 15000) -> Fit:
    """GLMM fit of logit P(y) = X beta + a_i + b_j from per-row successes and trials.

    Parameters
    ----------
    nagq : {0, 1}
        As lme4's ``nAGQ``: 0 optimises the Laplace deviance over theta only, with beta
        found jointly with the random effects by PIRLS (fast; the choice for large data;
        ``cov`` from PIRLS's fixed-effect block); 1 is the Laplace fit: it optimises the
        deviance over (theta, beta), with standard errors from the numerical Hessian of
        the deviance, as lme4 does.
    max_evaluations : int
        Of the deviance, per optimiser run (lme4's ``maxfun``); running out is reported as
        not converged.

    Returns
    -------
    Fit
        ``converged`` is True only when the optimiser and the PIRLS at the estimate both
        converged; otherwise ``warnings`` says which did not and why.
    """
    pirls = _Pirls(design, y, n)
    one = design.one_factor
    y, n = np.asarray(y, float), np.asarray(n, float)
    p_bar = min(max(y.sum() / n.sum(), 0.05), 0.95)
    # Linear-probability SDs over p(1 - p) approximate the logit-scale SDs.
    start = np.clip(moment_start(design, n, y, float(y.sum())), 0.05, 5.0) * np.sqrt(
        p_bar * (1 - p_bar)) / (p_bar * (1 - p_bar))
    start[1] = 0.0 if one else start[1]
    bounds = [(0.0, None), (0.0, 0.0) if one else (0.0, None)]
    free = [0] if one else [0, 1]
    res, notes = _optimise_theta(pirls, start, bounds, free, max_evaluations)
    dev = pirls(res.x)
    theta, beta, failure = res.x, pirls.last[0], pirls.failure
    cov = np.linalg.inv(pirls.system(theta, with_beta=True)["rxtrx"])
    if nagq == 1:
        p = len(beta)
        res, notes = minimize(lambda v: pirls(v[:2], v[2:]), np.r_[theta, beta],
                              bounds + [(None, None)] * p, max_evaluations=max_evaluations)
        theta, beta = res.x[:2], res.x[2:]
        dev, failure = pirls(theta, beta), pirls.failure
        hess = _hessian(lambda v: pirls(v[:2], v[2:]), res.x, active=free + [
            2 + i for i in range(p)])
        cov = 2 * np.linalg.inv(hess)[-p:, -p:]
    notes = notes + ([f"{failure} at the estimate"] if failure else [])
    return Fit(beta=beta, cov=cov, var_a=theta[0] ** 2, var_b=theta[1] ** 2, scale=1.0,
               deviance=float(dev), converged=bool(res.success) and failure is None,
               warnings=notes + boundary_warnings(theta, one, names))


def _hessian(f, x, active, h: float = 1e-4):
    """Central-difference Hessian of f over the ``active`` coordinates of x."""
    x = np.asarray(x, float)
    k = len(active)
    out = np.zeros((k, k))
    for i in range(k):
        for j in range(i, k):
            def at(si, sj):
                v = x.copy()
                v[active[i]] += si * h
                v[active[j]] += sj * h
                return f(v)
            out[i, j] = out[j, i] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * h * h)
    return out
