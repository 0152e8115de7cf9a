"""Building fakv IR as MLIR text.

Values carry their MLIR type; ops are written one per line with the
location of the Python source that made them, so that a verifier error in
C++ points at the kernel's line. codegen.py drives this builder.
"""
import contextlib

DTYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i1": "i1", "i8": "i8",
          "i32": "i32", "i64": "i64"}
FLOATS = ("f32", "f16", "bf16")
INTS = ("i1", "i8", "i32", "i64")


class FakvTypeError(TypeError):
    """A kernel's values do not fit together (shapes, dtypes)."""


class Type:
    pass


class ScalarType(Type):
    def __init__(self, dtype):
        self.dtype = dtype

    def mlir(self):
        return self.dtype

    def __eq__(self, o):
        return isinstance(o, ScalarType) and o.dtype == self.dtype

    def __hash__(self):
        return hash(("s", self.dtype))

    def __repr__(self):
        return self.dtype


class TileType(Type):
    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    def mlir(self):
        return "tensor<" + "".join(f"{s}x" for s in self.shape) + self.dtype + ">"

    def __eq__(self, o):
        return isinstance(o, TileType) and o.shape == self.shape and o.dtype == self.dtype

    def __hash__(self):
        return hash(("t", self.shape, self.dtype))

    def __repr__(self):
        return f"tile{list(self.shape)}:{self.dtype}"


class PtrType(Type):
    def __init__(self, dtype):
        self.dtype = dtype

    def mlir(self):
        return f"!fakv.ptr<{self.dtype}>"

    def __eq__(self, o):
        return isinstance(o, PtrType) and o.dtype == self.dtype

    def __hash__(self):
        return hash(("p", self.dtype))

    def __repr__(self):
        return f"ptr<{self.dtype}>"


class Value:
    """An SSA value of the kernel being built."""

    def __init__(self, name, type):
        self.name = name
        self.type = type

    def __repr__(self):
        return f"{self.name}: {self.type!r}"

    def __bool__(self):
        # (a run-time value has no truth at compile time: Python code given one, `t[0] if ...` in a helper or
        # all() of a tuple, took every value as true)
        raise FakvTypeError("a run-time value has no truth value at compile time (an `if` on it in the kernel "
                            "is a run-time branch; Python code, all(), any() or a helper's own test, cannot "
                            "take one)")


def location(filename, line, col):
    """An MLIR file location: the file's name as an MLIR string (a `"` or `\\` in a folder's name ended it
    early: a parse error where the kernel's line belonged)."""
    text = "".join(c if c.isprintable() and c not in '"\\' else "".join(f"\\{b:02X}" for b in c.encode())
                   for c in filename)
    return f'loc("{text}":{line}:{col})'


class Builder:
    def __init__(self, filename):
        self.filename = filename
        self.lines = []
        self.indent = 1
        self.counter = 0
        self.loc = (filename, 0, 0)      # (file, line, column): an inlined helper's ops carry its own file

    def fresh(self, hint="v"):
        """A new SSA name, `%hintN` (codegen names a kernel parameter of that form `%name.p`)."""
        self.counter += 1
        return f"%{hint}{self.counter}"

    def location(self):
        return location(*self.loc)

    def emit(self, text):
        self.lines.append("  " * self.indent + text)

    def op(self, text, result_types=(), hint="v"):
        """Emit `<results> = text loc(...)`; returns the result Values."""
        results = [Value(self.fresh(hint), t) for t in result_types]
        names = ", ".join(r.name for r in results)
        self.emit((f"{names} = " if results else "") + text + " " + self.location())
        return results

    def op1(self, text, result_type, hint="v"):
        return self.op(text, [result_type], hint)[0]

    @contextlib.contextmanager
    def nested(self):
        self.indent += 1
        try:
            yield
        finally:
            self.indent -= 1

    @contextlib.contextmanager
    def capture(self):
        """Collect the lines emitted inside into a separate list."""
        saved = self.lines
        self.lines = []
        out = []
        try:
            yield out
        finally:
            out.extend(self.lines)
            self.lines = saved
