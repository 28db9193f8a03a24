// The Python side of PyTorch's own ProcessGroupUCC, built out of tree
// (build_pg_ucc.sh): Debian's torch is built without USE_C10D_UCC, so
// torch._C has no ProcessGroupUCC class. This module is that class and
// nothing more: a subclass of torch's ProcessGroup type (found through
// torch._C's pybind11 registry, which this module shares by being built
// with the same pybind11, compiler and C++ ABI), constructed the way
// distributed_c10d.py constructs it, ProcessGroupUCC(store, rank, size,
// timeout=...). ucc_torch.py puts it where distributed_c10d.py looks.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <torch/csrc/distributed/c10d/ProcessGroupUCC.hpp>

namespace py = pybind11;

PYBIND11_MODULE(_ucc_pg, m) {
  m.doc() = "PyTorch 1.13's c10d ProcessGroupUCC over this UCC library";
  py::object base =
      py::module::import("torch._C._distributed_c10d").attr("ProcessGroup");
  py::class_<c10d::ProcessGroupUCC, c10::intrusive_ptr<c10d::ProcessGroupUCC>>(
      m, "ProcessGroupUCC", base)
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank,
                       int size, std::chrono::milliseconds timeout) {
             return c10::make_intrusive<c10d::ProcessGroupUCC>(
                 store, rank, size, std::chrono::duration<float>(timeout));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"),
           py::arg("timeout") = ::kProcessGroupDefaultTimeout,
           py::call_guard<py::gil_scoped_release>());
}
