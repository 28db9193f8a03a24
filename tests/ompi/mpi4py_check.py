"""Collectives through mpi4py (Debian's python3-mpi4py), the way mpi4py's
own test suite drives them, checked element by element: the buffer
methods (Barrier, Bcast, Reduce, Allreduce, Allgather, Allgatherv,
Alltoall, Alltoallv) blocking and nonblocking, in place, every root, on
several datatypes; the pickle-based object methods (bcast, reduce,
allreduce, allgather, alltoall, gather, scatter) that build on them; on
COMM_WORLD, Dup and Split communicators. Nonblocking vector calls are
made the way mpi4py's test_cco_nb_vec makes them: mpi4py builds the C
count and displacement arrays for the call and frees them as soon as
the call returns, before the request completes.

    mpirun -np N python3 mpi4py_check.py

Rank 0 prints "mpi4py_check: K checks passed"; a mismatch raises (the
job aborts). tests/ompi/run_coll_ucc.sh runs it natively and with Open
MPI's coll/ucc forced and wants the same line from both.
"""
import sys
from array import array

from mpi4py import MPI

CHECKS = [0]

TYPES = [("i", MPI.INT), ("l", MPI.LONG), ("d", MPI.DOUBLE), ("f", MPI.FLOAT),
         ("B", MPI.UNSIGNED_CHAR)]


def value(rank, i, code):
    v = (rank * 7 + i * 3) % 11 - 3
    if code == "B":
        v &= 0xFF
    return v


def expect(got, want, what):
    CHECKS[0] += 1
    if list(got) != list(want):
        for k, (g, w) in enumerate(zip(got, want)):
            if g != w:
                raise AssertionError("%s: element %d is %r, expected %r"
                                     % (what, k, g, w))
        raise AssertionError("%s: %d elements, expected %d"
                             % (what, len(got), len(want)))


def reduce_ref(op, code, n, size):
    out = []
    for i in range(n):
        vals = [value(r, i, code) for r in range(size)]
        if op is MPI.SUM:
            v = sum(vals)
        elif op is MPI.MAX:
            v = max(vals)
        else:
            v = min(vals)
        if code == "B":
            v &= 0xFF
        out.append(v)
    return out


def wait(req):
    if req is not None:
        req.Wait()


def check_buffers(comm, name):
    rank, size = comm.Get_rank(), comm.Get_size()
    for nb in (False, True):
        kind = "nonblocking " if nb else ""
        wait(comm.Ibarrier() if nb else comm.Barrier())
        for code, mt in TYPES:
            for n in (1, 5, 3000):
                for op in (MPI.SUM, MPI.MAX, MPI.MIN):
                    if code == "B" and op is MPI.SUM:
                        continue  # unsigned wrap is checked in C (mpi_check)
                    src = array(code, [value(rank, i, code) for i in range(n)])
                    dst = array(code, [0] * n)
                    what = "%s%s allreduce %s %s n=%d" % (kind, name, code,
                                                          op, n)
                    if nb:
                        wait(comm.Iallreduce([src, mt], [dst, mt], op))
                    else:
                        comm.Allreduce([src, mt], [dst, mt], op)
                    expect(dst, reduce_ref(op, code, n, size), what)
                    inplace = array(code, src)
                    if nb:
                        wait(comm.Iallreduce(MPI.IN_PLACE, [inplace, mt], op))
                    else:
                        comm.Allreduce(MPI.IN_PLACE, [inplace, mt], op)
                    expect(inplace, reduce_ref(op, code, n, size),
                           what + " in place")
            n = 40
            for root in range(size):
                src = array(code, [value(rank, i, code) for i in range(n)])
                dst = array(code, [0] * n)
                if nb:
                    wait(comm.Ireduce([src, mt], [dst, mt], MPI.MAX, root))
                else:
                    comm.Reduce([src, mt], [dst, mt], MPI.MAX, root)
                if rank == root:
                    expect(dst, reduce_ref(MPI.MAX, code, n, size),
                           "%s%s reduce %s root %d" % (kind, name, code, root))
                buf = array(code, [value(root, i, code) if rank == root else 0
                                   for i in range(n)])
                if nb:
                    wait(comm.Ibcast([buf, mt], root))
                else:
                    comm.Bcast([buf, mt], root)
                expect(buf, [value(root, i, code) for i in range(n)],
                       "%s%s bcast %s root %d" % (kind, name, code, root))
        check_gathers(comm, name, nb)


def check_gathers(comm, name, nb):
    rank, size = comm.Get_rank(), comm.Get_size()
    kind = "nonblocking " if nb else ""
    mt = MPI.INT
    n = 7
    src = array("i", [rank * 100 + i for i in range(n)])
    dst = array("i", [-1] * (n * size))
    if nb:
        wait(comm.Iallgather([src, mt], [dst, mt]))
    else:
        comm.Allgather([src, mt], [dst, mt])
    expect(dst, [r * 100 + i for r in range(size) for i in range(n)],
           "%s%s allgather" % (kind, name))
    # Vector: rank r gives r % 3 + 1 elements, blocks placed with gaps.
    counts = [r % 3 + 1 for r in range(size)]
    displs = []
    at = 0
    for c in counts:
        displs.append(at + 2)
        at += c + 2
    src = array("i", [rank * 100 + i for i in range(counts[rank])])
    dst = array("i", [-1] * at)
    if nb:
        req = comm.Iallgatherv([src, mt], [dst, (counts, displs), mt])
        wait(req)
    else:
        comm.Allgatherv([src, mt], [dst, (counts, displs), mt])
    want = [-1] * at
    for r in range(size):
        for i in range(counts[r]):
            want[displs[r] + i] = r * 100 + i
    expect(dst, want, "%s%s allgatherv" % (kind, name))
    # alltoall(v)
    src = array("i", [rank * 1000 + r * 10 + i for r in range(size)
                      for i in range(3)])
    dst = array("i", [-1] * (3 * size))
    if nb:
        wait(comm.Ialltoall([src, mt], [dst, mt]))
    else:
        comm.Alltoall([src, mt], [dst, mt])
    expect(dst, [r * 1000 + rank * 10 + i for r in range(size)
                 for i in range(3)], "%s%s alltoall" % (kind, name))
    scounts = [(rank + r) % 3 + 1 for r in range(size)]
    rcounts = [(r + rank) % 3 + 1 for r in range(size)]
    sdispl = [sum(scounts[:r]) for r in range(size)]
    rdispl = [sum(rcounts[:r]) + r for r in range(size)]
    src = array("i", [rank * 1000 + r * 10 + i for r in range(size)
                      for i in range(scounts[r])])
    dst = array("i", [-1] * (rdispl[-1] + rcounts[-1] + 1))
    if nb:
        wait(comm.Ialltoallv([src, (scounts, sdispl), mt],
                             [dst, (rcounts, rdispl), mt]))
    else:
        comm.Alltoallv([src, (scounts, sdispl), mt],
                       [dst, (rcounts, rdispl), mt])
    want = [-1] * len(dst)
    for r in range(size):
        for i in range(rcounts[r]):
            want[rdispl[r] + i] = r * 1000 + rank * 10 + i
    expect(dst, want, "%s%s alltoallv" % (kind, name))


def check_objects(comm, name):
    rank, size = comm.Get_rank(), comm.Get_size()
    expect([comm.allreduce(rank + 1)], [size * (size + 1) // 2],
           name + " allreduce object")
    for root in range(size):
        got = comm.bcast({"root": root, "data": list(range(root + 3))}
                         if rank == root else None, root=root)
        expect([got["root"]] + got["data"], [root] + list(range(root + 3)),
               name + " bcast object")
        red = comm.reduce(rank * 2, op=MPI.SUM, root=root)
        if rank == root:
            expect([red], [size * (size - 1)], name + " reduce object")
        gat = comm.gather("r%d" % rank, root=root)
        if rank == root:
            expect(gat, ["r%d" % r for r in range(size)], name + " gather")
        sca = comm.scatter(["s%d" % r for r in range(size)]
                           if rank == root else None, root=root)
        expect([sca], ["s%d" % rank], name + " scatter")
    expect(comm.allgather(("x", rank)), [("x", r) for r in range(size)],
           name + " allgather object")
    expect(comm.alltoall([rank * 10 + r for r in range(size)]),
           [r * 10 + rank for r in range(size)], name + " alltoall object")


def main():
    world = MPI.COMM_WORLD
    check_buffers(world, "world")
    check_objects(world, "world")
    dup = world.Dup()
    check_buffers(dup, "dup")
    dup.Free()
    split = world.Split(world.Get_rank() % 2, -world.Get_rank())
    check_buffers(split, "split")
    check_objects(split, "split")
    split.Free()
    for i in range(50):
        d = world.Dup()
        expect([d.allreduce(i)], [i * d.Get_size()], "dup cycle")
        d.Free()
    world.Barrier()
    if world.Get_rank() == 0:
        print("mpi4py_check: %d checks passed" % CHECKS[0])
        sys.stdout.flush()


if __name__ == "__main__":
    main()
