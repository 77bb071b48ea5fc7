// Running a Program for real: a ThreadedExecutor on this process's devices, and under mpirun
// an MPI transport to the other ranks. Steps take numpy feeds and give numpy fetches;
// variables and checkpoints are logical tensors, whatever the layout.
#include <pybind11/stl.h>

#include <algorithm>

#include "engine/comm/launch_environment.h"
#include "engine/comm/mpi_session.h"
#include "engine/comm/mpi_transport.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_io.h"
#include "engine/runtime/checkpoint.h"
#include "engine/runtime/feed_spec.h"
#include "engine/runtime/threaded_executor.h"
#include "kernels/builtin_kernels.h"
#include "python/src/program.h"

namespace twinflow::python {
namespace {

// What `rank` passes to step() for each feed in mode `feed`: dicts of name, shape, rows (of each
// micro-batch, (begin, end); () for a scalar) and read (whether a device of the rank reads it).
py::list FeedSpecList(const Program& program, int rank, const std::string& feed) {
  py::list specs;
  const runtime::FeedMode mode = runtime::ParseFeedMode(feed, "feed");
  for (const runtime::FeedSpec& spec : runtime::FeedSpecs(program.compiled.plan, rank, mode)) {
    py::dict d;
    d["name"] = spec.name;
    d["shape"] = py::tuple(py::cast(spec.shape.dims()));
    d["rows"] = spec.rows.rank() == 0
                    ? py::tuple()
                    : py::make_tuple(spec.rows.ranges[0].begin, spec.rows.ranges[0].end);
    d["read"] = spec.read;
    specs.append(d);
  }
  return specs;
}

Shape LogicalShape(const plan::Binding& binding) {
  return Shape(
      std::vector<int64_t>(binding.logical().shape().begin(), binding.logical().shape().end()));
}

class Runner {
 public:
  Runner(const Program& program, comm::MpiSession* mpi, double watchdog_seconds,
         const std::string& feed)
      : plan_(program.compiled.plan),
        kernels_(kernels::BuiltinKernels()),
        watchdog_(watchdog_seconds),
        feed_(runtime::ParseFeedMode(feed, "feed")) {
    if (mpi && mpi->size() > 1) {
      if (plan_.cluster().ranks() != mpi->size()) {
        throw InvalidArgumentError("the Plan spans " + std::to_string(plan_.cluster().ranks()) +
                                   " ranks but mpirun started " + std::to_string(mpi->size()));
      }
      AgreeOnPlan(*mpi);
      transport_ = std::make_unique<comm::MpiTransport>(plan_, *mpi);
      rank_ = mpi->rank();
    }
    executor_ = std::make_unique<runtime::ThreadedExecutor>(plan_, kernels_, transport_.get());
    specs_ = executor_->FeedSpecs(feed_);  // refuses a feed=local this Plan's layouts do not allow
  }

  std::map<std::string, py::array> Step(const py::dict& given) {
    std::map<std::string, Tensor> feeds;
    for (const runtime::FeedSpec& spec : specs_) {
      if (!given.contains(spec.name)) {
        if (!spec.read) continue;  // no device of this rank reads it
        throw InvalidArgumentError("missing feed '" + spec.name + "'");
      }
      feeds.emplace(spec.name, ToTensor(given[py::str(spec.name)].cast<py::array>(), spec.dtype,
                                        "feed '" + spec.name + "'"));
    }
    // Before any thread starts: the runtime's own check (it checks again in the run).
    runtime::CheckFeeds(specs_, feeds, feed_, rank_, "");
    for (const auto& [key, value] : given) {
      const std::string name = py::str(key);
      const auto known = [&](const runtime::FeedSpec& spec) { return spec.name == name; };
      if (std::none_of(specs_.begin(), specs_.end(), known)) {
        throw InvalidArgumentError("unknown feed '" + name + "'");
      }
    }
    runtime::RunResult result;
    {
      py::gil_scoped_release release;
      runtime::RunOptions options;
      options.steps = 1;
      options.watchdog_seconds = watchdog_;
      options.feed = feed_;
      result = executor().Run([&](int64_t) { return feeds; }, options);
    }
    std::map<std::string, py::array> fetched;
    for (const auto& [name, tensor] : result.fetches.at(0)) fetched.emplace(name, ToNumpy(tensor));
    seconds_ += result.seconds;
    ++steps_;
    return fetched;
  }

  py::array Variable(const std::string& name) {
    Tensor value;
    {
      py::gil_scoped_release release;
      value = executor().Variable(name);
    }
    return ToNumpy(value);
  }
  void SetVariable(const std::string& name, const py::array& value) {
    for (const plan::Binding& b : plan_.variables()) {
      if (b.name() != name) continue;
      Tensor t = ToTensor(value, plan::FromProto(b.logical().dtype(), "variable '" + name + "'"),
                          "variable '" + name + "'");
      if (t.shape() != LogicalShape(b)) {
        throw ShapeError("variable '" + name + "' has shape " + LogicalShape(b).ToString() +
                         ", the value " + t.shape().ToString());
      }
      executor().SetVariable(name, t);
      return;
    }
    throw InvalidArgumentError("the graph has no variable '" + name + "'");
  }
  std::vector<std::string> VariableNames() const {
    std::vector<std::string> names;
    for (const plan::Binding& b : plan_.variables()) names.push_back(b.name());
    return names;
  }

  // Collective under MPI: every rank gathers, rank 0 writes.
  void Save(const std::string& dir, int64_t steps) {
    runtime::Checkpoint state;
    {
      py::gil_scoped_release release;
      state = runtime::CaptureCheckpoint(executor(), plan_, steps);
    }
    if (rank_ == 0) runtime::SaveCheckpoint(dir, state);
  }
  int64_t Load(const std::string& dir) {
    const runtime::Checkpoint state = runtime::LoadCheckpoint(dir);
    runtime::RestoreCheckpoint(executor(), plan_, state);
    return state.steps;
  }

  // Ends the run's threads and MPI communicators (before MPI_Finalize).
  void Close() {
    executor_.reset();
    transport_.reset();
  }
  int rank() const { return rank_; }
  double mean_step_seconds() const { return steps_ ? seconds_ / static_cast<double>(steps_) : 0; }

 private:
  runtime::ThreadedExecutor& executor() const {
    if (!executor_) throw InvalidArgumentError("this graph's runner was closed");
    return *executor_;
  }
  // Every rank must run the same Plan: a difference anywhere fails every rank.
  void AgreeOnPlan(const comm::MpiSession& mpi) {
    const std::vector<std::string> all = comm::AllgatherText(plan::ContentHash(plan_));
    for (size_t r = 0; r < all.size(); ++r) {
      if (all[r] != all[0]) {
        throw PlanError("rank " + std::to_string(mpi.rank()) + ": the ranks compiled different " +
                        "Plans (rank 0 and rank " + std::to_string(r) + " differ): build the " +
                        "same graph with the same strategy on every rank");
      }
    }
  }

  plan::Plan plan_;
  kernels::KernelRegistry kernels_;
  double watchdog_;
  runtime::FeedMode feed_;
  std::vector<runtime::FeedSpec> specs_;  // this rank's, in feed_
  std::unique_ptr<comm::MpiTransport> transport_;
  std::unique_ptr<runtime::ThreadedExecutor> executor_;
  int rank_ = 0;
  double seconds_ = 0;
  int64_t steps_ = 0;
};

}  // namespace

void BindRunner(py::module_& m) {
  py::class_<comm::MpiSession>(m, "MpiSession")
      .def(py::init([] { return new comm::MpiSession("twinflow (python)"); }))
      .def_static("launched_by_mpirun", &comm::MpiSession::LaunchedByMpirun)
      .def_property_readonly("rank", &comm::MpiSession::rank)
      .def_property_readonly("size", &comm::MpiSession::size)
      .def_property_readonly("local_rank", &comm::MpiSession::local_rank);
  m.def(
      "check_launch_environment", [](comm::MpiSession* mpi) { comm::CheckLaunchEnvironment(mpi); },
      py::arg("mpi") = nullptr,
      "Refuses torchrun's RANK, WORLD_SIZE or LOCAL_RANK when they disagree with MPI's");
  m.def("feed_specs", &FeedSpecList, py::arg("program"), py::arg("rank"), py::arg("feed"));

  py::class_<Runner>(m, "Runner")
      .def(py::init<const Program&, comm::MpiSession*, double, const std::string&>(),
           py::arg("program"), py::arg("mpi") = nullptr, py::arg("watchdog_seconds") = 60.0,
           py::arg("feed") = "local", py::keep_alive<1, 3>())
      .def("step", &Runner::Step, py::arg("feeds"))
      .def("variable", &Runner::Variable)
      .def("set_variable", &Runner::SetVariable)
      .def("variable_names", &Runner::VariableNames)
      .def("save", &Runner::Save, py::arg("dir"), py::arg("steps"))
      .def("load", &Runner::Load, py::arg("dir"))
      .def("close", &Runner::Close)
      .def_property_readonly("rank", &Runner::rank)
      .def_property_readonly("mean_step_seconds", &Runner::mean_step_seconds);
}

}  // namespace twinflow::python
