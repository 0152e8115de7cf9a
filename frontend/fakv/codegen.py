"""From a @fakv.jit function's Python AST to fakv IR (docs/frontend.md).

The function is walked, not run: constexpr parameters, Python numbers and
`if`s on constexpr conditions are evaluated at compile time; everything else
becomes IR. `for x in fl.range(...)` becomes an scf.for whose loop-carried
values are the variables the body assigns that were defined before the loop;
an `if` on a kernel value becomes an scf.if likewise. Other @fakv.jit
functions called from a kernel are inlined. Errors name the kernel's source
line.
"""
import ast
import inspect
import re
import textwrap

from . import language as fl
from .errors import CompilationError
from . import semantic as sem
from .ir import Builder, FakvTypeError, PtrType, ScalarType, TileType, Value, location


class _Method:
    """`tile.to(dtype)`, `tile.reshape(shape)`: a builtin bound to a tile."""
    __fakv_builtin__ = True

    def __init__(self, fn, value):
        self.fn, self.value = fn, value

    def __call__(self, *args, _b=None, **kwargs):
        return self.fn(self.value, *args, _b=_b, **kwargs)


class _NoValue:
    """The scope's entry for a name that has no value here (read: an error saying why): a fl.range loop's
    variable after its loop, a name assigned only inside such a loop or in one branch of a run-time `if`, or
    a different Python value in each branch."""

    def __init__(self, name, why):
        self.name, self.why = name, why


_MAX_EXIT_COPIES = 10     # early-exit `if`s whose statements after them are copied into both branches, nested


class _Return(Exception):
    def __init__(self, value, node):
        self.value, self.node = value, node


def _contains_return(node):
    """Whether a statement holds a `return` of its own function."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Return):
            return True
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) or n is node:
            todo.extend(ast.iter_child_nodes(n))
    return False


def _always_returns(stmts):
    """Whether running these statements always ends in a `return`."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod",
          ast.Div: "truediv", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
          ast.LShift: "lshift", ast.RShift: "rshift"}
CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
PYCMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
         "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _is_number(x):
    """A Python number (bool, int or float) a kernel value can be made of."""
    return isinstance(x, (bool, int, float))


def _same_python_value(a, b):
    """Whether two compile-time values are one value to the code made of them: equal, of one type, element by
    element, floats by their bits (0.0 and -0.0 are equal, and divide otherwise; nan is itself)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_python_value(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (an array, say: not one value)
        return False


def _python_number(v):
    """A numpy scalar (a global, a closure's variable, an array constexpr's element) as the Python number it
    holds: np.float32(1e9) is a float beside an integer (f32), as 1e9 is, not an integer constant."""
    if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        return v.item()
    return v


def _holds_value(x):
    """Whether x is a kernel value or a tuple / list / dict holding one (at any depth)."""
    if sem.is_value(x):
        return True
    if isinstance(x, dict):
        return any(_holds_value(k) or _holds_value(v) for k, v in x.items())
    return isinstance(x, (tuple, list)) and any(_holds_value(e) for e in x)


def _what(value):
    """What a value being unpacked is, for a message."""
    return f"{len(value)} values" if isinstance(value, (tuple, list)) else "one value"


def _targets(node):
    """The assignment targets of a statement, a loop's variable among them (none for other statements)."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
        return [node.target]
    return []


def last_assignment(stmts, name):
    """The last statement (in source order) among `stmts` that assigns `name`, or None."""
    found = None
    for node in ast.walk(ast.Module(body=list(stmts), type_ignores=[])):
        if any(isinstance(n, ast.Name) and n.id == name for t in _targets(node) for n in ast.walk(t)):
            if found is None or (node.lineno, node.col_offset) > (found.lineno, found.col_offset):
                found = node
    return found


def assigned_names(stmts):
    """Names a list of statements assigns (at any depth)."""
    out = []
    for node in ast.walk(ast.Module(body=list(stmts), type_ignores=[])):
        for t in _targets(node):
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id not in out:
                    out.append(n.id)
    return out


class Function:
    """A Python function's source and AST, as the code generator needs them."""

    def __init__(self, fn, file_lines=None):
        """`file_lines`: the lines of fn's file, read when it was decorated
        (the file may be gone by now)."""
        self.fn = fn
        self.filename = inspect.getsourcefile(fn) or "<kernel>"
        if file_lines:
            self.first_line = fn.__code__.co_firstlineno
            lines = inspect.getblock(file_lines[self.first_line - 1:])
        else:
            try:
                lines, self.first_line = inspect.getsourcelines(fn)
            except OSError:
                raise CompilationError(f"{fn.__name__}: its Python source cannot be read (a function made by "
                                       f"exec() or typed at an interactive prompt); fakv compiles a kernel from "
                                       f"its source: define it in a file") from None
        if fn.__code__.co_name == "<lambda>":      # (its lines may not even parse alone)
            raise CompilationError("fakv compiles a function defined by `def`, not a lambda", self.filename,
                                   self.first_line, lines[0])
        self.source = textwrap.dedent("".join(lines))
        try:
            self.node = ast.parse(self.source).body[0]
        except IndentationError:
            # A line of it left of the def (a string's or a backslash's continuation) kept dedent from taking
            # the indentation away: parsed inside a block instead, its lines moved back by that block's one.
            self.source = "".join(lines)
            self.node = ast.parse("if 1:\n" + self.source).body[0].body[0]
            ast.increment_lineno(self.node, -1)
        self.lines = self.source.splitlines()
        if not isinstance(self.node, ast.FunctionDef):
            raise CompilationError(f"{fn.__name__}: fakv compiles a function defined by `def`, not `async def`",
                                   self.filename, self.first_line, lines[0])
        self.globals = fn.__globals__
        self.params = [a.arg for a in self.node.args.args]


class CodeGen:
    def __init__(self, function, builder=None):
        self.f = function
        self.b = builder or Builder(function.filename)
        self.scope = {}
        self.loops = 0          # loops around the statement being generated, in this function
        # The innermost fl.range loop's carried names: {name: [its type, the assignment that last made it
        # another]} (the one an error about its type at the loop's end names)
        self.carried = {}
        self.copies = 0         # early-exit `if`s around it whose branches both took the statements after them
        self.is_kernel = False  # generating a kernel (kernel()), not a helper being inlined

    # ---- errors and locations -----------------------------------------------------------

    def error(self, node, message):
        line = getattr(node, "lineno", 1)
        src = self.f.lines[line - 1] if 0 < line <= len(self.f.lines) else None
        return CompilationError(message, self.f.filename, line + self.f.first_line - 1, src)

    def error_from(self, node, e):
        """The CompilationError at node's line for an exception its code raised: a type or value mistake
        with its message, Python's own errors (an index past a tuple, a helper's missing argument) with
        their type too."""
        if isinstance(e, (FakvTypeError, ValueError)):
            return self.error(node, str(e))
        if isinstance(e, RecursionError):
            return self.error(node, "nested too deeply to compile: a @fakv.jit function that calls itself "
                                    "without end (calls are inlined: recursion must stop on a compile-time "
                                    "condition), or an expression or chain of calls too deep (split it up)")
        return self.error(node, f"{type(e).__name__}: {e}")

    def at(self, node):
        if hasattr(node, "lineno"):
            self.b.loc = (self.f.filename, node.lineno + self.f.first_line - 1, node.col_offset + 1)

    def close(self, node):
        """The `}` ending the region op of statement or expression `node`, at node's line (the builder's is its
        body's last: a diagnostic about a loop named that)."""
        self.at(node)
        self.b.emit("} " + self.b.location())

    # ---- the kernel ---------------------------------------------------------------------

    def kernel(self, name, arg_types, constexprs, divisibility=None, attributes=()):
        """Emit `func.func @name` for the given parameter types (a Type for
        runtime parameters, absent for constexprs). `divisibility`: the
        runtime parameters known to be multiples of 16 (integers) or 16-byte
        aligned (pointers), marked {fakv.divisibility = 16}. `attributes`:
        more function attributes, as MLIR text."""
        if not name.isascii():      # (MLIR's and PTX's symbols are ASCII; helpers, inlined, may be named so)
            raise self.error(self.f.node, f"a kernel's name is ASCII (its PTX entry's): {name!r}")
        params, header = [], []
        for i, p in enumerate(self.f.params):
            if p in constexprs:
                self.scope[p] = constexprs[p]
                continue
            t = arg_types[p]
            # (not a fresh name, c1; MLIR's names are ASCII: another parameter, `%.uN`, no Python name's form)
            v = Value(f"%.u{i}" if not p.isascii() else f"%{p}.p" if re.fullmatch(r"[a-z]+[0-9]+", p) else f"%{p}", t)
            self.scope[p] = v
            attr = " {fakv.divisibility = 16 : i64}" if divisibility and p in divisibility else ""
            header.append(f"{v.name}: {t.mlir()}{attr}")
            params.append(p)
        body = self.f.node.body
        self.is_kernel = True
        with self.b.capture() as lines:
            try:
                self.block(body)
            except _Return as r:
                if r.value is not None:
                    raise self.error(r.node, "a kernel returns nothing; write results with fl.store")
        loc = location(self.f.filename, self.f.node.lineno + self.f.first_line - 1, 1)
        text = [f"func.func @{name}({', '.join(header)}) attributes {{{', '.join(('fakv.kernel',) + tuple(attributes))}}} {{"]
        text += lines
        text += ["    return " + loc, "  } " + loc]
        return "\n".join(text), params

    def block(self, stmts):
        """The statements in order. An `if` that holds a `return` takes the
        statements after it into each of its branches that does not end in
        one (`if c: return` + rest becomes `if c: return else: rest`), so a
        return under a runtime condition needs no jump: the branch that
        returns simply ends (stmt_If)."""
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if rest and isinstance(s, ast.If) and _contains_return(s):
                moved = ast.If(test=s.test, body=s.body if _always_returns(s.body) else s.body + rest,
                               orelse=s.orelse if _always_returns(s.orelse) else s.orelse + rest)
                # (`rest` in both branches: k such `if`s one inside the other's copies make 2^k of it)
                both = not _always_returns(s.body) and not _always_returns(s.orelse)
                if both and self.copies >= _MAX_EXIT_COPIES:
                    raise self.error(s, f"more than {_MAX_EXIT_COPIES} `if`s that may return, one after another, "
                                        f"each copying the statements after it into both of its branches "
                                        f"(2^{_MAX_EXIT_COPIES + 1} copies): compute a flag and mask the work "
                                        f"with it")
                self.copies += both
                try:
                    self.stmt(ast.copy_location(moved, s))
                finally:
                    self.copies -= both
                return
            self.stmt(s)

    # ---- statements ---------------------------------------------------------------------

    def stmt(self, node):
        self.at(node)
        try:
            method = getattr(self, "stmt_" + type(node).__name__, None)
            if method is None:
                hint = {"While": ": loop with `for i in fl.range(...)` over a bound, carrying a flag that "
                                 "guards the rest of the body (`if` / fl.where)",
                        "Break": ": carry a flag in the loop and guard the rest of the body with it",
                        "Continue": ": guard the rest of the body with an `if`"}.get(type(node).__name__, "")
                raise self.error(node, f"`{type(node).__name__}` statements are not supported in kernels{hint}")
            method(node)
        except (CompilationError, _Return):
            raise
        except Exception as e:  # noqa: BLE001  (at the kernel's line: error_from)
            raise self.error_from(node, e) from None

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Pass(self, node):
        pass

    def assign_to(self, target, value, node):
        if isinstance(target, ast.Name):
            self.note_type(target.id, value, node)
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = list(value) if isinstance(value, (tuple, list)) else None
            elts = target.elts
            star = [i for i, t in enumerate(elts) if isinstance(t, ast.Starred)]
            if values is not None and len(star) == 1 and len(values) >= len(elts) - 1:   # a, *rest = values
                i, rest = star[0], len(values) - len(elts) + 1
                values = values[:i] + [tuple(values[i:i + rest])] + values[i + rest:]
                elts = elts[:i] + [elts[i].value] + elts[i + 1:]
            if values is None or len(values) != len(elts):
                raise self.error(node, f"cannot unpack {_what(value)} into {len(target.elts)} names")
            for t, v in zip(elts, values):
                self.assign_to(t, v, node)
        else:
            raise self.error(node, "only names and tuples of names can be assigned")

    def stmt_Assign(self, node):
        value = self.expr(node.value)
        for t in node.targets:
            self.assign_to(t, value, node)

    def stmt_AnnAssign(self, node):
        if node.value is not None:           # (`x: int` alone declares nothing a kernel keeps, as in Python)
            self.assign_to(node.target, self.expr(node.value), node)

    def stmt_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, f"`{ast.unparse(node)}`: augmented assignment updates a name; write to memory "
                                   f"with fl.store")
        name = node.target.id
        value = self.binop(type(node.op), self.lookup(name, node), self.expr(node.value), node)
        self.note_type(name, value, node)
        self.scope[name] = value

    def note_type(self, name, value, node):
        """Notes the assignment `node` of a loop-carried name that gives it another type than it carries."""
        found = self.carried.get(name)
        if found is not None:
            other = [sem.is_value(v) and v.type != found[0] for v in (self.scope.get(name), value)]
            if other == [False, True]:
                found[1] = node

    def stmt_Assert(self, node):
        test = self.expr(node.test)
        if sem.is_value(test):
            raise self.error(node, "assert needs a condition known at compile time")
        if not test:
            msg = self.expr(node.msg) if node.msg is not None else "assertion failed"
            raise self.error(node, str(msg))

    def stmt_Return(self, node):
        raise _Return(self.expr(node.value) if node.value is not None else None, node)

    def stmt_If(self, node):
        test = self.expr(node.test)
        if not sem.is_value(test):
            self.block(node.body if test else node.orelse)
            return
        if sem.is_tile(test):
            raise self.error(node, "an `if` on a tile is ambiguous; use fl.where")
        cond = sem.convert(self.b, test, "i1")
        before = dict(self.scope)
        names = assigned_names(node.body + node.orelse)

        def branch(stmts):
            self.scope = dict(before)
            returned = False
            with self.b.capture() as lines, self.b.nested():
                try:
                    self.block(stmts)
                except _Return as r:      # the branch ends the function (block() moved the rest in)
                    if self.loops:
                        raise self.error(r.node, "`return` inside a loop under a runtime condition is not "
                                                 "supported; compute a flag and mask the work with it") from None
                    if r.value is not None and self.is_kernel:
                        raise self.error(r.node, "a kernel returns nothing; write results with fl.store")
                    if r.value is not None:
                        raise self.error(r.node, "a function returns a value from inside a runtime `if`: "
                                                 "assign it in both branches (or use fl.where) and return "
                                                 "it once after the `if`") from None
                    returned = True
            return lines, dict(self.scope), returned

        then_lines, then_scope, then_returned = branch(node.body)
        else_lines, else_scope, else_returned = branch(node.orelse)
        if then_returned or else_returned:
            names = []                    # nothing follows this `if` in its function: no results
        results, same = [], {}
        missing = object()               # (not None: `r = None` before the `if` is a value)
        for n in names:
            a, c = then_scope.get(n, missing), else_scope.get(n, missing)
            if a is before.get(n, missing) and c is before.get(n, missing):
                continue
            if a is missing or c is missing:    # (a global of that name is not what the branch meant either)
                same[n] = _NoValue(n, "is assigned in only one branch of a runtime `if`: it has no value after "
                                      "it (assign it before the `if`, or in both branches)")
                continue
            if isinstance(a, _NoValue) or isinstance(c, _NoValue):
                same[n] = a if isinstance(a, _NoValue) else c     # (a loop's variable in a branch, say)
                continue
            if not sem.is_value(a) and not sem.is_value(c) and _same_python_value(a, c):
                same[n] = a               # one Python value whichever branch runs: it holds after the `if`
                continue
            if not (sem.is_value(a) or sem.is_value(c)) and not (_is_number(a) and _is_number(c)):
                same[n] = _NoValue(n, "is a different Python value in each branch of a runtime `if`")
                continue
            if not (sem.is_value(a) or _is_number(a)) or not (sem.is_value(c) or _is_number(c)):
                other = c if sem.is_value(a) else a       # (None before the `if`, say: no value to merge with)
                same[n] = _NoValue(n, f"is a kernel value in one branch of a runtime `if` and "
                                      f"{type(other).__name__} in the other: it has no value after it")
                continue
            results.append(n)            # (two numbers: a run-time value of their promoted type, `r = 0; if c: r = 1`)
        # Yields: make both sides kernel values of one type; a Python number beside a kernel number, their
        # promoted type, as an operation of the two would have (`v = 0.5` beside an i32 `n`: f32, not 0).
        types = []
        for n in results:
            a, c = then_scope[n], else_scope[n]
            if not (sem.is_value(a) or sem.is_value(c)):      # two numbers
                types.append(sem.common_type(a, c))
                continue
            t = (a if sem.is_value(a) else c).type
            if not (sem.is_value(a) and sem.is_value(c)) and not isinstance(t, PtrType):
                t = sem.common_type(a, c)
            elif sem.is_tile(c) and isinstance(t, ScalarType) and c.type.dtype == t.dtype:
                t = c.type                # (a scalar beside a tile of its dtype: broadcast, below)
            types.append(t)
        self.scope = dict(before)

        def materialize(lines, scope):
            out = []
            with self.b.capture() as extra, self.b.nested():
                for n, t in zip(results, types):
                    v = scope[n]
                    if not sem.is_value(v):
                        v = sem.to_value(self.b, v, t.dtype)
                    elif not sem.is_value(then_scope[n] if scope is else_scope else else_scope[n]):
                        v = sem.convert(self.b, v, t.dtype)      # (to the type promoted with the other's number)
                    if isinstance(t, TileType) and isinstance(v.type, ScalarType) and v.type.dtype == t.dtype:
                        v = sem.broadcast_to(self.b, v, t.shape)  # (a number or scalar beside a tile)
                    if v.type != t:
                        raise self.error(node, f"`{n}` has type {v.type!r} in one branch and {t!r} in the other")
                    out.append(v)
                if out:
                    self.b.emit(f"scf.yield {', '.join(v.name for v in out)} : "
                                f"{', '.join(t.mlir() for t in types)}")
            return lines + extra

        then_lines = materialize(then_lines, then_scope)
        else_lines = materialize(else_lines, else_scope)
        res = [Value(self.b.fresh("if"), t) for t in types]
        head = (f"{', '.join(r.name for r in res)} = " if res else "") + f"scf.if {cond.name}"
        if types:
            head += f" -> ({', '.join(t.mlir() for t in types)})"
        self.b.emit(head + " {")
        self.b.lines.extend(then_lines)
        if else_lines or types:
            self.b.emit("} else {")
            self.b.lines.extend(else_lines)
        self.close(node)
        for n, r in zip(results, res):
            self.scope[n] = r
        self.scope.update(same)

    def stmt_For(self, node):
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(node, "loops are `for i in fl.range(...)` or `for i in fl.static_range(n)`")
        fn = self.expr(it.func)
        if it.keywords and fn in (fl.range, fl.static_range, range):   # (dropped: `step=2` ran every step)
            names = ", ".join(f"{k.arg}=" if k.arg else "**" for k in it.keywords)
            raise self.error(node, f"`{ast.unparse(it.func)}` takes its bounds as positional arguments only, "
                                   f"got {names}")
        args = [self.expr(a) for a in it.args]
        if node.orelse:
            raise self.error(node, "for ... else is not supported")
        if fn in (fl.static_range, range):
            if any(sem.is_value(a) for a in args):
                raise self.error(node, f"`{ast.unparse(it.func)}` is unrolled when the kernel compiles and needs "
                                       "compile-time bounds; loop over run-time bounds with fl.range(...)")
            self.loops += 1
            try:
                for i in range(*args):
                    self.assign_to(node.target, i, node)
                    self.block(node.body)
            finally:
                self.loops -= 1
            return
        if fn is not fl.range:
            raise self.error(node, "loops are `for i in fl.range(...)` or `for i in fl.static_range(n)`")
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "the loop variable must be a name")
        if len(args) == 1:
            args = [0] + args
        if len(args) == 2:
            args = args + [1]
        if len(args) != 3:
            raise self.error(node, f"fl.range takes 1 to 3 bounds, got {len(args)}")
        for a in args:
            if not (sem.is_value(a) and isinstance(a.type, ScalarType) and a.type.dtype in ("i1", "i8", "i32", "i64")) \
                    and not isinstance(a, int):
                raise self.error(node, f"fl.range's bounds are integer scalars, got {a!r}")
        if not sem.is_value(args[2]) and args[2] == 0:
            raise self.error(node, "fl.range's step must not be 0")
        dtype = "i64" if any(sem.is_value(a) and a.type.dtype == "i64" for a in args) or \
            any(not sem.is_value(a) and not -2**31 <= a < 2**31 for a in args) else "i32"
        lb, ub, step = (sem.convert(self.b, sem.to_value(self.b, int(a) if isinstance(a, bool) else a, dtype), dtype)
                        for a in args)
        # A constant step above 1 in i32: the last `iv + step` may pass 2**31 and wrap (another round, or no end)
        # unless the end is a constant far enough below it; counted then too, its rounds in i32 for a step of 3
        # or more (fewer than 2**31 of them; fakv-pipeline takes i32 loops).
        may_wrap = not sem.is_value(args[2]) and args[2] > 1 and dtype == "i32" and not (
            not sem.is_value(args[1]) and args[1] + args[2] < 2**31)
        counted = sem.is_value(args[2]) or args[2] < 0 or may_wrap
        var_dtype = dtype
        if counted:      # a run-time, negative or wrapping step (scf.for's must be positive): k in [0, trips),
            # lb + k * step, counted in i64 (an i32 range's span needs 33 bits) unless fewer rounds fit i32
            b, dtype = self.b, "i32" if may_wrap and args[2] > 2 else "i64"
            first, last, by = (sem.convert(b, v, "i64") for v in (lb, ub, step))
            up = sem.compare(b, "gt", by, 0)
            span = sem.select(b, up, sem.binary(b, "sub", last, first), sem.binary(b, "sub", first, last))
            stride = sem.select(b, up, by, sem.negate(b, by))
            zero = sem.compare(b, "eq", by, 0)              # (Python refuses a step of 0: no iteration here)
            stride = sem.select(b, zero, 1, stride)
            # (span - 1) // stride + 1 for a positive span: no overflow past the span itself
            trips = sem.binary(b, "add", sem.binary(b, "floordiv", sem.binary(b, "sub", span, 1), stride), 1)
            trips = sem.select(b, sem.binary(b, "or", zero, sem.compare(b, "le", span, 0)), 0, trips)
            lb, ub, step = sem.to_value(b, 0, dtype), sem.convert(b, trips, dtype), sem.to_value(b, 1, dtype)
        before = dict(self.scope)
        # A carried name that a round leaves without a value (the variable of a fl.range loop inside this one,
        # not assigned after it) has none to carry into the next round: the body is made again without it,
        # the name unreadable from the round's start (Python's would be that loop's last value).
        dead, counter = {}, (first, by, var_dtype) if counted else None
        while isinstance(made := self._loop_body(node, before, dead, dtype, counter), dict):
            dead.update(made)
        carried, inits, init_lines, iv, iters, lines = made
        self.b.lines.extend(init_lines)
        res = [Value(self.b.fresh("for"), v.type) for v in inits]
        head = (f"{', '.join(r.name for r in res)} = " if res else "")
        head += f"scf.for {iv.name} = {lb.name} to {ub.name} step {step.name}"
        if inits:
            head += " iter_args(" + ", ".join(f"{a.name} = {v.name}" for a, v in zip(iters, inits)) + ")"
            head += f" -> ({', '.join(v.type.mlir() for v in inits)})"
        self.b.emit(head + f" : {dtype} {{")
        self.b.lines.extend(lines)
        self.close(node)
        self.scope = dict(before)
        for n, r in zip(carried, res):
            self.scope[n] = r
        self.scope.update(dead)
        # Names the body assigns that were not there before it: no value after the loop (not a global either).
        for n in assigned_names(node.body):
            if n not in before:
                self.scope[n] = _NoValue(n, "is assigned only inside a fl.range loop: it has no value after the "
                                            "loop (assign it before the loop to carry it)")
        # Python leaves the variable at its last value, which an scf.for does not give back: not visible after.
        self.scope[node.target.id] = _NoValue(node.target.id, "is a fl.range loop's variable: after the loop it "
                                              "has no value (Python's last value is not kept); compute it from "
                                              "the bounds")

    def _loop_body(self, node, before, dead, dtype, counter):
        """One try at a fl.range loop's body, carrying the names assigned in it that were there before (less
        `dead`): (carried, inits, their lines, iv, iter args, the body's lines with its yield), or the carried
        names a round leaves without a value ({name: _NoValue})."""
        carried = [n for n in assigned_names(node.body)
                   if n in before and n != node.target.id and n not in dead and not isinstance(before[n], _NoValue)]
        inits = []
        with self.b.capture() as init_lines:
            for n in carried:
                v = before[n]
                if isinstance(v, (tuple, list, dict)):
                    raise self.error(node, f"`{n}` is a {type(v).__name__} assigned in this fl.range loop: a loop "
                                           f"carries single values, not tuples; carry each under its own name")
                if not sem.is_value(v):
                    v = sem.to_value(self.b, v)
                inits.append(v)
        iv = Value(self.b.fresh("iv"), ScalarType(dtype))
        iters = [Value(self.b.fresh("it"), v.type) for v in inits]
        self.scope = dict(before)
        for n, a in zip(carried, iters):
            self.scope[n] = a
        self.scope.update(dead)
        self.scope[node.target.id] = iv
        outer, self.carried = self.carried, {n: [a.type, None] for n, a in zip(carried, iters)}
        with self.b.capture() as lines, self.b.nested():
            if counter:                    # the variable counted from `first` by `by`
                first, by, var_dtype = counter
                self.scope[node.target.id] = sem.convert(
                    self.b, sem.binary(self.b, "add", first, sem.binary(self.b, "mul", iv, by)), var_dtype)
            self.loops += 1
            try:
                self.block(node.body)
            except _Return as r:
                raise self.error(r.node, "`return` inside an fl.range loop is not supported (a loop's body runs "
                                         "whole every trip); compute a flag and mask the work with it") from None
            finally:
                self.loops -= 1
                changed, self.carried = self.carried, outer
            unset = {n: self.scope[n] for n in carried if isinstance(self.scope[n], _NoValue)}
            if unset:
                return unset
            outs = []
            for n, a in zip(carried, iters):
                v = self.scope[n]
                if not sem.is_value(v) and isinstance(a.type, (ScalarType, TileType)) and \
                        sem.promote(sem.literal_dtype(v, a.type.dtype), a.type.dtype) != a.type.dtype:
                    raise self.error(last_assignment(node.body, n) or node,
                                     f"loop-carried `{n}` is {a.type!r} before the loop, and the {v!r} assigned "
                                     f"in it does not fit {a.type.dtype}: start it with a value of a type that "
                                     f"holds both (1.0 rather than 1, say)")
                if not sem.is_value(v):
                    v = sem.to_value(self.b, v, a.type.dtype)
                if v.type != a.type:
                    raise self.error(changed[n][1] or last_assignment(node.body, n) or node,
                                     f"loop-carried `{n}` changes type from {a.type!r} to {v.type!r}")
                outs.append(v)
            if outs:
                self.b.emit(f"scf.yield {', '.join(v.name for v in outs)} : "
                            f"{', '.join(v.type.mlir() for v in outs)}")
        return carried, inits, init_lines, iv, iters, lines

    # ---- expressions --------------------------------------------------------------------------

    def lookup(self, name, node):
        if name in self.scope:
            if isinstance(self.scope[name], _NoValue):
                raise self.error(node, f"`{name}` {self.scope[name].why}")
            return self.scope[name]
        code = self.f.fn.__code__
        if name in code.co_freevars:                      # a closure's variable, before a global of that name
            try:
                return self.f.fn.__closure__[code.co_freevars.index(name)].cell_contents
            except ValueError:
                raise self.error(node, f"`{name}` (a closure's variable) has no value yet") from None
        if name in code.co_varnames:         # a local of the kernel, not yet assigned: Python's UnboundLocalError
            raise self.error(node, f"`{name}` is read before it is assigned (the kernel assigns it, so it is a "
                                   f"local name, not a global or builtin; a name assigned inside a loop or a "
                                   f"runtime `if` is only visible there unless it is defined before)")
        if name in self.f.globals:
            return self.f.globals[name]
        import builtins
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"`{name}` is not defined (a name assigned inside a loop or a runtime `if` is "
                               f"only visible there unless it is defined before)")

    def expr(self, node):
        self.at(node)
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"`{type(node).__name__}` expressions are not supported in kernels")
        try:
            v = method(node)
        except (CompilationError, _Return):
            raise
        except Exception as e:  # noqa: BLE001
            raise self.error_from(node, e) from None
        # An fl.constexpr wherever it is reached (a name, `cfg.FLAG`, `FLAGS[0]`): its value (the object is
        # always true, and equal to nothing but itself); a numpy scalar: its Python number.
        return _python_number(v.value if isinstance(v, fl.constexpr) else v)

    def expr_Constant(self, node):
        return node.value

    def expr_JoinedStr(self, node):
        """An f-string of compile-time values (an assert's message)."""
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            value = self.expr(part.value)
            if sem.is_value(value):
                raise self.error(part, "an f-string formats compile-time values only (a kernel value has no "
                                       "text at compile time)")
            value = {115: str, 114: repr, 97: ascii}.get(part.conversion, lambda x: x)(value)
            spec = self.expr(part.format_spec) if part.format_spec is not None else ""
            parts.append(format(value, spec))
        return "".join(parts)

    def expr_Name(self, node):
        return self.lookup(node.id, node)

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_Slice(self, node):
        """`a:b:c` in a compile-time subscript (`SHAPE[1:]`); tiles take only `:` (expr_Subscript)."""
        parts = [None if e is None else self.expr(e) for e in (node.lower, node.upper, node.step)]
        if any(sem.is_value(p) for p in parts):
            raise self.error(node, "a slice's bounds are compile-time ints (a slice of a constexpr tuple)")
        return slice(*parts)

    def expr_Attribute(self, node):
        base = self.expr(node.value)
        if sem.is_value(base):
            if node.attr == "shape" and sem.is_tile(base):
                return base.type.shape
            if node.attr == "dtype":
                return base.type.dtype
            if node.attr in ("to", "reshape"):
                return _Method(getattr(fl, "cast" if node.attr == "to" else "reshape"), base)
            raise self.error(node, f"kernel values have no attribute `{node.attr}`")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.error(node, f"`{ast.unparse(node.value)}` has no attribute `{node.attr}`") from None

    def binop(self, op, x, y, node):
        if op is ast.Pow and not sem.is_value(x) and not sem.is_value(y):
            return x ** y                                   # (Python numbers: at compile time)
        name = BINOPS.get(op)
        if name is None:
            raise self.error(node, f"operator {op.__name__} is not supported on kernel values"
                                   + (" (fl.exp / fl.log, or a product)" if op is ast.Pow else ""))
        if not sem.is_value(x) and not sem.is_value(y):
            return {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
                    "floordiv": lambda: x // y, "mod": lambda: x % y, "truediv": lambda: x / y,
                    "and": lambda: x & y, "or": lambda: x | y, "xor": lambda: x ^ y,
                    "lshift": lambda: x << y, "rshift": lambda: x >> y}[name]()
        return sem.binary(self.b, name, x, y)

    def expr_BinOp(self, node):
        return self.binop(type(node.op), self.expr(node.left), self.expr(node.right), node)

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            return sem.negate(self.b, v)
        if isinstance(node.op, ast.Not):
            if sem.is_value(v):
                return sem.compare(self.b, "eq", sem.convert(self.b, v, "i1"), False)
            return not v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert):
            if not sem.is_value(v):
                return ~v
            if sem.dtype_of(v) in ("i1", "f16", "bf16", "f32"):
                raise self.error(node, f"`~` inverts the bits of an integer, got {v.type!r} (`not` for a truth "
                                       f"value)")
            return sem.binary(self.b, "xor", v, -1)
        raise self.error(node, "unsupported unary operator")

    def expr_Compare(self, node):
        """`a < b`, and a chain `a < b < c` as (a < b) and (b < c), each operand evaluated once, first."""
        values = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        out = True
        for op, x, y in zip(node.ops, values, values[1:]):
            r = self.compare(type(op), x, y, node)
            if not sem.is_value(out):
                out = r if out else out
            elif not sem.is_value(r):
                out = out if r else False
            else:
                out = sem.binary(self.b, "and", out, r)
        return out

    def compare(self, op, x, y, node):
        if op in (ast.Is, ast.IsNot):
            return (x is y) if op is ast.Is else (x is not y)
        if op in (ast.In, ast.NotIn):        # membership: of compile-time values only
            if _holds_value(x) or _holds_value(y):
                raise self.error(node, "`in` / `not in` test compile-time values (constexprs, numbers, tuples, "
                                       "strings); a run-time value has no membership test (compare with `==`)")
            try:
                return (x in y) if op is ast.In else (x not in y)
            except TypeError as e:
                raise self.error(node, f"`in`: {e}") from None
        name = CMPOPS.get(op)
        if name is None:
            raise self.error(node, "unsupported comparison")
        if not sem.is_value(x) and not sem.is_value(y):
            if _holds_value(x) or _holds_value(y):   # ((i, j) == (0, 0) compared the values' identities)
                raise self.error(node, "a tuple holding run-time values is not compared at compile time: "
                                       "compare its elements (`i == 0 and j == 0`)")
            return PYCMP[name](x, y)
        return sem.compare(self.b, name, x, y)

    def expr_BoolOp(self, node):
        """`a and b`, `a or b`: Python's short circuit, at compile time on Python values, and at run time on
        scalars (the right side runs in an scf.if only where the left does not decide: `i < n and X[i] > 0`
        reads X[i] only when i < n); the result is the operand that decided, as in Python (in the two
        operands' promoted type). On tiles, both sides elementwise as truth values (as `&` and `|`)."""
        is_and = isinstance(node.op, ast.And)
        first = self.expr(node.values[0])
        rest = node.values[1:]
        if not rest:
            return first
        tail = rest[0] if len(rest) == 1 else ast.copy_location(ast.BoolOp(op=node.op, values=rest), rest[0])
        if not sem.is_value(first):
            return first if bool(first) != is_and else self.expr(tail)
        cond = sem.convert(self.b, first, "i1")
        if sem.is_tile(cond):
            other = self.expr(tail)
            if not sem.is_value(other):
                other = bool(other)
            other = sem.convert(self.b, sem.to_value(self.b, other, "i1"), "i1")
            return sem.binary(self.b, "and" if is_and else "or", cond, other)
        with self.b.capture() as decide, self.b.nested():     # the right side, where the left does not decide
            other = self.expr(tail)
            if sem.is_tile(other) or (sem.is_value(other) and not isinstance(other.type, ScalarType)):
                raise self.error(node, "`and` / `or` of a scalar and a tile: use `&` / `|` (elementwise)")
            other = sem.to_value(self.b, other, sem.literal_dtype(other, sem.dtype_of(first)))
            t = sem.promote(sem.dtype_of(first), sem.dtype_of(other))
            other = sem.convert(self.b, other, t)
            self.b.emit(f"scf.yield {other.name} : {t}")
        with self.b.capture() as decided, self.b.nested():    # the left decides: the left is the result
            left = sem.convert(self.b, first, t)
            self.b.emit(f"scf.yield {left.name} : {t}")
        out = Value(self.b.fresh("if"), ScalarType(t))
        self.b.emit(f"{out.name} = scf.if {cond.name} -> ({t}) {{")
        self.b.lines.extend(decide if is_and else decided)
        self.b.emit("} else {")
        self.b.lines.extend(decided if is_and else decide)
        self.close(node)
        return out

    def expr_IfExp(self, node):
        """`x if c else y`: at compile time on a Python condition; on a run-time scalar, only the arm it picks
        runs, as in Python (`a // b if b != 0 else -1`, `X[i] if i < n else 0.0`: an scf.if), unless neither arm
        computes anything (a select); on a tile, elementwise (both arms, as fl.where)."""
        test = self.expr(node.test)
        if not sem.is_value(test):
            return self.expr(node.body if test else node.orelse)
        if sem.is_tile(test):
            return sem.select(self.b, test, self.expr(node.body), self.expr(node.orelse))
        cond = sem.convert(self.b, test, "i1")
        arms = []
        for arm in (node.body, node.orelse):
            with self.b.capture() as lines, self.b.nested():
                value = self.expr(arm)
            arms.append((lines, value))
        self.at(node)                        # (the scf.if and its yields at the expression, not its last arm)
        (a_lines, a), (c_lines, c) = arms
        if sem.is_tile(a) and sem.is_tile(c) and a.type.shape != c.type.shape:
            # (broadcast to one shape, the arm picked was not what Python gives: a (4,) tile became (4, 4))
            raise self.error(node, f"`{ast.unparse(node)}`: the arms are tiles of shapes {list(a.type.shape)} and "
                                   f"{list(c.type.shape)}: a run-time condition picks between tiles of one shape")
        if not a_lines and not c_lines:
            return sem.select(self.b, cond, a, c)
        try:
            t = sem.common_type(a, c)
        except FakvTypeError as e:
            raise self.error(node, f"`{ast.unparse(node)}`: {e}") from None

        def arm_lines(lines, v):
            with self.b.capture() as extra, self.b.nested():
                v = sem.convert(self.b, sem.to_value(self.b, v, t.dtype), t.dtype) if not isinstance(t, PtrType) \
                    else v
                if isinstance(t, TileType):
                    v = sem.broadcast_to(self.b, v, t.shape)
                self.b.emit(f"scf.yield {v.name} : {t.mlir()}")
            return lines + extra

        out = Value(self.b.fresh("if"), t)
        self.b.emit(f"{out.name} = scf.if {cond.name} -> ({t.mlir()}) {{")
        self.b.lines.extend(arm_lines(a_lines, a))
        self.b.emit("} else {")
        self.b.lines.extend(arm_lines(c_lines, c))
        self.close(node)
        return out

    def expr_Subscript(self, node):
        base = self.expr(node.value)
        if not sem.is_value(base):
            index = self.expr(node.slice)
            if _holds_value(index) and (isinstance(base, (tuple, list, dict, str, bytes, range))
                                        or type(base).__name__ == "ndarray"):
                raise self.error(node, f"a compile-time {type(base).__name__} (a global, a constexpr or a Python "
                                       "value) indexed by a run-time value: pass it to the kernel as a tensor "
                                       "and load from it, or index it with constants")
            return base[index]
        if isinstance(base.type, PtrType):
            if isinstance(node.slice, (ast.Tuple, ast.Slice)):
                raise self.error(node, "a pointer is indexed by one integer offset (`X[i]`: one element); "
                                       "load tiles with fl.load")
            return fl.load_scalar(base, self.expr(node.slice), _b=self.b)
        if not sem.is_tile(base):
            raise self.error(node, f"a scalar ({base.type!r}) cannot be indexed; fl.full(shape, s) makes a tile")
        # tile[:, None]: insert unit dimensions where None is.
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        colons = sum(isinstance(e, ast.Slice) for e in idx)
        if colons > len(base.type.shape):      # (numpy: "too many indices"; `x[:, :]` of a 1-D tile passed)
            raise self.error(node, f"{colons} `:` index a tile of {len(base.type.shape)} dimension"
                                   f"{'s' if len(base.type.shape) != 1 else ''}: one `:` a dimension at most")
        v, dim = base, 0
        for e in idx:
            if isinstance(e, ast.Constant) and e.value is None:
                v = sem.expand_dims(self.b, v, dim)
                dim += 1
            elif isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None:
                dim += 1
            else:
                raise self.error(node, "tiles are indexed only with `:` and `None` (to add dimensions)")
        return v

    def expr_Call(self, node):
        fn = self.expr(node.func)
        args = []
        for a in node.args:
            if not isinstance(a, ast.Starred):
                args.append(self.expr(a))
                continue
            value = self.expr(a.value)            # f(*xs): a tuple (or list) of arguments
            if not isinstance(value, (tuple, list)):
                raise self.error(a, "only a tuple can be passed as *arguments")
            args.extend(value)
        if any(k.arg is None for k in node.keywords):
            raise self.error(node, "**arguments are not supported in kernels")
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        self.at(node)
        if getattr(fn, "__fakv_builtin__", False):
            return fn(*args, _b=self.b, **kwargs)
        if getattr(fn, "__fakv_inline__", False):     # another @fakv.jit function (jitfunction.JITFunction)
            return self.inline(fn, args, kwargs, node)
        if fn in (min, max, len, abs, int, float, bool):
            if _holds_value(args) or _holds_value(kwargs):
                if fn in (min, max) and len(args) >= 2 and not kwargs and not any(
                        isinstance(a, (tuple, list)) for a in args):
                    return self.min_max(fn, args, node)
                if fn is abs and len(args) == 1 and not kwargs:
                    return fl.abs(*args, _b=self.b)
                raise self.error(node, f"{fn.__name__}() of kernel values: use the fl.* functions"
                                       + (" (fl.minimum / fl.maximum, fl.min / fl.max of a tile)"
                                          if fn in (min, max) else ""))
            return fn(*args, **kwargs)
        if isinstance(fn, type) and issubclass(fn, (fl.range, fl.static_range)):
            raise self.error(node, "fl.range and fl.static_range are used only as `for` loop iterables")
        if _holds_value(args) or _holds_value(kwargs):
            # (a tuple of values reaching Python code is a tuple of objects: all((i >= 0, i < n)) was true)
            raise self.error(node, f"`{ast.unparse(node.func)}` is not a fakv function; kernels call "
                                   f"fl.* functions and other @fakv.jit functions")
        return fn(*args, **kwargs)

    def min_max(self, fn, args, node):
        """Python's min / max of two or more arguments, some kernel values: the first argument unless a later
        one compares below (min) or above (max) the one kept, elementwise on tiles (so a NaN is kept only
        where it comes first: min(1.0, nan) is 1.0, min(nan, 1.0) nan, as in Python)."""
        op = "lt" if fn is min else "gt"
        kept = args[0]
        for a in args[1:]:
            try:
                kept = sem.select(self.b, sem.compare(self.b, op, a, kept), a, kept)
            except FakvTypeError as e:
                raise self.error(node, f"{fn.__name__}(): {e}") from None
        return kept

    def inline(self, jitfn, args, kwargs, node):
        """Calls another @fakv.jit function by inlining its body."""
        callee = CodeGen(jitfn.function, self.b)
        bound = inspect.signature(jitfn.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        callee.scope = dict(bound.arguments)
        try:
            callee.block(callee.f.node.body)
        except _Return as r:
            return r.value
        finally:
            self.at(node)
        return None
