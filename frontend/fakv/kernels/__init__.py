"""fakv.kernels: the attention kernels flash_attn_with_kvcache runs,
`fakv.kernels.decode`, `.combine` and `.append`. Installed, their files sit
here; in a source checkout they are the repository's kernels/ (one copy,
found through this package's __path__); $FAKV_KERNELS names another folder
holding them, searched first."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("FAKV_KERNELS"):
    __path__.insert(0, os.environ["FAKV_KERNELS"])
if not os.path.exists(os.path.join(_HERE, "decode.py")):
    __path__.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))), "kernels"))
