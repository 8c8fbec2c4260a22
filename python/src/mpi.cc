// dynet._dynet_mpi: synchronous data parallelism over MPI ranks (dynet/mpi.h) from Python, which
// python/dynet/mpi.py (dy.mpi) loads on first use.
//   dist = dy.mpi.DistributedTrainer(trainer)        # or comm=mpi4py.MPI.COMM_WORLD (any object with py2f())
//   first, last = dist.shard(len(minibatch)); ...; dist.update(); total = dist.sum(loss)
// An extension of its own, linked to libdynet_mpi (and so to libmpi), so that dynet._dynet loads where
// OpenMPI is not installed. Trainer objects come from dynet._dynet: nanobind's type registry is shared by
// the extensions of one build.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "dynet/mpi.h"
#include "dynet/training.h"

namespace dynet::py {
namespace nb = nanobind;
using namespace nb::literals;

namespace {

mpi::Communicator to_communicator(nb::handle comm) {
  if (comm.is_none()) return mpi::Communicator::world();
  if (nb::hasattr(comm, "py2f")) return mpi::Communicator::from_fortran(nb::cast<int>(comm.attr("py2f")()));
  if (nb::isinstance<nb::int_>(comm)) return mpi::Communicator::from_fortran(nb::cast<int>(comm));
  throw nb::type_error("dynet.mpi.DistributedTrainer: comm must be None, an mpi4py communicator or a Fortran handle");
}

mpi::Reduction to_reduction(const std::string& r) {
  if (r == "sum") return mpi::Reduction::Sum;
  if (r == "mean") return mpi::Reduction::Mean;
  throw nb::value_error(("dynet.mpi.DistributedTrainer: reduction must be 'sum' or 'mean', got '" + r + "'").c_str());
}

// An exception that reaches the top level on one rank must end the job: the other ranks wait for this
// one in a collective, and MPI_Finalize at exit would wait for them. The hook prints the traceback as
// usual, then aborts the job (as `python -m mpi4py` does).
void abort_on_uncaught_exceptions() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  nb::module_ sys = nb::module_::import_("sys");
  nb::object previous = sys.attr("excepthook");
  sys.attr("excepthook") = nb::cpp_function([previous](nb::handle type, nb::handle value, nb::handle tb) {
    previous(type, value, tb);
    mpi::abort("uncaught Python exception: " + nb::cast<std::string>(nb::str(value)));
  });
}

}  // namespace

void init_mpi(nb::module_& m) {
  m.def("available", &mpi::available, "True when dynet was built with MPI.");
  m.def("rank", [] { return mpi::rank(); }, "This process's rank in MPI_COMM_WORLD (initialises MPI when needed).");
  m.def("size", [] { return mpi::size(); }, "The number of ranks in MPI_COMM_WORLD.");
  m.def("is_root", [] { return mpi::is_root(); });
  m.def("abort", [](const std::string& message) { mpi::abort(message); }, "message"_a,
        "Prints the message with this rank and ends the whole job.");
  m.def("mark_failed", &mpi::mark_failed,
        "Makes this process exit without MPI_Finalize, so that mpirun ends the job instead of waiting.");

  nb::class_<mpi::DistributedTrainer>(m, "DistributedTrainer",
                                      "Wraps a trainer: rank 0's parameters are broadcast, and every update first "
                                      "all-reduces the gradients, so the ranks stay identical.")
      .def("__init__",
           [](mpi::DistributedTrainer* self, Trainer& trainer, const std::string& reduction, nb::handle comm) {
             const mpi::Communicator c = to_communicator(comm);
             new (self) mpi::DistributedTrainer(trainer, to_reduction(reduction), c);
             if (self->size() > 1) abort_on_uncaught_exceptions();
           },
           "trainer"_a, "reduction"_a = "sum", "comm"_a = nb::none(), nb::keep_alive<1, 2>())
      .def("update", &mpi::DistributedTrainer::update, nb::call_guard<nb::gil_scoped_release>(), "All-reduces the gradients, then the trainer's update.")
      .def_prop_ro("rank", &mpi::DistributedTrainer::rank)
      .def_prop_ro("size", &mpi::DistributedTrainer::size)
      .def_prop_ro("is_root", &mpi::DistributedTrainer::is_root)
      .def("shard", &mpi::DistributedTrainer::shard, "n"_a,
           "(first, last): this rank's examples of a minibatch of n (contiguous, in rank order).")
      .def("sum", nb::overload_cast<double>(&mpi::DistributedTrainer::sum, nb::const_), "value"_a,
           nb::call_guard<nb::gil_scoped_release>(),
           "The sum over the ranks (collective).")
      .def("sum", nb::overload_cast<const std::vector<double>&>(&mpi::DistributedTrainer::sum, nb::const_),
           "values"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("broadcast_parameters", &mpi::DistributedTrainer::broadcast_parameters,
           nb::call_guard<nb::gil_scoped_release>())
      .def("barrier", &mpi::DistributedTrainer::barrier, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("stats", [](const mpi::DistributedTrainer& d) {
        const mpi::ReduceStats& s = d.stats();
        nb::dict out;
        out["updates"] = s.updates;
        out["seconds"] = s.seconds;
        out["wait_seconds"] = s.wait_seconds;
        out["dense_seconds"] = s.dense_seconds;
        out["sparse_seconds"] = s.sparse_seconds;
        out["dense_floats"] = s.dense_floats;
        out["sparse_rows"] = s.sparse_rows;
        return out;
      });
}

}  // namespace dynet::py

NB_MODULE(_dynet_mpi, m) {
  m.doc() = "Synchronous data parallelism over MPI ranks (dynet/mpi.h); use it as dynet.mpi.";
  // The Trainer classes DistributedTrainer takes must be registered before its signature is built.
  nanobind::module_::import_("dynet._dynet");
  dynet::py::init_mpi(m);
}
