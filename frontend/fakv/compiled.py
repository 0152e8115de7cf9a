"""One specialisation of a kernel (jitfunction.py makes them; prepare.py
makes them too from the cache's index on a warm start)."""


class Compiled:
    """One specialisation: its IR (generated when first asked for: a disk
    cache hit needs none), and the GPU binary or the host module."""

    def __init__(self, name, params, device, make_ir):
        self.name, self.params, self.device = name, params, device
        self._make_ir, self._ir = make_ir, None
        self.binary = self.facts = self.cpu = None
        self.kernel = None  # runtime.GPUKernel, made at the first GPU launch
        self.key = None     # its key in the JITFunction's specialisations (jitfunction.py's)

    @property
    def ir(self):
        if self._ir is None:
            self._ir = self._make_ir()
        return self._ir

    def regenerate(self):
        """The IR generated now (jitfunction's _generate: from the values it
        keys)."""
        self._ir = self._make_ir()
