"""Makes torch.distributed's "ucc" backend this library's ProcessGroupUCC.

Debian's torch is built without UCC: distributed_c10d.py then sets
_UCC_AVAILABLE = False and has no ProcessGroupUCC. This module, given the
class built by build_pg_ucc.sh (_ucc_pg), sets both, so that an unmodified
program's init_process_group("ucc") and is_ucc_available() take torch's
own UCC branch, the one a torch built with USE_C10D_UCC runs (debug
wrappers included). Nothing else of torch is touched.
"""

import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from _ucc_pg import ProcessGroupUCC


def install():
    ProcessGroupUCC.__module__ = "torch.distributed.distributed_c10d"
    c10d.ProcessGroupUCC = ProcessGroupUCC
    c10d._UCC_AVAILABLE = True
    if "ProcessGroupUCC" not in c10d.__all__:
        c10d.__all__.append("ProcessGroupUCC")
    # `from torch.distributed import *` re-exported distributed_c10d's
    # names into torch.distributed when it was imported.
    dist.ProcessGroupUCC = ProcessGroupUCC


install()
