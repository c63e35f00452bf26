"""Graphs in: ``load_edge_list`` and ``rrank --format edgelist``."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from _family import rrank as main

from sklearn_rrank.datasets import load_binary_matrix, load_edge_list

SNAP = """# Directed graph (each unordered pair of nodes is saved once): example.txt
# Nodes: 4 Edges: 5
# FromNodeId\tToNodeId
0\t1
0\t2
1\t2
2\t3
2\t3
"""

KONECT = """% sym unweighted
% 4 4 4
1 2 1 1262304000
2 3 1 1262304000
3 4 1 1262304000
4 4 1 1262304000
"""


def test_snap_file_zero_based_with_comments_and_duplicates(tmp_path):
    path = tmp_path / "example.txt"
    path.write_text(SNAP)
    A = load_edge_list(path)
    assert sp.issparse(A) and A.format == "csr" and A.dtype == np.uint8
    expected = np.zeros((4, 4), dtype=np.uint8)
    expected[[0, 0, 1, 2], [1, 2, 2, 3]] = 1  # the duplicate 2 -> 3 is one entry
    assert np.array_equal(A.toarray(), expected)
    assert A.diagonal().sum() == 0  # no loops in the file: a zero diagonal
    S = load_edge_list(path, symmetric=True).toarray()
    assert np.array_equal(S, expected | expected.T)


def test_konect_file_one_based_weights_ignored_loops_kept(tmp_path):
    path = tmp_path / "out.example"
    path.write_text(KONECT)
    A = load_edge_list(path, symmetric=True).toarray()
    assert A.shape == (4, 4)  # ids 1..4 are rows 0..3
    assert np.array_equal(A, A.T) and A[3, 3] == 1 and A[0, 0] == 0
    assert A.sum() == 7  # 3 edges both ways and one loop
    assert load_edge_list(path, one_based=False).shape == (5, 5)
    assert load_edge_list(path, n_nodes=6).shape == (6, 6)
    with pytest.raises(ValueError, match="not below n_nodes=3"):
        load_edge_list(path, n_nodes=3)


def test_konect_bipartite_rows_and_columns_are_apart(tmp_path):
    path = tmp_path / "out.bip"
    path.write_text("% bip unweighted\n1 1\n1 3\n2 2\n")
    A = load_edge_list(path)
    assert A.shape == (2, 3)
    assert np.array_equal(A.toarray(), [[1, 0, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match="bipartite"):
        load_edge_list(path, symmetric=True)
    assert load_edge_list(path, bipartite=False).shape == (3, 3)


def test_csv_header_is_detected_and_skipped(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("source,target,weight\n0,1,0.5\n1,0,2\n")
    with pytest.raises(ValueError, match="looks like a header; pass header=True"):
        load_edge_list(path)
    A = load_edge_list(path, header=True)
    assert np.array_equal(A.toarray(), [[0, 1], [1, 0]])


def test_matrix_csv_header_is_detected_and_skipped(tmp_path):
    path = tmp_path / "X.csv"
    path.write_text("a,b,c\n1,0,1\n0,1,0\n")
    with pytest.raises(ValueError, match="'a', not a number.*pass header=True"):
        load_binary_matrix(path)
    assert load_binary_matrix(path, header=True).shape == (2, 3)


def test_bad_edge_lists_say_what_is_wrong(tmp_path):
    path = tmp_path / "bad.edges"
    for text, match in [
        ("# nothing\n", "lists no edges"),
        ("0 1\n2\n", "line 2 holds '2', not two node ids"),
        ("0 1\n1 x\n", "line 2 holds '1 x'"),
        ("0 -1\n", "negative node id -1"),
    ]:
        path.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_edge_list(path)
    path.write_text("0 1\n")
    with pytest.raises(ValueError, match="id 0 in a 1-based edge list"):
        load_edge_list(path, one_based=True)


def test_matrix_loader_names_an_edge_list_and_its_loader(tmp_path):
    path = tmp_path / "edges.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    with pytest.raises(ValueError, match=r"looks like an edge list.*load_edge_list"):
        load_binary_matrix(path)
    path = tmp_path / "real.csv"
    path.write_text("0.5,0.25,1\n0,1,0.75\n")
    with pytest.raises(ValueError, match=r"not a 0/1 matrix.*threshold") as exc:
        load_binary_matrix(path)
    assert "edge list" not in str(exc.value)


def test_cli_reads_edge_lists(tmp_path, capsys):
    snap = tmp_path / "example.txt"
    snap.write_text(SNAP)
    konect = tmp_path / "out.example"
    konect.write_text(KONECT)
    edges = tmp_path / "graph.edges"
    edges.write_text("0 1\n1 2\n2 0\n")
    runs = [
        ([str(snap), "--format", "edgelist"], (4, 4)),
        ([str(konect), "--symmetric"], (4, 4)),  # KONECT: detected by its name
        ([str(edges)], (3, 3)),  # .edges: detected by its ending
    ]
    for argv, shape in runs:
        args = ["bounds", *argv, "--methods", "rank_one,spectral,rsvd", "--json"]
        assert main(args) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["n_samples"], out["n_features"]) == shape


def test_cli_names_the_real_cause_and_its_option(tmp_path, capsys):
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n2 0\n")
    assert main(["bounds", str(edges), "-q"]) == 2
    err = capsys.readouterr().err
    assert "looks like an edge list" in err and err.endswith("use --format edgelist\n")
    assert "binarize" not in err and "load_edge_list" not in err
    header = tmp_path / "h.csv"
    header.write_text("source,target\n0,1\n")
    assert main(["bounds", str(header), "-q", "--format", "edgelist"]) == 2
    err = capsys.readouterr().err
    assert "use --header" in err and "header=True" not in err
    assert main(["bounds", str(edges), "-q", "--symmetric"]) == 2
    assert "--symmetric applies to edge lists" in capsys.readouterr().err


def test_cli_says_how_it_read_a_two_column_text_file(tmp_path, capsys):
    # '0 1' / '1 0' is a 2 x 2 matrix or two edges: never read silently
    path = tmp_path / "pairs.txt"
    path.write_text("0 1\n1 0\n")
    argv = ["bounds", str(path), "--methods", "rank_one,spectral", "--json"]
    assert main(argv) == 0
    assert "use --format edgelist" in capsys.readouterr().err
    assert main([*argv, "--format", "edgelist", "--symmetric"]) == 0
    captured = capsys.readouterr()
    assert "note:" not in captured.err
    assert json.loads(captured.out)["n_samples"] == 2


def test_cli_corrupt_npz_gives_a_fix_without_python_options(tmp_path, capsys):
    path = tmp_path / "objects.npz"
    np.savez(path, X=np.array([{"a": 1}], dtype=object))
    assert main(["bounds", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert "allow_pickle" not in err and "save the 0/1 matrix as numbers" in err
    cut = tmp_path / "cut.npz"
    cut.write_bytes(path.read_bytes()[:40])
    assert main(["bounds", str(cut), "-q"]) == 2
    assert "save the matrix again" in capsys.readouterr().err


def test_relabel_numbers_only_the_nodes_that_occur(tmp_path, capsys):
    path = tmp_path / "gaps.txt"
    path.write_text("# ids with gaps, as in SNAP files\n10 30\n30 20\n20 10\n")
    assert load_edge_list(path).shape == (30, 30)  # no id 0: ids from 1
    A, ids = load_edge_list(path, relabel=True)
    assert ids.tolist() == [10, 20, 30] and A.shape == (3, 3)
    assert np.array_equal(A.toarray(), [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    bip = tmp_path / "out.bip"
    bip.write_text("% bip unweighted\n5 7\n9 7\n")
    A, rows, cols = load_edge_list(bip, relabel=True)
    assert rows.tolist() == [5, 9] and cols.tolist() == [7] and A.shape == (2, 1)
    with pytest.raises(ValueError, match="n_nodes cannot be combined"):
        load_edge_list(path, relabel=True, n_nodes=40)
    argv = ["bounds", str(path), "--format", "edgelist", "--relabel", "--json"]
    assert main([*argv, "--methods", "rank_one,spectral"]) == 0
    assert json.loads(capsys.readouterr().out)["n_samples"] == 3


def test_konect_sym_header_reads_an_undirected_graph(tmp_path):
    path = tmp_path / "out.triangle"
    path.write_text("% sym unweighted\n% 3 3 3\n1 2\n2 3\n3 1\n")
    A = load_edge_list(path)
    assert (A != A.T).nnz == 0 and A.nnz == 6  # each edge both ways
    assert load_edge_list(path, symmetric=False).nnz == 3  # as listed
    asym = tmp_path / "out.chain"
    asym.write_text("% asym unweighted\n1 2\n2 3\n")
    assert load_edge_list(asym).nnz == 2
