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
import textwrap

from . import language as fl
from .errors import CompilationError  # noqa: F401  (raised here; fakv.CompilationError)
from . import semantic as sem
from .ir import Builder, FakvTypeError, PtrType, ScalarType, TileType, Value


class _Method:
    """`tile.to(dtype)`, `tile.reshape(shape)`: a builtin bound to a tile."""
    __fakv_builtin__ = True

    def __init__(self, fn, value):
        self.fn, self.value = fn, value

    def __call__(self, *args, _b=None, **kwargs):
        return self.fn(self.value, *args, _b=_b, **kwargs)


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


def _targets(node):
    """The assignment targets of a statement (none for other statements)."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
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
            lines, self.first_line = inspect.getsourcelines(fn)
        self.source = textwrap.dedent("".join(lines))
        self.lines = self.source.splitlines()
        tree = ast.parse(self.source)
        self.node = tree.body[0]
        self.globals = fn.__globals__
        self.params = [a.arg for a in self.node.args.args]


class CodeGen:
    def __init__(self, function, builder=None):
        self.f = function
        self.b = builder or Builder(function.filename)
        self.scope = {}
        self.loops = 0          # loops around the statement being generated, in this function
        self.is_kernel = False  # generating a kernel (kernel()), not a helper being inlined

    # ---- errors and locations -----------------------------------------------------------

    def error(self, node, message):
        line = getattr(node, "lineno", 1)
        src = self.f.lines[line - 1] if 0 < line <= len(self.f.lines) else None
        return CompilationError(message, self.f.filename, line + self.f.first_line - 1, src)

    def at(self, node):
        if hasattr(node, "lineno"):
            self.b.loc = (node.lineno + self.f.first_line - 1, node.col_offset + 1)

    # ---- the kernel ---------------------------------------------------------------------

    def kernel(self, name, arg_types, constexprs, divisibility=None, attributes=()):
        """Emit `func.func @name` for the given parameter types (a Type for
        runtime parameters, absent for constexprs). `divisibility`: the
        runtime parameters known to be multiples of 16 (integers) or 16-byte
        aligned (pointers), marked {fakv.divisibility = 16}. `attributes`:
        more function attributes, as MLIR text."""
        params, header = [], []
        for i, p in enumerate(self.f.params):
            if p in constexprs:
                self.scope[p] = constexprs[p]
                continue
            t = arg_types[p]
            v = Value(f"%{p}", t)
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
                    raise self.error(self.f.node, "a kernel returns nothing; write results with fl.store")
        loc = f'loc("{self.f.filename}":{self.f.node.lineno + self.f.first_line - 1}:1)'
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
                self.stmt(ast.copy_location(moved, s))
                return
            self.stmt(s)

    # ---- statements ---------------------------------------------------------------------

    def stmt(self, node):
        self.at(node)
        try:
            method = getattr(self, "stmt_" + type(node).__name__, None)
            if method is None:
                raise self.error(node, f"`{type(node).__name__}` statements are not supported in kernels")
            method(node)
        except (FakvTypeError, ValueError) as e:
            raise self.error(node, str(e)) from None

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Pass(self, node):
        pass

    def assign_to(self, target, value, node):
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = list(value) if isinstance(value, (tuple, list)) else None
            if values is None or len(values) != len(target.elts):
                raise self.error(node, f"cannot unpack into {len(target.elts)} names")
            for t, v in zip(target.elts, values):
                self.assign_to(t, v, node)
        else:
            raise self.error(node, "only names and tuples of names can be assigned")

    def stmt_Assign(self, node):
        value = self.expr(node.value)
        for t in node.targets:
            self.assign_to(t, value, node)

    def stmt_AnnAssign(self, node):
        self.assign_to(node.target, self.expr(node.value), node)

    def stmt_AugAssign(self, node):
        name = node.target.id
        self.scope[name] = self.binop(type(node.op), self.lookup(name, node), self.expr(node.value), node)

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
        results = []
        for n in names:
            a, c = then_scope.get(n), else_scope.get(n)
            if a is None or c is None or (a is before.get(n) and c is before.get(n)):
                continue
            if not sem.is_value(a) and not sem.is_value(c) and a == c:
                continue
            results.append(n)
        # Yields: make both sides kernel values of one type.
        yields_then, yields_else, types = [], [], []
        for n in results:
            a, c = then_scope[n], else_scope[n]
            t = (a if sem.is_value(a) else c).type if (sem.is_value(a) or sem.is_value(c)) else None
            if t is None:
                raise self.error(node, f"`{n}` is a different Python value in each branch of a runtime `if`")
            types.append(t)
        self.scope = dict(before)

        def materialize(lines, scope):
            out = []
            with self.b.capture() as extra, self.b.nested():
                for n, t in zip(results, types):
                    v = scope[n]
                    if not sem.is_value(v):
                        v = sem.to_value(self.b, v, t.dtype)
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
        self.b.emit("} " + self.b.location())
        for n, r in zip(results, res):
            self.scope[n] = r

    def stmt_For(self, node):
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(node, "loops are `for i in fl.range(...)` or `for i in fl.static_range(n)`")
        fn = self.expr(it.func)
        args = [self.expr(a) for a in it.args]
        if node.orelse:
            raise self.error(node, "for ... else is not supported")
        if fn in (fl.static_range, range):
            if any(sem.is_value(a) for a in args):
                raise self.error(node, "static_range needs compile-time bounds")
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
        lb, ub, step = (sem.convert(self.b, sem.to_value(self.b, a, "i32"), "i32") for a in args)
        before = dict(self.scope)
        carried = [n for n in assigned_names(node.body) if n in before and n != node.target.id]
        inits = []
        for n in carried:
            v = before[n]
            if not sem.is_value(v):
                v = sem.to_value(self.b, v)
            inits.append(v)
        iv = Value(self.b.fresh("iv"), ScalarType("i32"))
        iters = [Value(self.b.fresh("it"), v.type) for v in inits]
        self.scope = dict(before)
        for n, a in zip(carried, iters):
            self.scope[n] = a
        self.scope[node.target.id] = iv
        with self.b.capture() as lines, self.b.nested():
            self.loops += 1
            try:
                self.block(node.body)
            except _Return as r:
                raise self.error(r.node, "`return` inside a loop under a runtime condition is not supported; "
                                         "compute a flag and mask the work with it") from None
            finally:
                self.loops -= 1
            outs = []
            for n, a in zip(carried, iters):
                v = self.scope[n]
                if not sem.is_value(v):
                    v = sem.to_value(self.b, v, a.type.dtype)
                if v.type != a.type:
                    raise self.error(last_assignment(node.body, n) or node,
                                     f"loop-carried `{n}` changes type from {a.type!r} to {v.type!r}")
                outs.append(v)
            if outs:
                self.b.emit(f"scf.yield {', '.join(v.name for v in outs)} : "
                            f"{', '.join(v.type.mlir() for v in outs)}")
        res = [Value(self.b.fresh("for"), v.type) for v in inits]
        head = (f"{', '.join(r.name for r in res)} = " if res else "")
        head += f"scf.for {iv.name} = {lb.name} to {ub.name} step {step.name}"
        if inits:
            head += " iter_args(" + ", ".join(f"{a.name} = {v.name}" for a, v in zip(iters, inits)) + ")"
            head += f" -> ({', '.join(v.type.mlir() for v in inits)})"
        self.b.emit(head + " : i32 {")
        self.b.lines.extend(lines)
        self.b.emit("} " + self.b.location())
        self.scope = dict(before)
        for n, r in zip(carried, res):
            self.scope[n] = r

    # ---- expressions --------------------------------------------------------------------------

    def lookup(self, name, node):
        if name in self.scope:
            return self.scope[name]
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
            return method(node)
        except (FakvTypeError, ValueError) as e:
            raise self.error(node, str(e)) from None

    def expr_Constant(self, node):
        return node.value

    def expr_Name(self, node):
        v = self.lookup(node.id, node)
        return v.value if isinstance(v, fl.constexpr) else v

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

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
        name = BINOPS.get(op)
        if name is None:
            raise self.error(node, f"operator {op.__name__} is not supported")
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
        raise self.error(node, "unsupported unary operator")

    def expr_Compare(self, node):
        if len(node.ops) != 1:
            raise self.error(node, "chained comparisons are not supported")
        x, y = self.expr(node.left), self.expr(node.comparators[0])
        op = type(node.ops[0])
        if op in (ast.Is, ast.IsNot):
            return (x is y) if op is ast.Is else (x is not y)
        name = CMPOPS.get(op)
        if name is None:
            raise self.error(node, "unsupported comparison")
        if not sem.is_value(x) and not sem.is_value(y):
            return PYCMP[name](x, y)
        return sem.compare(self.b, name, x, y)

    def expr_BoolOp(self, node):
        values = []
        for v in node.values:     # Python's short circuit while the operands are Python values (constexprs)
            values.append(self.expr(v))
            if not any(sem.is_value(x) for x in values) and bool(values[-1]) != isinstance(node.op, ast.And):
                return values[-1]
        if not any(sem.is_value(v) for v in values):
            out = values[0]
            for v in values[1:]:
                out = (out and v) if isinstance(node.op, ast.And) else (out or v)
            return out
        op = "and" if isinstance(node.op, ast.And) else "or"
        out = sem.convert(self.b, sem.to_value(self.b, values[0], "i1"), "i1")
        for v in values[1:]:
            out = sem.binary(self.b, op, out, sem.convert(self.b, sem.to_value(self.b, v, "i1"), "i1"))
        return out

    def expr_IfExp(self, node):
        test = self.expr(node.test)
        if not sem.is_value(test):
            return self.expr(node.body if test else node.orelse)
        return sem.select(self.b, test, self.expr(node.body), self.expr(node.orelse))

    def expr_Subscript(self, node):
        base = self.expr(node.value)
        if not sem.is_value(base):
            return base[self.expr(node.slice)]
        if isinstance(base.type, PtrType):
            return fl.load_scalar(base, self.expr(node.slice), _b=self.b)
        # tile[:, None]: insert unit dimensions where None is.
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
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
        if getattr(fn, "__fakv_inline__", False):     # another @fakv.jit function (jit.JITFunction)
            return self.inline(fn, args, kwargs, node)
        if fn in (min, max, len, abs, int, float, bool):
            if any(sem.is_value(a) for a in args):
                if fn in (min, max) and len(args) == 2:
                    return sem.binary(self.b, "min" if fn is min else "max", *args)
                raise self.error(node, f"{fn.__name__}() of kernel values: use the fl.* functions")
            return fn(*args, **kwargs)
        if isinstance(fn, type) and issubclass(fn, (fl.range, fl.static_range)):
            raise self.error(node, "fl.range and fl.static_range are used only as `for` loop iterables")
        if any(sem.is_value(a) for a in list(args) + list(kwargs.values())):
            raise self.error(node, f"`{ast.unparse(node.func)}` is not a fakv function; kernels call "
                                   f"fl.* functions and other @fakv.jit functions")
        return fn(*args, **kwargs)

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
