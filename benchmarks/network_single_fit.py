"""One L-PCA fit at a network's published exact-embedding rank, with the margin phase.

Issue 59 asks PubMed (19717 x 19717) and ca-HepPh (12008 x 12008) to certify at most
their published exact ranks (48 and 32; Chanpuriya et al., NeurIPS 2020) within
1800 s on 2 cores, and, where the rank search cannot, to show it with one fit at
that rank. This is that fit, through the public API:

``lpca_fit(A, k, tau=0.5, fit_bias="global", dtype="float32",
stop_when_exact=True, n_jobs=2, time_limit=budget, margin_phase=True)``: the
logistic fit on half the budget at most, then the squared-hinge margin phase from
it to the budget.

Recorded per graph: wrong entries after the logistic fit and at the end, seconds,
whether the final factors certify (``certify_rounding``), the peak resident memory
of the process and the 1-minute load average before and after. Appends to
``--output`` (default ``benchmarks/results/candidates/network_single_fit.json``).

Usage: ``python benchmarks/network_single_fit.py pubmed 48 [--budget 1800]
[--seed 0] [--data-dir DIR]`` (the graph is ``graphs/<name>.npz`` of the data
folder)
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import add_data_dir, add_output, data_dir, load1, peak_rss_mb, write_json

from sklearn_rrank import certify_rounding, lpca_fit


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("k", type=int)
    parser.add_argument("--budget", type=float, default=1800.0)
    parser.add_argument("--seed", type=int, default=0)
    add_data_dir(parser)
    add_output(parser, "network_single_fit.json")
    args = parser.parse_args(argv)
    graphs = data_dir(args.data_dir) / "graphs"
    A = sp.csr_matrix(sp.load_npz(graphs / f"{args.graph}.npz"))
    A = A.astype(np.float64)
    common = dict(
        tau=0.5,
        fit_bias="global",
        dtype="float32",
        stop_when_exact=True,
        random_state=args.seed,
        n_jobs=2,
    )
    row = {"graph": args.graph, "shape": list(A.shape), "ones": int(A.nnz)}
    row.update(k=args.k, budget=args.budget, seed=args.seed)
    row["load_before"] = load1()
    t0 = time.perf_counter()
    final = lpca_fit(A, args.k, time_limit=args.budget, margin_phase=True, **common)
    phase = final.info.get("margin_phase") or {}
    row["logistic"] = {
        "wrong": int(phase.get("n_errors_before", final.info["n_errors"])),
        "n_iter": int(final.n_iter),
        "status": final.info["status"],
        "solver": final.info["solver_used"],
    }
    row["margin"] = phase
    row["seconds"] = time.perf_counter() - t0
    row["wrong"] = int(final.info["n_errors"])
    row["certified"] = bool(certify_rounding(A, final.L, final.R))
    row["peak_rss_mb"] = peak_rss_mb()
    row["load_after"] = load1()
    print(json.dumps(row), flush=True)
    out = Path(args.output)
    runs = json.loads(out.read_text())["runs"] if out.exists() else []
    runs.append(row)
    description = __doc__.split("\n\n")[0]
    write_json(out, {"description": description, "machine": "2 cores", "runs": runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
