"""fakv used from several threads, in forked children and by a process exiting with a daemon thread inside it
(session 58's review, each case reproduced before its fix). Each runs in a fresh interpreter: a fork or an exit
inside pytest's own process would take it along."""
import os
import subprocess
import sys
import textwrap

FRONTEND = os.path.join(os.path.dirname(__file__), "..", "..", "frontend")

KERNEL = """
import os, sys, threading, time
import numpy as np
import fakv, fakv.language as fl

@fakv.jit
def doubled(X, Y, n, BLOCK: fl.constexpr):
    i = fl.program_id(0) * BLOCK
    x = fl.load(X, (BLOCK,), (i,), (1,), bounds=(n,))
    fl.store(Y, x * 2.0, (i,), (1,), bounds=(n,))

n = 1 << 18
x = np.arange(n, dtype=np.float32); y = np.zeros(n, np.float32)
def launch():
    doubled[(n // 256,)](x, y, n, BLOCK=256)
"""


def run(tmp_path, body, timeout=240):
    """The kernel above and `body`, as a script (fakv compiles a kernel from its file), run in a new process."""
    script = tmp_path / "script.py"
    script.write_text(KERNEL + textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=os.path.abspath(FRONTEND), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=timeout)


def test_a_process_exiting_with_a_daemon_thread_in_a_cpu_launch_exits_cleanly(tmp_path):
    """The interpreter exiting while a daemon thread is inside a CPU-path launch (the GIL released) aborted the
    process (rc 134, "terminate called without an active exception": the thread was ended by unwinding when it
    took the GIL back, through pybind11's noexcept destructor). fakv waits at exit for the launch running and
    starts no other."""
    out = run(tmp_path, """
        launch()
        def loop():
            while True:
                launch()
        threading.Thread(target=loop, daemon=True).start()
        time.sleep(0.3)
        print("main exits", flush=True)
    """)
    assert out.returncode == 0 and out.stdout == "main exits\n" and "terminate" not in out.stderr, out


def test_a_child_forked_during_another_threads_cpu_launches_can_launch(tmp_path):
    """fork() while another thread is inside a CPU-path launch: the child inherited the module's call lock held
    by a thread it does not have, and hung at its first launch (38 of 100 children). Every child launches and
    gets the right answer."""
    out = run(tmp_path, """
        launch()
        stop = False
        def busy():
            while not stop:
                launch()
        t = threading.Thread(target=busy); t.start()
        hung = wrong = 0
        for i in range(12):
            time.sleep(0.002 * (i % 5))
            pid = os.fork()
            if pid == 0:
                import faulthandler; faulthandler.dump_traceback_later(20, exit=True)   # (exits 1: hung)
                y2 = np.zeros(n, np.float32)
                doubled[(n // 256,)](x, y2, n, BLOCK=256)
                os._exit(0 if (y2 == 2 * x).all() else 3)
            _, st = os.waitpid(pid, 0)
            hung += os.WEXITSTATUS(st) == 1
            wrong += os.WEXITSTATUS(st) == 3
        stop = True; t.join()
        print(hung, wrong)
    """)
    assert out.returncode == 0 and out.stdout.split() == ["0", "0"], out


def test_a_child_forked_after_parallel_compiles_compiles_in_parallel(tmp_path):
    """The compiling threads (prepare.specialise_all's pool) made in the parent are not in a forked child: its
    pool waited for ever on threads it believed it had. The child makes its own."""
    out = run(tmp_path, """
        from fakv import prepare
        from concurrent.futures import ThreadPoolExecutor
        jobs = [(doubled, (x, y, n), dict(BLOCK=b)) for b in (64, 128)]
        prepare.specialise_all(jobs, index=None)
        assert prepare._POOL is not None
        pid = os.fork()
        if pid == 0:
            import faulthandler; faulthandler.dump_traceback_later(60, exit=True)
            found = prepare.specialise_all([(doubled, (x, y, n), dict(BLOCK=b)) for b in (32, 512)], index=None)
            os._exit(0 if [c.cache for c in found] == ["cpu", "cpu"] else 3)
        _, st = os.waitpid(pid, 0)
        print(os.WEXITSTATUS(st))
    """)
    assert out.returncode == 0 and out.stdout.strip() == "0", out


def test_a_child_forked_while_another_thread_compiles_collects_garbage(tmp_path):
    """fork() while another thread compiles (the collector paused, fakv._GCPaused): the child kept the pause of
    a thread it does not have, and never collected again. The child's collector is on."""
    out = run(tmp_path, """
        import gc
        from fakv import _gc_paused, _GCPaused
        inside, leave = threading.Event(), threading.Event()
        def hold():
            with _gc_paused:
                inside.set(); leave.wait()
        t = threading.Thread(target=hold); t.start(); inside.wait()
        assert not gc.isenabled()
        pid = os.fork()
        if pid == 0:
            launch()
            os._exit(0 if gc.isenabled() and _GCPaused._depth == 0 else 3)
        _, st = os.waitpid(pid, 0)
        leave.set(); t.join()
        print(os.WEXITSTATUS(st), gc.isenabled())
    """)
    assert out.returncode == 0 and out.stdout.split() == ["0", "True"], out


def test_an_atexit_function_of_the_programs_may_launch(tmp_path):
    """An atexit function the program registered before fakv's (fakv._fakv is imported at the first compile)
    runs after it: its launch waited for ever, as another thread's launch at exit does. The exiting thread
    goes on."""
    out = run(tmp_path, """
        import atexit
        def final():
            y[:] = 0
            launch()
            print("atexit launched", y[1], flush=True)
        atexit.register(final)
        launch()
        print("main exits", flush=True)
    """, timeout=120)
    assert out.returncode == 0 and out.stdout == "main exits\natexit launched 2.0\n", out


def test_an_atexit_function_may_compile_several_kernels(tmp_path):
    """An atexit function whose call needs several kernels compiled: they went to the compiling threads, which
    cannot start at interpreter exit ("can't register atexit after shutdown"): the call raised. They are
    compiled in the exiting thread."""
    out = run(tmp_path, """
        import atexit
        from fakv import prepare
        def final():
            found = prepare.specialise_all([(doubled, (x, y, n), dict(BLOCK=b)) for b in (32, 512)], index=None)
            print("atexit compiled", [c.cache for c in found], flush=True)
        atexit.register(final)
        import fakv._fakv            # (its atexit function registered after final: runs before it)
        print("main exits", flush=True)
    """, timeout=120)
    assert out.returncode == 0 and out.stdout == "main exits\natexit compiled ['cpu', 'cpu']\n", out
