"""fakv.kernels: the attention kernels flash_attn_with_kvcache runs,
`fakv.kernels.decode`, `.combine`, `.combine_new` and `.append` (with
`.splits`, the split plan's helpers). Installed, their files sit
here; in a source checkout they are the repository's kernels/ (one copy,
found through this package's __path__); $FAKV_KERNELS names another folder
holding them, searched first."""
from ..cache import kernel_dirs

__path__[:] = kernel_dirs()
