"""The fakv package's shape (issue 10): no import cycle among its modules
(imports inside functions count: a cycle there is one too), and the
kernels are a package, fakv.kernels, not a folder put on sys.path."""
import ast
import os
import sys

import fakv

PACKAGE = os.path.dirname(os.path.abspath(fakv.__file__))


def imports(path):
    """The fakv modules a file imports (relative imports, any depth)."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(a.name for a in node.names)
    return found


def test_no_import_cycle():
    graph = {f[:-3]: imports(os.path.join(PACKAGE, f)) for f in os.listdir(PACKAGE) if f.endswith(".py")}
    graph = {m: {d for d in deps if d in graph} for m, deps in graph.items()}
    state = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import cycle: " + " -> ".join(path + [m])
        state[m] = "open"
        for d in sorted(graph[m]):
            visit(d, path + [m])
        state[m] = "done"
    for m in sorted(graph):
        visit(m, [])
    assert "jitfunction" not in graph["codegen"] and "codegen" in graph["jitfunction"]


def test_kernels_are_a_package():
    from fakv.interface import _append_kernel, _kernels
    from fakv.kernels import append, combine, decode
    assert _kernels() == (decode.decode, combine.combine) and _append_kernel() is append.append
    assert decode.__name__ == "fakv.kernels.decode"
    kernels_dir = os.path.dirname(decode.__file__)
    assert kernels_dir not in sys.path and "decode" not in sys.modules
