"""Trains one small model with DistributedDataParallel on each backend and
compares: the loss curve (rank 0's loss at every step), the time per step,
and the allreduce buckets DDP chose. An unmodified DDP program: the "ucc"
backend is this library through PyTorch's ProcessGroupUCC (build_pg_ucc.sh
and its PYTHONPATH), "gloo" is PyTorch's own reference.

    /usr/bin/python3 tests/torch/ddp_check.py --world 2 --steps 300 \
        [--backends ucc,gloo] [--rtol 1e-4] [--json OUT]

Exits 1 when a backend's loss at one of the first --check-steps steps
(default 20) differs from the first backend's by more than rtol
(relative), or a run fails. Beyond 2 ranks the backends sum gradients in
different orders: their losses agree to about 1e-7 at first, and training
then amplifies the rounding (4 ranks: 1e-5 by step 40, 0.2% at step 200),
so later steps are reported, not checked.
"""

import argparse
import json
import os
import socket
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model():
    # A few layers: 1.3 M parameters, so that DDP makes more than one
    # bucket with its default caps (1 MiB first, then 25 MiB).
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(),
                         nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 10))


def rank_main(rank, world, backend, port, steps, batch, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group(backend, rank=rank, world_size=world)
    torch.manual_seed(1234)  # the same initial weights on every rank
    net = DDP(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # Synthetic data: each rank its own shard of one fixed problem.
    g = torch.Generator().manual_seed(99)
    w_true = torch.randn(256, 10, generator=g)
    g.manual_seed(1000 + rank)
    losses, times = [], []
    for step in range(steps):
        x = torch.randn(batch, 256, generator=g)
        y = (x @ w_true).argmax(dim=1)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()  # DDP's bucketed allreduces run here
        opt.step()
        times.append(time.perf_counter() - t0)
        # The mean loss over ranks, so every rank's part is checked.
        l = loss.detach().clone()
        dist.all_reduce(l)
        losses.append(l.item() / world)
    buckets = None
    try:
        data = net._get_ddp_logging_data()
        buckets = data.get("bucket_sizes")
    except Exception:  # a private API; only reported
        pass
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"losses": losses, "times": times,
                       "buckets": buckets}, f)
    dist.barrier()
    dist.destroy_process_group()


def run(backend, world, steps, batch):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        mp.spawn(rank_main, args=(world, backend, free_port(), steps, batch,
                                  out), nprocs=world, join=True)
        with open(out) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--backends", default="ucc,gloo")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--check-steps", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    if "ucc" in a.backends.split(",") and not dist.is_ucc_available():
        print("the ucc backend is not available: build it with "
              "tests/torch/build_pg_ucc.sh BUILD and put BUILD/torch/py "
              "on PYTHONPATH", file=sys.stderr)
        return 2
    res = {}
    for b in a.backends.split(","):
        res[b] = run(b, a.world, a.steps, a.batch)
    ref_name = a.backends.split(",")[0]
    ref = res[ref_name]["losses"]
    ok = True
    for b, r in res.items():
        t = sorted(r["times"][10:]) or sorted(r["times"])
        med = t[len(t) // 2] * 1e3
        rel = [abs(x - y) / max(abs(y), 1e-12)
               for x, y in zip(r["losses"], ref)]
        worst = max(rel)
        first = next((i for i, d in enumerate(rel) if d > a.rtol), None)
        print(f"{b:5s} world {a.world}: loss {r['losses'][0]:.6f} -> "
              f"{r['losses'][-1]:.6f}, median step {med:.2f} ms, "
              f"buckets {r['buckets']}, max rel diff vs {ref_name} "
              f"{worst:.2e} (first {a.check_steps} steps "
              f"{max(rel[:a.check_steps]):.2e}"
              + (f"; above rtol from step {first}" if first is not None
                 else "") + ")")
        if max(rel[:a.check_steps]) > a.rtol or len(r["losses"]) != a.steps:
            ok = False
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    print(f"DDP losses over the first {a.check_steps} steps",
          "agree" if ok else "DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
