"""test/gpu/run_all.sh's frontend step runs test/gpu/test_frontend_gpu.py as a script: its run_all() lists the
cases itself, without pytest's collection. Every test function of the file must be among them (two new tests
were left out and the H100 step passed without running them, session 55)."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_run_all_lists_every_test_of_the_gpu_frontend_file():
    path = os.path.join(ROOT, "test", "gpu", "test_frontend_gpu.py")
    tree = ast.parse(open(path).read())
    tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    run_all = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run_all")
    named = {n.id for n in ast.walk(run_all) if isinstance(n, ast.Name)}
    assert tests and not tests - named, f"not run by run_all(): {sorted(tests - named)}"
